// sm90_fp8_grouped_gemm_swapab_deep.cu — the FP8 Swap-AB tiles at one CTA per SM with twice the
// 2-CTA instances' stages (22 / 20 / 16 for token tiles 8 / 16 / 32): one consumer warpgroup per SM
// with the whole ring. A tuning experiment (session 33): FUSEDMOE_FP8_DEEP (bit 0 GEMM1, bit 1
// GEMM2) sends the 2-CTA Swap-AB launches without split-K here (sm90_fp8_grouped_gemm.cuh,
// deep_requested); off by default. Named "_c1" (Config::kDense: not the 2-CTA instances).
#include "kernels/gemm/sm90_fp8_grouped_gemm.cuh"

namespace fusedmoe::kernels::sm90_fp8_grouped {

using DeepSwapAB8 = Config<true, 8, 22, 1>;
using DeepSwapAB16 = Config<true, 16, 20, 1>;
using DeepSwapAB32 = Config<true, 32, 16, 1>;
static_assert(smem_fits<DeepSwapAB8>() && smem_fits<DeepSwapAB16>() && smem_fits<DeepSwapAB32>(),
              "the deep-ring instances must fit one per SM");

cudaError_t launch_swapab_deep(const Fp8GroupedGemmArgs& a, int tile, bool gemm2, cudaStream_t stream) {
  switch (tile) {
    case 8: return launch_instance<DeepSwapAB8>(a, gemm2, stream);
    case 16: return launch_instance<DeepSwapAB16>(a, gemm2, stream);
    case 32: return launch_instance<DeepSwapAB32>(a, gemm2, stream);
    default: return cudaErrorInvalidValue;
  }
}

void append_swapab_deep_instances(KernelList* out) {
  append_config_instances<DeepSwapAB8>(out);
  append_config_instances<DeepSwapAB16>(out);
  append_config_instances<DeepSwapAB32>(out);
}

}  // namespace fusedmoe::kernels::sm90_fp8_grouped
