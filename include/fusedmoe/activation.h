// fusedmoe/activation.h — the expert activation between GEMM1 and GEMM2.
//
// GEMM1 produces, per row, a gate g and an up u of N values each (gated kinds: W1 is [2N, K],
// rows 0..N-1 = gate, N..2N-1 = up; with `interleaved`, rows alternate g0,u0,g1,u1,...), or N
// values h (kSquaredRelu: W1 is [N, K]).  Expert biases b1 (same row order) are added first.
//   kSiluGated      silu(g) * u
//   kGeluGated      gelu_erf(g) * u
//   kGeluTanhGated  gelu_tanh(g) * u
//   kClampedSwiglu  silu(min(g, limit)) * clamp(u, -limit, limit)            (DeepSeek-V4, limit 10)
//   kSwigluOai      g' = min(g, limit); u' = clamp(u, -limit, limit);
//                   (u' + 1) * g' * sigmoid(alpha * g')                      (GPT-OSS, alpha 1.702, limit 7)
//   kSquaredRelu    relu(h)^2, not gated                                     (Nemotron)
#pragma once

namespace fusedmoe {

enum class ActivationKind : unsigned char {
  kSiluGated,
  kGeluGated,
  kGeluTanhGated,
  kClampedSwiglu,
  kSwigluOai,
  kSquaredRelu,
};

struct Activation {
  ActivationKind kind = ActivationKind::kSiluGated;
  float limit = 0.f;     // kClampedSwiglu, kSwigluOai
  float alpha = 1.702f;  // kSwigluOai
  bool interleaved = false;  // gate/up rows interleaved in W1 (GPT-OSS checkpoints)

  bool gated() const { return kind != ActivationKind::kSquaredRelu; }
  // Rows of W1 per expert: 2N for gated kinds, N otherwise.
  int gemm1_rows(int n) const { return gated() ? 2 * n : n; }

  static Activation silu() { return {}; }
  static Activation gelu() { return {ActivationKind::kGeluGated}; }
  static Activation clamped_swiglu(float limit) { return {ActivationKind::kClampedSwiglu, limit}; }
  static Activation swiglu_oai(float alpha = 1.702f, float limit = 7.f, bool interleaved = true) {
    return {ActivationKind::kSwigluOai, limit, alpha, interleaved};
  }
  static Activation squared_relu() { return {ActivationKind::kSquaredRelu}; }
};

const char* to_string(ActivationKind k);

}  // namespace fusedmoe
