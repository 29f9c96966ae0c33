// Every router of fusedmoe/router.h on hand-computed cases, its tie and non-finite rules, and
// invariants on random inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fusedmoe/reference.h"
#include "kernels/common/hd_math.h"
#include "kernels/common/router_common.h"

namespace fm = fusedmoe;
namespace ref = fusedmoe::ref;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// The inputs of one routing call; the MoeTensors view points into this object.
struct RouterInputs {
  fm::MoeProblem p;
  std::vector<float> logits;
  std::vector<uint16_t> logits_bf16;
  std::vector<float> bias;
  std::vector<int64_t> token_ids;
  std::vector<int32_t> hash_table;
  std::vector<int32_t> topk_ids;
  std::vector<float> topk_weights;

  fm::MoeTensors tensors() const {
    fm::MoeTensors t;
    if (!logits_bf16.empty()) t.router_logits = logits_bf16.data();
    else if (!logits.empty()) t.router_logits = logits.data();
    if (!bias.empty()) t.correction_bias = bias.data();
    if (!token_ids.empty()) t.token_ids = token_ids.data();
    if (!hash_table.empty()) {
      t.hash_table = hash_table.data();
      t.hash_vocab = static_cast<int64_t>(hash_table.size()) / p.top_k();
    }
    if (!topk_ids.empty()) t.topk_ids = topk_ids.data();
    if (!topk_weights.empty()) t.topk_weights = topk_weights.data();
    return t;
  }
};

RouterInputs inputs(const fm::RouterConfig& rc, int num_experts, std::vector<float> logits) {
  RouterInputs in;
  in.p.router = rc;
  in.p.num_experts = num_experts;
  in.p.num_tokens = logits.empty() ? 1 : static_cast<int64_t>(logits.size()) / num_experts;
  in.logits = std::move(logits);
  return in;
}

ref::Routing route_ok(const RouterInputs& in) {
  ref::Routing r;
  const fm::Status s = ref::route(in.p, in.tensors(), &r);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return r;
}

fm::StatusCode route_code(const RouterInputs& in) {
  ref::Routing r;
  return ref::route(in.p, in.tensors(), &r).code();
}

// The reference computes in float32 with the math shared with the GPU kernels (hd_math.h), not
// with glibc's expf: bit-exact expectations use the same functions.
float sigmoidf(float x) { return fm::hd::sigmoid(x); }

// ---------------------------------------------------------------- hand-computed cases ----

TEST(ReferenceRouter, SoftmaxTopK) {
  // softmax([1, 2, 3, 0]) = [0.08714432, 0.23688282, 0.64391426, 0.03205860]
  const std::vector<float> logits = {1, 2, 3, 0};
  ref::Routing r = route_ok(inputs(fm::RouterConfig::softmax_topk(2, false), 4, logits));
  EXPECT_EQ(r.ids, (std::vector<int32_t>{2, 1}));
  EXPECT_FLOAT_EQ(r.weights[0], 0.6439142598879724f);
  EXPECT_FLOAT_EQ(r.weights[1], 0.23688281808991013f);

  // Renormalised over the two: sigmoid(1), sigmoid(-1); then scaled.
  fm::RouterConfig rc = fm::RouterConfig::softmax_topk(2, true);
  r = route_ok(inputs(rc, 4, logits));
  EXPECT_FLOAT_EQ(r.weights[0], 0.7310585786300049f);
  EXPECT_FLOAT_EQ(r.weights[1], 0.2689414213699951f);
  rc.routed_scaling = 2.f;
  r = route_ok(inputs(rc, 4, logits));
  EXPECT_FLOAT_EQ(r.weights[0], 2 * 0.7310585786300049f);
  EXPECT_FLOAT_EQ(r.weights[1], 2 * 0.2689414213699951f);
}

TEST(ReferenceRouter, SoftmaxIsComputedAsDocumented) {
  // max, hd::expf(x - max), the warp-order sum, divide: bit for bit in float32. With E = 6 each
  // expert is its own lane (vec 1): partial[l] = e[l] for l < 6, 0 above. The xor butterfly:
  // d = 16, 8 add zeros; d = 4: lane 0 = e0+e4, lane 1 = e1+e5, lanes 2, 3 = e2, e3; d = 2:
  // lane 0 = (e0+e4) + e2, lane 1 = (e1+e5) + e3; d = 1: lane 0 = that + that.
  const std::vector<float> logits = {0.3f, -1.7f, 2.2f, 0.9f, 1.1f, -0.4f};
  const ref::Routing r = route_ok(inputs(fm::RouterConfig::softmax_topk(6, false), 6, logits));
  float e[6], partial[32] = {};
  for (int i = 0; i < 6; ++i) {
    e[i] = fm::hd::expf(logits[i] - 2.2f);
    partial[i] = e[i];
  }
  for (int d = 16; d >= 1; d /= 2) {
    float next[32];
    for (int l = 0; l < 32; ++l) next[l] = partial[l] + partial[l ^ d];
    std::copy(next, next + 32, partial);
  }
  const float sum = partial[0];
  EXPECT_EQ(sum, ((e[0] + e[4]) + e[2]) + ((e[1] + e[5]) + e[3]));
  EXPECT_EQ(r.ids, (std::vector<int32_t>{2, 4, 3, 0, 5, 1}));
  for (int j = 0; j < 6; ++j) EXPECT_EQ(r.weights[j], e[r.ids[j]] / sum) << "slot " << j;
}

TEST(ReferenceRouter, SoftmaxSumFollowsTheLaneLayout) {
  // E = 256 fp32 -> vec 4: lane l holds experts 4l..4l+3 and 128+4l..128+4l+3 and sums them in
  // ascending order; bf16 -> vec 8: lane l holds 8l..8l+7. Check the layout rule and that the
  // reference's probabilities use exactly that order (the sum of p over the lanes is the order-
  // dependent quantity; recompute it here independently).
  EXPECT_EQ(fm::hd::router_vec_width(256, false), 4);
  EXPECT_EQ(fm::hd::router_vec_width(256, true), 8);
  EXPECT_EQ(fm::hd::router_vec_width(160, true), 4);
  EXPECT_EQ(fm::hd::router_vec_width(257, true), 1);
  EXPECT_EQ(fm::hd::router_vec_width(8, false), 1);
  EXPECT_EQ(fm::hd::router_vec_width(64, true), 2);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 3.f);
  for (const int num_experts : {256, 160, 257, 1024}) {
    for (const bool bf16 : {false, true}) {
      std::vector<float> logits(num_experts);
      for (float& v : logits) v = nd(rng);
      RouterInputs in = inputs(fm::RouterConfig::softmax_topk(1, false), num_experts, logits);
      if (bf16) {
        in.p.router.logits_dtype = fm::DType::kBFloat16;
        for (float v : logits) in.logits_bf16.push_back(ref::float_to_bf16(v));
        for (float& v : logits) v = ref::bf16_to_float(ref::float_to_bf16(v));
      }
      const int vec = fm::hd::router_vec_width(num_experts, bf16);
      float max = -INFINITY;
      for (float v : logits) max = std::max(max, v);
      float partial[32] = {};
      std::vector<float> y(num_experts);
      for (int base = 0; base < num_experts; base += 32 * vec)  // lane l: chunks base + l*vec
        for (int l = 0; l < 32; ++l)
          for (int c = 0; c < vec && base + l * vec + c < num_experts; ++c) {
            const int e = base + l * vec + c;
            y[e] = fm::hd::expf(logits[e] - max);
            partial[l] += y[e];
          }
      for (int d = 16; d >= 1; d /= 2) {
        float next[32];
        for (int l = 0; l < 32; ++l) next[l] = partial[l] + partial[l ^ d];
        std::copy(next, next + 32, partial);
      }
      const ref::Routing r = route_ok(in);
      EXPECT_EQ(r.weights[0], y[r.ids[0]] / partial[0]) << "E=" << num_experts << " bf16=" << bf16;
    }
  }
}

// DeepSeek-V3: E = 8 in 4 groups of 2, keep 2 groups, k = 2, sigmoid scores, scaling 2.5.
//   logits  2    -1  | 0    1    | -2   3    | 0.5  -0.5
//   s      .881 .269 | .5   .731 | .119 .953 | .622 .378
TEST(ReferenceRouter, DeepSeekV3GroupedWithBias) {
  const std::vector<float> logits = {2, -1, 0, 1, -2, 3, 0.5f, -0.5f};
  RouterInputs in = inputs(fm::RouterConfig::deepseek_v3(2, 4, 2, 2.5f), 8, logits);

  // Zero bias: groups {2,3} (1.231) and {0,1} (1.150) stay; expert 5, the best single score,
  // is dropped with its group (1.072). Top-2 of the kept: 0 and 3.
  in.bias.assign(8, 0.f);
  ref::Routing r = route_ok(in);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{0, 3}));
  EXPECT_NEAR(r.weights[0], 1.3661227579017519, 1e-6);
  EXPECT_NEAR(r.weights[1], 1.1338772420982481, 1e-6);

  // +0.5 on experts 6 and 7: group {6,7} scores 2.0 and wins, group {2,3} stays second, and the
  // biased top-2 are 6 (1.12) and 7 (0.88) over 3 (0.73). The weights are the UNBIASED
  // sigmoid(0.5), sigmoid(-0.5), renormalised (they sum to 1) and scaled.
  in.bias = {0, 0, 0, 0, 0, 0, 0.5f, 0.5f};
  r = route_ok(in);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{6, 7}));
  EXPECT_NEAR(r.weights[0], 1.5561483280046364, 1e-6);
  EXPECT_NEAR(r.weights[1], 0.9438516719953636, 1e-6);

  // Without renormalisation the weights are exactly the unbiased scores (times the scaling).
  in.p.router.renormalize = false;
  in.p.router.routed_scaling = 1.f;
  r = route_ok(in);
  EXPECT_EQ(r.weights[0], sigmoidf(0.5f));
  EXPECT_EQ(r.weights[1], sigmoidf(-0.5f));
}

TEST(ReferenceRouter, GroupScoreIsTheSumOfTheTopTwo) {
  // Groups of 3: {9, 0, 0} has the best single score but {5, 5, 0} the best top-2 sum; the
  // third member must not count ({4, 4, 4} would win on a full sum). Scores are the biases.
  fm::RouterConfig rc = fm::RouterConfig::deepseek_v3(1, 3, 1, 1.f);
  rc.renormalize = false;
  RouterInputs in = inputs(rc, 9, std::vector<float>(9, 0.f));
  in.bias = {9, 0, 0, /**/ 5, 5, 0, /**/ 4, 4, 4};
  ref::Routing r = route_ok(in);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{3}));  // best group {3,4,5}; tie 3 vs 4 -> 3
  EXPECT_EQ(r.weights[0], 0.5f);                 // sigmoid(0), bias ignored
}

TEST(ReferenceRouter, GroupsOfOneExpert) {
  // n_group == E: each group's score is its single expert's; the result is a plain top-k.
  const std::vector<float> logits = {0.1f, 0.7f, -0.3f, 0.5f};
  fm::RouterConfig grouped = fm::RouterConfig::deepseek_v3(2, 4, 2, 1.f);
  fm::RouterConfig flat = fm::RouterConfig::deepseek_v3(2, 1, 1, 1.f);
  RouterInputs a = inputs(grouped, 4, logits), b = inputs(flat, 4, logits);
  a.bias = b.bias = {0.f, -1.f, 0.f, 0.f};
  const ref::Routing ra = route_ok(a), rb = route_ok(b);
  EXPECT_EQ(ra.ids, (std::vector<int32_t>{3, 0}));
  EXPECT_EQ(ra.ids, rb.ids);
  EXPECT_EQ(ra.weights, rb.weights);
}

TEST(ReferenceRouter, GroupTiesKeepTheLowerGroup) {
  // All four groups score the same: groups 0 and 1 stay, so experts 0..3 are the candidates.
  fm::RouterConfig rc = fm::RouterConfig::deepseek_v3(2, 4, 2, 1.f);
  RouterInputs in = inputs(rc, 8, {0, 1, 1, 0, 0, 1, 1, 0});
  in.bias.assign(8, 0.f);
  EXPECT_EQ(route_ok(in).ids, (std::vector<int32_t>{1, 2}));
}

TEST(ReferenceRouter, DeepSeekV4SqrtSoftplus) {
  // s = sqrt(softplus([0, 1, -1, 2])) = [0.83255, 1.14598, 0.55970, 1.45840]; bias +1 on
  // expert 2 makes it the first choice; weights are s[2], s[3] renormalised, times 1.5.
  RouterInputs in = inputs(fm::RouterConfig::deepseek_v4(2, 1.5f), 4, {0, 1, -1, 2});
  in.bias = {0, 0, 1, 0};
  const ref::Routing r = route_ok(in);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{2, 3}));
  EXPECT_NEAR(r.weights[0], 0.4160091358481886, 1e-6);
  EXPECT_NEAR(r.weights[1], 1.0839908641518115, 1e-6);

  // Unnormalised: the scores themselves, finite even where expf would overflow.
  in.p.router.renormalize = false;
  in.p.router.routed_scaling = 1.f;
  in.logits = {0, 1, 500, 2};
  in.bias = {0, 0, 0, 0};
  const ref::Routing big = route_ok(in);
  EXPECT_EQ(big.ids, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(big.weights[0], std::sqrt(500.f));
  EXPECT_EQ(big.weights[1], fm::hd::sqrt_softplus(2.f));
  EXPECT_EQ(big.weights[1], std::sqrt(fm::hd::log1pf(fm::hd::expf(2.f))));
}

TEST(ReferenceRouter, GptOssTopKThenSoftmax) {
  // ids = top-2 logits = [1, 4]; weights = softmax([3, 2.5]).
  const ref::Routing r = route_ok(inputs(fm::RouterConfig::gpt_oss(2), 5, {1, 3, 2, 0, 2.5f}));
  EXPECT_EQ(r.ids, (std::vector<int32_t>{1, 4}));
  EXPECT_FLOAT_EQ(r.weights[0], 0.6224593312018546f);
  EXPECT_FLOAT_EQ(r.weights[1], 0.37754066879814546f);
}

TEST(ReferenceRouter, Llama4SigmoidTop1) {
  const fm::RouterConfig rc = fm::RouterConfig::llama4();
  EXPECT_TRUE(rc.weight_on_input);
  const ref::Routing r = route_ok(inputs(rc, 4, {0.5f, -1, 2, 1, /**/ -3, -2, -4, -5}));
  EXPECT_EQ(r.ids, (std::vector<int32_t>{2, 1}));
  EXPECT_EQ(r.weights[0], sigmoidf(2.f));
  EXPECT_FLOAT_EQ(r.weights[1], 0.11920292202211755f);  // sigmoid(-2)
}

TEST(ReferenceRouter, HashFromTable) {
  const fm::RouterConfig rc = fm::RouterConfig::hash(2, fm::ScoreFunction::kSigmoid, 1.f);
  RouterInputs in = inputs(rc, 4, {0.5f, -1, 2, 1, /**/ 0.5f, -1, 2, 1});
  in.hash_table = {0, 1, /**/ 2, 3, /**/ 3, 0};  // vocabulary of 3
  in.token_ids = {2, 0};
  // Token 0 has id 2 -> experts 3, 0, weighted by sigmoid(1), sigmoid(0.5) renormalised.
  ref::Routing r = route_ok(in);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{3, 0, 0, 1}));
  EXPECT_NEAR(r.weights[0], 0.5401174031903431, 1e-6);
  EXPECT_NEAR(r.weights[1], 0.45988259680965693, 1e-6);
  EXPECT_NEAR(r.weights[2], 0.698293477323133, 1e-6);
  EXPECT_NEAR(r.weights[3], 0.30170652267686704, 1e-6);

  // Without logits every slot weighs 1/k (renormalised, then scaled).
  in.logits.clear();
  in.p.router.routed_scaling = 3.f;
  r = route_ok(in);
  for (float w : r.weights) EXPECT_FLOAT_EQ(w, 1.5f);

  in.token_ids = {2, 3};  // token id outside the table
  EXPECT_EQ(route_code(in), fm::StatusCode::kOutOfRange);
  in.token_ids = {2, 0};
  in.hash_table[5] = 4;  // expert id >= E in the table
  EXPECT_EQ(route_code(in), fm::StatusCode::kOutOfRange);
}

TEST(ReferenceRouter, Precomputed) {
  RouterInputs in = inputs(fm::RouterConfig::precomputed(2), 5, {});
  in.p.num_tokens = 2;
  in.topk_ids = {4, 1, 0, 3};
  in.topk_weights = {0.75f, 0.25f, 0.4f, 0.1f};
  ref::Routing r = route_ok(in);
  EXPECT_EQ(r.ids, in.topk_ids);
  EXPECT_EQ(r.weights, in.topk_weights);

  in.p.router.renormalize = true;  // the generic post-processing applies too
  in.p.router.routed_scaling = 2.f;
  r = route_ok(in);
  EXPECT_FLOAT_EQ(r.weights[2], 1.6f);
  EXPECT_FLOAT_EQ(r.weights[3], 0.4f);

  in.topk_ids = {4, 1, 0, 5};  // id == E
  EXPECT_EQ(route_code(in), fm::StatusCode::kOutOfRange);
  in.topk_ids = {4, -1, 0, 3};  // negative id
  EXPECT_EQ(route_code(in), fm::StatusCode::kOutOfRange);
}

TEST(ReferenceRouter, InvalidConfigurations) {
  EXPECT_EQ(route_code(inputs(fm::RouterConfig::softmax_topk(5, false), 4, {0, 0, 0, 0})),
            fm::StatusCode::kInvalidArgument);  // k > E
  RouterInputs no_bias = inputs(fm::RouterConfig::deepseek_v3(2, 2, 1, 1.f), 4, {0, 0, 0, 0});
  EXPECT_EQ(route_code(no_bias), fm::StatusCode::kInvalidArgument);  // bias required but missing
  RouterInputs groups = inputs(fm::RouterConfig::deepseek_v3(2, 3, 1, 1.f), 4, {0, 0, 0, 0});
  groups.bias.assign(4, 0.f);
  EXPECT_EQ(route_code(groups), fm::StatusCode::kInvalidArgument);  // 3 groups do not divide 4
  RouterInputs too_few = inputs(fm::RouterConfig::deepseek_v3(3, 4, 1, 1.f), 4, {0, 0, 0, 0});
  too_few.bias.assign(4, 0.f);
  EXPECT_EQ(route_code(too_few), fm::StatusCode::kInvalidArgument);  // k = 3 > 1 kept expert
  RouterInputs no_logits = inputs(fm::RouterConfig::softmax_topk(1, false), 4, {});
  EXPECT_EQ(route_code(no_logits), fm::StatusCode::kInvalidArgument);
  RouterInputs empty = inputs(fm::RouterConfig::softmax_topk(1, false), 4, {});
  empty.p.num_tokens = 0;
  const ref::Routing r = route_ok(empty);  // nothing to route is fine
  EXPECT_TRUE(r.ids.empty());
}

// ---------------------------------------------------------------- ties and non-finite ----

TEST(ReferenceRouter, TiesGoToTheLowerIndex) {
  EXPECT_EQ(route_ok(inputs(fm::RouterConfig::softmax_topk(2, false), 4, {1, 1, 1, 1})).ids,
            (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(route_ok(inputs(fm::RouterConfig::softmax_topk(2, false), 4, {0, 5, 5, 5})).ids,
            (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(route_ok(inputs(fm::RouterConfig::gpt_oss(3), 5, {2, 7, 2, 7, 2})).ids,
            (std::vector<int32_t>{1, 3, 0}));
  EXPECT_EQ(route_ok(inputs(fm::RouterConfig::llama4(), 3, {-1, 4, 4})).ids, (std::vector<int32_t>{1}));
  RouterInputs biased = inputs(fm::RouterConfig::sigmoid_bias(2, 1.f), 4, {3, 1, 1, 1});
  biased.bias = {-10, 0, 0, 0};  // expert 0 out; 1, 2, 3 tie
  EXPECT_EQ(route_ok(biased).ids, (std::vector<int32_t>{1, 2}));
}

TEST(ReferenceRouter, NonFiniteLogits) {
  // NaN reads as -inf and +inf as FLT_MAX: softmax puts all mass on expert 2; the next pick is
  // a tie at probability 0, so the lowest index.
  ref::Routing r = route_ok(inputs(fm::RouterConfig::softmax_topk(2, false), 4, {kNaN, 1, kInf, -kInf}));
  EXPECT_EQ(r.ids, (std::vector<int32_t>{2, 0}));
  EXPECT_EQ(r.weights, (std::vector<float>{1.f, 0.f}));

  // A token whose logits are all NaN / -inf gets probability 0 everywhere (no NaN), so it
  // picks the lowest ids with weight 0, also after renormalisation.
  r = route_ok(inputs(fm::RouterConfig::softmax_topk(2, true), 3, {kNaN, -kInf, kNaN}));
  EXPECT_EQ(r.ids, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(r.weights, (std::vector<float>{0.f, 0.f}));
  r = route_ok(inputs(fm::RouterConfig::gpt_oss(2), 3, {kNaN, kNaN, kNaN}));
  EXPECT_EQ(r.weights, (std::vector<float>{0.f, 0.f}));

  // Sigmoid of FLT_MAX is 1, of a NaN (-inf) 0.
  r = route_ok(inputs(fm::RouterConfig::llama4(), 3, {kNaN, kInf, 0, /**/ kNaN, kNaN, kNaN}));
  EXPECT_EQ(r.ids, (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(r.weights, (std::vector<float>{1.f, 0.f}));

  // Two +inf logits tie (both FLT_MAX): the lower index first, half the mass each.
  r = route_ok(inputs(fm::RouterConfig::softmax_topk(2, false), 3, {0, kInf, kInf}));
  EXPECT_EQ(r.ids, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(r.weights, (std::vector<float>{0.5f, 0.5f}));

  // The same through bf16 logits (0x7FC0 = NaN, 0x7F80 = +inf).
  RouterInputs bf = inputs(fm::RouterConfig::softmax_topk(2, false), 4, {});
  bf.p.num_tokens = 1;
  bf.p.router.logits_dtype = fm::DType::kBFloat16;
  bf.logits_bf16 = {0x7FC0, ref::float_to_bf16(1.f), 0x7F80, 0xFF80};
  r = route_ok(bf);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{2, 0}));
  EXPECT_EQ(r.weights, (std::vector<float>{1.f, 0.f}));
}

TEST(ReferenceRouter, Bf16LogitsAreWidened) {
  const std::vector<float> f = {0.3f, -1.25f, 2.5f, 0.75f};
  RouterInputs a = inputs(fm::RouterConfig::softmax_topk(2, true), 4, f);
  RouterInputs b = a;
  b.p.router.logits_dtype = fm::DType::kBFloat16;
  for (float& v : a.logits) v = ref::bf16_to_float(ref::float_to_bf16(v));
  for (float v : f) b.logits_bf16.push_back(ref::float_to_bf16(v));
  const ref::Routing ra = route_ok(a), rb = route_ok(b);
  EXPECT_EQ(ra.ids, rb.ids);
  EXPECT_EQ(ra.weights, rb.weights);
}

// ---------------------------------------------------------------- shared float32 math ----
// hd_math.h is what both the CPU reference and the GPU kernels compute with; its accuracy against
// double precision over dense sweeps of the float line.

// |f - d| in units of the float spacing at d (d != 0 finite).
double ulp_error(float f, double d) {
  const double ad = std::fabs(d);
  int exponent = 0;
  std::frexp(ad, &exponent);  // ad = m * 2^exponent, m in [0.5, 1)
  const double spacing = std::ldexp(1.0, std::max(exponent - 24, -149));
  return std::fabs(static_cast<double>(f) - d) / spacing;
}

// Every `stride`-th float bit pattern from lo to hi (both of one sign, lo <= hi in value).
template <class F>
void sweep(float lo, float hi, uint32_t stride, F&& f) {
  for (float x = lo; x <= hi;) {
    f(x);
    const uint32_t u = std::bit_cast<uint32_t>(x);
    const uint32_t next = x >= 0.f ? u + stride : (u >= 0x80000000u + stride ? u - stride : 0u);
    const float nx = std::bit_cast<float>(next);
    if (!(nx > x)) break;
    x = nx;
  }
}

TEST(HdMath, ExpfIsFaithful) {
  double worst = 0;
  float worst_x = 0;
  auto check = [&](float x) {
    const double d = std::exp(static_cast<double>(x));
    if (d < 1e-45 || d > 3.4e38) return;
    const double e = ulp_error(fm::hd::expf(x), d);
    if (e > worst) worst = e, worst_x = x;
  };
  sweep(-103.9f, -0.f, 37, check);
  sweep(0.f, 88.72f, 37, check);
  EXPECT_LT(worst, 1.0) << "x = " << worst_x;  // < 1 ulp everywhere, subnormal results included
  std::printf("hd::expf max %.3f ulp (x=%g)\n", worst, worst_x);
  EXPECT_EQ(fm::hd::expf(0.f), 1.f);
  EXPECT_EQ(fm::hd::expf(-0.f), 1.f);
  EXPECT_EQ(fm::hd::expf(-kInf), 0.f);
  EXPECT_EQ(fm::hd::expf(kInf), kInf);
  EXPECT_EQ(fm::hd::expf(89.f), kInf);
  EXPECT_EQ(fm::hd::expf(-105.f), 0.f);
  // The clamp's bounds give the overflow and underflow results themselves (expf selects only NaN):
  EXPECT_EQ(fm::hd::expf(88.75f), kInf);
  EXPECT_EQ(fm::hd::expf(-104.f), 0.f);
  EXPECT_EQ(fm::hd::expf(FLT_MAX), kInf);
  EXPECT_EQ(fm::hd::expf(-FLT_MAX), 0.f);
  EXPECT_EQ(fm::hd::expf(std::nextafter(88.75f, 100.f)), kInf);
  EXPECT_EQ(fm::hd::expf(std::nextafter(-104.f, -200.f)), 0.f);
  EXPECT_TRUE(std::isnan(fm::hd::expf(kNaN)));
  EXPECT_EQ(fm::hd::expf(88.7f), std::exp(88.7f));  // near overflow: 2^64 * 2^64 scaling
}

TEST(HdMath, Log1pfIsFaithful) {
  double worst = 0;
  float worst_x = 0;
  auto check = [&](float x) {
    const double e = ulp_error(fm::hd::log1pf(x), std::log1p(static_cast<double>(x)));
    if (e > worst) worst = e, worst_x = x;
  };
  sweep(1e-30f, 1e30f, 29, check);
  sweep(-0.999f, -1e-30f, 29, check);
  EXPECT_LT(worst, 1.0) << "x = " << worst_x;
  std::printf("hd::log1pf max %.3f ulp (x=%g)\n", worst, worst_x);
  EXPECT_EQ(fm::hd::log1pf(0.f), 0.f);
  EXPECT_EQ(fm::hd::log1pf(kInf), kInf);
  EXPECT_EQ(fm::hd::log1pf(-1.f), -kInf);
  EXPECT_TRUE(std::isnan(fm::hd::log1pf(-2.f)));
}

TEST(HdMath, SigmoidAndSqrtSoftplusAreAccurate) {
  double worst_sigmoid = 0, worst_ssp = 0;
  float worst_sigmoid_x = 0, worst_ssp_x = 0;
  auto check = [&](float x) {
    const double xd = x;
    if (x > -87.f) {  // below, e^-x overflows float32 and sigmoid is 0 (as 1 / (1 + expf(-x)) is)
      const double e = ulp_error(fm::hd::sigmoid(x), 1.0 / (1.0 + std::exp(-xd)));
      if (e > worst_sigmoid) worst_sigmoid = e, worst_sigmoid_x = x;
    }
    // Below -87 e^x is subnormal in float32 (0 below -104), as in PyTorch's log1p(exp(x)): the
    // score is then less accurate, down to 0; only the normal range is held to 3 ulp.
    const double ssp = xd > 20.0 ? std::sqrt(xd) : std::sqrt(std::log1p(std::exp(xd)));
    if (x > -87.f) {
      const double e = ulp_error(fm::hd::sqrt_softplus(x), ssp);
      if (e > worst_ssp) worst_ssp = e, worst_ssp_x = x;
    }
  };
  sweep(-110.f, -0.f, 41, check);
  sweep(0.f, 110.f, 41, check);
  // 1 / (1 + e^-x): expf's < 1 ulp, the rounding of 1 + e and of the division add up to ~2.5 ulp.
  EXPECT_LE(worst_sigmoid, 3.0) << "x = " << worst_sigmoid_x;
  EXPECT_LE(worst_ssp, 3.0) << "x = " << worst_ssp_x;
  std::printf("hd::sigmoid max %.3f ulp (x=%g), hd::sqrt_softplus max %.3f ulp (x=%g)\n", worst_sigmoid,
              worst_sigmoid_x, worst_ssp, worst_ssp_x);
  EXPECT_EQ(fm::hd::sigmoid(-kInf), 0.f);
  EXPECT_EQ(fm::hd::sigmoid(FLT_MAX), 1.f);
  EXPECT_EQ(fm::hd::sigmoid(0.f), 0.5f);
  EXPECT_EQ(fm::hd::sqrt_softplus(-kInf), 0.f);
  EXPECT_EQ(fm::hd::sqrt_softplus(FLT_MAX), std::sqrt(FLT_MAX));
  EXPECT_EQ(fm::hd::sqrt_softplus(500.f), std::sqrt(500.f));
}

TEST(HdMath, CanonicalKeysOrderLikeFloats) {
  const std::vector<float> v = {-kInf, -FLT_MAX, -1.f, -1e-40f, 0.f, 1e-45f, 1e-40f, 0.5f, 1.f, FLT_MAX, kInf};
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(fm::hd::from_key(fm::hd::to_key(v[i])), v[i]);
    EXPECT_GT(fm::hd::to_key(v[i]), 0u);
    for (size_t j = 0; j < v.size(); ++j)
      EXPECT_EQ(fm::hd::to_key(v[i]) > fm::hd::to_key(v[j]), v[i] > v[j]) << v[i] << " vs " << v[j];
  }
  EXPECT_EQ(fm::hd::canon(-0.f), 0.f);
  EXPECT_FALSE(std::signbit(fm::hd::canon(-0.f)));
  EXPECT_EQ(fm::hd::canon(kNaN), -kInf);
  EXPECT_EQ(fm::hd::to_key(-kInf), 0x007fffffu);
}

// ---------------------------------------------------------------- invariants ----

struct Seeded {
  uint32_t seed = std::random_device{}();
  std::mt19937 rng{seed};
  std::string trace() const { return "seed=" + std::to_string(seed); }
};

TEST(ReferenceRouter, RenormalisedWeightsSumToTheScaling) {
  Seeded s;
  SCOPED_TRACE(s.trace());
  std::normal_distribution<float> nd(0.f, 2.f);
  const int num_experts = 64, num_tokens = 50;
  const std::vector<fm::RouterConfig> configs = {
      fm::RouterConfig::softmax_topk(8, true),       fm::RouterConfig::deepseek_v3(8, 8, 4, 2.5f),
      fm::RouterConfig::deepseek_v4(6, 1.5f),        fm::RouterConfig::sigmoid_bias(8, 2.827f),
      fm::RouterConfig::hash(6, fm::ScoreFunction::kSqrtSoftplus, 1.5f), fm::RouterConfig::gpt_oss(4)};
  for (const fm::RouterConfig& rc : configs) {
    SCOPED_TRACE(fm::to_string(rc.kind));
    std::vector<float> logits(num_experts * num_tokens);
    for (float& v : logits) v = nd(s.rng);
    RouterInputs in = inputs(rc, num_experts, logits);
    in.bias.resize(num_experts);
    for (float& v : in.bias) v = 0.1f * nd(s.rng);
    in.hash_table.resize(100 * rc.top_k);
    for (int32_t& id : in.hash_table) id = static_cast<int32_t>(s.rng() % num_experts);
    for (int t = 0; t < num_tokens; ++t) in.token_ids.push_back(static_cast<int64_t>(s.rng() % 100));
    const ref::Routing r = route_ok(in);
    const float expected_sum = rc.renormalize ? rc.routed_scaling : 1.f;  // GPT-OSS: a softmax sums to 1
    for (int t = 0; t < num_tokens; ++t) {
      double sum = 0;
      for (int j = 0; j < rc.top_k; ++j) sum += r.weights[t * rc.top_k + j];
      ASSERT_NEAR(sum, expected_sum, 1e-6 * expected_sum) << "token " << t;
    }
  }
}

TEST(ReferenceRouter, BiasedWeightsComeFromUnbiasedScores) {
  Seeded s;
  SCOPED_TRACE(s.trace());
  std::normal_distribution<float> nd(0.f, 1.f);
  const int num_experts = 32, num_tokens = 40, k = 6;
  for (int n_group : {1, 4}) {
    SCOPED_TRACE("n_group=" + std::to_string(n_group));
    fm::RouterConfig rc = fm::RouterConfig::deepseek_v3(k, n_group, n_group == 1 ? 1 : 2, 1.f);
    rc.renormalize = false;
    std::vector<float> logits(num_experts * num_tokens);
    for (float& v : logits) v = nd(s.rng);
    RouterInputs in = inputs(rc, num_experts, logits);
    in.bias.resize(num_experts);
    for (float& v : in.bias) v = nd(s.rng);  // large enough to reorder the choice
    const ref::Routing r = route_ok(in);
    for (int t = 0; t < num_tokens; ++t) {
      std::vector<bool> chosen(num_experts, false);
      float worst_chosen = FLT_MAX;
      for (int j = 0; j < k; ++j) {
        const int id = r.ids[t * k + j];
        ASSERT_FALSE(chosen[id]) << "expert chosen twice";
        chosen[id] = true;
        const float score = sigmoidf(logits[t * num_experts + id]);
        ASSERT_EQ(r.weights[t * k + j], score) << "token " << t << " slot " << j;
        const float biased = score + in.bias[id];
        worst_chosen = std::min(worst_chosen, biased);
        if (j > 0) {  // best first
          const int prev = r.ids[t * k + j - 1];
          ASSERT_GE(sigmoidf(logits[t * num_experts + prev]) + in.bias[prev], biased);
        }
      }
      if (n_group == 1) {  // without groups every unchosen expert has a lower-or-equal biased score
        for (int e = 0; e < num_experts; ++e) {
          if (chosen[e]) continue;
          ASSERT_LE(sigmoidf(logits[t * num_experts + e]) + in.bias[e], worst_chosen) << "expert " << e;
        }
      }
    }
  }
}

}  // namespace
