// The routers of fusedmoe/router.h, in float32 exactly as the GPU router kernels
// (src/kernels/router/router.cuh) compute them: bit for bit, ids and weights.
//
// Shared with the kernels (src/kernels/common/): the scalar math (hd_math.h: expf, log1pf,
// sigmoid, sqrt-softplus built from correctly rounded operations only, so glibc's and CUDA's
// libm never enter) and the canonical order (router_common.h):
//   * softmax over the E experts: max; y = e^(x - max); 32 lane partial sums, lane
//     (e / vec) % 32 summing its experts in ascending order; the xor butterfly 16, 8, 4, 2, 1
//     (partial[l] = partial[l] + partial[l ^ d]); a division per expert. An all -inf row gives 0;
//   * the k-way softmax of kTopKSoftmax and the renormalisation sum in slot order, from 0;
//   * w = w / (sum + 1e-20), then w * routed_scaling (always, also when it is 1).
// Selection is exact: the k best canonical values (NaN -> -inf, -0 -> +0) among the eligible,
// best first, equal values to the lower index -- the result of k rounds of argmax with a strict
// '>' (computed here by one insertion pass). -inf values stay selectable; nothing twice.
// Grouped (n_group > 1): each group scores canon(top1 + top2) of its biased values (top1 alone
// for groups of one), the best topk_group groups (ties: lower group) stay, then the top-k of
// their experts.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fusedmoe/reference.h"
#include "kernels/common/hd_math.h"
#include "kernels/common/router_common.h"

namespace fusedmoe::ref {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

Status invalid(std::string message) { return {StatusCode::kInvalidArgument, std::move(message)}; }

// Row `token` of the logits, widened to float32 and sanitised (NaN -> -inf, +inf -> FLT_MAX).
void read_logits(const RouterConfig& rc, const void* logits, int64_t token, int num_experts, float* row) {
  const int64_t base = token * num_experts;
  for (int e = 0; e < num_experts; ++e) {
    const float v = rc.logits_dtype == DType::kBFloat16
                        ? hd::bf16_bits_to_float(static_cast<const uint16_t*>(logits)[base + e])
                        : static_cast<const float*>(logits)[base + e];
    row[e] = hd::sanitize_logit(v);
  }
}

// Softmax over a row of E logits in the canonical (warp) order of router_common.h. In place.
void softmax_row(float* v, int num_experts, int vec) {
  float max = kNegInf;
  for (int e = 0; e < num_experts; ++e) max = v[e] > max ? v[e] : max;
  if (max == kNegInf) {
    std::fill(v, v + num_experts, 0.f);
    return;
  }
  float partial[32] = {};
  for (int e = 0; e < num_experts; ++e) {
    v[e] = hd::expf(hd::sub(v[e], max));
    float& acc = partial[hd::router_lane_of(e, vec)];
    acc = hd::add(acc, v[e]);
  }
  for (int d = 16; d >= 1; d /= 2) {
    float next[32];
    for (int l = 0; l < 32; ++l) next[l] = hd::add(partial[l], partial[l ^ d]);
    std::copy(next, next + 32, partial);
  }
  const float sum = partial[0];
  for (int e = 0; e < num_experts; ++e) v[e] = hd::div(v[e], sum);
}

// Softmax over the k chosen values in slot order (kTopKSoftmax). In place.
void softmax_slots(std::vector<float>& v) {
  float max = kNegInf;
  for (float x : v) max = x > max ? x : max;
  if (max == kNegInf) {
    std::fill(v.begin(), v.end(), 0.f);
    return;
  }
  float sum = 0.f;
  for (float& x : v) {
    x = hd::expf(hd::sub(x, max));
    sum = hd::add(sum, x);
  }
  for (float& x : v) x = hd::div(x, sum);
}

// score(logits) of kBiasedTopK / kHash, per element or (softmax) over the row. In place.
void apply_score(ScoreFunction f, float* v, int num_experts, int vec) {
  switch (f) {
    case ScoreFunction::kSoftmax: softmax_row(v, num_experts, vec); break;
    case ScoreFunction::kSigmoid:
      for (int e = 0; e < num_experts; ++e) v[e] = hd::sigmoid(v[e]);
      break;
    case ScoreFunction::kSqrtSoftplus:
      for (int e = 0; e < num_experts; ++e) v[e] = hd::sqrt_softplus(v[e]);
      break;
  }
}

// The k best of the canonical `values` [n] among the `eligible` (all when null), best first;
// equal values go to the lower index. Returns how many were chosen (min(k, eligible count)).
// One insertion pass; the same list as k rounds of argmax with a strict '>'.
int select_top_k(const float* values, int n, int k, int* chosen, const uint8_t* eligible = nullptr) {
  float best[kMaxExperts];  // k <= kMaxExperts (topk_group may reach n_group)
  int count = 0;
  for (int i = 0; i < n; ++i) {
    if (eligible != nullptr && eligible[i] == 0) continue;
    const float x = values[i];
    if (count == k && !(x > best[k - 1])) continue;
    int pos = count < k ? count++ : k - 1;  // when full, the last one drops out
    while (pos > 0 && x > best[pos - 1]) {
      best[pos] = best[pos - 1];
      chosen[pos] = chosen[pos - 1];
      --pos;
    }
    best[pos] = x;
    chosen[pos] = i;
  }
  return count;
}

// DeepSeek-V3 group-limited selection on the canonical biased scores b [E].
void select_grouped(const std::vector<float>& b, const RouterConfig& rc, std::vector<float>& group_score,
                    std::vector<uint8_t>& eligible, int* ids) {
  const int num_experts = static_cast<int>(b.size());
  const int group_size = num_experts / rc.n_group;
  for (int g = 0; g < rc.n_group; ++g) {
    int top2[2];
    const float* members = b.data() + static_cast<size_t>(g) * group_size;
    const int n = select_top_k(members, group_size, group_size == 1 ? 1 : 2, top2);
    const float score = n == 1 ? members[top2[0]] : hd::add(members[top2[0]], members[top2[1]]);
    group_score[static_cast<size_t>(g)] = hd::canon(score);
  }
  int kept[kMaxExperts];
  const int num_kept = select_top_k(group_score.data(), rc.n_group, rc.topk_group, kept);
  std::fill(eligible.begin(), eligible.end(), uint8_t{0});
  for (int i = 0; i < num_kept; ++i)
    std::fill(eligible.begin() + kept[i] * group_size, eligible.begin() + (kept[i] + 1) * group_size, uint8_t{1});
  select_top_k(b.data(), num_experts, rc.top_k, ids, eligible.data());
}

Status check_config(const MoeProblem& p, const MoeTensors& t) {
  const RouterConfig& rc = p.router;
  const int num_experts = p.num_experts;
  if (num_experts <= 0 || num_experts > kMaxExperts)
    return invalid("num_experts (" + std::to_string(num_experts) + ") must be in [1, " + std::to_string(kMaxExperts) + "]");
  if (rc.top_k < 1 || rc.top_k > num_experts || rc.top_k > kMaxTopK)
    return invalid("top_k (" + std::to_string(rc.top_k) + ") must be in [1, min(num_experts, " +
                   std::to_string(kMaxTopK) + ")]");
  if (p.num_tokens < 0) return invalid("num_tokens must not be negative");
  if (p.num_tokens == 0) return Status::Ok();
  if (rc.logits_dtype != DType::kFloat32 && rc.logits_dtype != DType::kBFloat16)
    return invalid("router logits must be float32 or bfloat16");
  const bool needs_logits = reads_logits(rc.kind);
  if (needs_logits && t.router_logits == nullptr) return invalid("router_logits is required");
  switch (rc.kind) {
    case RouterKind::kBiasedTopK:
      if (rc.use_correction_bias && t.correction_bias == nullptr)
        return invalid("use_correction_bias is set but correction_bias is null");
      if (rc.n_group > 1) {
        if (num_experts % rc.n_group != 0) return invalid("n_group must divide num_experts");
        if (rc.topk_group < 1 || rc.topk_group > rc.n_group) return invalid("topk_group must be in [1, n_group]");
        if (rc.top_k > rc.topk_group * (num_experts / rc.n_group))
          return invalid("top_k exceeds the experts of the kept groups");
      }
      break;
    case RouterKind::kHash:
      if (t.token_ids == nullptr || t.hash_table == nullptr) return invalid("kHash needs token_ids and hash_table");
      break;
    case RouterKind::kPrecomputed:
      if (t.topk_ids == nullptr || t.topk_weights == nullptr)
        return invalid("kPrecomputed needs topk_ids and topk_weights");
      break;
    default: break;
  }
  return Status::Ok();
}

Status out_of_range_id(int64_t token, int slot, int64_t id, int num_experts) {
  return {StatusCode::kOutOfRange, "token " + std::to_string(token) + " slot " + std::to_string(slot) +
                                       ": expert id " + std::to_string(id) + " outside [0, " +
                                       std::to_string(num_experts) + ")"};
}

}  // namespace

Status route(const MoeProblem& p, const MoeTensors& t, Routing* out) {
  if (Status s = check_config(p, t); !s.ok()) return s;
  const RouterConfig& rc = p.router;
  const int num_experts = p.num_experts;
  const int k = rc.top_k;
  const int64_t num_tokens = p.num_tokens;
  const int vec = hd::router_vec_width(num_experts, rc.logits_dtype == DType::kBFloat16);

  Routing r;
  r.num_tokens = num_tokens;
  r.top_k = k;
  r.ids.assign(static_cast<size_t>(num_tokens * k), 0);
  r.weights.assign(static_cast<size_t>(num_tokens * k), 0.f);

  std::vector<float> row(static_cast<size_t>(num_experts)), b(static_cast<size_t>(num_experts));
  std::vector<float> group_score(static_cast<size_t>(std::max(rc.n_group, 1)));
  std::vector<uint8_t> eligible(static_cast<size_t>(num_experts));
  std::vector<float> w(static_cast<size_t>(k));
  int ids[kMaxTopK];

  for (int64_t tok = 0; tok < num_tokens; ++tok) {
    switch (rc.kind) {
      case RouterKind::kSoftmaxTopK: {
        read_logits(rc, t.router_logits, tok, num_experts, row.data());
        softmax_row(row.data(), num_experts, vec);  // probabilities: never NaN or -0 (canonical)
        select_top_k(row.data(), num_experts, k, ids);
        for (int j = 0; j < k; ++j) w[j] = row[ids[j]];
        break;
      }
      case RouterKind::kBiasedTopK: {
        read_logits(rc, t.router_logits, tok, num_experts, row.data());
        apply_score(rc.score, row.data(), num_experts, vec);  // s
        for (int e = 0; e < num_experts; ++e)
          b[e] = hd::canon(rc.use_correction_bias ? hd::add(row[e], t.correction_bias[e]) : row[e]);
        if (rc.n_group > 1) select_grouped(b, rc, group_score, eligible, ids);
        else select_top_k(b.data(), num_experts, k, ids);
        for (int j = 0; j < k; ++j) w[j] = row[ids[j]];  // the bias chooses, it never weighs
        break;
      }
      case RouterKind::kTopKSoftmax: {
        read_logits(rc, t.router_logits, tok, num_experts, row.data());
        for (int e = 0; e < num_experts; ++e) row[e] = hd::canon(row[e]);
        select_top_k(row.data(), num_experts, k, ids);
        for (int j = 0; j < k; ++j) w[j] = row[ids[j]];
        softmax_slots(w);  // over the k chosen, summed in slot order
        break;
      }
      case RouterKind::kSigmoidTop1: {
        read_logits(rc, t.router_logits, tok, num_experts, row.data());
        for (int e = 0; e < num_experts; ++e) row[e] = hd::canon(row[e]);
        select_top_k(row.data(), num_experts, k, ids);
        for (int j = 0; j < k; ++j) w[j] = hd::sigmoid(row[ids[j]]);
        break;
      }
      case RouterKind::kHash: {
        const int64_t token_id = t.token_ids[tok];
        if (token_id < 0 || token_id >= t.hash_vocab)
          return {StatusCode::kOutOfRange, "token " + std::to_string(tok) + ": token id " +
                                               std::to_string(token_id) + " outside the hash table [0, " +
                                               std::to_string(t.hash_vocab) + ")"};
        for (int j = 0; j < k; ++j) {
          const int32_t id = t.hash_table[token_id * k + j];
          if (id < 0 || id >= num_experts) return out_of_range_id(tok, j, id, num_experts);
          ids[j] = id;
        }
        if (t.router_logits != nullptr) {
          read_logits(rc, t.router_logits, tok, num_experts, row.data());
          apply_score(rc.score, row.data(), num_experts, vec);
          for (int j = 0; j < k; ++j) w[j] = row[ids[j]];
        } else {
          std::fill(w.begin(), w.end(), hd::div(1.0f, static_cast<float>(k)));
        }
        break;
      }
      case RouterKind::kPrecomputed: {
        for (int j = 0; j < k; ++j) {
          const int32_t id = t.topk_ids[tok * k + j];
          if (id < 0 || id >= num_experts) return out_of_range_id(tok, j, id, num_experts);
          ids[j] = id;
          w[j] = t.topk_weights[tok * k + j];
        }
        break;
      }
    }

    if (rc.renormalize) {
      float sum = 0.f;
      for (float x : w) sum = hd::add(sum, x);  // slot order
      const float denominator = hd::add(sum, hd::kRenormEpsilon);
      for (float& x : w) x = hd::div(x, denominator);
    }
    for (int j = 0; j < k; ++j) {
      r.ids[tok * k + j] = ids[j];
      r.weights[tok * k + j] = hd::mul(w[j], rc.routed_scaling);
    }
  }
  *out = std::move(r);
  return Status::Ok();
}

}  // namespace fusedmoe::ref
