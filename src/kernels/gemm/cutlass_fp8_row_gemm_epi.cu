// The CUTLASS FP8 row-scaled grouped GEMM, cooperative 128x128x128 tiles with a whole-tile epilogue
// buffer (CutlassFp8RowArgs::whole_tile_epilogue; cutlass_fp8_row_gemm.cuh): its own translation unit.
#include "kernels/gemm/cutlass_fp8_row_gemm.cuh"
#include "kernels/gemm/cutlass_grouped_gemm_internal.h"

namespace fusedmoe::kernels::cutlass_grouped {

cudaError_t run_fp8_row_epi(const CutlassFp8RowArgs& a, cudaStream_t stream) { return fp8_row_run<Fp8RowGemmEpi>(a, stream); }
size_t scratch_fp8_row_epi(int groups) { return fp8_row_scratch<Fp8RowGemmEpi>(groups); }
void append_fp8_row_epi(KernelList* out, const char* name) { fp8_row_append<Fp8RowGemmEpi>(out, name); }

}  // namespace fusedmoe::kernels::cutlass_grouped
