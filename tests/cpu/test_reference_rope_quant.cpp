// DeepSeek-V4 inverse RoPE + FP8 per-head quantisation: the CPU reference
// (ref::inv_rope_fp8_quant) by hand on small cases, its layouts, out-of-range positions, and the
// validation of the public API (fusedmoe/rope_quant.h).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fusedmoe/fusedmoe.h"
#include "fusedmoe/reference.h"

namespace fm = fusedmoe;
namespace ref = fusedmoe::ref;
using fm::InvRopeQuantProblem;
using fm::StatusCode;

namespace {

constexpr int kD = 512;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

InvRopeQuantProblem problem(int64_t T, int G, int hpg, int64_t max_pos) {
  InvRopeQuantProblem p;
  p.num_tokens = T;
  p.num_groups = G;
  p.heads_per_group = hpg;
  p.max_pos = max_pos;
  return p;
}

struct Out {
  std::vector<uint8_t> q;
  std::vector<float> scales;
};

// Runs the reference with outputs poisoned (0xAB bytes, NaN scales) so that unwritten slots show.
Out run_ref(const InvRopeQuantProblem& p, const std::vector<uint16_t>& x, const std::vector<int64_t>& pos,
            const std::vector<float>& cache) {
  Out o;
  o.q.assign(static_cast<size_t>(p.num_tokens * p.num_heads() * kD), 0xAB);
  o.scales.assign(static_cast<size_t>(fm::inv_rope_scales_elems(p)), kNaN);
  ref::inv_rope_fp8_quant(p, x.data(), pos.data(), cache.data(), o.q.data(), o.scales.data());
  return o;
}

bool is_pow2(float s) {
  int e = 0;
  return s > 0.f && std::isfinite(s) && std::frexp(s, &e) == 0.5f;
}

float clamp448(float v) { return v > 448.f ? 448.f : (v < -448.f ? -448.f : v); }

// One token, one head, position 2 of a 4-row cache; every value chosen so the results are exact.
TEST(RefRopeQuant, HandComputedSingleHead) {
  const InvRopeQuantProblem p = problem(1, 1, 1, 4);
  std::vector<float> xf(kD, 0.0f);
  // Chunk 0: amax 100 -> scale 2^ceil(log2(100/448)) = 2^-2; 100 * 4 = 400 is the midpoint of the
  // e4m3 values 384 (mantissa 4) and 416 (mantissa 5): ties to even -> 384.
  xf[0] = 100.f;
  xf[1] = -0.5f;   // -2 exactly
  xf[127] = 3.f;   // 12 exactly
  // Chunk 1: all 1.0 but one -3.0 -> scale 2^ceil(log2(3/448)) = 2^-7: 128 and -384 exactly.
  for (int d = 128; d < 256; ++d) xf[d] = 1.f;
  xf[130] = -3.f;
  // Chunk 2: all zeros -> amax floored at 1e-10: scale 2^ceil(log2(1e-10/448)) = 2^-42, bytes 0.
  // Chunk 3 (dims 384..511, rotated 448..511): pass-through 0.25 at 384; rotated pairs below.
  xf[384] = 0.25f;
  xf[448] = 2.f;   // pair i = 0 with x449: c = 0.5, s = 0.75
  xf[449] = 4.f;
  xf[450] = 1.f;   // pair i = 1 with x451: c = 0, s = 1 (a rotation by -90 degrees)
  xf[451] = -1.f;
  xf[510] = 1.5f;  // pair i = 31: c = -1, s = 0
  xf[511] = 0.5f;
  std::vector<uint16_t> x(kD);
  for (int d = 0; d < kD; ++d) x[d] = ref::float_to_bf16(xf[d]);

  std::vector<float> cache(4 * 64, 0.f);
  float* row = cache.data() + 2 * 64;  // position 2
  for (int i = 0; i < 32; ++i) row[i] = 1.f;  // identity elsewhere (c = 1, s = 0)
  row[0] = 0.5f;
  row[32 + 0] = 0.75f;
  row[1] = 0.f;
  row[32 + 1] = 1.f;
  row[31] = -1.f;
  row[32 + 31] = 0.f;
  // Other rows must not be read: make them obviously wrong.
  for (int i = 0; i < 64; ++i) cache[i] = cache[64 + i] = cache[192 + i] = 1e30f;
  const std::vector<int64_t> pos = {2};

  const Out o = run_ref(p, x, pos, cache);
  ASSERT_EQ(o.scales.size(), 4u * 4u);  // 1 group x 4 chunks x T_pad4 (4)
  const auto scale = [&](int c) { return o.scales[c * 4 + 0]; };
  const auto deq = [&](int d) { return ref::e4m3_to_float(o.q[d]) * scale(d / 128); };

  // Scales: powers of two, the smallest >= amax / 448.
  EXPECT_EQ(scale(0), 0.25f);
  EXPECT_EQ(scale(1), std::ldexp(1.f, -7));
  EXPECT_EQ(scale(2), std::ldexp(1.f, -42));
  // Chunk 3 amax: |y448| = 2 * 0.5 + 4 * 0.75 = 4 -> 2^ceil(log2(4/448)) = 2^-6.
  EXPECT_EQ(scale(3), std::ldexp(1.f, -6));
  for (int c = 0; c < 4; ++c) EXPECT_TRUE(is_pow2(scale(c))) << c;
  for (int t = 1; t < 4; ++t)
    for (int c = 0; c < 4; ++c) EXPECT_EQ(std::bit_cast<uint32_t>(o.scales[c * 4 + t]), 0u) << "padding " << t;

  // Pass-through dims: the bf16 values, quantised; RNE at the 400 midpoint.
  EXPECT_EQ(ref::e4m3_to_float(o.q[0]), 384.f);
  EXPECT_EQ(deq(1), -0.5f);
  EXPECT_EQ(deq(127), 3.f);
  EXPECT_EQ(o.q[2], 0u);
  for (int d = 128; d < 256; ++d) EXPECT_EQ(deq(d), xf[d]) << d;
  for (int d = 256; d < 384; ++d) EXPECT_EQ(o.q[d], 0u) << d;
  EXPECT_EQ(deq(384), 0.25f);
  for (int d = 385; d < 448; ++d) EXPECT_EQ(o.q[d], 0u) << d;

  // Rotated pairs by hand:
  //   even: y448 = x448 c + x449 s = 2 * 0.5 + 4 * 0.75 = 4;  odd: y449 = x449 c - x448 s = 4 * 0.5 - 2 * 0.75 = 0.5
  EXPECT_EQ(deq(448), 4.f);
  EXPECT_EQ(ref::e4m3_to_float(o.q[448]), 256.f);
  EXPECT_EQ(deq(449), 0.5f);
  //   c = 0, s = 1: y450 = x451 = -1, y451 = -x450 = -1
  EXPECT_EQ(deq(450), -1.f);
  EXPECT_EQ(deq(451), -1.f);
  //   c = -1, s = 0: y510 = -1.5, y511 = -0.5
  EXPECT_EQ(deq(510), -1.5f);
  EXPECT_EQ(deq(511), -0.5f);
  // Zero pairs under the identity rotation stay zero (+0: c = 1 * 0 + 0 * 0).
  for (int d = 452; d < 510; ++d) EXPECT_EQ(o.q[d], 0u) << d;
}

// The rotation is float32 with separately rounded products and one rounded add/sub (no FMA).
TEST(RefRopeQuant, RotationIsSeparatelyRounded) {
  const InvRopeQuantProblem p = problem(1, 1, 1, 1);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<uint16_t> x(kD, 0);
    std::vector<float> cache(64);
    for (auto& c : cache) c = u(rng);
    for (int d = 448; d < kD; ++d) x[d] = ref::float_to_bf16(u(rng) * 8.f);
    const Out o = run_ref(p, x, {0}, cache);
    // Recompute the rotated chunk with volatile temporaries (each product rounded to float).
    float y[64];
    float amax = 0.f;
    for (int k = 0; k < 64; k += 2) {
      const float xe = ref::bf16_to_float(x[448 + k]), xo = ref::bf16_to_float(x[449 + k]);
      const float c = cache[k / 2], s = cache[32 + k / 2];
      volatile float a = xe * c, b = xo * s, e = xo * c, f = xe * s;
      volatile float ye = a + b, yo = e - f;
      y[k] = ye;
      y[k + 1] = yo;
      amax = std::fmax(amax, std::fmax(std::fabs(y[k]), std::fabs(y[k + 1])));
    }
    const float scale = ref::fp8_scale_from_amax(amax, fm::ScaleFormat::kUE8M0);
    ASSERT_EQ(o.scales[3 * 4], scale);
    for (int k = 0; k < 64; ++k)
      ASSERT_EQ(o.q[448 + k], ref::float_to_e4m3(y[k] * (1.0f / scale))) << "trial " << trial << " dim " << 448 + k;
  }
}

// Values beyond +-448 after scaling exist only through infinities (a rotated pair overflowing
// float): they clamp to +-448; NaN stays NaN (0x7F) and is ignored by the amax.
TEST(RefRopeQuant, ClampInfinityAndNaN) {
  const InvRopeQuantProblem p = problem(1, 1, 1, 1);
  const float big = ref::bf16_to_float(0x7F7F);  // largest finite bf16, ~3.39e38
  std::vector<uint16_t> x(kD, ref::float_to_bf16(1.f));
  x[448] = ref::float_to_bf16(big);  // y448 = big * 1 + big * 1 = +inf
  x[449] = ref::float_to_bf16(big);  // y449 = big * 1 - big * 1 = 0
  x[450] = ref::float_to_bf16(-big);
  x[451] = ref::float_to_bf16(big);  // y450 = -big + big = 0, y451 = big + big = +inf
  x[452] = ref::float_to_bf16(-big);
  x[453] = ref::float_to_bf16(-big);  // y452 = -inf, y453 = 0
  x[10] = ref::float_to_bf16(kNaN);
  x[20] = ref::float_to_bf16(-4.f);
  std::vector<float> cache(64, 0.f);
  for (int i = 0; i < 32; ++i) cache[i] = 1.f;
  for (int i = 0; i < 3; ++i) cache[32 + i] = 1.f;
  const Out o = run_ref(p, x, {0}, cache);
  // Chunk 3: amax = inf -> scale 2^127 (UE8M0 saturates), inv = 2^-127.
  EXPECT_EQ(o.scales[3 * 4], std::ldexp(1.f, 127));
  EXPECT_EQ(o.q[448], 0x7E);  // +inf * 2^-127 = +inf -> clamp 448
  EXPECT_EQ(o.q[451], 0x7E);
  EXPECT_EQ(o.q[452], 0xFE);  // -448
  EXPECT_EQ(o.q[449], 0x00);
  // 1.0 * 2^-127 underflows e4m3 to 0.
  EXPECT_EQ(o.q[500], 0x00);
  // Chunk 0: the NaN is ignored by the amax (4 -> scale 2^-6) and becomes 0x7F.
  EXPECT_EQ(o.scales[0], std::ldexp(1.f, -6));
  EXPECT_EQ(o.q[10], 0x7F);
  EXPECT_EQ(ref::e4m3_to_float(o.q[20]), -256.f);
}

// The GPU kernel relies on SATFINITE instead of an explicit clamp: e4m3(clamp(v)) == e4m3(v)
// for every float (NaN included). Checked on a dense sweep of bit patterns plus the edges.
TEST(RefRopeQuant, ClampIsImpliedBySatfinite) {
  std::vector<float> edges = {0.f,   -0.f,   448.f,  -448.f, 464.f,  -464.f, 480.f, 1e30f, -1e30f,
                              kInf,  -kInf,  kNaN,   -kNaN,  std::nextafter(448.f, kInf),
                              std::nextafter(464.f, kInf), std::nextafter(464.f, 0.f),
                              std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min()};
  for (float v : edges) EXPECT_EQ(ref::float_to_e4m3(clamp448(v)), ref::float_to_e4m3(v)) << v;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 257) {
    const float v = std::bit_cast<float>(static_cast<uint32_t>(b));
    ASSERT_EQ(ref::float_to_e4m3(clamp448(v)), ref::float_to_e4m3(v)) << b;
  }
}

// Layout: group-major FP8, token-fastest scales with zeroed padding; every (token, head) equals
// the same head computed alone.
TEST(RefRopeQuant, LayoutGroupMajorTokenFastest) {
  const int G = 2, hpg = 3, H = G * hpg;
  const int64_t T = 5, T4 = 8, max_pos = 16;
  const InvRopeQuantProblem p = problem(T, G, hpg, max_pos);
  EXPECT_EQ(fm::inv_rope_scales_elems(p), G * hpg * 4 * T4);
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<uint16_t> x(static_cast<size_t>(T * H * kD));
  for (int64_t t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h)
      for (int d = 0; d < kD; ++d)  // a different magnitude per (token, head, chunk)
        x[(t * H + h) * kD + d] = ref::float_to_bf16(nd(rng) * std::ldexp(1.f, static_cast<int>(t * 7 + h * 3 + d / 128) % 19 - 9));
  std::vector<float> cache(static_cast<size_t>(max_pos * 64));
  std::uniform_real_distribution<float> ang(-3.14159f, 3.14159f);
  for (int64_t r = 0; r < max_pos; ++r)
    for (int i = 0; i < 32; ++i) {
      const float a = ang(rng);
      cache[r * 64 + i] = std::cos(a);
      cache[r * 64 + 32 + i] = std::sin(a);
    }
  const std::vector<int64_t> pos = {3, 0, 15, 7, 3};
  const Out o = run_ref(p, x, pos, cache);

  const InvRopeQuantProblem one = problem(1, 1, 1, max_pos);
  for (int64_t t = 0; t < T; ++t) {
    for (int h = 0; h < H; ++h) {
      const std::vector<uint16_t> xh(x.begin() + (t * H + h) * kD, x.begin() + (t * H + h + 1) * kD);
      const Out s = run_ref(one, xh, {pos[t]}, cache);
      const int g = h / hpg, j = h % hpg;
      const uint8_t* q = o.q.data() + ((g * T + t) * hpg + j) * kD;
      ASSERT_EQ(0, std::memcmp(q, s.q.data(), kD)) << "token " << t << " head " << h;
      for (int c = 0; c < 4; ++c) {
        const int64_t idx = ((g * (hpg * 4)) + j * 4 + c) * T4 + t;
        EXPECT_EQ(std::bit_cast<uint32_t>(o.scales[idx]), std::bit_cast<uint32_t>(s.scales[c * 4])) << t << " " << h << " " << c;
        EXPECT_TRUE(is_pow2(o.scales[idx]));
      }
    }
  }
  for (int64_t row = 0; row < G * hpg * 4; ++row)
    for (int64_t t = T; t < T4; ++t) EXPECT_EQ(std::bit_cast<uint32_t>(o.scales[row * T4 + t]), 0u) << row << " " << t;
}

// Every chunk's scale is the smallest power of two >= amax / 448, and dequantising gives the
// rotated values back within e4m3's rounding.
TEST(RefRopeQuant, ScalesAndDequantisation) {
  const int G = 1, hpg = 4, H = 4;
  const int64_t T = 9, T4 = 12, max_pos = 1000;
  const InvRopeQuantProblem p = problem(T, G, hpg, max_pos);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<uint16_t> x(static_cast<size_t>(T * H * kD));
  for (size_t i = 0; i < x.size(); ++i) x[i] = ref::float_to_bf16(nd(rng) * (i % 777 == 0 ? 50.f : 1.f));
  std::vector<float> cache(static_cast<size_t>(max_pos * 64));
  for (int64_t r = 0; r < max_pos; ++r)
    for (int i = 0; i < 32; ++i) {
      const double theta = static_cast<double>(r) * std::pow(10000.0, -2.0 * i / 64.0);
      cache[r * 64 + i] = static_cast<float>(std::cos(theta));
      cache[r * 64 + 32 + i] = static_cast<float>(std::sin(theta));
    }
  std::vector<int64_t> pos(T);
  for (auto& v : pos) v = static_cast<int64_t>(rng() % max_pos);
  const Out o = run_ref(p, x, pos, cache);
  for (int64_t t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h) {
      double y[kD];
      const uint16_t* xh = x.data() + (t * H + h) * kD;
      for (int d = 0; d < 448; ++d) y[d] = ref::bf16_to_float(xh[d]);
      for (int d = 448; d < kD; d += 2) {
        const double c = cache[pos[t] * 64 + (d - 448) / 2], s = cache[pos[t] * 64 + 32 + (d - 448) / 2];
        const double xe = ref::bf16_to_float(xh[d]), xo = ref::bf16_to_float(xh[d + 1]);
        y[d] = xe * c + xo * s;
        y[d + 1] = xo * c - xe * s;
      }
      for (int c = 0; c < 4; ++c) {
        double amax = 0;
        for (int e = 0; e < 128; ++e) amax = std::max(amax, std::fabs(y[c * 128 + e]));
        const float scale = o.scales[(h * 4 + c) * T4 + t];
        ASSERT_TRUE(is_pow2(scale));
        EXPECT_GE(static_cast<double>(scale) * 448.0, amax * (1 - 1e-6));
        EXPECT_LT(static_cast<double>(scale) * 224.0, amax * (1 + 1e-6));
        for (int e = 0; e < 128; ++e) {
          const int d = c * 128 + e;
          const double deq = static_cast<double>(ref::e4m3_to_float(o.q[(t * H + h) * kD + d])) * scale;
          const double tol = std::fabs(y[d]) * (1.0 / 16 + 1e-6) + scale * std::ldexp(1.0, -9);
          ASSERT_LE(std::fabs(deq - y[d]), tol) << "t " << t << " h " << h << " d " << d;
        }
      }
    }
}

// Positions outside [0, max_pos): all of the token's outputs are zero; other tokens unaffected.
TEST(RefRopeQuant, PositionOutOfRangeGivesZeros) {
  const int G = 2, hpg = 2, H = 4;
  const int64_t T = 6, T4 = 8, max_pos = 8;
  const InvRopeQuantProblem p = problem(T, G, hpg, max_pos);
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 2.f);
  std::vector<uint16_t> x(static_cast<size_t>(T * H * kD));
  for (auto& v : x) v = ref::float_to_bf16(nd(rng));
  std::vector<float> cache(static_cast<size_t>(max_pos * 64));  // exactly max_pos rows
  for (auto& v : cache) v = nd(rng);
  const std::vector<int64_t> pos = {7, -1, 8, 0, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  const Out o = run_ref(p, x, pos, cache);
  const InvRopeQuantProblem one = problem(1, 1, 1, max_pos);
  for (int64_t t = 0; t < T; ++t) {
    const bool bad = pos[t] < 0 || pos[t] >= max_pos;
    for (int h = 0; h < H; ++h) {
      const int g = h / hpg, j = h % hpg;
      const uint8_t* q = o.q.data() + ((g * T + t) * hpg + j) * kD;
      Out s;
      if (!bad) {
        const std::vector<uint16_t> xh(x.begin() + (t * H + h) * kD, x.begin() + (t * H + h + 1) * kD);
        s = run_ref(one, xh, {pos[t]}, cache);
      }
      for (int d = 0; d < kD; ++d) ASSERT_EQ(q[d], bad ? 0 : s.q[d]) << "token " << t << " head " << h << " dim " << d;
      for (int c = 0; c < 4; ++c) {
        const float sc = o.scales[(h * 4 + c) * T4 + t];
        if (bad) {
          EXPECT_EQ(std::bit_cast<uint32_t>(sc), 0u);
        } else {
          EXPECT_EQ(sc, s.scales[c * 4]);
        }
      }
    }
  }
}

// ---- validation of the public API ----

void expect_status(const fm::Status& st, StatusCode code, const std::string& words) {
  EXPECT_EQ(st.code(), code) << st.to_string();
  EXPECT_NE(st.message().find(words), std::string::npos) << "message: " << st.message() << " (wanted: " << words << ")";
}

TEST(RopeQuantValidate, ProblemRules) {
  const InvRopeQuantProblem ok = problem(16, 8, 8, 65536);
  EXPECT_TRUE(fm::validate(ok).ok()) << fm::validate(ok).to_string();
  EXPECT_TRUE(fm::validate(problem(0, 1, 8, 1)).ok());
  EXPECT_TRUE(fm::validate(problem(std::numeric_limits<int32_t>::max(), 1, 1, 1)).ok());
  EXPECT_TRUE(fm::validate(problem(1, 128, 8, 1)).ok());  // H = 1024
  EXPECT_TRUE(fm::validate(problem(1, 1, 1024, 1)).ok());

  auto with = [&](auto edit) {
    InvRopeQuantProblem p = ok;
    edit(p);
    return fm::validate(p);
  };
  expect_status(with([](auto& p) { p.num_tokens = -1; }), StatusCode::kInvalidArgument, "num_tokens");
  expect_status(with([](auto& p) { p.num_tokens = int64_t{1} << 31; }), StatusCode::kInvalidArgument, "num_tokens");
  expect_status(with([](auto& p) { p.num_groups = 0; }), StatusCode::kInvalidArgument, "num_groups");
  expect_status(with([](auto& p) { p.num_groups = -3; }), StatusCode::kInvalidArgument, "num_groups");
  expect_status(with([](auto& p) { p.heads_per_group = 0; }), StatusCode::kInvalidArgument, "heads_per_group");
  expect_status(with([](auto& p) { p.num_groups = 129; }), StatusCode::kInvalidArgument, "1024");
  expect_status(with([](auto& p) { p.num_groups = 1 << 30; p.heads_per_group = 1 << 30; }),
                StatusCode::kInvalidArgument, "1024");
  expect_status(with([](auto& p) { p.max_pos = 0; }), StatusCode::kInvalidArgument, "max_pos");
  expect_status(with([](auto& p) { p.max_pos = std::numeric_limits<int64_t>::max(); }), StatusCode::kInvalidArgument,
                "max_pos");
  expect_status(with([](auto& p) { p.head_dim = 0; }), StatusCode::kInvalidArgument, "head_dim");
  expect_status(with([](auto& p) { p.quant_chunk = -128; }), StatusCode::kInvalidArgument, "quant_chunk");
  expect_status(with([](auto& p) { p.rope_dim = 63; }), StatusCode::kInvalidArgument, "even");
  expect_status(with([](auto& p) { p.rope_dim = 1024; }), StatusCode::kInvalidArgument, "rope_dim");
  expect_status(with([](auto& p) { p.head_dim = 256; }), StatusCode::kUnsupported, "head_dim 256");
  expect_status(with([](auto& p) { p.rope_dim = 32; }), StatusCode::kUnsupported, "rope_dim 32");
  expect_status(with([](auto& p) { p.quant_chunk = 64; }), StatusCode::kUnsupported, "quant_chunk 64");
}

TEST(RopeQuantValidate, ScalesElems) {
  EXPECT_EQ(fm::inv_rope_scales_elems(problem(0, 8, 8, 1)), 0);
  EXPECT_EQ(fm::inv_rope_scales_elems(problem(1, 8, 8, 1)), 8 * 32 * 4);
  EXPECT_EQ(fm::inv_rope_scales_elems(problem(4, 8, 8, 1)), 8 * 32 * 4);
  EXPECT_EQ(fm::inv_rope_scales_elems(problem(5, 1, 8, 1)), 1 * 32 * 8);
  EXPECT_EQ(fm::inv_rope_scales_elems(problem(-1, 8, 8, 1)), 0);  // invalid
}

// Aligned fake device pointers: every call below fails before anything could touch them.
alignas(256) unsigned char g_buf[8192];
void* buf(int i, int offset = 0) { return g_buf + 512 * i + offset; }

TEST(RopeQuantValidate, CallRules) {
  const InvRopeQuantProblem p = problem(16, 8, 8, 65536);
  const void* o = buf(0);
  auto* pos = static_cast<const int64_t*>(buf(1));
  auto* cache = static_cast<const float*>(buf(2));
  void* out = buf(3);
  auto* scales = static_cast<float*>(buf(4));
  auto* flag = static_cast<int32_t*>(buf(5));
  using fm::inv_rope_fp8_quant;

  expect_status(inv_rope_fp8_quant(problem(16, 0, 8, 1), o, pos, cache, out, scales, flag, nullptr),
                StatusCode::kInvalidArgument, "num_groups");
  expect_status(inv_rope_fp8_quant(p, nullptr, pos, cache, out, scales, flag, nullptr), StatusCode::kInvalidArgument,
                "o (bf16 input) is null");
  expect_status(inv_rope_fp8_quant(p, o, nullptr, cache, out, scales, flag, nullptr), StatusCode::kInvalidArgument,
                "positions is null");
  expect_status(inv_rope_fp8_quant(p, o, pos, nullptr, out, scales, flag, nullptr), StatusCode::kInvalidArgument,
                "cos_sin_cache is null");
  expect_status(inv_rope_fp8_quant(p, o, pos, cache, nullptr, scales, flag, nullptr), StatusCode::kInvalidArgument,
                "out (fp8 output) is null");
  expect_status(inv_rope_fp8_quant(p, o, pos, cache, out, nullptr, flag, nullptr), StatusCode::kInvalidArgument,
                "out_scales is null");
  expect_status(inv_rope_fp8_quant(p, buf(0, 8), pos, cache, out, scales, flag, nullptr), StatusCode::kMisaligned,
                "o (bf16 input) must be 16-byte aligned");
  expect_status(inv_rope_fp8_quant(p, o, pos, cache, buf(3, 4), scales, flag, nullptr), StatusCode::kMisaligned,
                "out (fp8 output) must be 16-byte aligned");
  expect_status(inv_rope_fp8_quant(p, o, pos, static_cast<const float*>(buf(2, 4)), out, scales, flag, nullptr),
                StatusCode::kMisaligned, "cos_sin_cache must be 16-byte aligned");
  expect_status(inv_rope_fp8_quant(p, o, static_cast<const int64_t*>(buf(1, 4)), cache, out, scales, flag, nullptr),
                StatusCode::kMisaligned, "positions (int64) must be 8-byte aligned");
  expect_status(inv_rope_fp8_quant(p, o, pos, cache, out, static_cast<float*>(buf(4, 2)), flag, nullptr),
                StatusCode::kMisaligned, "out_scales");
  expect_status(inv_rope_fp8_quant(p, o, pos, cache, out, scales, static_cast<int32_t*>(buf(5, 1)), nullptr),
                StatusCode::kMisaligned, "error_flag");

  // T = 0: no pointer is needed; the call then only checks the device (no launch).
  const fm::Status st = inv_rope_fp8_quant(problem(0, 8, 8, 1), nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                           nullptr);
  EXPECT_TRUE(st.ok() || st.code() == StatusCode::kNoDevice || st.code() == StatusCode::kWrongArch) << st.to_string();
  if (!fm::build_info().with_cuda) {
    EXPECT_EQ(st.code(), StatusCode::kNoDevice) << st.to_string();
  }
}

}  // namespace
