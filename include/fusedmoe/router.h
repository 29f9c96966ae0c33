// fusedmoe/router.h — how tokens choose experts, and with which combine weights.
//
// All routers compute in float32 from bf16 or fp32 logits [T, E]. Selection takes the k largest
// selection scores; equal scores go to the LOWER expert index. Variants:
//   kSoftmaxTopK    p = softmax(logits); ids = topk(p); w = p[ids]              (Mixtral, Qwen3)
//   kBiasedTopK     s = score(logits) (sigmoid | sqrt(softplus) | softmax);
//                   b = s + correction_bias (if given) chooses: with n_group > 1 each group is
//                   scored by the sum of its top-2 b, the best topk_group groups stay, then
//                   ids = topk(b) among them;  w = s[ids] (un-biased)        (DeepSeek-V3/V4, Kimi, GLM)
//   kTopKSoftmax    ids = topk(logits); w = softmax(logits[ids]) over the k  (GPT-OSS)
//   kSigmoidTop1    ids = topk(logits) (k = 1); w = sigmoid(logits[ids]); with weight_on_input
//                   the expert INPUT is scaled by w and the output is not    (Llama-4)
//   kHash           ids = hash_table[token_id]; w = score(logits)[ids] (1/k each without logits)
//                                                                            (DeepSeek-V4 first layers)
//   kPrecomputed    ids and w given by the caller ([T, k] int32, [T, k] float32)
// Then, where `renormalize`: w /= (sum(w) + 1e-20); then w *= routed_scaling.
//
// Non-finite logits (defined, tested behaviour): NaN is read as -inf; +inf as FLT_MAX. A token
// whose scores are all -inf gets probabilities 0 (softmax), so it picks the lowest expert ids
// with weight 0. Precomputed ids outside [0, E) are an error (kOutOfRange), never a write.
#pragma once
#include <cstdint>

#include "fusedmoe/types.h"

namespace fusedmoe {

enum class RouterKind : uint8_t {
  kSoftmaxTopK,
  kBiasedTopK,
  kTopKSoftmax,
  kSigmoidTop1,
  kHash,
  kPrecomputed,
};

// Routers that read a row of logits per token (all but hash and precomputed routing).
inline bool reads_logits(RouterKind k) { return k != RouterKind::kHash && k != RouterKind::kPrecomputed; }

enum class ScoreFunction : uint8_t {
  kSoftmax,
  kSigmoid,
  kSqrtSoftplus,  // sqrt(log(1 + exp(x)))  (DeepSeek-V4)
};

// The largest sizes the routers are built for (any E up to 1024, k up to 16).
inline constexpr int kMaxExperts = 1024;
inline constexpr int kMaxTopK = 16;

struct RouterConfig {
  RouterKind kind = RouterKind::kSoftmaxTopK;
  ScoreFunction score = ScoreFunction::kSoftmax;  // kBiasedTopK and kHash
  int top_k = 1;
  bool renormalize = false;
  int n_group = 1;      // kBiasedTopK: expert groups (must divide E)
  int topk_group = 1;   // kBiasedTopK: groups kept
  float routed_scaling = 1.f;
  bool use_correction_bias = false;  // kBiasedTopK: float32 bias [E] added for selection only
  bool weight_on_input = false;      // kSigmoidTop1 (Llama-4)
  DType logits_dtype = DType::kFloat32;  // kFloat32 or kBFloat16

  // Presets of the models in shared/model-shapes.md.
  static RouterConfig softmax_topk(int k, bool renormalize);
  static RouterConfig deepseek_v3(int k = 8, int n_group = 8, int topk_group = 4, float scaling = 2.5f);
  static RouterConfig deepseek_v4(int k = 6, float scaling = 1.5f);
  static RouterConfig sigmoid_bias(int k, float scaling);  // Kimi-K2, GLM, MiniMax (no groups)
  static RouterConfig gpt_oss(int k = 4);
  static RouterConfig llama4();
  static RouterConfig hash(int k, ScoreFunction score, float scaling);
  static RouterConfig precomputed(int k);
};

const char* to_string(RouterKind k);
const char* to_string(ScoreFunction f);

}  // namespace fusedmoe
