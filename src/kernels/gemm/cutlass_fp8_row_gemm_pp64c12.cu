// The CUTLASS FP8 row-scaled grouped GEMM (cutlass_fp8_row_gemm.cuh), ping-pong 64x128x128 tiles on 1x2
// clusters (each warpgroup its own tile, one's epilogue under the other's main loop): its own translation
// unit.
#include "kernels/gemm/cutlass_fp8_row_gemm.cuh"
#include "kernels/gemm/cutlass_grouped_gemm_internal.h"

namespace fusedmoe::kernels::cutlass_grouped {

cudaError_t run_fp8_row_pp64c12(const CutlassFp8RowArgs& a, cudaStream_t stream) { return fp8_row_run<Fp8RowPing64C12>(a, stream); }
size_t scratch_fp8_row_pp64c12(int groups) { return fp8_row_scratch<Fp8RowPing64C12>(groups); }
void append_fp8_row_pp64c12(KernelList* out, const char* name) { fp8_row_append<Fp8RowPing64C12>(out, name); }

}  // namespace fusedmoe::kernels::cutlass_grouped
