// sm90_fp8_grouped_gemm_swapab_pair.cu — the FP8 e4m3 Swap-AB instances with two 64-row weight
// tiles per ring stage (Config::kWTiles == 2; session 34, an experiment: FUSEDMOE_FP8_PAIR, bit 0
// GEMM1, bit 1 GEMM2, off by default). Two CTAs per SM, the stages that fit (16 KB of weights each).
// In their own translation unit to keep each compile short.
#include "kernels/gemm/sm90_fp8_grouped_gemm.cuh"

namespace fusedmoe::kernels::sm90_fp8_grouped {

using PairSwapAB8 = Config<true, 8, 6, 2, 2>;
using PairSwapAB16 = Config<true, 16, 5, 2, 2>;
using PairSwapAB32 = Config<true, 32, 4, 2, 2>;
static_assert(smem_fits<PairSwapAB8>() && smem_fits<PairSwapAB16>() && smem_fits<PairSwapAB32>(),
              "two pair CTAs must fit on one SM");

cudaError_t launch_swapab_pair(const Fp8GroupedGemmArgs& a, int tile, bool gemm2, cudaStream_t stream) {
  switch (tile) {
    case 8: return launch_instance<PairSwapAB8>(a, gemm2, stream);
    case 16: return launch_instance<PairSwapAB16>(a, gemm2, stream);
    case 32: return launch_instance<PairSwapAB32>(a, gemm2, stream);
    default: return cudaErrorInvalidValue;
  }
}

void append_swapab_pair_instances(KernelList* out) {
  append_config_instances<PairSwapAB8>(out);
  append_config_instances<PairSwapAB16>(out);
  append_config_instances<PairSwapAB32>(out);
}

}  // namespace fusedmoe::kernels::sm90_fp8_grouped
