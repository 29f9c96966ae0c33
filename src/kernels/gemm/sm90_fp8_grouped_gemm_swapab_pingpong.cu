// sm90_fp8_grouped_gemm_swapab_pingpong.cu — the FP8 Swap-AB tiles with two consumer warpgroups
// that take the CTA's weight tiles in turn (Config::kPingPong; 2 CTAs per SM, the 2-CTA
// instances' stage counts). A tuning experiment: FUSEDMOE_FP8_PINGPONG (bit 0 GEMM1, bit 1 GEMM2)
// sends the 2-CTA Swap-AB launches without split-K here (sm90_fp8_grouped_gemm.cuh,
// pingpong_requested); off by default.
#include "kernels/gemm/sm90_fp8_grouped_gemm.cuh"
#include "kernels/gemm/sm90_bf16_grouped_gemm_internal.h"  // the BF16 Swap-AB stage counts

namespace fusedmoe::kernels::sm90_fp8_grouped {

using PingPongSwapAB8 = Config<true, 8, sm90_grouped::kSwapStages8, 2, true>;
using PingPongSwapAB16 = Config<true, 16, sm90_grouped::kSwapStages16, 2, true>;
using PingPongSwapAB32 = Config<true, 32, sm90_grouped::kSwapStages32, 2, true>;
static_assert(smem_fits<PingPongSwapAB8>() && smem_fits<PingPongSwapAB16>() && smem_fits<PingPongSwapAB32>(),
              "two ping-pong CTAs must fit on one SM");

cudaError_t launch_swapab_pingpong(const Fp8GroupedGemmArgs& a, int tile, bool gemm2, cudaStream_t stream) {
  switch (tile) {
    case 8: return launch_instance<PingPongSwapAB8>(a, gemm2, stream);
    case 16: return launch_instance<PingPongSwapAB16>(a, gemm2, stream);
    case 32: return launch_instance<PingPongSwapAB32>(a, gemm2, stream);
    default: return cudaErrorInvalidValue;
  }
}

void append_swapab_pingpong_instances(KernelList* out) {
  append_config_instances<PingPongSwapAB8>(out);
  append_config_instances<PingPongSwapAB16>(out);
  append_config_instances<PingPongSwapAB32>(out);
}

}  // namespace fusedmoe::kernels::sm90_fp8_grouped
