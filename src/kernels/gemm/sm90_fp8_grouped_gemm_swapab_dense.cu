// sm90_fp8_grouped_gemm_swapab_dense.cu — the FP8 e4m3 Swap-AB instances with more CTAs per SM
// (Fp8GroupedGemmArgs::dense): token tiles 8 and 16 at 4 CTAs per SM, 32 at 3, each with the
// stages that fit (the same bytes in flight per SM as the 2-CTA instances, give or take a stage).
// In their own translation unit to keep each compile short.
#include "kernels/gemm/sm90_fp8_grouped_gemm.cuh"

namespace fusedmoe::kernels::sm90_fp8_grouped {

using DenseSwapAB8 = Config<true, 8, 5, 4>;
using DenseSwapAB16 = Config<true, 16, 4, 4>;
using DenseSwapAB32 = Config<true, 32, 5, 3>;
static_assert(smem_fits<DenseSwapAB8>() && smem_fits<DenseSwapAB16>() && smem_fits<DenseSwapAB32>(),
              "the dense instances' CTAs must fit on one SM together");

cudaError_t launch_swapab_dense(const Fp8GroupedGemmArgs& a, int tile, bool gemm2, cudaStream_t stream) {
  switch (tile) {
    case 8: return launch_instance<DenseSwapAB8>(a, gemm2, stream);
    case 16: return launch_instance<DenseSwapAB16>(a, gemm2, stream);
    case 32: return launch_instance<DenseSwapAB32>(a, gemm2, stream);
    default: return cudaErrorInvalidValue;
  }
}

void append_swapab_dense_instances(KernelList* out) {
  append_config_instances<DenseSwapAB8>(out);
  append_config_instances<DenseSwapAB16>(out);
  append_config_instances<DenseSwapAB32>(out);
}

}  // namespace fusedmoe::kernels::sm90_fp8_grouped
