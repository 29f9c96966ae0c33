// The CUTLASS FP8 row-scaled grouped GEMM (cutlass_fp8_row_gemm.cuh), cooperative 128x128x128 tiles on 1x2
// clusters (each activation tile multicast to the two CTAs of neighbouring N tiles): its own translation
// unit.
#include "kernels/gemm/cutlass_fp8_row_gemm.cuh"
#include "kernels/gemm/cutlass_grouped_gemm_internal.h"

namespace fusedmoe::kernels::cutlass_grouped {

cudaError_t run_fp8_row_c12(const CutlassFp8RowArgs& a, cudaStream_t stream) { return fp8_row_run<Fp8RowCoop128C12>(a, stream); }
size_t scratch_fp8_row_c12(int groups) { return fp8_row_scratch<Fp8RowCoop128C12>(groups); }
void append_fp8_row_c12(KernelList* out, const char* name) { fp8_row_append<Fp8RowCoop128C12>(out, name); }

}  // namespace fusedmoe::kernels::cutlass_grouped
