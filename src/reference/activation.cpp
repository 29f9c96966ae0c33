// The expert activations of fusedmoe/activation.h, in float64.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "fusedmoe/reference.h"

namespace fusedmoe::ref {
namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double silu(double x) { return x * sigmoid(x); }
// Both GELUs in forms that keep their relative precision in the negative tail (1 + erf and
// 1 + tanh cancel there): 0.5 (1 + erf(t)) = 0.5 erfc(-t), 0.5 (1 + tanh(z)) = sigmoid(2 z).
double gelu_erf(double x) { return 0.5 * x * std::erfc(-x * std::numbers::sqrt2 / 2.0); }
double gelu_tanh(double x) {
  const double kSqrt2OverPi = std::sqrt(2.0 / std::numbers::pi);
  return x * sigmoid(2.0 * kSqrt2OverPi * (x + 0.044715 * x * x * x));
}

}  // namespace

double activate(const Activation& a, double g, double u) {
  const double limit = a.limit;
  switch (a.kind) {
    case ActivationKind::kSiluGated: return silu(g) * u;
    case ActivationKind::kGeluGated: return gelu_erf(g) * u;
    case ActivationKind::kGeluTanhGated: return gelu_tanh(g) * u;
    case ActivationKind::kClampedSwiglu: return silu(std::min(g, limit)) * std::clamp(u, -limit, limit);
    case ActivationKind::kSwigluOai: {
      const double gc = std::min(g, limit);
      const double uc = std::clamp(u, -limit, limit);
      return (uc + 1.0) * gc * sigmoid(static_cast<double>(a.alpha) * gc);
    }
    case ActivationKind::kSquaredRelu: {
      const double r = std::max(g, 0.0);
      return r * r;
    }
  }
  return 0.0;
}

void gate_up_blocks8(const uint16_t* w1, int64_t experts, int64_t n, int64_t k, uint16_t* out) {
  for (int64_t e = 0; e < experts; ++e)
    for (int64_t r = 0; r < 2 * n; ++r) {
      const int64_t b = r / 16, q = r % 16;
      const int64_t src = q < 8 ? 8 * b + q : n + 8 * b + (q - 8);
      std::copy_n(w1 + (e * 2 * n + src) * k, k, out + (e * 2 * n + r) * k);
    }
}

}  // namespace fusedmoe::ref
