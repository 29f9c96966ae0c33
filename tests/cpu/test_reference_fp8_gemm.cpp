// The FP8 GEMM operand helpers of the CPU reference (src/reference/fp8_gemm.cpp): scale layouts
// checked on hand-built tiny tensors, quantise -> dequantise round trips within half an e4m3 ulp
// for every layout, exactness on integer inputs, UE8M0 decoding, extreme scales, and the float64
// grouped GEMM against a naive triple loop (and against the layer's gemm1/gemm2 rows).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fusedmoe/reference.h"

namespace fm = fusedmoe;
namespace ref = fusedmoe::ref;

namespace {

constexpr uint8_t kE4m3One = 0x38;  // 1.0
constexpr uint8_t kE4m3NaN = 0x7F;

struct Seeded {
  uint32_t seed = std::random_device{}();
  std::mt19937 rng{seed};
  std::string trace() const { return "seed=" + std::to_string(seed); }
};

fm::WeightQuant weight_quant(fm::ScaleGranularity g, fm::ScaleFormat f = fm::ScaleFormat::kFloat32) {
  fm::WeightQuant wq;
  wq.format = fm::WeightFormat::kFP8E4M3;
  wq.granularity = g;
  wq.scale_format = f;
  return wq;
}

// Elements of a weight-scale tensor of expert count g for [rows, cols] matrices.
int64_t weight_scale_count(const fm::WeightQuant& wq, int64_t g, int64_t rows, int64_t cols) {
  switch (wq.granularity) {
    case fm::ScaleGranularity::kNone: return 0;
    case fm::ScaleGranularity::kPerTensor: return g;
    case fm::ScaleGranularity::kPerChannel: return g * rows;
    case fm::ScaleGranularity::kBlock:
      return g * ((rows + wq.block_n - 1) / wq.block_n) * ((cols + wq.block_k - 1) / wq.block_k);
    case fm::ScaleGranularity::kGroup: return g * rows * ((cols + wq.block_k - 1) / wq.block_k);
  }
  return 0;
}

// Weight scales as raw storage: f32 or UE8M0 bytes.
struct WeightScales {
  std::vector<float> f32;
  std::vector<uint8_t> ue8m0;
  WeightScales(const fm::WeightQuant& wq, int64_t n)
      : f32(wq.scale_format == fm::ScaleFormat::kFloat32 ? static_cast<size_t>(n) : 0),
        ue8m0(wq.scale_format == fm::ScaleFormat::kUE8M0 ? static_cast<size_t>(n) : 0) {}
  void* data() { return f32.empty() ? static_cast<void*>(ue8m0.data()) : static_cast<void*>(f32.data()); }
};

// Half an e4m3 ulp at magnitude v (in units of the scale), as in test_reference_fp8.cpp.
double e4m3_half_ulp(double v) {
  if (v < std::ldexp(1.0, -6)) return std::ldexp(1.0, -10);  // subnormal spacing 2^-9
  return std::ldexp(1.0, static_cast<int>(std::floor(std::log2(v))) - 4);
}

// The quantiser rounds x * (1 / scale), computed in float32 (two roundings, < 2^-22 relative), to
// e4m3: |deq - x| <= (half an e4m3 ulp of |x| / scale + 2^-21 |x| / scale) * scale.
double round_trip_bound(double x, double s) {
  const double v = std::fabs(x) / s;
  return (e4m3_half_ulp(v) + std::ldexp(v, -21)) * s;
}

void expect_round_trip(const float* x, const double* deq, int64_t n, const std::function<double(int64_t)>& scale_of) {
  for (int64_t i = 0; i < n; ++i) {
    const double s = scale_of(i);
    const double bound = round_trip_bound(x[i], s);
    ASSERT_LE(std::fabs(deq[i] - x[i]), bound) << "element " << i << " x=" << x[i] << " scale=" << s;
  }
}

// Random data whose magnitude changes every `period` elements (so block/row scales differ).
std::vector<float> random_data(std::mt19937& rng, int64_t n, int64_t period, double base = 1.0) {
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    x[static_cast<size_t>(i)] = static_cast<float>(base * nd(rng) * std::ldexp(1.0, static_cast<int>((i / period) % 7) * 2 - 6));
  return x;
}

// Integers in [-16, 16]: at most 4 significant bits, so exact in e4m3 at any power-of-two scale
// that keeps them in range.
std::vector<float> integer_data(std::mt19937& rng, int64_t n) {
  std::uniform_int_distribution<int> d(-16, 16);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = static_cast<float>(d(rng));
  return x;
}

// ---------------------------------------------------------------- layouts, by hand ----

TEST(ReferenceFp8Gemm, RowsPad4) {
  EXPECT_EQ(ref::fp8_rows_pad4(0), 0);
  EXPECT_EQ(ref::fp8_rows_pad4(1), 4);
  EXPECT_EQ(ref::fp8_rows_pad4(4), 4);
  EXPECT_EQ(ref::fp8_rows_pad4(5), 8);
  EXPECT_EQ(ref::fp8_rows_pad4(129), 132);
}

TEST(ReferenceFp8Gemm, ActivationScaleLayoutsByHand) {
  // K = 256, rows = 5 -> rows_pad4 = 8: the scale of row r, group g is scales[g * 8 + r].
  const int64_t rows = 5, cols = 256, stride = ref::fp8_rows_pad4(rows);
  ASSERT_EQ(stride, 8);
  std::vector<uint8_t> q(rows * cols, kE4m3One);
  std::vector<float> scales(2 * stride);
  for (int64_t i = 0; i < 2 * stride; ++i) scales[i] = static_cast<float>(i + 1);  // slot i holds i + 1
  ref::Fp8Activations a{q.data(), scales.data(), fm::ActQuant::kGroup128, stride};
  std::vector<double> deq(rows * cols);
  ref::dequantize_fp8_activations(a, cols, 0, rows, deq.data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t g = c / 128;
      ASSERT_EQ(deq[r * cols + c], static_cast<double>(g * 8 + r + 1)) << "row " << r << " col " << c;
      ASSERT_EQ(ref::fp8_act_scale(a, r, c), static_cast<double>(g * 8 + r + 1));
    }
  // A row range: rows [2, 4) land at out rows 0, 1.
  std::vector<double> part(2 * cols);
  ref::dequantize_fp8_activations(a, cols, 2, 4, part.data());
  EXPECT_EQ(part[0], 3.0);             // row 2, group 0 -> slot 2
  EXPECT_EQ(part[cols + 200], 12.0);   // row 3, group 1 -> slot 8 + 3
  // Per token [rows_pad4]: scales[row]; per tensor: scales[0] for every element.
  a.quant = fm::ActQuant::kPerToken;
  ref::dequantize_fp8_activations(a, cols, 0, rows, deq.data());
  for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(deq[r * cols + 255], static_cast<double>(r + 1));
  for (fm::ActQuant pt : {fm::ActQuant::kPerTensorStatic, fm::ActQuant::kPerTensorDynamic}) {
    a.quant = pt;
    ref::dequantize_fp8_activations(a, cols, 0, rows, deq.data());
    EXPECT_TRUE(std::all_of(deq.begin(), deq.end(), [](double v) { return v == 1.0; }));
  }
  // kNone: the bytes' values, no scales needed.
  const ref::Fp8Activations none{q.data(), nullptr, fm::ActQuant::kNone, 0};
  ref::dequantize_fp8_activations(none, cols, 0, rows, deq.data());
  EXPECT_TRUE(std::all_of(deq.begin(), deq.end(), [](double v) { return v == 1.0; }));
}

TEST(ReferenceFp8Gemm, WeightScaleLayoutsByHand) {
  // G = 2, rows = 130 (2 row blocks, the second of 2 rows), cols = 200 (2 col blocks, 72 wide).
  const int64_t g = 2, rows = 130, cols = 200;
  std::vector<uint8_t> q(g * rows * cols, kE4m3One);
  std::vector<double> deq(q.size());
  auto at = [&](int64_t e, int64_t r, int64_t c) { return deq[(e * rows + r) * cols + c]; };

  // 128x128 blocks [G][ceil(N/128)][ceil(K/128)], f32: slot (e * 2 + rb) * 2 + cb.
  const fm::WeightQuant block = weight_quant(fm::ScaleGranularity::kBlock);
  std::vector<float> bs(8);
  for (int i = 0; i < 8; ++i) bs[i] = static_cast<float>(10 + i);
  ref::dequantize_fp8_weights({q.data(), bs.data(), block}, g, rows, cols, deq.data());
  EXPECT_EQ(at(0, 0, 0), 10.0);
  EXPECT_EQ(at(0, 127, 127), 10.0);
  EXPECT_EQ(at(0, 127, 128), 11.0);
  EXPECT_EQ(at(0, 128, 0), 12.0);
  EXPECT_EQ(at(0, 129, 199), 13.0);
  EXPECT_EQ(at(1, 0, 128), 15.0);
  EXPECT_EQ(at(1, 129, 199), 17.0);

  // The same blocks as UE8M0 bytes: slot i holds 127 + i -> 2^i.
  const fm::WeightQuant block_e8 = weight_quant(fm::ScaleGranularity::kBlock, fm::ScaleFormat::kUE8M0);
  std::vector<uint8_t> be(8);
  for (int i = 0; i < 8; ++i) be[i] = static_cast<uint8_t>(127 + i);
  ref::dequantize_fp8_weights({q.data(), be.data(), block_e8}, g, rows, cols, deq.data());
  EXPECT_EQ(at(0, 5, 5), 1.0);
  EXPECT_EQ(at(0, 5, 150), 2.0);
  EXPECT_EQ(at(0, 128, 5), 4.0);
  EXPECT_EQ(at(1, 129, 128), 128.0);

  // Per channel [G][N]: e * rows + row. Per tensor [G]: e.
  std::vector<float> cs(g * rows);
  for (int64_t i = 0; i < g * rows; ++i) cs[i] = static_cast<float>(i);
  ref::dequantize_fp8_weights({q.data(), cs.data(), weight_quant(fm::ScaleGranularity::kPerChannel)}, g, rows, cols,
                              deq.data());
  EXPECT_EQ(at(0, 7, 199), 7.0);
  EXPECT_EQ(at(1, 7, 0), 137.0);
  const float ts[] = {0.5f, 3.f};
  ref::dequantize_fp8_weights({q.data(), ts, weight_quant(fm::ScaleGranularity::kPerTensor)}, g, rows, cols,
                              deq.data());
  EXPECT_EQ(at(0, 129, 199), 0.5);
  EXPECT_EQ(at(1, 0, 0), 3.0);
  EXPECT_EQ(ref::fp8_weight_scale(weight_quant(fm::ScaleGranularity::kNone), nullptr, 1, rows, cols, 3, 4), 1.0);
}

TEST(ReferenceFp8Gemm, Ue8m0WeightScalesDecodeAsTheConversions) {
  const fm::WeightQuant wq = weight_quant(fm::ScaleGranularity::kPerTensor, fm::ScaleFormat::kUE8M0);
  const uint8_t q[] = {kE4m3One, kE4m3One, kE4m3One, kE4m3One, kE4m3One};
  const uint8_t bytes[] = {0, 1, 127, 254, 255};
  for (int e = 0; e < 5; ++e) {
    const double s = ref::fp8_weight_scale(wq, bytes, e, 1, 1, 0, 0);
    const float expected = ref::ue8m0_to_float(bytes[e]);
    if (std::isnan(expected)) EXPECT_TRUE(std::isnan(s));
    else EXPECT_EQ(s, static_cast<double>(expected)) << "byte " << int(bytes[e]);
  }
  EXPECT_EQ(ref::fp8_weight_scale(wq, bytes, 0, 1, 1, 0, 0), std::ldexp(1.0, -127));  // 0 -> 2^-127
  EXPECT_EQ(ref::fp8_weight_scale(wq, bytes, 3, 1, 1, 0, 0), std::ldexp(1.0, 127));
  EXPECT_TRUE(std::isnan(ref::fp8_weight_scale(wq, bytes, 4, 1, 1, 0, 0)));        // 255 -> NaN

  double deq[5];
  float deqf[5];
  ref::dequantize_fp8_weights({q, bytes, wq}, 5, 1, 1, deq);
  ref::dequantize_fp8_weights({q, bytes, wq}, 5, 1, 1, deqf);
  EXPECT_EQ(deq[0], std::ldexp(1.0, -127));
  EXPECT_EQ(deqf[0], std::ldexp(1.f, -127));  // a float subnormal, still exact
  EXPECT_EQ(deq[3], std::ldexp(1.0, 127));
  EXPECT_TRUE(std::isnan(deq[4]));
  EXPECT_TRUE(std::isnan(deqf[4]));
  // 448 * 2^127 is finite in float64 and overflows float32.
  const uint8_t q448 = 0x7E;
  const uint8_t b254 = 254;
  ref::dequantize_fp8_weights({&q448, &b254, wq}, 1, 1, 1, deq);
  ref::dequantize_fp8_weights({&q448, &b254, wq}, 1, 1, 1, deqf);
  EXPECT_EQ(deq[0], 448.0 * std::ldexp(1.0, 127));
  EXPECT_TRUE(std::isinf(deqf[0]));

  // The quantiser stores UE8M0 scales as the byte of the power of two it used.
  const float w[] = {1.f, -3.f};
  uint8_t qw[2], sb = 0;
  ref::quantize_fp8_weights(wq, w, 1, 1, 2, qw, &sb);
  EXPECT_EQ(sb, ref::float_to_ue8m0(ref::fp8_scale_from_amax(3.f, fm::ScaleFormat::kUE8M0)));
}

// ---------------------------------------------------------------- round trips ----

struct ActCase {
  fm::ActQuant quant;
  fm::ScaleFormat fmt;
};
const ActCase kActCases[] = {
    {fm::ActQuant::kPerTensorStatic, fm::ScaleFormat::kFloat32},
    {fm::ActQuant::kPerTensorDynamic, fm::ScaleFormat::kFloat32},
    {fm::ActQuant::kPerTensorDynamic, fm::ScaleFormat::kUE8M0},
    {fm::ActQuant::kPerToken, fm::ScaleFormat::kFloat32},
    {fm::ActQuant::kPerToken, fm::ScaleFormat::kUE8M0},
    {fm::ActQuant::kGroup128, fm::ScaleFormat::kFloat32},
    {fm::ActQuant::kGroup128, fm::ScaleFormat::kUE8M0},
};

fm::QuantScheme scheme_of(const ActCase& c) {
  fm::QuantScheme s;
  s.act = c.quant;
  s.act_scale_format = c.fmt;
  return s;
}

TEST(ReferenceFp8Gemm, ActivationRoundTripEveryLayout) {
  Seeded s;
  SCOPED_TRACE(s.trace());
  const int64_t rows = 5, stride = ref::fp8_rows_pad4(rows);
  for (int64_t cols : {int64_t{256}, int64_t{300}}) {  // 300: a short last group
    const std::vector<float> x = random_data(s.rng, rows * cols, 64);
    for (const ActCase& c : kActCases) {
      SCOPED_TRACE(std::string(fm::to_string(c.quant)) + " " + fm::to_string(c.fmt) + " cols " + std::to_string(cols));
      const int64_t groups = c.quant == fm::ActQuant::kGroup128 ? (cols + 127) / 128 : 1;
      std::vector<uint8_t> q(x.size());
      std::vector<float> scales(groups * stride, -1.f);
      if (c.quant == fm::ActQuant::kPerTensorStatic) scales[0] = 0.02f;  // some values saturate at 448
      ref::quantize_fp8_activations(c.quant, c.fmt, x.data(), rows, cols, stride, q.data(), scales.data());
      const ref::Fp8Activations a{q.data(), scales.data(), c.quant, stride};
      std::vector<double> deq(x.size());
      ref::dequantize_fp8_activations(a, cols, 0, rows, deq.data());
      std::vector<float> deqf(x.size());
      ref::dequantize_fp8_activations(a, cols, 0, rows, deqf.data());
      for (size_t i = 0; i < deq.size(); ++i) ASSERT_EQ(deqf[i], static_cast<float>(deq[i]));

      // Bit-identical with fake_quantize_row, the layer's view of the same scheme.
      const fm::QuantScheme sch = scheme_of(c);
      std::vector<double> row(cols), fake(cols);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t k = 0; k < cols; ++k) row[k] = x[r * cols + k];
        ref::fake_quantize_row(sch, row.data(), cols, scales[0], fake.data());
        for (int64_t k = 0; k < cols; ++k) ASSERT_EQ(deq[r * cols + k], fake[k]) << "row " << r << " col " << k;
      }
      if (c.quant == fm::ActQuant::kPerTensorDynamic) {
        std::vector<double> xd(x.begin(), x.end());
        EXPECT_EQ(scales[0], ref::per_tensor_act_scale(sch, xd.data(), rows * cols, nullptr));
      }
      if (c.quant == fm::ActQuant::kPerTensorStatic) {
        // Within half an ulp except where x / scale saturates at 448.
        for (int64_t i = 0; i < rows * cols; ++i) {
          if (std::fabs(x[i]) / 0.02f <= 448.0) {
            ASSERT_LE(std::fabs(deq[i] - x[i]), round_trip_bound(x[i], 0.02f));
          }
        }
        continue;
      }
      expect_round_trip(x.data(), deq.data(), rows * cols,
                        [&](int64_t i) { return ref::fp8_act_scale(a, i / cols, i % cols); });
      // Padding slots of the row-indexed layouts are zero.
      if (c.quant == fm::ActQuant::kPerToken || c.quant == fm::ActQuant::kGroup128) {
        for (int64_t g = 0; g < groups; ++g)
          for (int64_t r = rows; r < stride; ++r) EXPECT_EQ(scales[g * stride + r], 0.f);
      }
    }
  }
}

struct WeightCase {
  fm::ScaleGranularity gran;
  fm::ScaleFormat fmt;
};
const WeightCase kWeightCases[] = {
    {fm::ScaleGranularity::kPerTensor, fm::ScaleFormat::kFloat32},
    {fm::ScaleGranularity::kPerChannel, fm::ScaleFormat::kFloat32},
    {fm::ScaleGranularity::kBlock, fm::ScaleFormat::kFloat32},
    {fm::ScaleGranularity::kBlock, fm::ScaleFormat::kUE8M0},
};

TEST(ReferenceFp8Gemm, WeightRoundTripEveryLayout) {
  Seeded s;
  SCOPED_TRACE(s.trace());
  const int64_t g = 3, rows = 130, cols = 300;
  const std::vector<float> w = random_data(s.rng, g * rows * cols, 100);
  for (const WeightCase& c : kWeightCases) {
    SCOPED_TRACE(std::string(fm::to_string(c.gran)) + " " + fm::to_string(c.fmt));
    const fm::WeightQuant wq = weight_quant(c.gran, c.fmt);
    WeightScales sc(wq, weight_scale_count(wq, g, rows, cols));
    std::vector<uint8_t> q(w.size());
    ref::quantize_fp8_weights(wq, w.data(), g, rows, cols, q.data(), sc.data());
    std::vector<double> deq(w.size());
    ref::dequantize_fp8_weights({q.data(), sc.data(), wq}, g, rows, cols, deq.data());
    expect_round_trip(w.data(), deq.data(), g * rows * cols, [&](int64_t i) {
      return ref::fp8_weight_scale(wq, sc.data(), i / (rows * cols), rows, cols, i / cols % rows, i % cols);
    });
    // Each scale is that of its scaled set's absmax (checked for the block holding element i).
    const int64_t i = 1 * rows * cols + 129 * cols + 299;  // expert 1, last row block, last col block
    float amax = 0.f;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < cols; ++k) {
        const bool same = c.gran == fm::ScaleGranularity::kPerTensor ||
                          (c.gran == fm::ScaleGranularity::kPerChannel && r == 129) ||
                          (c.gran == fm::ScaleGranularity::kBlock && r >= 128 && k >= 256);
        if (same) amax = std::max(amax, std::fabs(w[rows * cols + r * cols + k]));
      }
    EXPECT_EQ(ref::fp8_weight_scale(wq, sc.data(), 1, rows, cols, 129, 299), ref::fp8_scale_from_amax(amax, c.fmt))
        << "element " << i;
  }
}

TEST(ReferenceFp8Gemm, IntegerInputsAreExact) {
  Seeded s;
  SCOPED_TRACE(s.trace());
  const int64_t rows = 6, cols = 384, stride = ref::fp8_rows_pad4(rows);
  const std::vector<float> x = integer_data(s.rng, rows * cols);
  // Power-of-two scales keep integers of <= 4 significant bits exact: a static 0.5, or UE8M0.
  const ActCase cases[] = {{fm::ActQuant::kPerTensorStatic, fm::ScaleFormat::kFloat32},
                           {fm::ActQuant::kPerTensorDynamic, fm::ScaleFormat::kUE8M0},
                           {fm::ActQuant::kPerToken, fm::ScaleFormat::kUE8M0},
                           {fm::ActQuant::kGroup128, fm::ScaleFormat::kUE8M0}};
  for (const ActCase& c : cases) {
    SCOPED_TRACE(fm::to_string(c.quant));
    std::vector<uint8_t> q(x.size());
    std::vector<float> scales(3 * stride, 0.5f);
    ref::quantize_fp8_activations(c.quant, c.fmt, x.data(), rows, cols, stride, q.data(), scales.data());
    std::vector<double> deq(x.size());
    ref::dequantize_fp8_activations({q.data(), scales.data(), c.quant, stride}, cols, 0, rows, deq.data());
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(deq[i], static_cast<double>(x[i])) << i;
  }
  const int64_t g = 2, wrows = 160;
  const std::vector<float> w = integer_data(s.rng, g * wrows * cols);
  for (fm::ScaleGranularity gran :
       {fm::ScaleGranularity::kPerTensor, fm::ScaleGranularity::kPerChannel, fm::ScaleGranularity::kBlock}) {
    SCOPED_TRACE(fm::to_string(gran));
    const fm::WeightQuant wq = weight_quant(gran, fm::ScaleFormat::kUE8M0);
    WeightScales sc(wq, weight_scale_count(wq, g, wrows, cols));
    std::vector<uint8_t> q(w.size());
    ref::quantize_fp8_weights(wq, w.data(), g, wrows, cols, q.data(), sc.data());
    std::vector<double> deq(w.size());
    ref::dequantize_fp8_weights({q.data(), sc.data(), wq}, g, wrows, cols, deq.data());
    for (size_t i = 0; i < w.size(); ++i) ASSERT_EQ(deq[i], static_cast<double>(w[i])) << i;
  }
}

TEST(ReferenceFp8Gemm, ExtremeScales) {
  Seeded s;
  SCOPED_TRACE(s.trace());
  const int64_t rows = 4, cols = 256;
  for (double scale : {1e-8, 1e4}) {
    SCOPED_TRACE("scale " + std::to_string(scale));
    // Data whose absmax / 448 is about `scale`: every derived scale is near it.
    std::vector<float> x = random_data(s.rng, rows * cols, 128, scale * 100.0);
    for (const ActCase& c : kActCases) {
      if (c.quant == fm::ActQuant::kPerTensorStatic) continue;
      std::vector<uint8_t> q(x.size());
      std::vector<float> scales(2 * rows);
      ref::quantize_fp8_activations(c.quant, c.fmt, x.data(), rows, cols, rows, q.data(), scales.data());
      const ref::Fp8Activations a{q.data(), scales.data(), c.quant, rows};
      std::vector<double> deq(x.size());
      ref::dequantize_fp8_activations(a, cols, 0, rows, deq.data());
      expect_round_trip(x.data(), deq.data(), rows * cols, [&](int64_t i) { return ref::fp8_act_scale(a, i / cols, i % cols); });
    }
    // A static scale of exactly 1e-8 / 1e4.
    std::vector<uint8_t> q(x.size());
    float st = static_cast<float>(scale);
    ref::quantize_fp8_activations(fm::ActQuant::kPerTensorStatic, fm::ScaleFormat::kFloat32, x.data(), rows, cols, 0,
                                  q.data(), &st);
    std::vector<double> deq(x.size());
    ref::dequantize_fp8_activations({q.data(), &st, fm::ActQuant::kPerTensorStatic, 0}, cols, 0, rows, deq.data());
    for (int64_t i = 0; i < rows * cols; ++i) {
      if (std::fabs(x[i]) / st <= 448.f) {
        ASSERT_LE(std::fabs(deq[i] - x[i]), round_trip_bound(x[i], st));
      }
    }
    for (const WeightCase& c : kWeightCases) {
      const fm::WeightQuant wq = weight_quant(c.gran, c.fmt);
      WeightScales sc(wq, weight_scale_count(wq, 1, rows, cols));
      std::vector<uint8_t> qw(x.size());
      ref::quantize_fp8_weights(wq, x.data(), 1, rows, cols, qw.data(), sc.data());
      std::vector<double> dw(x.size());
      ref::dequantize_fp8_weights({qw.data(), sc.data(), wq}, 1, rows, cols, dw.data());
      expect_round_trip(x.data(), dw.data(), rows * cols, [&](int64_t i) {
        return ref::fp8_weight_scale(wq, sc.data(), 0, rows, cols, i / cols, i % cols);
      });
    }
  }
}

TEST(ReferenceFp8Gemm, PerTensorActScale) {
  const double x[] = {1.0, -896.0, std::nan(""), 3.0};
  const float st = 0.25f;
  EXPECT_EQ(ref::per_tensor_act_scale(fm::QuantScheme::fp8_per_tensor(false), x, 4, &st), 0.25f);
  EXPECT_EQ(ref::per_tensor_act_scale(fm::QuantScheme::fp8_per_tensor(true), x, 4, nullptr), 2.f);  // NaN ignored
  EXPECT_EQ(ref::per_tensor_act_scale(fm::QuantScheme::fp8_per_channel(), x, 4, nullptr), 1.f);
  EXPECT_EQ(ref::per_tensor_act_scale(fm::QuantScheme::fp8_per_tensor(true), x, 0, nullptr),
            ref::fp8_scale_from_amax(0.f, fm::ScaleFormat::kFloat32));  // empty: the floored amax
}

// ---------------------------------------------------------------- the grouped GEMM ----

// Operands of one small grouped GEMM with padded rows, quantised by the reference quantisers.
struct GemmSetup {
  std::vector<int32_t> counts, padded;
  std::vector<uint8_t> qa, qw;
  std::vector<float> sa, bias;
  WeightScales sw;
  ref::Fp8GroupedGemm g;

  GemmSetup(std::mt19937& rng, const std::vector<int32_t>& cnt, int64_t n, int64_t k, fm::ActQuant aq,
            const fm::WeightQuant& wq, bool gemm1, fm::Activation act, bool with_bias, bool integers)
      : counts(cnt), sw(wq, 0) {
    const int groups = static_cast<int>(counts.size());
    padded.assign(counts.size(), 0);
    int64_t a_rows = 0;
    for (int e = 0; e < groups; ++e) {
      padded[e] = static_cast<int32_t>(a_rows);
      a_rows += (counts[e] + 3) / 4 * 4 + 4;  // padded, plus a gap the GEMM must not read
    }
    g.num_groups = groups;
    g.counts = counts.data();
    g.row_offsets = padded.data();
    g.n = n;
    g.k = k;
    g.apply_activation = gemm1;
    g.activation = act;
    const int64_t w_rows = g.w_rows();
    const int64_t stride = ref::fp8_rows_pad4(a_rows);

    // Activations: padding rows stay NaN bytes (and NaN scales) to prove they are never read.
    const std::vector<float> x = integers ? integer_data(rng, a_rows * k) : random_data(rng, a_rows * k, 64);
    qa.assign(a_rows * k, kE4m3NaN);
    sa.assign(aq == fm::ActQuant::kGroup128 ? (k + 127) / 128 * stride : stride, std::nanf(""));
    std::vector<uint8_t> q_all(a_rows * k);
    std::vector<float> s_all(sa.size());
    if (aq == fm::ActQuant::kPerTensorStatic) s_all[0] = integers ? 0.5f : 0.03f;
    const fm::ScaleFormat afmt = integers ? fm::ScaleFormat::kUE8M0 : fm::ScaleFormat::kFloat32;
    ref::quantize_fp8_activations(aq, afmt, x.data(), a_rows, k, stride, q_all.data(), s_all.data());
    for (int e = 0; e < groups; ++e)
      for (int64_t r = padded[e]; r < padded[e] + counts[e]; ++r) {
        std::copy(q_all.begin() + r * k, q_all.begin() + (r + 1) * k, qa.begin() + r * k);
        if (aq == fm::ActQuant::kPerToken || aq == fm::ActQuant::kGroup128)
          for (int64_t gi = 0; gi < static_cast<int64_t>(sa.size()) / stride; ++gi) sa[gi * stride + r] = s_all[gi * stride + r];
      }
    if (aq == fm::ActQuant::kPerTensorStatic || aq == fm::ActQuant::kPerTensorDynamic) sa[0] = s_all[0];
    g.a = {qa.data(), sa.data(), aq, stride};

    const std::vector<float> w = integers ? integer_data(rng, groups * w_rows * k) : random_data(rng, groups * w_rows * k, 50);
    qw.resize(w.size());
    sw = WeightScales(wq, weight_scale_count(wq, groups, w_rows, k));
    ref::quantize_fp8_weights(wq, w.data(), groups, w_rows, k, qw.data(), sw.data());
    g.w = {qw.data(), sw.data(), wq};
    if (with_bias) {
      bias = integers ? integer_data(rng, groups * w_rows) : random_data(rng, groups * w_rows, 7);
      g.bias = bias.data();
    }
  }
};

// The naive triple loop on fully dequantised operands (float64), with a tolerance per output
// element for comparing another summation order: 1e-12 x the sum of |terms| of the pre-activation
// values involved, times (1 + |g| + |u|) for the activation's slope.
struct Naive {
  std::vector<double> out, tol;
};
Naive naive_gemm(const ref::Fp8GroupedGemm& g) {
  const int64_t w_rows = g.w_rows();
  int64_t a_rows = 0;
  for (int e = 0; e < g.num_groups; ++e) a_rows = std::max<int64_t>(a_rows, g.row_offsets[e] + g.counts[e]);
  std::vector<double> a(a_rows * g.k), w(g.num_groups * w_rows * g.k);
  ref::dequantize_fp8_activations(g.a, g.k, 0, a_rows, a.data());  // NaN padding rows are never used below
  ref::dequantize_fp8_weights(g.w, g.num_groups, w_rows, g.k, w.data());
  Naive r;
  for (int e = 0; e < g.num_groups; ++e)
    for (int64_t i = 0; i < g.counts[e]; ++i) {
      std::vector<double> y(w_rows, 0.0), mag(w_rows, 0.0);
      for (int64_t j = 0; j < w_rows; ++j) {
        for (int64_t kk = 0; kk < g.k; ++kk) {
          const double t = a[(g.row_offsets[e] + i) * g.k + kk] * w[(e * w_rows + j) * g.k + kk];
          y[j] += t;
          mag[j] += std::fabs(t);
        }
        if (g.bias != nullptr) y[j] += g.bias[e * w_rows + j];
      }
      for (int64_t c = 0; c < g.n; ++c) {
        int64_t gr = c, ur = -1;
        if (g.apply_activation && g.activation.gated()) {
          gr = g.activation.interleaved ? 2 * c : c;
          ur = g.activation.interleaved ? 2 * c + 1 : g.n + c;
        }
        const double gv = y[gr], uv = ur >= 0 ? y[ur] : 0.0;
        const double m = mag[gr] + (ur >= 0 ? mag[ur] : 0.0);
        r.out.push_back(g.apply_activation ? ref::activate(g.activation, gv, uv) : gv);
        r.tol.push_back(1e-12 * m * (1.0 + std::fabs(gv) + std::fabs(uv)));
      }
    }
  return r;
}

std::vector<double> run_gemm(const ref::Fp8GroupedGemm& g) {
  std::vector<double> out(g.num_rows() * g.n, std::nan(""));
  ref::fp8_grouped_gemm(g, 0, g.num_rows(), out.data());
  return out;
}

struct SchemeCase {
  const char* name;
  fm::ActQuant act;
  fm::WeightQuant wq;
};
std::vector<SchemeCase> scheme_cases() {
  return {{"per_tensor", fm::ActQuant::kPerTensorStatic, weight_quant(fm::ScaleGranularity::kPerTensor)},
          {"per_tensor_dynamic", fm::ActQuant::kPerTensorDynamic, weight_quant(fm::ScaleGranularity::kPerTensor)},
          {"per_channel", fm::ActQuant::kPerToken, weight_quant(fm::ScaleGranularity::kPerChannel)},
          {"block_f32", fm::ActQuant::kGroup128, weight_quant(fm::ScaleGranularity::kBlock)},
          {"block_ue8m0", fm::ActQuant::kGroup128, weight_quant(fm::ScaleGranularity::kBlock, fm::ScaleFormat::kUE8M0)}};
}

struct ActivationCase {
  const char* name;
  bool gemm1;
  fm::Activation act;
};
const ActivationCase kActivationCases[] = {
    {"gemm2", false, fm::Activation::silu()},
    {"silu", true, fm::Activation::silu()},
    {"swiglu_oai_interleaved", true, fm::Activation::swiglu_oai()},
    {"squared_relu", true, fm::Activation::squared_relu()},
};

TEST(ReferenceFp8Gemm, GroupedGemmMatchesNaiveLoop) {
  Seeded s;
  SCOPED_TRACE(s.trace());
  const std::vector<int32_t> counts = {3, 0, 1, 6, 0};  // empty groups first, middle and last
  for (const SchemeCase& sc : scheme_cases())
    for (const ActivationCase& ac : kActivationCases) {
      SCOPED_TRACE(std::string(sc.name) + " " + ac.name);
      // n = 80: the gate and up rows of a gated GEMM1 lie in different 128-row weight blocks.
      GemmSetup st(s.rng, counts, 80, 272, sc.act, sc.wq, ac.gemm1, ac.act, true, false);
      const std::vector<double> got = run_gemm(st.g);
      const Naive want = naive_gemm(st.g);
      ASSERT_EQ(got.size(), want.out.size());
      ASSERT_EQ(got.size(), size_t{10 * 80});
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_TRUE(std::isfinite(got[i])) << "element " << i;
        ASSERT_NEAR(got[i], want.out[i], want.tol[i]) << "element " << i;
      }
    }
}

TEST(ReferenceFp8Gemm, GroupedGemmIsExactOnIntegers) {
  Seeded s;
  SCOPED_TRACE(s.trace());
  for (const SchemeCase& sc : scheme_cases()) {
    SCOPED_TRACE(sc.name);
    fm::WeightQuant wq = sc.wq;
    wq.scale_format = fm::ScaleFormat::kUE8M0;  // power-of-two scales everywhere
    GemmSetup st(s.rng, {2, 0, 5}, 48, 384, sc.act, wq, false, fm::Activation::silu(), true, true);
    const std::vector<double> got = run_gemm(st.g), want = naive_gemm(st.g).out;
    ASSERT_EQ(got.size(), size_t{7 * 48});
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;
    // And equal to the integer products themselves: the dequantised operands are the integers.
    EXPECT_EQ(std::floor(got[0]), got[0]);
  }
}

TEST(ReferenceFp8Gemm, GroupedGemmRowRangesAndEmptyGroups) {
  Seeded s;
  SCOPED_TRACE(s.trace());
  GemmSetup st(s.rng, {0, 4, 0, 0, 3, 0}, 32, 256, fm::ActQuant::kGroup128,
               weight_quant(fm::ScaleGranularity::kBlock), true, fm::Activation::gelu(), false, false);
  ASSERT_EQ(st.g.num_rows(), 7);
  const std::vector<double> full = run_gemm(st.g);
  for (double v : full) ASSERT_TRUE(std::isfinite(v));
  // Any row range gives the same rows (row 4 is expert 4's first row).
  for (int64_t b = 0; b <= 7; ++b)
    for (int64_t e = b; e <= 7; ++e) {
      std::vector<double> part((e - b) * 32 + 1, -7.0);  // one guard element
      ref::fp8_grouped_gemm(st.g, b, e, part.data());
      for (int64_t i = 0; i < (e - b) * 32; ++i) ASSERT_EQ(part[i], full[b * 32 + i]) << b << ".." << e;
      ASSERT_EQ(part.back(), -7.0) << "wrote past the range";
    }
  // Every group empty: no rows, nothing read or written.
  const std::vector<int32_t> zeros(4, 0), offs(4, 0);
  ref::Fp8GroupedGemm none;
  none.num_groups = 4;
  none.counts = zeros.data();
  none.row_offsets = offs.data();
  none.n = 16;
  none.k = 128;
  EXPECT_EQ(none.num_rows(), 0);
  double guard = -7.0;
  ref::fp8_grouped_gemm(none, 0, 0, &guard);
  EXPECT_EQ(guard, -7.0);
}

TEST(ReferenceFp8Gemm, GroupedGemmMatchesLayerRows) {
  // The layer's gemm1_activation_row / gemm2_row on the same dequantised activation rows and the
  // same weights and scales (block scheme) give the same values.
  Seeded s;
  SCOPED_TRACE(s.trace());
  for (fm::ScaleFormat fmt : {fm::ScaleFormat::kFloat32, fm::ScaleFormat::kUE8M0}) {
    const int64_t n = 144, k = 256;
    fm::MoeProblem p;
    p.hidden = static_cast<int>(k);
    p.intermediate = static_cast<int>(n);
    p.quant = fm::QuantScheme::fp8_block128(fmt);
    p.activation = fm::Activation::silu();
    p.has_expert_bias = true;
    GemmSetup g1(s.rng, {2, 0, 3}, n, k, fm::ActQuant::kGroup128, p.quant.weight, true, p.activation, true, false);
    GemmSetup g2(s.rng, {2, 0, 3}, k, n, fm::ActQuant::kGroup128, p.quant.weight, false, p.activation, true, false);
    fm::MoeTensors t;
    t.w1 = g1.qw.data();
    t.w1_scale = g1.sw.data();
    t.b1 = g1.bias.data();
    t.w2 = g2.qw.data();
    t.w2_scale = g2.sw.data();
    t.b2 = g2.bias.data();
    const std::vector<double> h = run_gemm(g1.g), y = run_gemm(g2.g);
    const std::vector<double> tol_h = naive_gemm(g1.g).tol, tol_y = naive_gemm(g2.g).tol;  // cancellation-aware
    std::vector<double> x(k), want_h(n), hin(n), want_y(k);
    int64_t out_row = 0;
    for (int e = 0; e < 3; ++e)
      for (int i = 0; i < g1.counts[e]; ++i, ++out_row) {
        ref::dequantize_fp8_activations(g1.g.a, k, g1.padded[e] + i, g1.padded[e] + i + 1, x.data());
        ref::gemm1_activation_row(p, t, e, x.data(), want_h.data());
        for (int64_t c = 0; c < n; ++c) ASSERT_NEAR(h[out_row * n + c], want_h[c], tol_h[out_row * n + c]);
        ref::dequantize_fp8_activations(g2.g.a, n, g2.padded[e] + i, g2.padded[e] + i + 1, hin.data());
        ref::gemm2_row(p, t, e, hin.data(), want_y.data());
        for (int64_t c = 0; c < k; ++c) ASSERT_NEAR(y[out_row * k + c], want_y[c], tol_y[out_row * k + c]);
      }
  }
}

}  // namespace
