// The CUTLASS FP8 blockwise-scaled grouped GEMM (cutlass_fp8_block_gemm.cuh), ping-pong 64x128x128 tiles
// on 1x2 clusters (each warpgroup its own tile, one's epilogue under the other's main loop): its own
// translation unit.
#include "kernels/gemm/cutlass_fp8_block_gemm.cuh"
#include "kernels/gemm/cutlass_grouped_gemm_internal.h"

namespace fusedmoe::kernels::cutlass_grouped {

cudaError_t run_fp8_block_pp64c12(const CutlassFp8BlockArgs& a, cudaStream_t stream) { return fp8_block_run<Fp8BlockPing64C12>(a, stream); }
size_t scratch_fp8_block_pp64c12(int groups, int n, int k, int64_t max_rows) {
  return fp8_block_scratch<Fp8BlockPing64C12>(groups, n, k, max_rows);
}
void append_fp8_block_pp64c12(KernelList* out, const char* name) { fp8_block_append<Fp8BlockPing64C12>(out, name); }

std::string fp8_block_scale_check_pp64c12() { return blockwise_scale_load_check<Fp8BlockPing64C12>(); }

}  // namespace fusedmoe::kernels::cutlass_grouped
