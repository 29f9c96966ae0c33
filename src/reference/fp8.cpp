// Scalar conversions and the FP8 activation quantisers of the CPU reference.
//
// The conversions are written from the IEEE formats and checked bit for bit against the CUDA
// intrinsics' host implementations (tests/cpu/test_reference_fp8.cpp), including NaN,
// saturation and subnormals; a one-off run on an H200 found the sm_90 device instructions equal
// to this code on all 2^32 floats too:
//   float -> e4m3   __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)
//   e4m3 -> float   __half2float(__nv_cvt_fp8_to_halfraw(b, __NV_E4M3))
//   float -> ue8m0  __nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundPosInf)
//   ue8m0 -> float  __bfloat162float(__nv_cvt_e8m0_to_bf16raw(b))
//   float -> bf16   __float2bfloat16_rn;  bf16 -> float  __bfloat162float
//   float -> fp16   __float2half_rn;      fp16 -> float  __half2float
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "fusedmoe/reference.h"

namespace fusedmoe::ref {
namespace {

constexpr uint32_t kFloatAbsMask = 0x7FFFFFFFu;
constexpr uint32_t kFloatInfBits = 0x7F800000u;
constexpr uint32_t kFloatMantissaMask = 0x007FFFFFu;
constexpr uint32_t kFloatImplicitBit = 0x00800000u;
// The quiet NaN (sign clear, all mantissa bits set) that the CUDA conversions return for any
// NaN input: they never propagate a payload or a sign.
constexpr uint32_t kCanonicalFloatNaN = 0x7FFFFFFFu;
// UE8M0 decodes through bf16 in CUDA (__nv_cvt_e8m0_to_bf16raw): its NaN is the canonical bf16
// NaN 0x7FFF widened to float.
constexpr uint32_t kUe8m0FloatNaN = 0x7FFF0000u;

constexpr uint8_t kE4m3MaxFinite = 0x7E;  // 448
constexpr uint8_t kE4m3NaN = 0x7F;
constexpr uint8_t kUe8m0NaN = 0xFF;
constexpr uint8_t kUe8m0Max = 0xFE;  // 2^127
constexpr int kUe8m0Bias = 127;

constexpr float kFp8Max = 448.0f;
constexpr float kAmaxFloor = 1e-10f;
constexpr int64_t kActGroup = 128;  // ActQuant::kGroup128

bool is_nan_bits(uint32_t bits) { return (bits & kFloatAbsMask) > kFloatInfBits; }

// value >> shift, rounded to nearest with ties to even (shift in [1, 31]).
uint32_t shift_right_rne(uint32_t value, int shift) {
  const uint32_t kept = value >> shift;
  const uint32_t rest = value & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  return (rest > half || (rest == half && (kept & 1u))) ? kept + 1u : kept;
}

// A normal float magnitude in units of 2^lsb_exp, rounded to nearest even: the subnormal
// encoding of a narrower format whose smallest subnormal is 2^lsb_exp. The caller ensures
// 2^(lsb_exp - 1) < |x| < 2^(lsb_exp + 23), i.e. a shift in [1, 24].
uint32_t to_subnormal_rne(uint32_t abs_bits, int lsb_exp) {
  const uint32_t significand = (abs_bits & kFloatMantissaMask) | kFloatImplicitBit;
  const int unbiased = static_cast<int>(abs_bits >> 23) - 127;
  // significand * 2^(unbiased - 23) / 2^lsb_exp
  return shift_right_rne(significand, 23 + lsb_exp - unbiased);
}

float float_from_bits(uint32_t bits) { return std::bit_cast<float>(bits); }

// fmaxf-style absolute maximum: NaN elements are ignored, as in a GPU fmaxf reduction.
float abs_max(const float* x, int64_t n) {
  float amax = 0.f;
  for (int64_t i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  return amax;
}

}  // namespace

// ---- e4m3 ----

uint8_t float_to_e4m3(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  // NaN of either sign becomes the positive NaN: CUDA canonicalises the input NaN (0x7FFFFFFF)
  // before converting, so the sign is lost.
  if (is_nan_bits(bits)) return kE4m3NaN;
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t abs_bits = bits & kFloatAbsMask;

  constexpr uint32_t kHalfMinSubnormal = 0x3A800000u;  // 2^-10: at or below -> +-0 (tie to even)
  constexpr uint32_t kMinNormal = 0x3C800000u;         // 2^-6
  constexpr uint32_t kOverflow = 0x43E80000u;          // 464 = 448 + half an ulp (ties to 448)
  if (abs_bits <= kHalfMinSubnormal) return sign;
  // __NV_SATFINITE: every finite value beyond the rounding range and +-inf clamp to +-448.
  if (abs_bits > kOverflow) return sign | kE4m3MaxFinite;
  if (abs_bits < kMinNormal) {
    // Subnormal e4m3: multiples of 2^-9; rounding up to 8 * 2^-9 gives the smallest normal.
    return sign | static_cast<uint8_t>(to_subnormal_rne(abs_bits, -9));
  }
  // Normal: rebias the exponent (127 -> 7) and round away 20 mantissa bits; a carry out of the
  // mantissa bumps the exponent, which is the correctly rounded encoding (never past 0x7E,
  // since everything above 464 was handled above).
  return sign | static_cast<uint8_t>(shift_right_rne(abs_bits - ((127u - 7u) << 23), 20));
}

float e4m3_to_float(uint8_t bits) {
  if ((bits & 0x7Fu) == kE4m3NaN) return float_from_bits(kCanonicalFloatNaN);
  const bool negative = (bits & 0x80u) != 0;
  const int exponent = (bits >> 3) & 0xF;
  const int mantissa = bits & 0x7;
  // Exact in float32: at most 4 significant bits.
  const float magnitude = exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -9)
                                        : std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
  return negative ? -magnitude : magnitude;
}

// ---- ue8m0 ----

uint8_t float_to_ue8m0(float x) {
  if (std::isnan(x)) return kUe8m0NaN;
  // The conversion is of the magnitude (CUDA clears the sign); +inf saturates to 2^127.
  const float magnitude = std::fabs(x);
  if (magnitude == 0.f) return 0;  // clamps to 2^-127
  if (std::isinf(magnitude)) return kUe8m0Max;
  // magnitude = m * 2^e with m in [0.5, 1): ceil(log2(magnitude)) = e, or e - 1 when m == 0.5
  // (an exact power of two). frexp is exact, so there is no log2f rounding to worry about.
  int e = 0;
  const float m = std::frexp(magnitude, &e);
  const int ceil_log2 = (m == 0.5f) ? e - 1 : e;
  return static_cast<uint8_t>(std::clamp(ceil_log2, -kUe8m0Bias, kUe8m0Bias) + kUe8m0Bias);
}

float ue8m0_to_float(uint8_t bits) {
  if (bits == kUe8m0NaN) return float_from_bits(kUe8m0FloatNaN);
  return std::ldexp(1.0f, static_cast<int>(bits) - kUe8m0Bias);  // 2^-127 is a float subnormal
}

// ---- bf16 / fp16 ----

uint16_t float_to_bf16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  if (is_nan_bits(bits)) return 0x7FFF;  // canonical quiet NaN, sign and payload dropped
  // Rounding the low 16 bits carries into the exponent as needed; the largest finite values
  // round to infinity exactly as IEEE round-to-nearest-even does.
  return static_cast<uint16_t>(shift_right_rne(bits & kFloatAbsMask, 16) | ((bits >> 16) & 0x8000u));
}

float bf16_to_float(uint16_t bits) { return float_from_bits(static_cast<uint32_t>(bits) << 16); }

uint16_t float_to_fp16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  if (is_nan_bits(bits)) return 0x7FFF;  // canonical quiet NaN, sign dropped
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs_bits = bits & kFloatAbsMask;
  constexpr uint32_t kHalfMinSubnormal = 0x33000000u;  // 2^-25: at or below -> +-0
  constexpr uint32_t kMinNormal = 0x38800000u;         // 2^-14
  constexpr uint32_t kTwoTo16 = 0x47800000u;           // 65536: well past the rounding edge 65520
  constexpr uint16_t kInf = 0x7C00;
  if (abs_bits <= kHalfMinSubnormal) return sign;
  if (abs_bits < kMinNormal) return sign | static_cast<uint16_t>(to_subnormal_rne(abs_bits, -24));
  if (abs_bits >= kTwoTo16) return sign | kInf;  // overflow, +-inf included (no saturation)
  // Rebias the exponent (127 -> 15) and round away 13 mantissa bits; values from 65520 up
  // round to 0x7C00, which is infinity, as round-to-nearest-even demands.
  return sign | static_cast<uint16_t>(shift_right_rne(abs_bits - ((127u - 15u) << 23), 13));
}

float fp16_to_float(uint16_t bits) {
  const bool negative = (bits & 0x8000u) != 0;
  const int exponent = (bits >> 10) & 0x1F;
  const int mantissa = bits & 0x3FF;
  float magnitude;
  if (exponent == 0x1F) {
    if (mantissa != 0) return float_from_bits(kCanonicalFloatNaN);
    magnitude = std::numeric_limits<float>::infinity();
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  } else {
    magnitude = std::ldexp(static_cast<float>(1024 + mantissa), exponent - 25);
  }
  return negative ? -magnitude : magnitude;
}

double load_as_double(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::kFloat32: return static_cast<const float*>(p)[i];
    case DType::kFloat64: return static_cast<const double*>(p)[i];
    case DType::kBFloat16: return bf16_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::kFloat16: return fp16_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::kFloat8E4M3: return e4m3_to_float(static_cast<const uint8_t*>(p)[i]);
    case DType::kUE8M0: return ue8m0_to_float(static_cast<const uint8_t*>(p)[i]);
    case DType::kInt32: return static_cast<const int32_t*>(p)[i];
    case DType::kInt64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::kPackedInt4:
    case DType::kPackedFP4: break;  // no element-wise meaning without a scale layout
  }
  return std::numeric_limits<double>::quiet_NaN();
}

// ---- activation quantisers ----

float fp8_scale_from_amax(float amax, ScaleFormat fmt) {
  // The floor keeps the scale finite and non-zero for all-zero (or all-NaN) data.
  const float scale = std::fmax(amax, kAmaxFloor) / kFp8Max;
  if (fmt == ScaleFormat::kUE8M0) return ue8m0_to_float(float_to_ue8m0(scale));
  return scale;
}

void quantize_fp8_per_tensor(const float* x, int64_t n, float scale, uint8_t* q) {
  const float inv_scale = 1.0f / scale;
  for (int64_t i = 0; i < n; ++i) q[i] = float_to_e4m3(x[i] * inv_scale);
}

void quantize_fp8_per_token(const float* x, int64_t rows, int64_t cols, uint8_t* q, float* scales) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    scales[r] = fp8_scale_from_amax(abs_max(row, cols), ScaleFormat::kFloat32);
    quantize_fp8_per_tensor(row, cols, scales[r], q + r * cols);
  }
}

void quantize_fp8_groups(const float* x, int64_t rows, int64_t cols, int group, ScaleFormat fmt,
                         uint8_t* q, float* scales) {
  const int64_t groups = (cols + group - 1) / group;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t begin = g * group;
      const int64_t width = std::min<int64_t>(group, cols - begin);  // the last group may be short
      const float* chunk = x + r * cols + begin;
      const float scale = fp8_scale_from_amax(abs_max(chunk, width), fmt);
      scales[r * groups + g] = scale;
      quantize_fp8_per_tensor(chunk, width, scale, q + r * cols + begin);
    }
  }
}

float per_tensor_act_scale(const QuantScheme& q, const double* x, int64_t n, const float* static_scale) {
  if (q.act == ActQuant::kPerTensorStatic) return *static_scale;
  if (q.act != ActQuant::kPerTensorDynamic) return 1.f;  // unused by the other schemes
  float amax = 0.f;
  for (int64_t i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(static_cast<float>(x[i])));
  return fp8_scale_from_amax(amax, q.act_scale_format);
}

void fake_quantize_row(const QuantScheme& q, const double* x, int64_t n, float static_scale, double* out) {
  if (q.act == ActQuant::kNone || n <= 0) {
    std::copy(x, x + n, out);
    return;
  }
  // The GPU quantises float32 activations: round the float64 values first.
  std::vector<float> xf(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) xf[i] = static_cast<float>(x[i]);
  std::vector<uint8_t> bytes(static_cast<size_t>(n));

  // Every scheme is "one scale per `group` consecutive elements" of this row.
  int64_t group = n;
  std::vector<float> scales(1, static_scale);
  if (q.act == ActQuant::kPerTensorStatic || q.act == ActQuant::kPerTensorDynamic) {
    quantize_fp8_per_tensor(xf.data(), n, static_scale, bytes.data());
  } else {
    // Dynamic per-row scales follow act_scale_format (kPerToken is one group spanning the row).
    if (q.act == ActQuant::kGroup128) group = kActGroup;
    scales.resize(static_cast<size_t>((n + group - 1) / group));
    quantize_fp8_groups(xf.data(), 1, n, static_cast<int>(group), q.act_scale_format, bytes.data(),
                        scales.data());
  }
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<double>(e4m3_to_float(bytes[i])) * static_cast<double>(scales[i / group]);
}

}  // namespace fusedmoe::ref
