// Host launcher of the dispatch plan: from top-k ids, group (token, slot) rows by local expert.
// Output equals ref::plan_dispatch exactly (rows of an expert in (token, slot) order, experts
// in local-index order, shared expert last). No host synchronisation; CUDA-graph capturable.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace fusedmoe::kernels {

struct PlanArgs {
  const int32_t* topk_ids = nullptr;  // [T, k] global ids; -1 = routed nowhere (skipped)
  int64_t num_tokens = 0;             // T, or its bound when num_tokens_dev is set
  const int32_t* num_tokens_dev = nullptr;  // optional device-side T (kernels/common/token_count.cuh)
  int top_k = 0;
  int num_experts = 0;                // E (global)
  const int32_t* expert_map = nullptr;  // [E] global -> local or -1; nullptr = identity
  int num_local_experts = 0;          // local routed experts
  int num_shared_experts = 0;         // 0 or 1: group index num_local_experts, every token, slot k
  int tile_m = 1;                     // padded_offsets round each count up to a multiple of this
  // outputs (G = num_local_experts + num_shared_experts groups, R = rows, T*slots at most)
  int32_t* counts = nullptr;          // [G]
  int32_t* offsets = nullptr;         // [G + 1]
  int32_t* padded_offsets = nullptr;  // [G + 1]
  int32_t* row_token = nullptr;       // [T * slots] (entries >= offsets[G] untouched)
  int32_t* row_slot = nullptr;        // [T * slots]
  int32_t* slot_row = nullptr;        // [T, slots] row of each (token, slot) or -1
  int32_t* error_flag = nullptr;      // int32[4], see router_launch.h (ids >= E found here too)
  void* scratch = nullptr;            // plan_scratch_bytes(...) bytes, 256-byte aligned
  size_t scratch_bytes = 0;
};

// Name of the compiled kernel family (for the kernel registry / `fusedmoe info`).
const char* plan_kernel_name();

// Kernel launches launch_plan makes for T * slots entries (1 single-block, 3 chunked).
int plan_launch_count(int64_t entries);

// Scratch the plan needs for up to max_tokens tokens (with or without a shared slot).
size_t plan_scratch_bytes(int64_t max_tokens, int top_k, int num_groups);

// Ids: -1 = routed nowhere (slot_row -1, no error); any other id outside [0, E) is skipped the
// same way and recorded in error_flag (kErrorIdOutOfRange, first one wins). Map entries outside
// [0, num_local_experts) mean "not local". One launch when T * slots <= 8192, else three.
// cudaErrorInvalidValue: groups > 2048, T * slots or the padded rows beyond int32, scratch too small.
cudaError_t launch_plan(const PlanArgs& args, cudaStream_t stream);

}  // namespace fusedmoe::kernels
