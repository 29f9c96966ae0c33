// hd_math.h — ONE float32 implementation of the math the routers use, compiled identically for
// the GPU kernels (nvcc, __host__ __device__) and the CPU reference (plain C++), so that both
// produce the same bits.
//
// Why: CUDA's expf/log1pf and glibc's differ by an ulp here and there; at 10^8 router scores
// that flips near-ties. Every function below is built only from correctly rounded IEEE
// operations (+ - * / sqrt fma) and integer bit manipulation, which give the same result on the
// host and on the device.
//
// Rules for code that must agree bit for bit between host and device:
//   * never write `a * b + c` (nvcc contracts it into an FMA on the device, g++ does not): use
//     hd::mul / hd::add / hd::sub / hd::div (device: __fmul_rn & co., never contracted; host:
//     plain operators) or an explicit hd::fma (correctly rounded on both sides);
//   * no FTZ / fast-math (neither the library nor the tests are built with them);
//   * the host side assumes SSE float arithmetic (x86-64; FLT_EVAL_METHOD == 0).
// Accuracy (tested in tests/cpu/test_reference_router.cpp against double precision over dense
// sweeps): expf, log1pf < 1 ulp; sigmoid, sqrt-softplus a couple of ulp at most.
#pragma once
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "kernels/common/hd.h"

#if !defined(__CUDACC__)
// A host build with FMA instructions enabled (-mfma, -march=native) would let g++ contract the
// reference's multiply-adds (its default for C++ is -ffp-contract=fast): forbid it.
#if defined(__FMA__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
#endif

namespace fusedmoe::hd {

inline constexpr float kInf = __builtin_huge_valf();
inline constexpr float kNegInf = -__builtin_huge_valf();

// ---- correctly rounded primitives, never contracted ----
FM_HD float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
FM_HD float sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
FM_HD float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
FM_HD float fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
FM_HD uint32_t as_uint(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return std::bit_cast<uint32_t>(f);
#endif
}
FM_HD float as_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  return std::bit_cast<float>(u);
#endif
}
FM_HD bool is_nan(float x) { return x != x; }

#if defined(__CUDA_ARCH__)
// ---- device: IEEE float division and square root without CUDA's slow-path subroutine calls ----
// __fdiv_rn / __fsqrt_rn call a slow path (denormals, extreme exponents); the call ABI makes ptxas
// spill registers in the router kernels, whose slots live in registers. These compute the SAME
// correctly rounded results in double precision with straight-line code:
//   quotient: R ~ 1/B from rcp.approx.f64 + 2 Newton steps (relative error <= 2^-44 from any seed
//   better than 2^-11); q0 = A*R (within 2^9 ulp), r = A - B*q0 exact by FMA (A, B have 24-bit
//   significands, so r needs < 2^35 of its quanta), q1 = q0 + r*R (within 1/2 ulp + 2^-35 ulp),
//   r1 = A - B*q1 exact; then q1 is rounded to odd
//   (if inexact and its last bit is even, step one ulp towards the exact quotient) and converted
//   with cvt.rn.f32.f64: rounding to odd at 53 bits then to nearest at <= 24 bits is the correctly
//   rounded quotient, subnormal results included (Boldo & Melquiond).
//   square root: y ~ 1/sqrt(X) from rsqrt.approx.f64 + 2 Newton steps, s = X*y corrected once
//   (within 1/2 ulp + tiny); sqrt of a float is never within 2^-51 (relative) of a float
//   rounding midpoint unless exact, so cvt.rn.f32.f64(s) is correctly rounded.
// IEEE special cases (zeros, infinities, NaN) are handled explicitly; NaN results are the
// canonical quiet NaN (the host may differ in a NaN's sign/payload, never in NaN-ness).
__device__ __forceinline__ double rcp_approx_f64(double x) {
  double r;
  asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(x));
  return r;
}
__device__ __forceinline__ double rsqrt_approx_f64(double x) {
  double r;
  asm("rsqrt.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(x));
  return r;
}
// 1/B for a positive normal double B, to ~2^-44 relative.
__device__ __forceinline__ double recip_f64(double b) {
  double r = rcp_approx_f64(b);
#pragma unroll
  for (int i = 0; i < 2; ++i) r = __fma_rn(r, __fma_rn(-b, r, 1.0), r);
  return r;
}
// |a| / |b| for finite nonzero a, b (as doubles) given r = recip_f64(|b|); returns the correctly
// rounded float magnitude.
__device__ __forceinline__ float div_magnitude(double a, double b, double r) {
  double q = __dmul_rn(a, r);
  q = __fma_rn(__fma_rn(-b, q, a), r, q);
  const double rem = __fma_rn(-b, q, a);
  unsigned long long bits = static_cast<unsigned long long>(__double_as_longlong(q));
  if (rem != 0.0 && (bits & 1ull) == 0ull) bits = rem > 0.0 ? bits + 1ull : bits - 1ull;  // round to odd
  return __double2float_rn(__longlong_as_double(static_cast<long long>(bits)));
}
// IEEE a / b for the special operands (NaN, zero, infinite); `done` false for the ordinary case.
__device__ __forceinline__ float div_special(float a, float b, bool* done) {
  const uint32_t ua = __float_as_uint(a), ub = __float_as_uint(b);
  const uint32_t sign = (ua ^ ub) & 0x80000000u;
  const uint32_t ma = ua & 0x7fffffffu, mb = ub & 0x7fffffffu;
  *done = true;
  if (ma > 0x7f800000u || mb > 0x7f800000u) return __uint_as_float(0x7fffffffu);
  if (ma == 0x7f800000u) return mb == 0x7f800000u ? __uint_as_float(0x7fffffffu) : __uint_as_float(sign | 0x7f800000u);
  if (mb == 0x7f800000u) return __uint_as_float(sign);
  if (mb == 0u) return ma == 0u ? __uint_as_float(0x7fffffffu) : __uint_as_float(sign | 0x7f800000u);
  if (ma == 0u) return __uint_as_float(sign);
  *done = false;
  return 0.f;
}
__device__ __forceinline__ float div_rn_device(float a, float b) {
  bool done;
  const float special = div_special(a, b, &done);
  if (done) return special;
  const double bd = fabs(static_cast<double>(b));
  const float m = div_magnitude(fabs(static_cast<double>(a)), bd, recip_f64(bd));
  return __uint_as_float(__float_as_uint(m) | ((__float_as_uint(a) ^ __float_as_uint(b)) & 0x80000000u));
}
// 1 / d for a finite float d >= 1, correctly rounded (subnormal results included): three Newton
// steps in double from rcp.approx (relative error ~2^-52), then one rounding to float. 1/d is never
// within 2^-49 (relative) of a float rounding midpoint (d * m = 1 would need a 49-bit product of a
// 24-bit d and a 25-bit midpoint m), so that rounding is RN(1/d). The reference for the float
// version below (tests: RouterGpu.RecipGe1Exhaustive).
__device__ __forceinline__ float recip_ge1_f64_device(float d) {
  const double b = static_cast<double>(d);
  double r = rcp_approx_f64(b);
#pragma unroll
  for (int i = 0; i < 3; ++i) r = __fma_rn(r, __fma_rn(-b, r, 1.0), r);
  return __double2float_rn(r);
}
// The same correctly rounded 1 / d for a finite float d >= 1, in float arithmetic below 2^126:
// rcp.approx.ftz.f32 (within 1 ulp; the result is a normal float there) and one Newton step with
// an exact FMA residual, y + y * (1 - d * y). Checked against __frcp_rn for EVERY float in
// [1, FLT_MAX] on the H200 (RouterGpu.RecipGe1Exhaustive). From 2^126 (subnormal results, the
// sigmoid below x = -87.3) the double-precision version. The sigmoid's division: 3 float
// instructions instead of two float <-> double conversions, rcp.approx.f64 and six DFMAs on the
// slow pipes, for every expert of every token.
__device__ __forceinline__ float recip_ge1_device(float d) {
  if (d < 0x1p126f) {
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(d));
    return __fmaf_rn(__fmaf_rn(-d, y, 1.f), y, y);
  }
  return recip_ge1_f64_device(d);
}
__device__ __forceinline__ float sqrt_rn_device(float x) {
  if (!(x > 0.f) || x == __builtin_huge_valf()) {  // +-0, +inf: itself; negative, NaN: NaN
    return (x == 0.f || x == __builtin_huge_valf()) ? x : __uint_as_float(0x7fffffffu);
  }
  const double xd = static_cast<double>(x);
  double y = rsqrt_approx_f64(xd);
#pragma unroll
  for (int i = 0; i < 2; ++i) y = __fma_rn(__dmul_rn(0.5, y), __fma_rn(-__dmul_rn(xd, y), y, 1.0), y);
  double s = __dmul_rn(xd, y);
  s = __fma_rn(__fma_rn(-s, s, xd), __dmul_rn(0.5, y), s);
  return __double2float_rn(s);
}
#endif

// Correctly rounded a / b and sqrt(a) (IEEE, identical on both sides).
FM_HD float div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return div_rn_device(a, b);
#else
  return a / b;
#endif
}
FM_HD float sqrt(float a) {
#if defined(__CUDA_ARCH__)
  return sqrt_rn_device(a);
#else
  return std::sqrt(a);
#endif
}

// Many divisions by one divisor (the softmax sum): the reciprocal is refined once.
class Divisor {
 public:
  FM_HD explicit Divisor(float b) : b_(b) {
#if defined(__CUDA_ARCH__)
    bd_ = fabs(static_cast<double>(b));
    const uint32_t mb = __float_as_uint(b) & 0x7fffffffu;
    r_ = (mb != 0u && mb < 0x7f800000u) ? recip_f64(bd_) : 0.0;  // unused for special b
#endif
  }
  FM_HD float divide(float a) const {
#if defined(__CUDA_ARCH__)
    bool done;
    const float special = div_special(a, b_, &done);  // always taken for a special b
    if (done) return special;
    const float m = div_magnitude(fabs(static_cast<double>(a)), bd_, r_);
    return __uint_as_float(__float_as_uint(m) | ((__float_as_uint(a) ^ __float_as_uint(b_)) & 0x80000000u));
#else
    return a / b_;
#endif
  }
  // The same for a finite a >= 0 and a finite divisor > 0 (softmax terms over their sum): no
  // special-operand checks.
  FM_HD float divide_nonnegative(float a) const {
#if defined(__CUDA_ARCH__)
    return div_magnitude(static_cast<double>(a), bd_, r_);
#else
    return a / b_;
#endif
  }

 private:
  float b_;
  double bd_ = 0.0, r_ = 0.0;  // device only
};

// 2^n for n in [-126, 127] (a normal float), built from its bits.
FM_HD float pow2i(int n) { return as_float(static_cast<uint32_t>(n + 127) << 23); }

// e^x, < 1 ulp. x*log2(e) = k + f: k = round-to-nearest via the 1.5*2^23 shifter, r = x - k*ln2 in
// two FMA steps (ln2 = hi + lo, hi with 8 trailing zero bits), e^r by its degree-7 Taylor
// polynomial (|r| <= 0.347: truncation < 0.07 ulp) in Horner form with FMAs, then * 2^k as two
// exact power-of-two multiplications (the second one rounds once into the subnormal range).
// The polynomial runs on x clamped to [-104, 88.75], where every step stays finite, and its results
// at the bounds are inf and 0 (below); NaN is selected at the end (branch-free: the router
// evaluates it per expert).
FM_HD float expf(float x) {
  const float xin = x;
#if defined(__CUDA_ARCH__)
  x = fmaxf(fminf(x, 88.75f), -104.f);  // two FMNMX (NaN: 88.75, replaced by NaN at the end)
#else
  x = x > 88.75f ? 88.75f : (x >= -104.f ? x : -104.f);  // the same for every non-NaN x
#endif
  constexpr float kShifter = 0x1.8p23f;
  constexpr float kLog2e = 0x1.715476p+0f;
  constexpr float kLn2Hi = 0x1.62e4p-1f;      // 0x3f317200
  constexpr float kLn2Lo = 0x1.7f7d1cp-20f;   // 0x35bfbe8e
  const float t = fma(x, kLog2e, kShifter);
  const float kf = sub(t, kShifter);           // integer in [-150, 128], exact
  float r = fma(kf, -kLn2Hi, x);
  r = fma(kf, -kLn2Lo, r);
  float p = 0x1.a01a02p-13f;                   // 1/7!
  p = fma(p, r, 0x1.6c16c2p-10f);              // 1/6!
  p = fma(p, r, 0x1.111112p-7f);               // 1/5!
  p = fma(p, r, 0x1.555556p-5f);               // 1/4!
  p = fma(p, r, 0x1.555556p-3f);               // 1/3!
  p = fma(p, r, 0.5f);
  p = fma(p, r, 1.f);
  p = fma(p, r, 1.f);
  const int k = static_cast<int>(kf);
  const int k1 = k / 2;                        // truncation: identical in C++ and CUDA
  const float y = mul(mul(p, pow2i(k1)), pow2i(k - k1));
  // Past the clamp the bounds' own results are the answers: at 88.75 y overflows to inf (e^88.7228
  // = FLT_MAX), at -104 it rounds to 0 (below half the smallest subnormal); tests/cpu checks both.
  // So only NaN needs a select (the router evaluates this per expert: its ALU pipe is the bound).
  return is_nan(xin) ? xin : y;
}

// log(1 + x), < 1 ulp: musl/FreeBSD log1pf (k*ln2 + log(1+f) with f in [sqrt(2)/2-1, sqrt(2)-1],
// log(1+f) = f - hfsq + s*(hfsq + R(s^2)), s = f/(2+f), plus the correction c of 1+x's rounding),
// with every operation spelled out in the order of the original C expression.
FM_HD float log1pf(float x) {
  constexpr float kLn2Hi = 0x1.62e3p-1f;       // 0x3f317180
  constexpr float kLn2Lo = 0x1.2fefa2p-17f;    // 0x3717f7d1
  constexpr float kLg1 = 0xaaaaaa.0p-24f, kLg2 = 0xccce13.0p-25f, kLg3 = 0x91e9ee.0p-25f,
                  kLg4 = 0xf89e26.0p-26f;
  const uint32_t ix = as_uint(x);
  int k = 1;
  float c = 0.f, f = 0.f;
  if (ix < 0x3ed413d0u || (ix >> 31)) {         // 1 + x < sqrt(2)+
    if (ix >= 0xbf800000u) {                    // x <= -1 (or a negative NaN)
      if (x == -1.f) return kNegInf;
      return as_float(0x7fc00000u);
    }
    if ((ix << 1) < (0x33800000u << 1)) return x;  // |x| < 2^-24
    if (ix <= 0xbe95f619u) {                    // sqrt(2)/2- <= 1 + x < sqrt(2)+
      k = 0;
      c = 0.f;
      f = x;
    }
  } else if (ix >= 0x7f800000u) {
    return x;                                   // +inf, NaN
  }
  if (k != 0) {
    const float u = add(1.f, x);
    uint32_t iu = as_uint(u);
    iu += 0x3f800000u - 0x3f3504f3u;
    k = static_cast<int>(iu >> 23) - 0x7f;
    if (k < 25) {                               // correction term ~ log(1+x) - log(u)
      c = k >= 2 ? sub(1.f, sub(u, x)) : sub(x, sub(u, 1.f));
      c = div(c, u);
    } else {
      c = 0.f;
    }
    iu = (iu & 0x007fffffu) + 0x3f3504f3u;      // u reduced into [sqrt(2)/2, sqrt(2)]
    f = sub(as_float(iu), 1.f);
  }
  const float s = div(f, add(2.f, f));
  const float z = mul(s, s);
  const float w = mul(z, z);
  const float t1 = mul(w, add(kLg2, mul(w, kLg4)));
  const float t2 = mul(z, add(kLg1, mul(w, kLg3)));
  const float big_r = add(t2, t1);
  const float hfsq = mul(mul(0.5f, f), f);
  const float dk = static_cast<float>(k);
  // s*(hfsq+R) + (dk*ln2_lo+c) - hfsq + f + dk*ln2_hi, left to right
  float y = add(mul(s, add(hfsq, big_r)), add(mul(dk, kLn2Lo), c));
  y = sub(y, hfsq);
  y = add(y, f);
  return add(y, mul(dk, kLn2Hi));
}

// 1 / (1 + e^-x). sigmoid(-inf) = 0, sigmoid(FLT_MAX) = 1. On the device the denominator, in
// [1, inf] or NaN, takes recip_ge1_device (the same correctly rounded quotient as div).
FM_HD float sigmoid(float x) {
#if defined(__CUDA_ARCH__)
  const float d = add(1.f, expf(-x));
  if (!(d < kInf)) return d == kInf ? 0.f : as_float(0x7fffffffu);  // inf -> 0; NaN -> canonical NaN
  return recip_ge1_device(d);
#else
  return div(1.f, add(1.f, expf(-x)));
#endif
}

// sigmoid() of N values, the same bits for each, with the N chains interleaved: sigmoid()'s branch
// per value (its rare cases: a denominator of inf, NaN or >= 2^126) is one check after all N fast
// paths, so the compiler can overlap the N exponentials and reciprocals. Measured on the H200
// (session 28): per value, the branch kept the 8 sigmoids of a DeepSeek token's lane in sequence.
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ float sigmoid_rare(float d) {  // d = 1 + e^-x outside [1, 2^126)
  if (!(d < kInf)) return d == kInf ? 0.f : as_float(0x7fffffffu);
  return recip_ge1_f64_device(d);
}
#endif
template <int N>
FM_HD void sigmoid_n(float (&v)[N]) {
#if defined(__CUDA_ARCH__)
  float d[N];
  bool rare = false;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    d[i] = add(1.f, expf(-v[i]));
    rare |= !(d[i] < 0x1p126f);
  }
#pragma unroll
  for (int i = 0; i < N; ++i) {  // recip_ge1_device's float path
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(d[i]));
    v[i] = __fmaf_rn(__fmaf_rn(-d[i], y, 1.f), y, y);
  }
  if (rare) {
#pragma unroll
    for (int i = 0; i < N; ++i)
      if (!(d[i] < 0x1p126f)) v[i] = sigmoid_rare(d[i]);
  }
#else
  for (int i = 0; i < N; ++i) v[i] = sigmoid(v[i]);
#endif
}

// Above this, softplus(x) == x in float32 (PyTorch's threshold); also keeps e^x finite.
inline constexpr float kSoftplusThreshold = 20.f;

// sqrt(log(1 + e^x)) (DeepSeek-V4), with PyTorch's x > 20 -> x cut-off.
FM_HD float sqrt_softplus(float x) {
  const float softplus = x > kSoftplusThreshold ? x : log1pf(expf(x));
  return sqrt(softplus);
}

}  // namespace fusedmoe::hd
