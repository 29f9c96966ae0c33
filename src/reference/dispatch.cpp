// The dispatch plan: which grouped-GEMM row each (token, slot) pair occupies.
#include <vector>

#include "fusedmoe/reference.h"

namespace fusedmoe::ref {

DispatchPlan plan_dispatch(const MoeProblem& p, const Routing& r, const int32_t* expert_map, int tile_m) {
  const int local = p.local_experts();
  const int k = r.top_k;
  const int slots = k + p.num_shared_experts;
  const int64_t num_tokens = r.num_tokens;
  const int64_t tile = tile_m > 0 ? tile_m : 1;

  DispatchPlan plan;
  plan.num_groups = local + p.num_shared_experts;

  // Group of every (token, slot), -1 where the routed expert lives on another rank. A map entry
  // outside [0, local) is treated as non-local too (validate() rejects such maps up front).
  std::vector<int32_t> group_of(static_cast<size_t>(num_tokens * slots), -1);
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (int j = 0; j < k; ++j) {
      const int32_t global = r.ids[t * k + j];
      const int32_t g = expert_map != nullptr ? expert_map[global] : global;
      group_of[t * slots + j] = (g >= 0 && g < local) ? g : -1;
    }
    // The shared expert is the group after the routed ones and takes the last slot.
    if (p.num_shared_experts > 0) group_of[t * slots + k] = local;
  }

  plan.counts.assign(static_cast<size_t>(plan.num_groups), 0);
  for (int32_t g : group_of)
    if (g >= 0) ++plan.counts[g];

  plan.offsets.assign(static_cast<size_t>(plan.num_groups) + 1, 0);
  plan.padded_offsets.assign(static_cast<size_t>(plan.num_groups) + 1, 0);
  for (int g = 0; g < plan.num_groups; ++g) {
    plan.offsets[g + 1] = plan.offsets[g] + plan.counts[g];
    plan.padded_offsets[g + 1] = plan.padded_offsets[g] + (plan.counts[g] + tile - 1) / tile * tile;
  }

  // Visiting (token, slot) in ascending order fills each expert's rows in that order.
  const int64_t rows = plan.num_rows();
  plan.row_token.assign(static_cast<size_t>(rows), 0);
  plan.row_slot.assign(static_cast<size_t>(rows), 0);
  plan.slot_row.assign(static_cast<size_t>(num_tokens * slots), -1);
  std::vector<int64_t> next(plan.offsets.begin(), plan.offsets.end() - 1);
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (int j = 0; j < slots; ++j) {
      const int32_t g = group_of[t * slots + j];
      if (g < 0) continue;
      const int64_t row = next[g]++;
      plan.row_token[row] = static_cast<int32_t>(t);
      plan.row_slot[row] = j;
      plan.slot_row[t * slots + j] = static_cast<int32_t>(row);
    }
  }
  return plan;
}

}  // namespace fusedmoe::ref
