// sm90_bf16_grouped_gemm_swapab_large.cu — Swap-AB instances with token tiles 32 and 64
// (GEMM1 gated + plain kernels each; GEMM2 uses the plain kernel).
#include "kernels/gemm/sm90_bf16_grouped_gemm.cuh"
#include "kernels/gemm/sm90_bf16_grouped_gemm_internal.h"

namespace fusedmoe::kernels::sm90_grouped {

using SwapAB32 = Config</*swap=*/true, /*tokens=*/32, kSwapStages32>;
using SwapAB64 = Config</*swap=*/true, /*tokens=*/64, kSwapStages64>;

static_assert(2 * (smem_bytes<SwapAB32>() + 1024) <= 228 * 1024, "two CTAs per SM must fit");
static_assert(2 * (smem_bytes<SwapAB64>() + 1024) <= 228 * 1024, "two CTAs per SM must fit");

cudaError_t launch_swapab_large(const GroupedGemmArgs& a, int tile, bool gemm2, cudaStream_t stream,
                                bool force_simple, int* n_sub) {
  switch (tile) {
    case 32: return launch_instance<SwapAB32>(a, gemm2, stream, force_simple, n_sub);
    case 64: return launch_instance<SwapAB64>(a, gemm2, stream, force_simple, n_sub);
    default: return cudaErrorInvalidValue;
  }
}

void append_swapab_large_instances(KernelList* out) {
  append_config_instances<SwapAB32>(out);
  append_config_instances<SwapAB64>(out);
}

}  // namespace fusedmoe::kernels::sm90_grouped
