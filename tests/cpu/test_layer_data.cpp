// The seeded layer data's command-line routing names (testing/layer_data.h), shared by `fusedmoe
// run --skew` and `fusedmoe bench --skew`.
#include <gtest/gtest.h>

#include "testing/layer_data.h"

#include <cmath>
#include <string>
#include <vector>

#include "fusedmoe/presets.h"
#include "fusedmoe/reference.h"

namespace {

namespace ft = fusedmoe::testing;

TEST(LayerData, SkewNamesRoundTrip) {
  for (const ft::Skew s : {ft::Skew::kUniform, ft::Skew::kZipf, ft::Skew::kOneHot, ft::Skew::kLocal}) {
    ft::Skew back = s == ft::Skew::kUniform ? ft::Skew::kOneHot : ft::Skew::kUniform;
    ASSERT_TRUE(ft::parse_skew(ft::skew_name(s), &back)) << ft::skew_name(s);
    EXPECT_EQ(back, s);
  }
  EXPECT_STREQ(ft::skew_name(ft::Skew::kZipf), "zipf");
  ft::Skew untouched = ft::Skew::kZipf;
  EXPECT_FALSE(ft::parse_skew("Zipf", &untouched));
  EXPECT_FALSE(ft::parse_skew("", &untouched));
  EXPECT_EQ(untouched, ft::Skew::kZipf);
}

}  // namespace

namespace {

// Skew::kLocal: an expert-parallel rank's layer routed among its local experts only (vLLM's
// dsv3-ep8 figure is E32 top-8): every id the float64 router picks (grouped sigmoid with groups,
// softmax, precomputed) is local, and every local expert stays reachable.
void expect_all_local(fusedmoe::MoeProblem p, int64_t tokens) {
  p.num_tokens = p.max_tokens = tokens;
  ft::LayerData d;
  std::string why;
  ASSERT_TRUE(ft::make_layer_data(p, 7 + tokens, ft::Skew::kLocal, &d, &why, false)) << why;
  fusedmoe::ref::Routing r;
  ASSERT_TRUE(fusedmoe::ref::route(p, d.host_tensors(), &r).ok());
  std::vector<int> hits(p.num_experts, 0);
  for (const int id : r.ids) {
    ASSERT_GE(id, 0);
    ASSERT_LT(id, p.num_experts);
    EXPECT_GE(d.expert_map[id], 0) << "expert " << id << " is not local";
    ++hits[id];
  }
  int touched = 0;
  for (int e = 0; e < p.num_experts; ++e) touched += hits[e] > 0;
  // tokens * k draws over the local experts: all of them at this many tokens
  EXPECT_EQ(touched, p.local_experts());
}

TEST(LayerData, LocalSkewRoutesToLocalExperts) {
  const auto* ep = fusedmoe::find_preset("dsv3-ep8");  // grouped sigmoid + bias, 32 of 256 local
  ASSERT_NE(ep, nullptr);
  ASSERT_GE(ep->problem.num_local_experts, 0);
  expect_all_local(ep->problem, 256);
  fusedmoe::MoeProblem pre = ep->problem;
  pre.router = fusedmoe::RouterConfig::precomputed(pre.router.top_k);
  expect_all_local(pre, 256);
  // no expert map: uniform over every expert
  const auto* tp = fusedmoe::find_preset("qwen235-tp8");
  ASSERT_NE(tp, nullptr);
  expect_all_local(tp->problem, 512);
}

}  // namespace

// The layer check's distance (GPU tests, `fusedmoe run`): bf16 or fp16 bits as act_dtype says,
// non-finite outputs counted and left out, the largest finite |got - ref|.
TEST(LayerData, RelativeL2OfOutputs) {
  fusedmoe::MoeProblem p = fusedmoe::find_preset("tiny-qwen")->problem;
  const std::vector<double> ref = {1.0, -2.0, 0.5, 4.0};
  std::vector<uint16_t> got;
  for (double v : ref) got.push_back(fusedmoe::ref::float_to_bf16(static_cast<float>(v)));
  int64_t bad = -1;
  double worst = -1;
  EXPECT_EQ(ft::rel_l2_error(p, got, ref, &bad, &worst), 0.0);
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(worst, 0.0);
  got[1] = fusedmoe::ref::float_to_bf16(-1.0f);  // |error| 1 of |ref| sqrt(21.25)
  got[3] = 0x7FC0;                          // NaN: counted, not summed
  const double e = ft::rel_l2_error(p, got, ref, &bad, &worst);
  EXPECT_NEAR(e, 1.0 / std::sqrt(1.0 + 4.0 + 0.25), 1e-12);
  EXPECT_EQ(bad, 1);
  EXPECT_EQ(worst, 1.0);
  p.act_dtype = fusedmoe::DType::kFloat16;  // the same values as fp16 bits
  for (size_t i = 0; i < ref.size(); ++i) got[i] = fusedmoe::ref::float_to_fp16(static_cast<float>(ref[i]));
  EXPECT_EQ(ft::rel_l2_error(p, got, ref, &bad), 0.0);
  EXPECT_EQ(bad, 0);
  EXPECT_NEAR(ft::rel_l2_distance({1.0, 2.0}, {1.0, 1.0}), 1.0 / std::sqrt(2.0), 1e-12);
}
