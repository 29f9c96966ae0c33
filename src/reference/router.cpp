// The routers of fusedmoe/router.h, in float32 as the GPU router kernels compute them.
//
// Per element: scores with expf / log1pf / sqrtf; softmax as max, then expf(x - max), then a
// sum in ascending expert order (the k-way softmax of kTopKSoftmax sums in slot order), then a
// division. Selection is exact: k rounds of argmax over the not-yet-chosen candidates with a
// strict '>' comparison, so equal scores go to the lower expert index.
#include <cfloat>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fusedmoe/reference.h"

namespace fusedmoe::ref {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kRenormEpsilon = 1e-20f;
// Above this, softplus(x) == x in float32 (PyTorch's threshold); it also keeps expf from
// overflowing to inf for large logits.
constexpr float kSoftplusThreshold = 20.f;

Status invalid(std::string message) { return {StatusCode::kInvalidArgument, std::move(message)}; }

// Non-finite logits are defined behaviour (router.h): NaN reads as -inf, +inf as FLT_MAX.
float sanitize_logit(float x) {
  if (std::isnan(x)) return kNegInf;
  if (x == std::numeric_limits<float>::infinity()) return FLT_MAX;
  return x;
}

std::vector<float> read_logits(const RouterConfig& rc, const void* logits, int64_t token, int num_experts) {
  std::vector<float> row(static_cast<size_t>(num_experts));
  const int64_t base = token * num_experts;
  for (int e = 0; e < num_experts; ++e) {
    const float v = rc.logits_dtype == DType::kBFloat16
                        ? bf16_to_float(static_cast<const uint16_t*>(logits)[base + e])
                        : static_cast<const float*>(logits)[base + e];
    row[static_cast<size_t>(e)] = sanitize_logit(v);
  }
  return row;
}

float sigmoidf(float x) { return 1.0f / (1.0f + std::exp(-x)); }

float sqrt_softplusf(float x) {
  const float softplus = x > kSoftplusThreshold ? x : std::log1p(std::exp(x));
  return std::sqrt(softplus);
}

// In place. A row that is all -inf has no maximum to subtract: its probabilities are 0.
void softmax_inplace(std::vector<float>& v) {
  float max = kNegInf;
  for (float x : v) max = x > max ? x : max;
  if (max == kNegInf) {
    std::fill(v.begin(), v.end(), 0.f);
    return;
  }
  float sum = 0.f;
  for (float& x : v) {
    x = std::exp(x - max);
    sum += x;
  }
  for (float& x : v) x = x / sum;
}

// score(logits) of kBiasedTopK / kHash, per element or (softmax) over the row.
std::vector<float> apply_score(ScoreFunction f, std::vector<float> logits) {
  switch (f) {
    case ScoreFunction::kSoftmax: softmax_inplace(logits); break;
    case ScoreFunction::kSigmoid:
      for (float& x : logits) x = sigmoidf(x);
      break;
    case ScoreFunction::kSqrtSoftplus:
      for (float& x : logits) x = sqrt_softplusf(x);
      break;
  }
  return logits;
}

// The k best of `values` among the `eligible` candidates (all when empty), best first; equal
// values go to the lower index. Assumes at least k eligible candidates.
std::vector<int> select_top_k(const std::vector<float>& values, int k, std::vector<bool> eligible = {}) {
  if (eligible.empty()) eligible.assign(values.size(), true);
  std::vector<int> chosen;
  chosen.reserve(static_cast<size_t>(k));
  for (int round = 0; round < k; ++round) {
    int best = -1;
    for (size_t i = 0; i < values.size(); ++i) {
      if (!eligible[i]) continue;
      if (best < 0 || values[i] > values[static_cast<size_t>(best)]) best = static_cast<int>(i);
    }
    if (best < 0) break;
    eligible[static_cast<size_t>(best)] = false;
    chosen.push_back(best);
  }
  return chosen;
}

// DeepSeek-V3 group-limited selection on the biased scores b.
std::vector<int> select_grouped(const std::vector<float>& b, const RouterConfig& rc) {
  const int group_size = static_cast<int>(b.size()) / rc.n_group;
  std::vector<float> group_score(static_cast<size_t>(rc.n_group));
  for (int g = 0; g < rc.n_group; ++g) {
    const std::vector<float> members(b.begin() + g * group_size, b.begin() + (g + 1) * group_size);
    const std::vector<int> top2 = select_top_k(members, group_size == 1 ? 1 : 2);
    float score = members[static_cast<size_t>(top2[0])];
    if (top2.size() == 2) score = score + members[static_cast<size_t>(top2[1])];
    group_score[static_cast<size_t>(g)] = score;
  }
  std::vector<bool> eligible(b.size(), false);
  for (int g : select_top_k(group_score, rc.topk_group))
    std::fill(eligible.begin() + g * group_size, eligible.begin() + (g + 1) * group_size, true);
  return select_top_k(b, rc.top_k, std::move(eligible));
}

Status check_config(const MoeProblem& p, const MoeTensors& t) {
  const RouterConfig& rc = p.router;
  const int num_experts = p.num_experts;
  if (num_experts <= 0) return invalid("num_experts (" + std::to_string(num_experts) + ") must be positive");
  if (rc.top_k < 1 || rc.top_k > num_experts || rc.top_k > kMaxTopK)
    return invalid("top_k (" + std::to_string(rc.top_k) + ") must be in [1, min(num_experts, " +
                   std::to_string(kMaxTopK) + ")]");
  if (p.num_tokens < 0) return invalid("num_tokens must not be negative");
  if (p.num_tokens == 0) return Status::Ok();
  if (rc.logits_dtype != DType::kFloat32 && rc.logits_dtype != DType::kBFloat16)
    return invalid("router logits must be float32 or bfloat16");
  const bool needs_logits = rc.kind != RouterKind::kHash && rc.kind != RouterKind::kPrecomputed;
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

  Routing r;
  r.num_tokens = num_tokens;
  r.top_k = k;
  r.ids.assign(static_cast<size_t>(num_tokens * k), 0);
  r.weights.assign(static_cast<size_t>(num_tokens * k), 0.f);

  for (int64_t tok = 0; tok < num_tokens; ++tok) {
    std::vector<int> ids;
    std::vector<float> w(static_cast<size_t>(k));
    switch (rc.kind) {
      case RouterKind::kSoftmaxTopK: {
        std::vector<float> prob = read_logits(rc, t.router_logits, tok, num_experts);
        softmax_inplace(prob);
        ids = select_top_k(prob, k);
        for (int j = 0; j < k; ++j) w[j] = prob[ids[j]];
        break;
      }
      case RouterKind::kBiasedTopK: {
        const std::vector<float> s = apply_score(rc.score, read_logits(rc, t.router_logits, tok, num_experts));
        std::vector<float> b = s;
        if (rc.use_correction_bias)
          for (int e = 0; e < num_experts; ++e) b[e] = s[e] + t.correction_bias[e];
        ids = rc.n_group > 1 ? select_grouped(b, rc) : select_top_k(b, k);
        for (int j = 0; j < k; ++j) w[j] = s[ids[j]];  // the bias chooses, it never weighs
        break;
      }
      case RouterKind::kTopKSoftmax: {
        const std::vector<float> logits = read_logits(rc, t.router_logits, tok, num_experts);
        ids = select_top_k(logits, k);
        for (int j = 0; j < k; ++j) w[j] = logits[ids[j]];
        softmax_inplace(w);  // over the k chosen, summed in slot order
        break;
      }
      case RouterKind::kSigmoidTop1: {
        const std::vector<float> logits = read_logits(rc, t.router_logits, tok, num_experts);
        ids = select_top_k(logits, k);
        for (int j = 0; j < k; ++j) w[j] = sigmoidf(logits[ids[j]]);
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
          ids.push_back(id);
        }
        if (t.router_logits != nullptr) {
          const std::vector<float> s = apply_score(rc.score, read_logits(rc, t.router_logits, tok, num_experts));
          for (int j = 0; j < k; ++j) w[j] = s[ids[j]];
        } else {
          std::fill(w.begin(), w.end(), 1.0f / static_cast<float>(k));
        }
        break;
      }
      case RouterKind::kPrecomputed: {
        for (int j = 0; j < k; ++j) {
          const int32_t id = t.topk_ids[tok * k + j];
          if (id < 0 || id >= num_experts) return out_of_range_id(tok, j, id, num_experts);
          ids.push_back(id);
          w[j] = t.topk_weights[tok * k + j];
        }
        break;
      }
    }

    if (rc.renormalize) {
      float sum = 0.f;
      for (float x : w) sum += x;  // slot order
      for (float& x : w) x = x / (sum + kRenormEpsilon);
    }
    for (int j = 0; j < k; ++j) {
      r.ids[tok * k + j] = ids[j];
      r.weights[tok * k + j] = w[j] * rc.routed_scaling;
    }
  }
  *out = std::move(r);
  return Status::Ok();
}

}  // namespace fusedmoe::ref
