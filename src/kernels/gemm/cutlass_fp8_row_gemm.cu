// The CUTLASS FP8 row-scaled grouped GEMM, cooperative 128x128x128 tiles on 1x1 clusters
// (cutlass_fp8_row_gemm.cuh).
#include "kernels/gemm/cutlass_fp8_row_gemm.cuh"
#include "kernels/gemm/cutlass_grouped_gemm_internal.h"

namespace fusedmoe::kernels::cutlass_grouped {

cudaError_t run_fp8_row(const CutlassFp8RowArgs& a, cudaStream_t stream) { return fp8_row_run<Fp8RowCoop128>(a, stream); }
size_t scratch_fp8_row(int groups) { return fp8_row_scratch<Fp8RowCoop128>(groups); }
void append_fp8_row(KernelList* out, const char* name) { fp8_row_append<Fp8RowCoop128>(out, name); }

}  // namespace fusedmoe::kernels::cutlass_grouped
