// activation_math.cuh — the expert activations in fp32 (fusedmoe/activation.h), shared by the
// GEMM1 epilogues (BF16 and FP8 grouped GEMMs) and the standalone activation kernel of the CUTLASS
// grouped-GEMM path (kernels/gemm/cutlass_grouped_gemm.cu).
#pragma once

#include <cuda_runtime.h>

#include "fusedmoe/activation.h"

namespace fusedmoe::kernels::sm90_grouped {

__device__ __forceinline__ float sigmoid_f(float x) { return 1.f / (1.f + __expf(-x)); }

// fp32 epilogue activation of a compile-time kind; kKind < 0: identity on g (GEMM2).
template <int kKind>
__device__ __forceinline__ float activate_ct(float g, float u, float alpha, float limit) {
  if constexpr (kKind == int(ActivationKind::kSiluGated)) {
    return g * sigmoid_f(g) * u;
  } else if constexpr (kKind == int(ActivationKind::kGeluGated)) {
    // erfc, not 1 + erf: the tail (g << 0, result ~ g * phi(g)) would cancel to a few bits in fp32
    return 0.5f * g * erfcf(-g * 0.70710678118654752f) * u;
  } else if constexpr (kKind == int(ActivationKind::kGeluTanhGated)) {
    // (1 + tanh(z)) / 2 == sigmoid(2 z), which keeps its relative precision in the negative tail
    const float z2 = 1.5957691216057308f * (g + 0.044715f * g * g * g);
    return g * (1.f / (1.f + __expf(-z2))) * u;
  } else if constexpr (kKind == int(ActivationKind::kClampedSwiglu)) {
    const float gc = fminf(g, limit);
    const float uc = fminf(fmaxf(u, -limit), limit);
    return gc * sigmoid_f(gc) * uc;
  } else if constexpr (kKind == int(ActivationKind::kSwigluOai)) {
    const float gc = fminf(g, limit);
    const float uc = fminf(fmaxf(u, -limit), limit);
    return (uc + 1.f) * gc * sigmoid_f(alpha * gc);
  } else if constexpr (kKind == int(ActivationKind::kSquaredRelu)) {
    const float r = fmaxf(g, 0.f);
    return r * r;
  } else {
    return g;
  }
}

template <int K>
struct ActKind {
  static constexpr int value = K;
};

// Runs f(ActKind<kind>{}) once: the epilogue loop is instantiated per activation kind, so the
// branch on the runtime kind is taken once per tile, not per element. (A per-element switch made
// the non-gated kernel 23 K instructions of SASS with 128 indirect branches: the epilogue then ran
// out of the instruction cache, ~17 K cycles per 128x128 tile of GEMM2 at prefill, H200 ncu.)
template <bool kGated, class F>
__device__ __forceinline__ void with_activation(int kind, F&& f) {
  if constexpr (kGated) {
    switch (kind) {
      case int(ActivationKind::kGeluGated): f(ActKind<int(ActivationKind::kGeluGated)>{}); break;
      case int(ActivationKind::kGeluTanhGated): f(ActKind<int(ActivationKind::kGeluTanhGated)>{}); break;
      case int(ActivationKind::kClampedSwiglu): f(ActKind<int(ActivationKind::kClampedSwiglu)>{}); break;
      case int(ActivationKind::kSwigluOai): f(ActKind<int(ActivationKind::kSwigluOai)>{}); break;
      default: f(ActKind<int(ActivationKind::kSiluGated)>{}); break;
    }
  } else {
    if (kind == int(ActivationKind::kSquaredRelu)) f(ActKind<int(ActivationKind::kSquaredRelu)>{});
    else f(ActKind<-1>{});
  }
}

}  // namespace fusedmoe::kernels::sm90_grouped
