// router_common.h — what the GPU router kernels and the CPU reference (src/reference/router.cpp)
// must share to agree bit for bit: the reading of logits, the canonical form of selection
// values, and the expert -> lane layout that fixes the summation order of the softmax.
//
// Layout ("canonical order") of one token's E logits over the 32 lanes of a warp:
//   vec  = router_vec_width(E, bf16): the largest v in {8 (bf16 only), 4, 2} that divides E with
//          E >= 32 * v, else 1 (a lane loads v consecutive logits at a time: 16, 8 or 4 bytes);
//   expert e belongs to lane (e / vec) % 32, as slot (e / (32 * vec)) * vec + e % vec; a lane's
//   slots are its experts in ascending order.
// The softmax over the E experts is then, in float32 with hd_math.h:
//   m = max_e x_e;  y_e = e^(x_e - m)  (all 0 when m = -inf);
//   partial[l] = 0 + y_e + ... over lane l's experts in ascending order (l = 0..31);
//   for d = 16, 8, 4, 2, 1: partial[l] = partial[l] + partial[l ^ d]  (all l at once: the
//   butterfly of __shfl_xor_sync);  sum = partial[0];  p_e = y_e / sum.
#pragma once
#include <cstdint>

#include "kernels/common/hd_math.h"

namespace fusedmoe::hd {

inline constexpr float kRenormEpsilon = 1e-20f;

// Non-finite logits (router.h): NaN reads as -inf, +inf as FLT_MAX.
FM_HD float sanitize_logit(float x) {
#if defined(__CUDA_ARCH__)
  return fminf(fmaxf(x, kNegInf), FLT_MAX);  // the same map in two FMNMX (fmaxf(NaN, -inf) = -inf)
#else
  if (is_nan(x)) return kNegInf;
  if (x == kInf) return FLT_MAX;
  return x;
#endif
}
FM_HD float bf16_bits_to_float(uint16_t b) { return as_float(static_cast<uint32_t>(b) << 16); }

// Canonical selection value: NaN -> -inf (a NaN never wins, and the order stays total), -0 -> +0
// (equal values tie; the lower expert index wins). Applied to every value a top-k compares.
FM_HD float canon(float x) {
#if defined(__CUDA_ARCH__)
  return add(fmaxf(x, kNegInf), 0.f);  // NaN -> -inf by FMNMX; -0 + 0 = +0 (round to nearest), x + 0 = x else
#else
  if (is_nan(x)) return kNegInf;
  return x == 0.f ? 0.f : x;
#endif
}
// Order-preserving map of canonical floats to uint32 (a > b  <=>  key(a) > key(b)); -inf maps to
// 0x007FFFFF, so key 0 can mean "no candidate".
FM_HD uint32_t to_key(float canonical) {
  const uint32_t u = as_uint(canonical);
  // negative: ~u; else u | sign bit. As one xor with the sign spread over the word (no select).
  return u ^ (static_cast<uint32_t>(static_cast<int32_t>(u) >> 31) | 0x80000000u);
}
FM_HD float from_key(uint32_t k) { return as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k); }

// The canonical layout above.
FM_HD constexpr int router_vec_width(int num_experts, bool bf16) {
  for (int v = bf16 ? 8 : 4; v > 1; v /= 2)
    if (num_experts % v == 0 && num_experts >= 32 * v) return v;
  return 1;
}
FM_HD constexpr int router_lane_of(int expert, int vec) { return (expert / vec) % 32; }

}  // namespace fusedmoe::hd
