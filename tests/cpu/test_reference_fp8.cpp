// The reference conversions are bit-exact with the CUDA conversion intrinsics (their host
// implementations, which mirror the device instructions), and the FP8 quantisers follow the
// conventions documented in fusedmoe/reference.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fusedmoe/reference.h"

namespace fm = fusedmoe;
namespace ref = fusedmoe::ref;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

float bits_to_float(uint32_t b) { return std::bit_cast<float>(b); }
uint32_t float_to_bits(float f) { return std::bit_cast<uint32_t>(f); }
std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// ---- the CUDA conversions under test ----
uint8_t cuda_e4m3(float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); }
float cuda_e4m3_to_float(uint8_t b) { return __half2float(__half(__nv_cvt_fp8_to_halfraw(b, __NV_E4M3))); }
uint8_t cuda_ue8m0(float x) { return __nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundPosInf); }
float cuda_ue8m0_to_float(uint8_t b) { return __bfloat162float(__nv_bfloat16(__nv_cvt_e8m0_to_bf16raw(b))); }
uint16_t cuda_bf16(float x) { return __nv_bfloat16_raw(__float2bfloat16_rn(x)).x; }
uint16_t cuda_fp16(float x) { return __half_raw(__float2half_rn(x)).x; }
float cuda_bf16_to_float(uint16_t b) {
  __nv_bfloat16_raw r;
  r.x = b;
  return __bfloat162float(__nv_bfloat16(r));
}
float cuda_fp16_to_float(uint16_t b) {
  __half_raw r;
  r.x = b;
  return __half2float(__half(r));
}

// Counts the float bit patterns in [0, 2^32) with `stride` where `same` fails, on all cores;
// records the first mismatch seen. (A template so the check inlines: the exhaustive e4m3 pass
// makes 2^32 calls.)
template <typename Same>
uint64_t count_mismatches(uint64_t stride, const Same& same, uint32_t* first_bad) {
  const unsigned workers = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<uint64_t> bad{0};
  std::atomic<uint32_t> first{0};
  std::vector<std::thread> pool;
  const uint64_t total = (uint64_t{1} << 32) / stride;
  for (unsigned w = 0; w < workers; ++w) {
    pool.emplace_back([&, w] {
      uint64_t local_bad = 0;
      for (uint64_t i = w; i < total; i += workers) {
        const auto bits = static_cast<uint32_t>(i * stride);
        if (!same(bits)) {
          if (local_bad++ == 0) first = bits;
        }
      }
      bad += local_bad;
    });
  }
  for (auto& t : pool) t.join();
  *first_bad = first;
  return bad;
}

// Float patterns around every rounding boundary of a format with `mantissa_bits` explicit
// mantissa bits: for each float whose low (23 - mantissa_bits) bits are 0 (a representable
// value) or exactly half (a midpoint), the pattern itself and its neighbours, both signs.
std::vector<uint32_t> boundary_patterns(int mantissa_bits) {
  const int dropped = 23 - mantissa_bits;
  const uint32_t half = uint32_t{1} << (dropped - 1);
  std::vector<uint32_t> out;
  for (uint32_t top = 0; top < (uint32_t{1} << (8 + mantissa_bits)); ++top) {
    const uint32_t base = top << dropped;
    for (uint32_t anchor : {base, base + half})
      for (int d = -2; d <= 2; ++d)
        for (uint32_t sign : {0u, 0x80000000u}) out.push_back((anchor + static_cast<uint32_t>(d)) | sign);
  }
  return out;
}

// Every float bit pattern within +-3 of each power of two (and of 0), both signs.
std::vector<uint32_t> power_of_two_patterns() {
  std::vector<uint32_t> out;
  for (uint32_t e = 0; e < 256; ++e)
    for (int d = -3; d <= 3; ++d)
      for (uint32_t sign : {0u, 0x80000000u}) out.push_back(((e << 23) + static_cast<uint32_t>(d)) | sign);
  // The subnormal powers of two too (2^-127 is UE8M0's smallest value).
  for (int s = 0; s < 23; ++s)
    for (int d = -1; d <= 1; ++d) out.push_back((uint32_t{1} << s) + static_cast<uint32_t>(d));
  return out;
}

// Hand-picked values that exercise zero, subnormals, the saturation edge and non-finite input.
std::vector<float> e4m3_edge_values() {
  const float e4m3_min_sub = std::ldexp(1.f, -9);
  return {0.f, -0.f,
          e4m3_min_sub, -e4m3_min_sub, std::ldexp(1.f, -10), std::nextafter(std::ldexp(1.f, -10), 1.f),
          7 * e4m3_min_sub, std::ldexp(1.f, -6), std::ldexp(1.f, -6) - std::ldexp(1.f, -10),
          std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(),
          FLT_MIN, 1.f, 1.0625f, 1.1875f, 416.f, 432.f, 448.f, -448.f, 460.f, 464.f,
          std::nextafter(464.f, 0.f), std::nextafter(464.f, kInf), 480.f, 1000.f, 1e30f, -1e30f,
          FLT_MAX, kInf, -kInf, kNaN, -kNaN, bits_to_float(0x7F800001u), bits_to_float(0xFFC00001u)};
}

// Half an e4m3 ulp at magnitude v (v in units of the scale).
double e4m3_half_ulp(double v) {
  if (v < std::ldexp(1.0, -6)) return std::ldexp(1.0, -10);  // subnormal spacing 2^-9
  return std::ldexp(1.0, static_cast<int>(std::floor(std::log2(v))) - 4);
}

// |dequant - x| <= half an e4m3 ulp of x / scale, times scale (plus float rounding slack).
void expect_within_half_ulp(const float* x, const uint8_t* q, int64_t n, const std::function<float(int64_t)>& scale_of) {
  for (int64_t i = 0; i < n; ++i) {
    const double s = scale_of(i);
    const double deq = static_cast<double>(ref::e4m3_to_float(q[i])) * s;
    const double bound = e4m3_half_ulp(std::fabs(x[i]) / s) * s * (1 + 1e-6);
    ASSERT_LE(std::fabs(deq - x[i]), bound) << "element " << i << " x=" << x[i] << " scale=" << s;
  }
}

struct Seeded {
  uint32_t seed = std::random_device{}();
  std::mt19937 rng{seed};
  std::string trace() const { return "seed=" + std::to_string(seed); }
};

// ---------------------------------------------------------------- e4m3 ----

TEST(ReferenceFp8, E4m3MatchesCudaOnEveryFloat) {
  uint32_t first_bad = 0;
  const uint64_t bad = count_mismatches(
      1, [](uint32_t b) { return ref::float_to_e4m3(bits_to_float(b)) == cuda_e4m3(bits_to_float(b)); }, &first_bad);
  EXPECT_EQ(bad, 0u) << "first mismatch at float bits " << hex(first_bad) << ": ref "
                     << hex(ref::float_to_e4m3(bits_to_float(first_bad))) << " cuda "
                     << hex(cuda_e4m3(bits_to_float(first_bad)));
}

TEST(ReferenceFp8, E4m3EdgeCases) {
  for (float x : e4m3_edge_values())
    EXPECT_EQ(ref::float_to_e4m3(x), cuda_e4m3(x)) << "x=" << x << " bits " << hex(float_to_bits(x));

  EXPECT_EQ(ref::float_to_e4m3(0.f), 0x00);
  EXPECT_EQ(ref::float_to_e4m3(-0.f), 0x80);
  EXPECT_EQ(ref::float_to_e4m3(std::ldexp(1.f, -9)), 0x01);   // smallest subnormal
  EXPECT_EQ(ref::float_to_e4m3(std::ldexp(1.f, -10)), 0x00);  // half of it: tie to even (0)
  EXPECT_EQ(ref::float_to_e4m3(std::nextafter(std::ldexp(1.f, -10), 1.f)), 0x01);
  EXPECT_EQ(ref::float_to_e4m3(-std::numeric_limits<float>::denorm_min()), 0x80);  // underflow keeps the sign
  EXPECT_EQ(ref::float_to_e4m3(7 * std::ldexp(1.f, -9)), 0x07);  // largest subnormal
  EXPECT_EQ(ref::float_to_e4m3(std::ldexp(1.f, -6)), 0x08);      // smallest normal
  EXPECT_EQ(ref::float_to_e4m3(1.f), 0x38);
  EXPECT_EQ(ref::float_to_e4m3(1.0625f), 0x38);  // tie between 1 and 1.125: even mantissa
  EXPECT_EQ(ref::float_to_e4m3(1.1875f), 0x3A);  // tie between 1.125 and 1.25: even mantissa
  EXPECT_EQ(ref::float_to_e4m3(432.f), 0x7E);    // tie between 416 and 448
  EXPECT_EQ(ref::float_to_e4m3(448.f), 0x7E);
  EXPECT_EQ(ref::float_to_e4m3(-448.f), 0xFE);
  EXPECT_EQ(ref::float_to_e4m3(464.f), 0x7E);  // the rounding boundary: tie to even
  // __NV_SATFINITE: beyond the boundary, huge values and infinities clamp to +-448.
  EXPECT_EQ(ref::float_to_e4m3(std::nextafter(464.f, kInf)), 0x7E);
  EXPECT_EQ(ref::float_to_e4m3(1e30f), 0x7E);
  EXPECT_EQ(ref::float_to_e4m3(-1e30f), 0xFE);
  EXPECT_EQ(ref::float_to_e4m3(kInf), 0x7E);
  EXPECT_EQ(ref::float_to_e4m3(-kInf), 0xFE);
  // NaN of either sign and any payload -> 0x7F (the sign is dropped).
  EXPECT_EQ(ref::float_to_e4m3(kNaN), 0x7F);
  EXPECT_EQ(ref::float_to_e4m3(-kNaN), 0x7F);
  EXPECT_EQ(ref::float_to_e4m3(bits_to_float(0xFF800001u)), 0x7F);
}

TEST(ReferenceFp8, E4m3DecodesAll256Bytes) {
  for (int b = 0; b < 256; ++b) {
    const auto byte = static_cast<uint8_t>(b);
    const float got = ref::e4m3_to_float(byte);
    EXPECT_EQ(float_to_bits(got), float_to_bits(cuda_e4m3_to_float(byte))) << "byte " << hex(b);
    if ((b & 0x7F) == 0x7F) {
      EXPECT_TRUE(std::isnan(got));
      EXPECT_EQ(float_to_bits(got), 0x7FFFFFFFu);  // canonical NaN, sign dropped
      EXPECT_EQ(ref::float_to_e4m3(got), 0x7F);
    } else {
      EXPECT_EQ(ref::float_to_e4m3(got), byte) << "round trip of byte " << hex(b);
    }
  }
  EXPECT_EQ(ref::e4m3_to_float(0x01), std::ldexp(1.f, -9));
  EXPECT_EQ(ref::e4m3_to_float(0x07), 7 * std::ldexp(1.f, -9));
  EXPECT_EQ(ref::e4m3_to_float(0x08), std::ldexp(1.f, -6));
  EXPECT_EQ(ref::e4m3_to_float(0x38), 1.f);
  EXPECT_EQ(ref::e4m3_to_float(0x7E), 448.f);
  EXPECT_EQ(ref::e4m3_to_float(0xFE), -448.f);
  EXPECT_TRUE(std::signbit(ref::e4m3_to_float(0x80)));
}

// ---------------------------------------------------------------- ue8m0 ----

TEST(ReferenceFp8, Ue8m0MatchesCudaOnDenseSample) {
  uint32_t first_bad = 0;
  auto same = [](uint32_t b) { return ref::float_to_ue8m0(bits_to_float(b)) == cuda_ue8m0(bits_to_float(b)); };
  EXPECT_EQ(count_mismatches(251, same, &first_bad), 0u) << "first mismatch at float bits " << hex(first_bad);
  for (uint32_t b : power_of_two_patterns()) EXPECT_TRUE(same(b)) << "float bits " << hex(b);
  for (float x : e4m3_edge_values()) EXPECT_TRUE(same(float_to_bits(x))) << "x=" << x;
}

TEST(ReferenceFp8, Ue8m0EdgeCases) {
  for (int e = -127; e <= 127; ++e)
    EXPECT_EQ(ref::float_to_ue8m0(std::ldexp(1.f, e)), e + 127) << "2^" << e;  // exact powers stay
  EXPECT_EQ(ref::float_to_ue8m0(3.f), 129);                                  // rounds up to 4
  EXPECT_EQ(ref::float_to_ue8m0(std::nextafter(1.f, 2.f)), 128);
  EXPECT_EQ(ref::float_to_ue8m0(std::nextafter(1.f, 0.f)), 127);
  EXPECT_EQ(ref::float_to_ue8m0(1.f / 448.f), 127 - 8);  // 2^-9 < 1/448 <= 2^-8
  EXPECT_EQ(ref::float_to_ue8m0(-3.f), 129);               // the magnitude counts
  EXPECT_EQ(ref::float_to_ue8m0(0.f), 0);                  // clamps to 2^-127
  EXPECT_EQ(ref::float_to_ue8m0(-0.f), 0);
  EXPECT_EQ(ref::float_to_ue8m0(std::numeric_limits<float>::denorm_min()), 0);
  EXPECT_EQ(ref::float_to_ue8m0(std::nextafter(std::ldexp(1.f, -127), 1.f)), 1);
  EXPECT_EQ(ref::float_to_ue8m0(std::ldexp(1.5f, 127)), 254);  // saturates to 2^127
  EXPECT_EQ(ref::float_to_ue8m0(FLT_MAX), 254);
  EXPECT_EQ(ref::float_to_ue8m0(kInf), 254);
  EXPECT_EQ(ref::float_to_ue8m0(-kInf), 254);
  EXPECT_EQ(ref::float_to_ue8m0(kNaN), 255);
  EXPECT_EQ(ref::float_to_ue8m0(-kNaN), 255);

  for (int b = 0; b < 256; ++b) {
    const auto byte = static_cast<uint8_t>(b);
    EXPECT_EQ(float_to_bits(ref::ue8m0_to_float(byte)), float_to_bits(cuda_ue8m0_to_float(byte))) << "byte " << b;
    if (b < 255) {
      EXPECT_EQ(ref::ue8m0_to_float(byte), std::ldexp(1.f, b - 127));
      EXPECT_EQ(ref::float_to_ue8m0(ref::ue8m0_to_float(byte)), byte);
    }
  }
  EXPECT_TRUE(std::isnan(ref::ue8m0_to_float(0xFF)));
}

// ---------------------------------------------------------------- bf16 / fp16 ----

TEST(ReferenceFp8, Bf16MatchesCuda) {
  uint32_t first_bad = 0;
  auto same = [](uint32_t b) { return ref::float_to_bf16(bits_to_float(b)) == cuda_bf16(bits_to_float(b)); };
  EXPECT_EQ(count_mismatches(251, same, &first_bad), 0u) << "first mismatch at float bits " << hex(first_bad);
  for (uint32_t b : boundary_patterns(7)) ASSERT_TRUE(same(b)) << "float bits " << hex(b);
  for (float x : e4m3_edge_values()) EXPECT_TRUE(same(float_to_bits(x))) << "x=" << x;
  EXPECT_EQ(ref::float_to_bf16(kNaN), 0x7FFF);
  EXPECT_EQ(ref::float_to_bf16(-kNaN), 0x7FFF);
  EXPECT_EQ(ref::float_to_bf16(FLT_MAX), 0x7F80);  // rounds to +inf
  EXPECT_EQ(ref::float_to_bf16(-kInf), 0xFF80);
  for (uint32_t b = 0; b < 65536; ++b) {
    const auto h = static_cast<uint16_t>(b);
    ASSERT_EQ(float_to_bits(ref::bf16_to_float(h)), float_to_bits(cuda_bf16_to_float(h))) << "bf16 " << hex(b);
  }
}

TEST(ReferenceFp8, Fp16MatchesCuda) {
  uint32_t first_bad = 0;
  auto same = [](uint32_t b) { return ref::float_to_fp16(bits_to_float(b)) == cuda_fp16(bits_to_float(b)); };
  EXPECT_EQ(count_mismatches(251, same, &first_bad), 0u) << "first mismatch at float bits " << hex(first_bad);
  // Normal fp16 boundaries sit on float patterns with 13 dropped bits; subnormal ones are
  // covered by the powers of two and the e4m3-style sample below.
  for (uint32_t b : boundary_patterns(10)) ASSERT_TRUE(same(b)) << "float bits " << hex(b);
  for (uint32_t b : power_of_two_patterns()) ASSERT_TRUE(same(b)) << "float bits " << hex(b);
  for (uint32_t h = 0; h < 0x400; ++h) {  // midpoints between fp16 subnormals
    const float mid = std::ldexp(static_cast<float>(h) + 0.5f, -24);
    for (int d = -1; d <= 1; ++d) ASSERT_TRUE(same(float_to_bits(mid) + static_cast<uint32_t>(d))) << h;
  }
  for (float x : e4m3_edge_values()) EXPECT_TRUE(same(float_to_bits(x))) << "x=" << x;
  EXPECT_EQ(ref::float_to_fp16(65504.f), 0x7BFF);
  EXPECT_EQ(ref::float_to_fp16(std::nextafter(65520.f, 0.f)), 0x7BFF);
  EXPECT_EQ(ref::float_to_fp16(65520.f), 0x7C00);  // tie: rounds to even, which is +inf
  EXPECT_EQ(ref::float_to_fp16(kNaN), 0x7FFF);
  EXPECT_EQ(ref::float_to_fp16(std::ldexp(1.f, -25)), 0x0000);  // half the smallest subnormal
  EXPECT_EQ(ref::float_to_fp16(std::nextafter(std::ldexp(1.f, -25), 1.f)), 0x0001);
  for (uint32_t b = 0; b < 65536; ++b) {
    const auto h = static_cast<uint16_t>(b);
    ASSERT_EQ(float_to_bits(ref::fp16_to_float(h)), float_to_bits(cuda_fp16_to_float(h))) << "fp16 " << hex(b);
  }
}

TEST(ReferenceFp8, LoadAsDouble) {
  const float f32[] = {1.5f, -2.f};
  const double f64[] = {0.1, -3.0};
  const uint16_t bf16[] = {ref::float_to_bf16(1.5f), ref::float_to_bf16(-2.f)};
  const uint16_t fp16[] = {ref::float_to_fp16(0.25f), ref::float_to_fp16(-65504.f)};
  const uint8_t e4m3[] = {0x38, 0xFE};
  const uint8_t ue8m0[] = {127, 130};
  const int32_t i32[] = {7, -9};
  const int64_t i64[] = {int64_t{1} << 40, -1};
  EXPECT_EQ(ref::load_as_double(f32, fm::DType::kFloat32, 1), -2.0);
  EXPECT_EQ(ref::load_as_double(f64, fm::DType::kFloat64, 0), 0.1);
  EXPECT_EQ(ref::load_as_double(bf16, fm::DType::kBFloat16, 0), 1.5);
  EXPECT_EQ(ref::load_as_double(fp16, fm::DType::kFloat16, 1), -65504.0);
  EXPECT_EQ(ref::load_as_double(e4m3, fm::DType::kFloat8E4M3, 1), -448.0);
  EXPECT_EQ(ref::load_as_double(ue8m0, fm::DType::kUE8M0, 1), 8.0);
  EXPECT_EQ(ref::load_as_double(i32, fm::DType::kInt32, 1), -9.0);
  EXPECT_EQ(ref::load_as_double(i64, fm::DType::kInt64, 0), std::ldexp(1.0, 40));
}

// ---------------------------------------------------------------- quantisers ----

TEST(ReferenceFp8, ScaleFromAmax) {
  EXPECT_EQ(ref::fp8_scale_from_amax(448.f, fm::ScaleFormat::kFloat32), 1.f);
  EXPECT_EQ(ref::fp8_scale_from_amax(3.f, fm::ScaleFormat::kFloat32), 3.f / 448.f);
  EXPECT_EQ(ref::fp8_scale_from_amax(0.f, fm::ScaleFormat::kFloat32), 1e-10f / 448.f);  // floored amax
  EXPECT_EQ(ref::fp8_scale_from_amax(kNaN, fm::ScaleFormat::kFloat32), 1e-10f / 448.f);
  EXPECT_EQ(ref::fp8_scale_from_amax(448.f, fm::ScaleFormat::kUE8M0), 1.f);
  EXPECT_EQ(ref::fp8_scale_from_amax(449.f, fm::ScaleFormat::kUE8M0), 2.f);
  EXPECT_EQ(ref::fp8_scale_from_amax(224.f, fm::ScaleFormat::kUE8M0), 0.5f);
  EXPECT_EQ(ref::fp8_scale_from_amax(1.f, fm::ScaleFormat::kUE8M0), std::ldexp(1.f, -8));
  EXPECT_EQ(ref::fp8_scale_from_amax(0.f, fm::ScaleFormat::kUE8M0), std::ldexp(1.f, -42));  // 2.2e-13 -> 2^-42
}

TEST(ReferenceFp8, PerTensorQuantisation) {
  Seeded s;
  SCOPED_TRACE(s.trace());
  std::normal_distribution<float> nd(0.f, 3.f);
  std::vector<float> x(1000);
  for (float& v : x) v = nd(s.rng);
  float amax = 0.f;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  const float scale = ref::fp8_scale_from_amax(amax, fm::ScaleFormat::kFloat32);
  std::vector<uint8_t> q(x.size());
  ref::quantize_fp8_per_tensor(x.data(), static_cast<int64_t>(x.size()), scale, q.data());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(q[i], ref::float_to_e4m3(x[i] * (1.0f / scale)));
  expect_within_half_ulp(x.data(), q.data(), static_cast<int64_t>(x.size()), [&](int64_t) { return scale; });

  // A static scale that is too small saturates to +-448 instead of overflowing.
  const float big[] = {1000.f, -1000.f};
  uint8_t qb[2];
  ref::quantize_fp8_per_tensor(big, 2, 1.f, qb);
  EXPECT_EQ(qb[0], 0x7E);
  EXPECT_EQ(qb[1], 0xFE);
}

TEST(ReferenceFp8, PerTokenQuantisation) {
  Seeded s;
  SCOPED_TRACE(s.trace());
  const int64_t rows = 5, cols = 300;
  std::vector<float> x(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    std::normal_distribution<float> nd(0.f, std::ldexp(1.f, static_cast<int>(r) * 4 - 8));  // very different row ranges
    for (int64_t c = 0; c < cols; ++c) x[r * cols + c] = nd(s.rng);
  }
  x[3 * cols + 7] = 0.f;
  std::fill(x.begin() + 4 * cols, x.end(), 0.f);  // an all-zero row: floored amax, all codes 0
  std::vector<uint8_t> q(x.size());
  std::vector<float> scales(rows);
  ref::quantize_fp8_per_token(x.data(), rows, cols, q.data(), scales.data());
  for (int64_t r = 0; r < rows; ++r) {
    float amax = 0.f;
    for (int64_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(x[r * cols + c]));
    EXPECT_EQ(scales[r], std::max(amax, 1e-10f) / 448.f) << "row " << r;
    for (int64_t c = 0; c < cols; ++c)
      ASSERT_EQ(q[r * cols + c], ref::float_to_e4m3(x[r * cols + c] * (1.0f / scales[r])));
  }
  for (int64_t c = 0; c < cols; ++c) EXPECT_EQ(q[4 * cols + c], 0);
  expect_within_half_ulp(x.data(), q.data(), rows * cols, [&](int64_t i) { return scales[i / cols]; });

  // Per-token equals one float32 group spanning the row.
  std::vector<uint8_t> qg(x.size());
  std::vector<float> sg(rows);
  ref::quantize_fp8_groups(x.data(), rows, cols, static_cast<int>(cols), fm::ScaleFormat::kFloat32, qg.data(), sg.data());
  EXPECT_EQ(q, qg);
  EXPECT_EQ(scales, sg);
}

TEST(ReferenceFp8, Group128Quantisation) {
  Seeded s;
  SCOPED_TRACE(s.trace());
  const int64_t rows = 3, cols = 300, groups = 3;  // the last group holds 44 columns
  std::vector<float> x(rows * cols);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (int64_t i = 0; i < rows * cols; ++i) x[i] = nd(s.rng) * std::ldexp(1.f, static_cast<int>(i % cols / 128) * 3);
  for (fm::ScaleFormat fmt : {fm::ScaleFormat::kFloat32, fm::ScaleFormat::kUE8M0}) {
    SCOPED_TRACE(fm::to_string(fmt));
    std::vector<uint8_t> q(x.size());
    std::vector<float> scales(rows * groups);
    ref::quantize_fp8_groups(x.data(), rows, cols, 128, fmt, q.data(), scales.data());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t g = 0; g < groups; ++g) {
        float amax = 0.f;
        for (int64_t c = g * 128; c < std::min<int64_t>(cols, (g + 1) * 128); ++c)
          amax = std::max(amax, std::fabs(x[r * cols + c]));
        const float sc = scales[r * groups + g];
        if (fmt == fm::ScaleFormat::kFloat32) {
          EXPECT_EQ(sc, amax / 448.f);
        } else {
          // A power of two no smaller than amax / 448 (nothing saturates) and less than twice it.
          int e = 0;
          EXPECT_EQ(std::frexp(sc, &e), 0.5f);
          EXPECT_GE(sc, amax / 448.f);
          EXPECT_LT(sc, 2 * (amax / 448.f));
        }
        for (int64_t c = g * 128; c < std::min<int64_t>(cols, (g + 1) * 128); ++c)
          ASSERT_EQ(q[r * cols + c], ref::float_to_e4m3(x[r * cols + c] * (1.0f / sc)));
      }
    }
    expect_within_half_ulp(x.data(), q.data(), rows * cols,
                           [&](int64_t i) { return scales[i / cols * groups + i % cols / 128]; });
  }
}

TEST(ReferenceFp8, FakeQuantizeRow) {
  Seeded s;
  SCOPED_TRACE(s.trace());
  const int64_t n = 200;
  std::vector<double> x(n);
  std::normal_distribution<double> nd(0.0, 2.0);
  for (double& v : x) v = nd(s.rng);
  std::vector<float> xf(x.begin(), x.end());
  std::vector<double> out(n);

  ref::fake_quantize_row(fm::QuantScheme::bf16(), x.data(), n, 0.f, out.data());
  EXPECT_EQ(out, x);  // kNone: untouched, no rounding at all

  ref::fake_quantize_row(fm::QuantScheme::fp8_per_tensor(false), x.data(), n, 0.05f, out.data());
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], static_cast<double>(ref::e4m3_to_float(ref::float_to_e4m3(xf[i] * (1.0f / 0.05f)))) * 0.05f);

  std::vector<uint8_t> q(n);
  float token_scale = 0.f;
  ref::quantize_fp8_per_token(xf.data(), 1, n, q.data(), &token_scale);
  ref::fake_quantize_row(fm::QuantScheme::fp8_per_channel(), x.data(), n, 0.f, out.data());
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], static_cast<double>(ref::e4m3_to_float(q[i])) * token_scale);

  for (fm::ScaleFormat fmt : {fm::ScaleFormat::kFloat32, fm::ScaleFormat::kUE8M0}) {
    std::vector<float> gs(2);
    ref::quantize_fp8_groups(xf.data(), 1, n, 128, fmt, q.data(), gs.data());
    ref::fake_quantize_row(fm::QuantScheme::fp8_block128(fmt), x.data(), n, 0.f, out.data());
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i], static_cast<double>(ref::e4m3_to_float(q[i])) * gs[i / 128]) << fm::to_string(fmt);
  }
}

}  // namespace
