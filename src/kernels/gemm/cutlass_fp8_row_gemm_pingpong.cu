// The CUTLASS FP8 row-scaled grouped GEMM, ping-pong 128x64x128 tiles (cutlass_fp8_row_gemm.cuh).
#include "kernels/gemm/cutlass_fp8_row_gemm.cuh"
#include "kernels/gemm/cutlass_grouped_gemm_internal.h"

namespace fusedmoe::kernels::cutlass_grouped {

using Fp8RowPing = Fp8RowGemm<128, 64, true>;
cudaError_t run_fp8_row_pingpong(const CutlassFp8RowArgs& a, cudaStream_t stream) { return fp8_row_run<Fp8RowPing>(a, stream); }
size_t scratch_fp8_row_pingpong(int groups) { return fp8_row_scratch<Fp8RowPing>(groups); }
void append_fp8_row_pingpong(KernelList* out, const char* name) { fp8_row_append<Fp8RowPing>(out, name); }

}  // namespace fusedmoe::kernels::cutlass_grouped
