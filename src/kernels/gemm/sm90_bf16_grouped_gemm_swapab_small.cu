// sm90_bf16_grouped_gemm_swapab_small.cu — Swap-AB instances with token tiles 8 and 16
// (GEMM1 gated + plain kernels each; GEMM2 uses the plain kernel).
#include "kernels/gemm/sm90_bf16_grouped_gemm.cuh"
#include "kernels/gemm/sm90_bf16_grouped_gemm_internal.h"

namespace fusedmoe::kernels::sm90_grouped {

using SwapAB8 = Config</*swap=*/true, /*tokens=*/8, kSwapStages8>;
using SwapAB16 = Config</*swap=*/true, /*tokens=*/16, kSwapStages16>;

static_assert(2 * (smem_bytes<SwapAB8>() + 1024) <= 228 * 1024, "two CTAs per SM must fit");
static_assert(2 * (smem_bytes<SwapAB16>() + 1024) <= 228 * 1024, "two CTAs per SM must fit");

cudaError_t launch_swapab_small(const GroupedGemmArgs& a, int tile, bool gemm2, cudaStream_t stream,
                                bool force_simple, int* n_sub) {
  switch (tile) {
    case 8: return launch_instance<SwapAB8>(a, gemm2, stream, force_simple, n_sub);
    case 16: return launch_instance<SwapAB16>(a, gemm2, stream, force_simple, n_sub);
    default: return cudaErrorInvalidValue;
  }
}

int64_t packed_weight_bytes_swapab(const GroupedGemmArgs& a, bool gemm2) { return packed_weight_bytes<SwapAB8>(a, gemm2); }
cudaError_t pack_weights_swapab(const GroupedGemmArgs& a, bool gemm2, void* out, cudaStream_t stream) {
  return pack_weights<SwapAB8>(a, gemm2, out, stream);
}

void append_bf16_weight_pack_instance(KernelList* out) {
  out->push_back({"weight_pack", "sm90_bf16_pack_swapab_weights_64x64",
                  reinterpret_cast<const void*>(&sm90_bf16_pack_weights_kernel<SwapAB8>)});
}

void append_swapab_small_instances(KernelList* out) {
  append_config_instances<SwapAB8>(out);
  append_config_instances<SwapAB16>(out);
}

}  // namespace fusedmoe::kernels::sm90_grouped
