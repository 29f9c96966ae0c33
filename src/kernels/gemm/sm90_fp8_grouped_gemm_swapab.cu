// sm90_fp8_grouped_gemm_swapab.cu — the FP8 e4m3 Swap-AB instances (token tiles 8, 16, 32; GEMM1
// gated + plain kernels each), in their own translation unit to keep each compile short. (No tile
// 64: its epilogue spilled registers at 2 CTAs per SM, and decode picks tiles <= 32.)
// STATUS: compiled, NOT yet run on a GPU (forward() uses them only when Swap-AB tiles are forced).
#include "kernels/gemm/sm90_fp8_grouped_gemm.cuh"
#include "kernels/gemm/sm90_bf16_grouped_gemm_internal.h"  // the BF16 Swap-AB stage counts

namespace fusedmoe::kernels::sm90_fp8_grouped {

// The BF16 Swap-AB kernels' stage counts: an e4m3 stage (64 x 128 bytes of weights + T x 128 bytes
// of tokens) has the bytes of a bf16 stage (64 x 64 x 2 + T x 64 x 2), so the same rings fit 2 CTAs
// per SM.
using SwapAB8 = Config<true, 8, sm90_grouped::kSwapStages8>;
using SwapAB16 = Config<true, 16, sm90_grouped::kSwapStages16>;
using SwapAB32 = Config<true, 32, sm90_grouped::kSwapStages32>;
static_assert(2 * (smem_bytes<SwapAB32>() + 1024) <= 228 * 1024, "two CTAs per SM must fit");
static_assert(2 * (smem_bytes<SwapAB8>() + 1024) <= 228 * 1024, "two CTAs per SM must fit");

// sm90_fp8_grouped_gemm_swapab_dense.cu
void append_swapab_dense_instances(KernelList* out);
void append_swapab_pair_instances(KernelList* out);  // sm90_fp8_grouped_gemm_swapab_pair.cu

// (GroupedGemmArgs::dense: forced on goes straight to the dense instance; the rule is applied in
// launch_instance, which knows the launch's schedule)
cudaError_t launch_swapab(const Fp8GroupedGemmArgs& a, int tile, bool gemm2, cudaStream_t stream) {
  if (a.dense > 0 && a.gather_x == nullptr) return launch_swapab_dense(a, tile, gemm2, stream);  // (no gather there)
  switch (tile) {
    case 8: return launch_instance<SwapAB8>(a, gemm2, stream);
    case 16: return launch_instance<SwapAB16>(a, gemm2, stream);
    case 32: return launch_instance<SwapAB32>(a, gemm2, stream);
    default: return cudaErrorInvalidValue;
  }
}

int64_t packed_weight_bytes_swapab(const GroupedGemmArgs& a, bool gemm2) { return packed_weight_bytes<SwapAB8>(a, gemm2); }
cudaError_t pack_weights_swapab(const GroupedGemmArgs& a, bool gemm2, void* out, cudaStream_t stream) {
  return pack_weights<SwapAB8>(a, gemm2, out, stream);
}

void append_fp8_weight_pack_instance(KernelList* out) {
  out->push_back({"weight_pack", "sm90_fp8_pack_swapab_weights_64x128",
                  reinterpret_cast<const void*>(&sm90_fp8_pack_weights_kernel<SwapAB8>)});
}

void append_swapab_instances(KernelList* out) {
  append_config_instances<SwapAB8>(out);
  append_config_instances<SwapAB16>(out);
  append_config_instances<SwapAB32>(out);
  append_swapab_dense_instances(out);
  append_swapab_pair_instances(out);
}

}  // namespace fusedmoe::kernels::sm90_fp8_grouped
