// Activation permutation / FP8 quantisation on the GPU (kernels/quant/permute_quant_launch.h):
// FP8 bytes and scales bit-identical to the reference quantisers (fusedmoe/reference.h) for every
// scheme, token and permuted layouts, f32 and UE8M0 scales, bf16 and f16 inputs, rows of zeros,
// tiny and huge magnitudes, inf/NaN; kNone copies bit-exact. Rows and scale slots nobody owns
// stay untouched; the scale padding of rows [rows_out, rows_pad4) is zeroed.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fusedmoe/reference.h"
#include "reference/parallel.h"
#include "gpu_test_util.h"
#include "kernels/quant/permute_quant_launch.h"

namespace fm = fusedmoe;
namespace fk = fusedmoe::kernels;
namespace ref = fusedmoe::ref;
using fm::ActQuant;
using fm::DType;
using fm::ScaleFormat;
using fm::gputest::DeviceBuffer;
using fm::gputest::to_device;
using fm::gputest::to_host;
using fm::gputest::upload;

namespace {


struct QCase {
  int64_t tokens;
  int hidden;
  DType dtype;
  ActQuant quant;
  ScaleFormat fmt;
  bool permute;
  bool weighted;    // row_weight (permuted: [T, k]; token layout: k = 1)
  int stride_pad;   // x_row_stride = K + stride_pad
  bool specials;    // inf / NaN elements in some rows
  int k = 4;        // permuted layout: routing
  int experts = 16;
  int shared = 1;
  int tile = 8;
  bool by_token = false;  // PermuteQuantArgs::scales_by_token (kGroup128, permuted, unweighted)
};

std::string describe(const QCase& c) {
  char buf[320];
  std::snprintf(buf, sizeof buf, "T=%lld K=%d %s %s %s %s%s stride+%d%s k=%d E=%d shared=%d tile=%d%s",
                static_cast<long long>(c.tokens), c.hidden, fm::to_string(c.dtype), fm::to_string(c.quant),
                fm::to_string(c.fmt), c.permute ? "permuted" : "token-order", c.weighted ? " weighted" : "",
                c.stride_pad, c.specials ? " inf/nan" : "", c.k, c.experts, c.shared, c.tile,
                c.by_token ? " scales-by-token" : "");
  return buf;
}

uint16_t to_bits(DType t, float v) { return t == DType::kBFloat16 ? ref::float_to_bf16(v) : ref::float_to_fp16(v); }
float from_bits(DType t, uint16_t b) { return t == DType::kBFloat16 ? ref::bf16_to_float(b) : ref::fp16_to_float(b); }

// Rows of different characters: zeros, tiny, huge, mixed magnitudes, sprinkled inf/NaN.
std::vector<uint16_t> make_x(const QCase& c, int64_t stride, std::mt19937_64& rng) {
  std::vector<uint16_t> x(static_cast<size_t>(c.tokens * stride));
  std::normal_distribution<float> nd(0.f, 1.f);
  std::uniform_real_distribution<float> ue(-8.f, 8.f);
  const bool f16 = c.dtype == DType::kFloat16;
  for (int64_t t = 0; t < c.tokens; ++t) {
    const int kind = static_cast<int>((t * 7 + rng() % 3) % 8);
    float scale = std::exp2(ue(rng));
    if (kind == 1) scale = f16 ? 1e-6f : 1e-30f;   // tiny (f16: subnormals)
    if (kind == 2) scale = f16 ? 2e3f : 1e30f;     // huge
    if (kind == 3) scale = f16 ? 3e-5f : 1e-12f;
    uint16_t* row = &x[t * stride];
    for (int i = 0; i < c.hidden; ++i) {
      float v = kind == 0 ? 0.f : nd(rng) * scale;
      if (kind == 4 && i % 5 == 0) v = 0.f;
      if (kind == 5) v = (i % 128 == 7) ? nd(rng) * 4e2f : nd(rng) * 1e-3f;  // one large value per group
      row[i] = to_bits(c.dtype, v);
    }
    if (c.specials && kind == 6) {
      row[(t * 13) % c.hidden] = c.dtype == DType::kBFloat16 ? 0x7F80 : 0x7C00;  // +inf
      row[(t * 29 + 5) % c.hidden] = c.dtype == DType::kBFloat16 ? 0xFFC1 : 0xFE01;  // NaN
    }
    if (c.specials && kind == 7) row[(t * 3) % c.hidden] = c.dtype == DType::kBFloat16 ? 0x7FC0 : 0x7E00;  // NaN
    // Columns past K (row stride padding) hold huge values that must never be read.
    for (int64_t i = c.hidden; i < stride; ++i) row[i] = to_bits(c.dtype, f16 ? 6e4f : 3e38f);
  }
  return x;
}

struct Plan {
  int slots = 1, groups = 0;
  ref::DispatchPlan p;
  std::vector<int32_t> ids;
  std::vector<float> weights;  // [T, k]
};

Plan make_plan(const QCase& c, std::mt19937_64& rng) {
  Plan pl;
  pl.slots = c.k + c.shared;
  pl.ids.resize(static_cast<size_t>(c.tokens * c.k));
  for (int64_t t = 0; t < c.tokens; ++t)
    for (int j = 0; j < c.k; ++j) {
      for (;;) {
        const int32_t id = static_cast<int32_t>(rng() % c.experts);
        bool dup = false;
        for (int i = 0; i < j; ++i) dup |= pl.ids[t * c.k + i] == id;
        if (!dup) { pl.ids[t * c.k + j] = id; break; }
      }
      if (rng() % 10 == 0) pl.ids[t * c.k + j] = -1;  // routed nowhere
    }
  pl.weights.resize(pl.ids.size());
  std::uniform_real_distribution<float> uw(0.01f, 1.f);
  for (auto& w : pl.weights) w = uw(rng);
  if (!pl.weights.empty()) pl.weights[0] = 0.f;  // a zero weight
  if (pl.weights.size() > 3) pl.weights[3] = 3.75f;
  fm::MoeProblem p;
  p.num_experts = c.experts;
  p.router = fm::RouterConfig::precomputed(c.k);
  p.num_shared_experts = c.shared;
  ref::Routing r;
  r.num_tokens = c.tokens;
  r.top_k = c.k;
  r.ids = pl.ids;
  pl.p = ref::plan_dispatch(p, r, nullptr, c.tile);
  pl.groups = pl.p.num_groups;
  return pl;
}

std::vector<int32_t> to_i32(const std::vector<int64_t>& v) { return std::vector<int32_t>(v.begin(), v.end()); }

float abs_max_all(const std::vector<float>& xf) {
  float m = 0.f;
  for (float v : xf) m = std::fmax(m, std::fabs(v));
  return m;
}

void run_case(const QCase& c) {
  const uint64_t seed = fm::gputest::test_seed();
  SCOPED_TRACE(describe(c) + " seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const int K = c.hidden;
  const int64_t T = c.tokens;
  const int64_t stride = K + c.stride_pad;
  const bool fp8 = c.quant != ActQuant::kNone;
  const std::vector<uint16_t> x = make_x(c, stride, rng);
  std::vector<float> xf(static_cast<size_t>(T * K));
  for (int64_t t = 0; t < T; ++t)
    for (int i = 0; i < K; ++i) xf[t * K + i] = from_bits(c.dtype, x[t * stride + i]);

  Plan pl;
  int64_t rows_out = T;
  if (c.permute) {
    pl = make_plan(c, rng);
    rows_out = pl.p.num_rows() + int64_t{pl.groups} * (c.tile - 1) + 3;  // a bound, as the layer passes
  } else if (c.weighted) {
    pl.weights.resize(static_cast<size_t>(T));
    std::uniform_real_distribution<float> uw(0.01f, 1.f);
    for (auto& w : pl.weights) w = uw(rng);
  }
  const int64_t rows_pad4 = (rows_out + 3) / 4 * 4;
  const int kb = (K + 127) / 128;
  const size_t scale_count = c.quant == ActQuant::kGroup128 ? static_cast<size_t>(kb * rows_pad4)
                             : c.quant == ActQuant::kPerToken ? static_cast<size_t>(rows_pad4)
                                                               : 1;
  const size_t elem = fp8 ? 1 : 2;

  // Per-tensor scale: static (given) or the absmax over all T x K elements of x.
  float tensor_scale = 1.f;
  const float amax_all = abs_max_all(xf);
  if (c.quant == ActQuant::kPerTensorStatic) {
    float finite_max = 1e-3f;
    for (float v : xf)
      if (std::isfinite(v)) finite_max = std::fmax(finite_max, std::fabs(v));
    tensor_scale = finite_max / 300.f;  // some values saturate
  }
  if (c.quant == ActQuant::kPerTensorDynamic) tensor_scale = ref::fp8_scale_from_amax(amax_all, c.fmt);

  DeviceBuffer dx = to_device(x);
  DeviceBuffer dout(static_cast<size_t>(rows_out * K) * elem + 16);
  DeviceBuffer dsc(scale_count * 4);
  DeviceBuffer dstatic = to_device(std::vector<float>{tensor_scale});
  DeviceBuffer dscratch(fk::permute_quant_scratch_bytes(T, K));
  DeviceBuffer dslot_row, drow_token, drow_slot, doff, dpad, dw;
  fk::PermuteQuantArgs a;
  a.x = dx.get();
  a.x_row_stride = c.stride_pad ? stride : 0;
  a.act_dtype = c.dtype;
  a.num_tokens = T;
  a.hidden = K;
  a.quant = c.quant;
  a.scale_format = c.fmt;
  a.static_scale = dstatic.as<float>();
  a.permute = c.permute;
  if (c.permute) {
    upload(dslot_row, pl.p.slot_row);
    upload(drow_token, pl.p.row_token);
    upload(drow_slot, pl.p.row_slot);
    upload(doff, to_i32(pl.p.offsets));
    upload(dpad, to_i32(pl.p.padded_offsets));
    a.slots = pl.slots;
    a.num_groups = pl.groups;
    a.slot_row = dslot_row.as<int32_t>();
    // Odd token counts without row_token: the 1x128 scales of permuted rows are then stored
    // scattered by the row kernel; with it, staged in token order and gathered (scale_gather).
    a.row_token = T % 2 == 1 ? nullptr : drow_token.as<int32_t>();
    a.stage_min_tokens = 0;
    a.row_slot = drow_slot.as<int32_t>();
    a.offsets = doff.as<int32_t>();
    a.padded_offsets = dpad.as<int32_t>();
    a.top_k = c.k;
  } else {
    a.top_k = 1;
  }
  if (c.weighted) {
    upload(dw, pl.weights);
    a.row_weight = dw.as<float>();
  }
  a.out = dout.get();
  a.out_scales = fp8 ? dsc.as<float>() : nullptr;
  a.rows_out = rows_out;
  a.scratch = dscratch.get();
  a.scratch_bytes = dscratch.bytes();
  a.scales_by_token = c.by_token;
  int kernels = 0;
  a.kernels_launched = &kernels;

  dout.poison(0xFF);
  dsc.poison(0xFF);
  dscratch.poison(0x7F);
  FM_CUDA_CHECK(fk::launch_permute_quant(a, nullptr));
  FM_CUDA_CHECK(cudaDeviceSynchronize());
  if (T > 0) {
    const bool staged = c.permute && c.quant == ActQuant::kGroup128 && !c.weighted && a.row_token != nullptr && !c.by_token;
    EXPECT_EQ(kernels, 1 + (c.quant == ActQuant::kPerTensorDynamic) + staged) << describe(c);
  }
  const std::vector<uint8_t> out = to_host<uint8_t>(dout.get(), static_cast<size_t>(rows_out * K) * elem);
  const std::vector<uint32_t> sc = to_host<uint32_t>(dsc.get(), scale_count);
  // scales_by_token: token t's scales at the stage's [t * stride + b]; out_scales untouched
  const int stage_stride = fk::scale_stage_stride(K);
  const std::vector<uint32_t> stage =
      c.by_token ? to_host<uint32_t>(fk::permute_quant_token_scales(dscratch.get()), static_cast<size_t>(T) * stage_stride)
                 : std::vector<uint32_t>{};

  // Expected row of token t with weight w (has_w) written at row `dest`: computed for batches of
  // rows in parallel (the float64-exact quantiser is ~20 ns per element on one core: the large
  // cases spent most of this test's minutes here), then compared in row order.
  struct Job {
    int64_t t, dest;
    bool has_w;
    float w;
  };
  std::vector<Job> jobs;
  if (c.permute) {
    const ref::DispatchPlan& p = pl.p;
    for (int g = 0; g < p.num_groups; ++g)
      for (int64_t r = p.offsets[g]; r < p.offsets[g + 1]; ++r) {
        const int64_t t = p.row_token[r];
        const int s = p.row_slot[r];
        const bool has_w = c.weighted && s < c.k;
        jobs.push_back({t, p.padded_offsets[g] + (r - p.offsets[g]), has_w, has_w ? pl.weights[t * c.k + s] : 1.f});
      }
  } else {
    for (int64_t t = 0; t < T; ++t) jobs.push_back({t, t, c.weighted, c.weighted ? pl.weights[t] : 1.f});
  }
  const int nscales = c.quant == ActQuant::kPerToken ? 1 : c.quant == ActQuant::kGroup128 ? kb : 0;
  auto expect_row = [&](const Job& j, uint8_t* eq, float* es) {
    std::vector<float> xw(K);
    const float* src = &xf[j.t * K];
    for (int i = 0; i < K; ++i) xw[i] = j.has_w ? src[i] * j.w : src[i];
    switch (c.quant) {
      case ActQuant::kNone: {
        uint16_t* o = reinterpret_cast<uint16_t*>(eq);
        for (int i = 0; i < K; ++i) o[i] = j.has_w ? to_bits(c.dtype, xw[i]) : x[j.t * stride + i];
        break;
      }
      case ActQuant::kPerTensorStatic:
      case ActQuant::kPerTensorDynamic: ref::quantize_fp8_per_tensor(xw.data(), K, tensor_scale, eq); break;
      case ActQuant::kPerToken:
        if (c.fmt == ScaleFormat::kFloat32) ref::quantize_fp8_per_token(xw.data(), 1, K, eq, es);
        else ref::quantize_fp8_groups(xw.data(), 1, K, K, c.fmt, eq, es);
        break;
      case ActQuant::kGroup128: ref::quantize_fp8_groups(xw.data(), 1, K, 128, c.fmt, eq, es); break;
    }
  };
  std::vector<char> written(static_cast<size_t>(rows_out), 0);
  int bad = 0;
  constexpr int64_t kBatch = 2048;
  std::vector<uint8_t> eqs(static_cast<size_t>(std::min<int64_t>(kBatch, static_cast<int64_t>(jobs.size()))) * K * elem);
  std::vector<float> ess(static_cast<size_t>(std::min<int64_t>(kBatch, static_cast<int64_t>(jobs.size()))) * std::max(kb, 1));
  for (int64_t b0 = 0; b0 < static_cast<int64_t>(jobs.size()) && bad < 8; b0 += kBatch) {
    const int64_t nb = std::min<int64_t>(kBatch, static_cast<int64_t>(jobs.size()) - b0);
    ref::detail::parallel_for(nb, 16, [&](int64_t i) {
      expect_row(jobs[b0 + i], &eqs[static_cast<size_t>(i) * K * elem], &ess[static_cast<size_t>(i) * std::max(kb, 1)]);
    });
    for (int64_t i = 0; i < nb && bad < 8; ++i) {
      const Job& j = jobs[b0 + i];
      const int64_t t = j.t, dest = j.dest;
      uint8_t* eq = &eqs[static_cast<size_t>(i) * K * elem];
      const float* es = &ess[static_cast<size_t>(i) * std::max(kb, 1)];
      written[dest] = 1;
      const uint8_t* got = &out[static_cast<size_t>(dest * K) * elem];
      if (c.quant == ActQuant::kNone && j.has_w) {
        // Weighted copies are arithmetic: any NaN encoding is as good as another.
        const uint16_t* g16 = reinterpret_cast<const uint16_t*>(got);
        uint16_t* e16 = reinterpret_cast<uint16_t*>(eq);
        for (int k = 0; k < K; ++k)
          if (std::isnan(from_bits(c.dtype, g16[k])) && std::isnan(from_bits(c.dtype, e16[k]))) e16[k] = g16[k];
      }
      if (std::memcmp(got, eq, K * elem) != 0) {
        for (int k = 0; k < K; ++k)
          if (std::memcmp(got + k * elem, &eq[k * elem], elem) != 0) {
            uint32_t g = 0, e = 0;
            std::memcpy(&g, got + k * elem, elem);
            std::memcpy(&e, &eq[k * elem], elem);
            ADD_FAILURE() << "token " << t << " -> row " << dest << " col " << k << ": got 0x" << std::hex << g
                          << ", expected 0x" << e << std::dec << " (x = " << xf[t * K + k] << ", w = " << j.w << ")";
            break;
          }
        ++bad;
      }
      for (int b = 0; b < nscales; ++b) {
        const size_t at = c.quant == ActQuant::kGroup128 ? static_cast<size_t>(b * rows_pad4 + dest) : static_cast<size_t>(dest);
        const uint32_t g = c.by_token ? stage[static_cast<size_t>(t) * stage_stride + b] : sc[at];
        uint32_t e;
        std::memcpy(&e, &es[b], 4);
        if (g != e) {
          float gf;
          std::memcpy(&gf, &g, 4);
          ADD_FAILURE() << "scale of token " << t << " row " << dest << " group " << b << ": got " << gf << ", expected "
                        << es[b];
          ++bad;
        }
      }
    }
  }
  // Rows nobody maps to: untouched.
  for (int64_t r = 0; r < rows_out && bad < 8; ++r) {
    if (written[r]) continue;
    const uint8_t* row = &out[static_cast<size_t>(r * K) * elem];
    if (!std::all_of(row, row + K * elem, [](uint8_t b) { return b == 0xFF; })) {
      ADD_FAILURE() << "unowned row " << r << " was written";
      ++bad;
    }
  }
  if (fp8) {
    if (c.quant == ActQuant::kPerTensorStatic || c.quant == ActQuant::kPerTensorDynamic) {
      uint32_t e;
      std::memcpy(&e, &tensor_scale, 4);
      EXPECT_EQ(sc[0], e) << "per-tensor scale";
    } else {
      const int64_t nb = c.quant == ActQuant::kGroup128 ? kb : 1;
      for (int64_t b = 0; b < nb; ++b)
        for (int64_t r = 0; r < rows_pad4; ++r) {
          const uint32_t v = sc[b * rows_pad4 + r];
          if (c.by_token) EXPECT_EQ(v, 0xFFFFFFFFu) << "row-order scale slot " << r << " group " << b << " (by token: untouched)";
          else if (r >= rows_out) EXPECT_EQ(v, 0u) << "scale padding slot " << r << " group " << b;
          else if (!written[r]) EXPECT_EQ(v, 0xFFFFFFFFu) << "unowned scale slot " << r << " group " << b;
        }
    }
  }
}

std::vector<QCase> covering_cases() {
  std::vector<QCase> v;
  const int64_t Ts[] = {1, 3, 64, 65, 1000};
  int idx = 0;
  for (DType dt : {DType::kBFloat16, DType::kFloat16})
    for (ActQuant q : {ActQuant::kNone, ActQuant::kPerTensorStatic, ActQuant::kPerTensorDynamic, ActQuant::kPerToken,
                       ActQuant::kGroup128})
      for (bool permute : {false, true})
        for (ScaleFormat f : {ScaleFormat::kFloat32, ScaleFormat::kUE8M0}) {
          const bool dynamic_scales = q == ActQuant::kPerTensorDynamic || q == ActQuant::kPerToken || q == ActQuant::kGroup128;
          if (f == ScaleFormat::kUE8M0 && !dynamic_scales) continue;
          const std::vector<int> Ks = q == ActQuant::kGroup128 ? std::vector<int>{128, 2048, 7168}
                                                               : std::vector<int>{128, 2048, 7168, 2880};
          QCase c{};
          c.tokens = Ts[idx % 5];
          c.hidden = Ks[(idx / 2) % Ks.size()];
          c.dtype = dt;
          c.quant = q;
          c.fmt = f;
          c.permute = permute;
          c.weighted = permute ? (idx % 2 == 0) : (idx % 4 == 1);
          c.stride_pad = idx % 3 == 0 ? 64 : 0;
          c.specials = q != ActQuant::kPerTensorDynamic && idx % 2 == 1;
          c.k = 2 + idx % 5;
          c.experts = 16;
          c.shared = idx % 3 != 2;
          c.tile = (idx % 4 == 0) ? 1 : (idx % 4 == 1 ? 8 : (idx % 4 == 2 ? 64 : 128));
          v.push_back(c);
          ++idx;
        }
  return v;
}

}  // namespace

TEST(PermuteQuant, CoveringSetSmall) {
  for (const QCase& c : covering_cases()) run_case(c);
}

TEST(PermuteQuant, LargeTokenCounts) {
  using Q = ActQuant;
  const ScaleFormat f32 = ScaleFormat::kFloat32, e8 = ScaleFormat::kUE8M0;
  const DType bf = DType::kBFloat16, hf = DType::kFloat16;
  std::vector<QCase> cases = {
      {4096, 7168, bf, Q::kGroup128, e8, true, false, 0, false, 8, 32, 1, 128},
      {4096, 7168, hf, Q::kPerTensorStatic, f32, false, false, 0, true},
      {4096, 2880, bf, Q::kNone, f32, true, true, 0, false, 4, 16, 1, 64},
      {4096, 2048, bf, Q::kPerToken, e8, true, true, 64, true, 4, 64, 0, 8},
      {4096, 2880, hf, Q::kPerTensorDynamic, f32, false, false, 0, false},
      {65536, 2048, hf, Q::kPerToken, f32, false, false, 0, true},
      {65536, 128, bf, Q::kPerTensorDynamic, e8, true, true, 0, false, 2, 8, 0, 1},
      {65536, 128, bf, Q::kGroup128, f32, true, true, 0, true, 2, 8, 1, 128},
      {65536, 2880, bf, Q::kNone, f32, false, false, 0, false},
      // Long rows: 8 units per thread.
      {3, 16384, bf, Q::kNone, f32, true, true, 0, true, 4, 16, 1, 8},
      {5, 32768, hf, Q::kPerToken, e8, true, true, 0, true, 2, 4, 1, 1},
      {70, 32768, bf, Q::kGroup128, f32, false, false, 8, true},
  };
  for (const QCase& c : cases) run_case(c);
}

// The 1x128 scales kept in token order (PermuteQuantArgs::scales_by_token, forward()'s FP8 path):
// rows bit-identical, each token's scales once in the stage, out_scales untouched, one launch.
TEST(PermuteQuant, GroupScalesByToken) {
  using Q = ActQuant;
  const ScaleFormat f32 = ScaleFormat::kFloat32, e8 = ScaleFormat::kUE8M0;
  const DType bf = DType::kBFloat16, hf = DType::kFloat16;
  std::vector<QCase> cases = {
      {1, 7168, bf, Q::kGroup128, f32, true, false, 0, false, 8, 32, 1, 128, true},
      {65, 2880, hf, Q::kGroup128, e8, true, false, 64, true, 4, 16, 1, 8, true},
      {1000, 2048, bf, Q::kGroup128, e8, true, false, 0, true, 6, 64, 0, 1, true},
      {4096, 7168, bf, Q::kGroup128, f32, true, false, 0, false, 8, 32, 1, 128, true},
  };
  for (const QCase& c : cases) run_case(c);
  // any other scheme, layout or a routing weight on the rows: refused
  for (QCase c : {QCase{5, 256, bf, Q::kPerToken, f32, true, false, 0, false, 2, 8, 0, 8, true},
                  QCase{5, 256, bf, Q::kGroup128, f32, false, false, 0, false, 2, 8, 0, 8, true},
                  QCase{5, 256, bf, Q::kGroup128, f32, true, true, 0, false, 2, 8, 0, 8, true}}) {
    SCOPED_TRACE(describe(c));
    DeviceBuffer buf(1 << 20);
    fk::PermuteQuantArgs a;
    a.x = buf.get();
    a.out = buf.get();
    a.out_scales = buf.as<float>();
    a.num_tokens = c.tokens;
    a.hidden = c.hidden;
    a.quant = c.quant;
    a.permute = c.permute;
    a.slots = 2;
    a.num_groups = 8;
    a.slot_row = a.offsets = a.padded_offsets = buf.as<int32_t>();
    a.top_k = 2;
    a.rows_out = 64;
    a.row_weight = c.weighted ? buf.as<float>() : nullptr;
    a.scratch = buf.get();
    a.scratch_bytes = buf.bytes();
    a.scales_by_token = true;
    EXPECT_EQ(fk::launch_permute_quant(a, nullptr), cudaErrorInvalidValue);
  }
}

// Long rows (K up to 16384: the staged scale gather takes two passes of 64 k-blocks at 16384) and
// DeepSeek's shape, bit for bit against the reference. (Until session 7 these ran the bulk-store
// path, removed: measured slower everywhere.)
TEST(PermuteQuant, LongRowsMatchReference) {
  using Q = ActQuant;
  const ScaleFormat f32 = ScaleFormat::kFloat32, e8 = ScaleFormat::kUE8M0;
  const DType bf = DType::kBFloat16, hf = DType::kFloat16;
  std::vector<QCase> cases = {
      {4096, 7168, bf, Q::kGroup128, f32, true, false, 0, false, 8, 256, 0, 128},
      {4096, 7168, bf, Q::kGroup128, e8, true, false, 0, false, 8, 32, 1, 128},
      {4096, 2880, bf, Q::kNone, f32, true, false, 0, false, 4, 16, 1, 64},
      {4096, 4096, hf, Q::kPerToken, f32, true, false, 8, true, 8, 128, 0, 16},
      {4096, 2880, hf, Q::kPerTensorDynamic, f32, false, false, 0, false},
      {65536, 128, bf, Q::kGroup128, f32, true, false, 0, true, 2, 8, 1, 128},
      {3, 16384, bf, Q::kNone, f32, true, false, 0, true, 4, 16, 1, 8},
      {1024, 8192, bf, Q::kNone, f32, true, false, 0, false, 4, 16, 1, 64},   // 2 x 16 KB: past 48 KB with static
      {257, 16384, hf, Q::kGroup128, e8, true, false, 0, false, 8, 64, 1, 128},  // FP8 rows of 16 KB
      {258, 16384, bf, Q::kGroup128, f32, true, false, 0, false, 8, 64, 1, 128},  // staged: 2 gather passes
  };
  for (const QCase& c : cases) run_case(c);
}

TEST(PermuteQuant, KNotMultipleOf128GroupShortLastGroup) {
  // K = 2880 = 22.5 groups: the last group has 64 elements, as ref::quantize_fp8_groups.
  QCase c{65, 2880, DType::kBFloat16, ActQuant::kGroup128, ScaleFormat::kFloat32, true, true, 0, true, 4, 16, 1, 8};
  run_case(c);
  c.fmt = ScaleFormat::kUE8M0;
  c.permute = false;
  c.weighted = false;
  run_case(c);
}

TEST(PermuteQuant, RejectsBadShapes) {
  DeviceBuffer buf(1 << 16);
  fk::PermuteQuantArgs a;
  a.x = buf.get();
  a.out = buf.get();
  a.num_tokens = 4;
  a.rows_out = 4;
  a.hidden = 2888;  // not a multiple of 16
  a.quant = ActQuant::kPerToken;
  EXPECT_EQ(fk::launch_permute_quant(a, nullptr), cudaErrorInvalidValue);
  a.hidden = 100;   // not a multiple of 8
  a.quant = ActQuant::kNone;
  EXPECT_EQ(fk::launch_permute_quant(a, nullptr), cudaErrorInvalidValue);
  cudaGetLastError();
}

// ---- informational timings -------------------------------------------------------------------

using fusedmoe::gputest::graph_us;
using fusedmoe::gputest::median_us;

TEST(PermuteQuantTiming, Informational) {
  std::mt19937_64 rng(11);
  const int K = 7168;
  for (int64_t T : {int64_t{256}, int64_t{16384}}) {
    QCase c{T, K, DType::kBFloat16, ActQuant::kGroup128, ScaleFormat::kFloat32, true, false, 0, false, 8, 256, 1, 128};
    const Plan pl = make_plan(c, rng);
    std::vector<uint16_t> x(static_cast<size_t>(T * K), 0x3F80);
    DeviceBuffer dx = to_device(x);
    const int64_t rows_out = pl.p.num_rows() + int64_t{pl.groups} * 127;
    const int64_t rows_pad4 = (rows_out + 3) / 4 * 4;
    DeviceBuffer dout(static_cast<size_t>(rows_out * K) * 2), dsc(static_cast<size_t>(rows_pad4 * (K / 128) * 4));
    DeviceBuffer dslot_row = to_device(pl.p.slot_row), doff = to_device(to_i32(pl.p.offsets)),
                 dpad = to_device(to_i32(pl.p.padded_offsets)), dscratch(fk::permute_quant_scratch_bytes(T, K));
    fk::PermuteQuantArgs a;
    a.x = dx.get();
    a.num_tokens = T;
    a.hidden = K;
    a.out = dout.get();
    a.out_scales = dsc.as<float>();
    a.scratch = dscratch.get();
    a.scratch_bytes = dscratch.bytes();
    a.slots = pl.slots;
    a.num_groups = pl.groups;
    a.slot_row = dslot_row.as<int32_t>();
    a.offsets = doff.as<int32_t>();
    a.padded_offsets = dpad.as<int32_t>();
    a.top_k = c.k;
    // The variants without scales / with one scale per row show what the scattered 1x128 scale
    // stores of the permuted layout cost.
    struct V { const char* name; ActQuant q; bool permute; bool scales = true; };
    for (V v : {V{"group128 f32, permuted (k=8+1)", ActQuant::kGroup128, true},
                V{"group128 f32, permuted (k=8+1), scales not stored", ActQuant::kGroup128, true, false},
                V{"per-token, permuted (k=8+1)", ActQuant::kPerToken, true},
                V{"group128 f32, token order", ActQuant::kGroup128, false},
                V{"per-token, token order", ActQuant::kPerToken, false},
                V{"per-tensor dynamic, token order", ActQuant::kPerTensorDynamic, false},
                V{"bf16 copy, permuted (k=8+1)", ActQuant::kNone, true}}) {
      a.quant = v.q;
      a.permute = v.permute;
      a.out_scales = v.scales ? dsc.as<float>() : nullptr;
      a.rows_out = v.permute ? rows_out : T;
      auto launch = [&](cudaStream_t s) { fk::launch_permute_quant(a, s); };
      const float single = median_us(launch);
      const float us = graph_us(launch);
      const double rows_written = v.permute ? double(pl.p.num_rows()) : double(T);
      const double bytes = double(T) * K * 2 + rows_written * K * (v.q == ActQuant::kNone ? 2 : 1);
      std::printf("[timing] permute/quant T=%lld K=%d %s: %.2f us per launch in a graph (%.0f GB/s); %.2f us single "
                  "launch incl. host submission\n",
                  static_cast<long long>(T), K, v.name, us, bytes / us * 1e-3, single);
    }
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}
