// sm90_bf16_grouped_gemm_launch.cu — host entry points of the grouped expert GEMMs: family/tile
// resolution, instance names, the token-tile heuristic, and the normal-family instances
// (the Swap-AB instances live in sm90_bf16_grouped_gemm_swapab_{small,large}.cu).
#include "kernels/gemm/sm90_bf16_grouped_gemm.h"

#include <algorithm>
#include <atomic>

#include "kernels/gemm/sm90_bf16_grouped_gemm.cuh"
#include "kernels/gemm/sm90_bf16_grouped_gemm_internal.h"

namespace fusedmoe::kernels {

namespace sm90_grouped {

using Normal = Config</*swap=*/false, /*tokens=*/128, kNormalStages>;
using NormalPing = Config</*swap=*/false, /*tokens=*/128, kNormalPingStages, /*CTAs per SM=*/1, /*ping-pong=*/true>;

cudaError_t launch_normal(const GroupedGemmArgs& a, bool gemm2, cudaStream_t stream, bool force_simple,
                          int* n_sub) {
  const bool gated = !gemm2 && a.activation.gated();
  if (a.pingpong > 0 && !gated) return launch_instance<NormalPing>(a, gemm2, stream, force_simple, n_sub);
  return launch_instance<Normal>(a, gemm2, stream, force_simple, n_sub);
}

void append_normal_instances(KernelList* out) {
  append_config_instances<Normal>(out);
  append_config_instances<NormalPing>(out);
}

namespace {
std::atomic<unsigned long long*> g_trace{nullptr};
std::atomic<int64_t> g_trace_ctas{0};
}  // namespace

thread_local int g_last_balanced = -1;
void note_balanced(int flat) { g_last_balanced = flat; }
thread_local GroupedGemmSplits g_last_splits[2] = {};
void note_splits(bool gemm2, int splits, int64_t clusters, int resident) {
  g_last_splits[gemm2 ? 1 : 0] = GroupedGemmSplits{splits, clusters, resident};
}

unsigned long long* grouped_gemm_trace(bool gemm2, int64_t grid) {
  unsigned long long* b = g_trace.load(std::memory_order_relaxed);
  const int64_t cap = g_trace_ctas.load(std::memory_order_relaxed);
  if (b == nullptr || grid > cap) return nullptr;
  static_assert(kTraceSlots == kGroupedGemmTraceSlots);
  return gemm2 ? b + cap * kTraceSlots : b;
}

}  // namespace sm90_grouped

namespace {

// Keep in step with kNormalStages / kSwapStages* (checked below).
constexpr const char* kNames[] = {
    "sm90_bf16_grouped_gemm1_128x128x64_s5",       "sm90_bf16_grouped_gemm2_128x128x64_s5",
    "sm90_bf16_grouped_gemm1_swapab_64x8x64_s11",  "sm90_bf16_grouped_gemm2_swapab_64x8x64_s11",
    "sm90_bf16_grouped_gemm1_swapab_64x16x64_s10", "sm90_bf16_grouped_gemm2_swapab_64x16x64_s10",
    "sm90_bf16_grouped_gemm1_swapab_64x32x64_s8", "sm90_bf16_grouped_gemm2_swapab_64x32x64_s8",
    "sm90_bf16_grouped_gemm1_swapab_64x64x64_s6", "sm90_bf16_grouped_gemm2_swapab_64x64x64_s6",
};
static_assert(sm90_grouped::kNormalStages == 5 && sm90_grouped::kSwapStages8 == 11 &&
                  sm90_grouped::kSwapStages16 == 10 && sm90_grouped::kSwapStages32 == 8 &&
                  sm90_grouped::kSwapStages64 == 6,
              "instance names spell the stage counts");

// family + tile -> (swap, tile); false if unsupported.
bool resolve(TileFamily family, int tile, bool* swap, int* tile_out) {
  if (family == TileFamily::kAuto) family = (tile > 0 && tile <= 64) ? TileFamily::kSwapAB : TileFamily::kNormal;
  if (family == TileFamily::kNormal) {
    if (tile != 0 && tile != 128) return false;
    *swap = false;
    *tile_out = 128;
    return true;
  }
  if (family != TileFamily::kSwapAB) return false;
  if (tile == 0) tile = 16;
  if (tile != 8 && tile != 16 && tile != 32 && tile != 64) return false;
  *swap = true;
  *tile_out = tile;
  return true;
}

int name_index(TileFamily family, int tile) {
  bool swap = false;
  int t = 0;
  if (!resolve(family, tile, &swap, &t)) return -1;
  if (!swap) return 0;
  return t == 8 ? 1 : t == 16 ? 2 : t == 32 ? 3 : 4;
}

cudaError_t launch(const GroupedGemmArgs& a, bool gemm2, cudaStream_t stream, bool force_simple, int* n_sub) {
  bool swap = false;
  int tile = 0;
  if (!resolve(a.family, a.tokens_tile, &swap, &tile)) return cudaErrorInvalidValue;
  if (!swap) return sm90_grouped::launch_normal(a, gemm2, stream, force_simple, n_sub);
  // GroupedGemmArgs::dense forced on: straight to the dense instance (no dense tile 64); the rule is
  // applied in launch_instance, which knows the launch's schedule
  if (a.dense > 0 && tile <= 32) return sm90_grouped::launch_swapab_dense(a, tile, gemm2, stream, force_simple, n_sub);
  if (tile <= 16) return sm90_grouped::launch_swapab_small(a, tile, gemm2, stream, force_simple, n_sub);
  return sm90_grouped::launch_swapab_large(a, tile, gemm2, stream, force_simple, n_sub);
}

}  // namespace

TokensTileChoice choose_tokens_tile(int64_t num_tokens, int top_k, int num_experts, int wide_swap_tile,
                                    int headroom) {
  if (num_tokens <= 0 || top_k <= 0 || num_experts <= 0) return {TileFamily::kSwapAB, 8};
  const double expected = double(num_tokens) * double(top_k) / double(num_experts);
  if (expected > 32.0 || (expected > 16.0 && wide_swap_tile <= 0)) return {TileFamily::kNormal, 128};
  if (expected > 16.0) return {TileFamily::kSwapAB, wide_swap_tile};
  int tile = 8;
  while (tile < 32 && double(tile) < double(std::max(headroom, 1)) * expected) tile *= 2;
  return {TileFamily::kSwapAB, tile};
}

cudaError_t launch_grouped_gemm1(const GroupedGemmArgs& args, cudaStream_t stream) {
  return launch(args, /*gemm2=*/false, stream, false, nullptr);
}

cudaError_t launch_grouped_gemm2(const GroupedGemmArgs& args, cudaStream_t stream) {
  return launch(args, /*gemm2=*/true, stream, false, nullptr);
}

cudaError_t launch_grouped_gemm_test(const GroupedGemmArgs& args, bool gemm2, bool force_simple_weight_view,
                                     int* weight_boxes_per_chunk, cudaStream_t stream) {
  return launch(args, gemm2, stream, force_simple_weight_view, weight_boxes_per_chunk);
}

int last_grouped_gemm_balanced() { return sm90_grouped::g_last_balanced; }
GroupedGemmSplits last_grouped_gemm_splits(bool gemm2) { return sm90_grouped::g_last_splits[gemm2 ? 1 : 0]; }

void set_grouped_gemm_trace(unsigned long long* buffer, int64_t ctas) {
  sm90_grouped::g_trace_ctas.store(buffer ? ctas : 0, std::memory_order_relaxed);
  sm90_grouped::g_trace.store(buffer, std::memory_order_relaxed);
}

const char* grouped_gemm1_name(TileFamily family, int tokens_tile) {
  const int i = name_index(family, tokens_tile);
  return i < 0 ? nullptr : kNames[2 * i];
}

const char* grouped_gemm2_name(TileFamily family, int tokens_tile, bool pingpong) {
  static_assert(sm90_grouped::kNormalPingStages == 4, "the ping-pong name spells the stage count");
  const int i = name_index(family, tokens_tile);
  if (pingpong) return i == 0 ? "sm90_bf16_grouped_gemm2_128x128x64_s4_pingpong" : nullptr;
  return i < 0 ? nullptr : kNames[2 * i + 1];
}

void append_grouped_gemm_instances(KernelList* out) {
  sm90_grouped::append_normal_instances(out);
  sm90_grouped::append_swapab_small_instances(out);
  sm90_grouped::append_swapab_large_instances(out);
  sm90_grouped::append_swapab_dense_instances(out);
}

const char* const* grouped_gemm_instance_names(int* count) {
  if (count) *count = int(sizeof(kNames) / sizeof(kNames[0]));
  return kNames;
}

int64_t packed_grouped_gemm_weight_bytes(const GroupedGemmArgs& args, bool gemm2) {
  return sm90_grouped::packed_weight_bytes_swapab(args, gemm2);
}
cudaError_t pack_grouped_gemm_weights(const GroupedGemmArgs& args, bool gemm2, void* packed, cudaStream_t stream) {
  return sm90_grouped::pack_weights_swapab(args, gemm2, packed, stream);
}

}  // namespace fusedmoe::kernels
