// plan_launch.cu — host side of the dispatch plan: argument checks, path choice, launches.
// No allocation, no host synchronisation; every launch is a plain kernel node (graph capturable).
#include <algorithm>
#include <atomic>
#include <climits>

#define FUSEDMOE_PLAN_KERNELS 1
#include "kernels/common/launch.cuh"
#include "kernels/dispatch/plan.cuh"
#include "kernels/dispatch/plan_launch.h"

namespace fusedmoe::kernels {

namespace {

using namespace plan_detail;

constexpr int kMaxPlanGroups = 2048;  // uint16 keys; E <= 1024 (+ shared) in practice
constexpr size_t kScratchAlign = 256;

// Entries per chunk for N entries: the power of two >= N / 256, clamped to [512, 4096].
int chunk_for(int64_t entries) {
  int ch = kPlanChunkMin;
  while (ch < kPlanChunkMax && static_cast<int64_t>(ch) * kPlanChunkTarget < entries) ch <<= 1;
  return ch;
}

// Chunks for up to `entries` entries: <= max(256, ceil(N / 4096)) whatever the actual N.
int64_t max_chunks(int64_t entries) {
  return std::max<int64_t>(kPlanChunkTarget, (entries + kPlanChunkMax - 1) / kPlanChunkMax);
}

size_t scratch_layout(int64_t chunks, int groups) {
  return align_up(static_cast<size_t>(chunks) * static_cast<size_t>(std::max(groups, 1)) * 4, kScratchAlign);
}

}  // namespace

const char* plan_kernel_name() { return "dispatch_plan_single8192_chunked512to4096"; }

int plan_launch_count(int64_t entries) { return entries <= kPlanSingleMaxEntries ? 1 : 3; }

size_t plan_scratch_bytes(int64_t max_tokens, int top_k, int num_groups) {
  const int64_t entries = std::max<int64_t>(max_tokens, 0) * (std::max(top_k, 0) + 1);  // + a shared slot
  if (entries <= kPlanSingleMaxEntries) return kScratchAlign;  // one block, no scratch
  return scratch_layout(max_chunks(entries), num_groups);
}

cudaError_t plan_detail::prepare_plan(const PlanArgs& a, PlanParams* out) {
  const int shared = a.num_shared_experts;
  if (a.num_tokens < 0 || a.top_k < 0 || a.top_k > 64 || shared < 0 || shared > 1 || a.num_local_experts < 0 ||
      a.num_experts < 0)
    return cudaErrorInvalidValue;
  const int slots = a.top_k + shared;
  const int groups = a.num_local_experts + shared;
  if (groups > kMaxPlanGroups) return cudaErrorInvalidValue;
  const int64_t entries = a.num_tokens * slots;
  const int64_t tile = a.tile_m > 0 ? a.tile_m : 1;
  // Rows, padded rows and entry indices are int32.
  if (entries > INT32_MAX || entries + static_cast<int64_t>(groups) * (tile - 1) > INT32_MAX)
    return cudaErrorInvalidValue;
  if (a.counts == nullptr || a.offsets == nullptr || a.padded_offsets == nullptr) return cudaErrorInvalidValue;
  if (entries > 0 && (a.slot_row == nullptr || a.row_token == nullptr || a.row_slot == nullptr))
    return cudaErrorInvalidValue;
  if (a.num_tokens > 0 && a.top_k > 0 && a.topk_ids == nullptr) return cudaErrorInvalidValue;

  PlanParams p{};
  p.topk_ids = a.topk_ids;
  p.expert_map = a.expert_map;
  p.num_entries = static_cast<int32_t>(entries);
  p.max_tokens = a.num_tokens;
  p.num_tokens_dev = a.num_tokens_dev;
  p.top_k = a.top_k;
  p.slots = std::max(slots, 1);
  p.num_experts = a.num_experts;
  p.num_local = a.num_local_experts;
  p.num_shared = shared;
  p.num_groups = groups;
  p.tile_m = static_cast<int32_t>(tile);
  p.counts = a.counts;
  p.offsets = a.offsets;
  p.padded_offsets = a.padded_offsets;
  p.row_token = a.row_token;
  p.row_slot = a.row_slot;
  p.slot_row = a.slot_row;
  p.error_flag = a.error_flag;
  *out = p;
  return cudaSuccess;
}

cudaError_t launch_plan(const PlanArgs& a, cudaStream_t stream) {
  PlanParams p{};
  const cudaError_t pe = prepare_plan(a, &p);
  if (pe != cudaSuccess) return pe;
  const int groups = p.num_groups;
  const int64_t entries = p.num_entries;

  if (entries <= kPlanSingleMaxEntries) {
    const int n = static_cast<int>(entries);
    const int warps = std::clamp((n + kPlanEntriesPerWarpSingle - 1) / kPlanEntriesPerWarpSingle, 1, 32);
    const int per_warp = (n + warps - 1) / warps;
    const size_t smem = plan_smem_bytes(warps, groups, n);
    if (smem > 48 * 1024) {
      static std::atomic<uint64_t> done{0};
      const cudaError_t e =
          opt_in_dynamic_smem(reinterpret_cast<const void*>(&plan_single_kernel),
                              static_cast<int>(plan_smem_bytes(32, kMaxPlanGroups, kPlanSingleMaxEntries)), &done);
      if (e != cudaSuccess) return e;
    }
    return launch_chain(plan_single_kernel, dim3(1), dim3(warps * 32), smem, stream, p, per_warp);
  }

  const int chunk = chunk_for(entries);
  const int64_t chunks = (entries + chunk - 1) / chunk;
  const size_t need = scratch_layout(chunks, groups);
  if (a.scratch == nullptr || a.scratch_bytes < need || (reinterpret_cast<uintptr_t>(a.scratch) % 16) != 0)
    return cudaErrorInvalidValue;
  p.num_chunks = static_cast<int32_t>(chunks);
  p.chunk = chunk;
  p.chunk_hist = static_cast<int32_t*>(a.scratch);

  cudaError_t e = launch_chain(plan_histogram_kernel, dim3(p.num_chunks), dim3(kPlanHistThreads),
                               static_cast<size_t>(groups) * 4, stream, p);
  if (e != cudaSuccess) return e;
  e = launch_chain(plan_column_scan_kernel, dim3(std::max(1, groups)), dim3(kPlanScanThreads), 0, stream, p);
  if (e != cudaSuccess) return e;
  const size_t smem = plan_smem_bytes(kPlanChunkWarps, groups, chunk);
  if (smem > 48 * 1024) {
    static std::atomic<uint64_t> done{0};
    e = opt_in_dynamic_smem(reinterpret_cast<const void*>(&plan_rank_scatter_kernel),
                            static_cast<int>(plan_smem_bytes(kPlanChunkWarps, kMaxPlanGroups, kPlanChunkMax)), &done);
    if (e != cudaSuccess) return e;
  }
  return launch_chain(plan_rank_scatter_kernel, dim3(p.num_chunks), dim3(kPlanChunkWarps * 32), smem, stream, p);
}

}  // namespace fusedmoe::kernels
