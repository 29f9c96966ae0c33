// The dispatch plan: counts, offsets, tile padding, row order, the shared expert and expert maps.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "fusedmoe/reference.h"

namespace fm = fusedmoe;
namespace ref = fusedmoe::ref;

namespace {

fm::MoeProblem problem(int num_experts, int k, int shared = 0, int local = -1) {
  fm::MoeProblem p;
  p.num_experts = num_experts;
  p.num_local_experts = local;
  p.router = fm::RouterConfig::precomputed(k);
  p.num_shared_experts = shared;
  return p;
}

ref::Routing routing(int k, std::vector<int32_t> ids) {
  ref::Routing r;
  r.top_k = k;
  r.num_tokens = static_cast<int64_t>(ids.size()) / k;
  r.ids = std::move(ids);
  r.weights.assign(r.ids.size(), 1.f);
  return r;
}

// Structural invariants every plan satisfies.
void expect_consistent(const ref::DispatchPlan& plan, const ref::Routing& r, int slots, int tile) {
  ASSERT_EQ(plan.counts.size(), static_cast<size_t>(plan.num_groups));
  ASSERT_EQ(plan.offsets.size(), static_cast<size_t>(plan.num_groups + 1));
  ASSERT_EQ(plan.slot_row.size(), static_cast<size_t>(r.num_tokens * slots));
  ASSERT_EQ(plan.row_token.size(), static_cast<size_t>(plan.num_rows()));
  EXPECT_EQ(plan.offsets[0], 0);
  EXPECT_EQ(plan.padded_offsets[0], 0);
  for (int g = 0; g < plan.num_groups; ++g) {
    EXPECT_EQ(plan.offsets[g + 1] - plan.offsets[g], plan.counts[g]);
    const int64_t padded = plan.padded_offsets[g + 1] - plan.padded_offsets[g];
    EXPECT_EQ(padded % tile, 0);
    EXPECT_GE(padded, plan.counts[g]);
    EXPECT_LT(padded - plan.counts[g], tile);
    for (int64_t row = plan.offsets[g] + 1; row < plan.offsets[g + 1]; ++row) {  // (token, slot) ascending
      const auto prev = std::make_pair(plan.row_token[row - 1], plan.row_slot[row - 1]);
      EXPECT_LT(prev, std::make_pair(plan.row_token[row], plan.row_slot[row])) << "row " << row;
    }
  }
  for (int64_t row = 0; row < plan.num_rows(); ++row)
    EXPECT_EQ(plan.slot_row[plan.row_token[row] * slots + plan.row_slot[row]], row);
}

TEST(ReferenceDispatch, CountsOffsetsAndRowOrder) {
  const fm::MoeProblem p = problem(4, 2);
  const ref::Routing r = routing(2, {1, 3, /**/ 3, 1, /**/ 1, 0, /**/ 3, 1, /**/ 1, 3});
  const ref::DispatchPlan plan = ref::plan_dispatch(p, r, nullptr, 64);
  expect_consistent(plan, r, 2, 64);
  EXPECT_EQ(plan.num_groups, 4);
  EXPECT_EQ(plan.counts, (std::vector<int32_t>{1, 5, 0, 4}));  // expert 2 is empty
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 1, 6, 6, 10}));
  EXPECT_EQ(plan.padded_offsets, (std::vector<int64_t>{0, 64, 128, 128, 192}));
  EXPECT_EQ(plan.num_rows(), 10);
  EXPECT_EQ(plan.row_token, (std::vector<int32_t>{2, 0, 1, 2, 3, 4, 0, 1, 3, 4}));
  EXPECT_EQ(plan.row_slot, (std::vector<int32_t>{1, 0, 1, 0, 1, 0, 1, 0, 0, 1}));
  EXPECT_EQ(plan.slot_row, (std::vector<int32_t>{1, 6, 7, 2, 3, 0, 8, 4, 5, 9}));

  const ref::DispatchPlan unpadded = ref::plan_dispatch(p, r, nullptr, 1);
  EXPECT_EQ(unpadded.padded_offsets, unpadded.offsets);
  EXPECT_EQ(unpadded.slot_row, plan.slot_row);
}

TEST(ReferenceDispatch, AllTokensOnOneExpert) {
  const fm::MoeProblem p = problem(4, 1);
  const ref::Routing r = routing(1, std::vector<int32_t>(7, 2));
  const ref::DispatchPlan plan = ref::plan_dispatch(p, r, nullptr, 4);
  expect_consistent(plan, r, 1, 4);
  EXPECT_EQ(plan.counts, (std::vector<int32_t>{0, 0, 7, 0}));
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 0, 0, 7, 7}));
  EXPECT_EQ(plan.padded_offsets, (std::vector<int64_t>{0, 0, 0, 8, 8}));
  EXPECT_EQ(plan.row_token, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6}));
}

TEST(ReferenceDispatch, NoTokens) {
  const fm::MoeProblem p = problem(3, 2, 1);
  const ref::DispatchPlan plan = ref::plan_dispatch(p, routing(2, {}), nullptr, 64);
  EXPECT_EQ(plan.num_groups, 4);
  EXPECT_EQ(plan.counts, (std::vector<int32_t>{0, 0, 0, 0}));
  EXPECT_EQ(plan.padded_offsets, (std::vector<int64_t>{0, 0, 0, 0, 0}));
  EXPECT_EQ(plan.num_rows(), 0);
  EXPECT_TRUE(plan.slot_row.empty());
}

TEST(ReferenceDispatch, SharedExpertTakesTheLastSlotAndGroup) {
  const fm::MoeProblem p = problem(3, 1, 1);
  const ref::Routing r = routing(1, {2, 0, 2});
  const ref::DispatchPlan plan = ref::plan_dispatch(p, r, nullptr, 2);
  expect_consistent(plan, r, 2, 2);
  EXPECT_EQ(plan.num_groups, 4);
  EXPECT_EQ(plan.counts, (std::vector<int32_t>{1, 0, 2, 3}));  // group 3 = the shared expert
  EXPECT_EQ(plan.padded_offsets, (std::vector<int64_t>{0, 2, 2, 4, 8}));
  // [token][slot]: slot 0 routed, slot 1 shared (rows 3, 4, 5).
  EXPECT_EQ(plan.slot_row, (std::vector<int32_t>{1, 3, 0, 4, 2, 5}));
  EXPECT_EQ(plan.row_slot, (std::vector<int32_t>{0, 0, 0, 1, 1, 1}));
}

TEST(ReferenceDispatch, ExpertMapSkipsNonLocalExperts) {
  // 6 global experts, this rank holds 1 (local 0) and 4 (local 1); plus the shared expert (2).
  const fm::MoeProblem p = problem(6, 2, 1, 2);
  const std::vector<int32_t> map = {-1, 0, -1, -1, 1, -1};
  const ref::Routing r = routing(2, {4, 1, /**/ 0, 5, /**/ 2, 4});
  const ref::DispatchPlan plan = ref::plan_dispatch(p, r, map.data(), 64);
  expect_consistent(plan, r, 3, 64);
  EXPECT_EQ(plan.num_groups, 3);
  EXPECT_EQ(plan.counts, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(plan.padded_offsets, (std::vector<int64_t>{0, 64, 128, 192}));
  // Token 1 has no local routed expert: only its shared slot has a row.
  EXPECT_EQ(plan.slot_row, (std::vector<int32_t>{1, 0, 3, /**/ -1, -1, 4, /**/ -1, 2, 5}));

  // Without a shared expert, token 1 has no row at all.
  const fm::MoeProblem no_shared = problem(6, 2, 0, 2);
  const ref::DispatchPlan plain = ref::plan_dispatch(no_shared, r, map.data(), 1);
  expect_consistent(plain, r, 2, 1);
  EXPECT_EQ(plain.slot_row, (std::vector<int32_t>{1, 0, -1, -1, -1, 2}));
}

TEST(ReferenceDispatch, RandomPlansAreConsistent) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 20; ++trial) {
    const int num_experts = 1 + static_cast<int>(rng() % 16);
    const int k = 1 + static_cast<int>(rng() % std::min(num_experts, 4));
    const int shared = static_cast<int>(rng() % 2);
    const int tile = 1 << (rng() % 7);
    std::vector<int32_t> ids(static_cast<size_t>(rng() % 50) * k);
    for (int32_t& id : ids) id = static_cast<int32_t>(rng() % num_experts);
    const ref::Routing r = routing(k, ids);
    const ref::DispatchPlan plan = ref::plan_dispatch(problem(num_experts, k, shared), r, nullptr, tile);
    expect_consistent(plan, r, k + shared, tile);
    EXPECT_EQ(plan.num_rows(), r.num_tokens * (k + shared));
  }
}

}  // namespace
