// GPU tests of the grouped BF16 expert GEMMs (kernels/gemm/sm90_bf16_grouped_gemm.h): GEMM1 +
// activation and GEMM2 on the contiguous layout, normal and Swap-AB families, against float64
// references computed on the host from the same bf16 inputs. Padding rows of every input are NaN
// and outputs are poisoned (0xFF) before each run: a valid output that is not written, or that a
// padding row leaks into, shows up as non-finite. Fresh seed each run (printed; replay with
// FUSEDMOE_TEST_SEED=<seed>). Also: argument checks and informational timings (decode/prefill).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#include "fusedmoe/activation.h"
#include "fusedmoe/moe.h"
#include "fusedmoe/reference.h"
#include "gpu_test_util.h"
#include "kernels/gemm/sm90_bf16_grouped_gemm.h"

namespace {

using fusedmoe::Activation;
using fusedmoe::ActivationKind;
using fusedmoe::TileFamily;
using fusedmoe::gputest::DeviceBuffer;
using fusedmoe::gputest::to_device;
using fusedmoe::gputest::to_host;
using fusedmoe::kernels::GroupedGemmArgs;

constexpr uint16_t kBf16NaN = 0xFFFFu;

// ---------------------------------------------------------------- host helpers

inline float bf2f(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t f2bf(float f) {  // round to nearest even; inputs finite
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
inline double unit(uint64_t& s) { return double(splitmix(s) >> 11) * (1.0 / 9007199254740992.0); }

unsigned workers() { return std::max(1u, std::thread::hardware_concurrency()); }

void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t w = std::min<int64_t>(workers(), std::max<int64_t>(1, n));
  const int64_t chunk = (n + w - 1) / w;
  std::vector<std::thread> pool;
  for (int64_t i = 0; i < w; ++i) {
    const int64_t b = i * chunk, e = std::min(n, b + chunk);
    if (b < e) pool.emplace_back(fn, b, e);
  }
  for (auto& t : pool) t.join();
}

// Uniform [lo, hi) bf16 values (bits), deterministic for a seed, filled in parallel.
void fill_bf16(std::vector<uint16_t>& v, uint64_t seed, float lo, float hi) {
  const int64_t n = int64_t(v.size());
  constexpr int64_t kBlock = 1 << 16;
  parallel_for((n + kBlock - 1) / kBlock, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      uint64_t s = seed ^ (uint64_t(b) * 0xD1B54A32D192ED03ull);
      const int64_t e = std::min(n, (b + 1) * kBlock);
      for (int64_t i = b * kBlock; i < e; ++i) v[size_t(i)] = f2bf(float(lo + (hi - lo) * unit(s)));
    }
  });
}

std::vector<float> to_float(const std::vector<uint16_t>& v) {
  std::vector<float> f(v.size());
  parallel_for(int64_t(v.size()), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) f[size_t(i)] = bf2f(v[size_t(i)]);
  });
  return f;
}

inline double dot(const float* a, const float* b, int n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int k = 0;
  for (; k + 4 <= n; k += 4) {
    s0 += double(a[k]) * double(b[k]);
    s1 += double(a[k + 1]) * double(b[k + 1]);
    s2 += double(a[k + 2]) * double(b[k + 2]);
    s3 += double(a[k + 3]) * double(b[k + 3]);
  }
  for (; k < n; ++k) s0 += double(a[k]) * double(b[k]);
  return (s0 + s1) + (s2 + s3);
}

// The contiguous layout of one call (gpu_test_util.h).
using Layout = fusedmoe::gputest::GroupedLayout;
Layout make_layout(const std::vector<int>& counts, int pad) { return fusedmoe::gputest::make_grouped_layout(counts, pad); }

// Random counts: ~1/4 of the experts empty, one hot expert.
std::vector<int> random_counts(uint64_t& s, int g, int max_count, int hot) {
  std::vector<int> c(static_cast<size_t>(g));
  for (int e = 0; e < g; ++e) c[size_t(e)] = unit(s) < 0.25 ? 0 : int(unit(s) * (max_count + 1));
  if (hot > 0 && g > 1) c[size_t(splitmix(s) % uint64_t(g))] = hot;
  return c;
}

// Error statistics over the checked elements.
struct Stats {
  double err_sq = 0, ref_sq = 0, max_abs = 0;
  int64_t checked = 0, non_finite = 0, gross = 0;
  std::string first_bad;
  void add(double got, double ref, double tol_scale, const char* what, int64_t row, int64_t col) {
    ++checked;
    ref_sq += ref * ref;
    if (!std::isfinite(got)) {
      ++non_finite;
      if (first_bad.empty()) first_bad = std::string(what) + " row " + std::to_string(row) + " col " + std::to_string(col) + " non-finite";
      return;
    }
    const double d = got - ref;
    err_sq += d * d;
    max_abs = std::max(max_abs, std::fabs(d));
    // gross: beyond anything bf16 rounding can explain (catches mis-indexed or missing columns)
    if (std::fabs(d) > 0.05 * std::fabs(ref) + 0.05 * tol_scale) {
      ++gross;
      if (first_bad.empty())
        first_bad = std::string(what) + " row " + std::to_string(row) + " col " + std::to_string(col) + ": got " +
                    std::to_string(got) + " want " + std::to_string(ref);
    }
  }
  double rel() const { return ref_sq > 0 ? std::sqrt(err_sq / ref_sq) : std::sqrt(err_sq); }
};

// ---------------------------------------------------------------- cases

struct Case {
  std::string name;
  TileFamily family = TileFamily::kNormal;
  int tile = 128;       // launch token tile
  int pad = 0;          // padding of the layout (0 = tile)
  int G = 4, N = 128, K = 128;
  Activation act = Activation::silu();
  bool bias = true;
  std::vector<int> counts;  // explicit counts, else random
  int random_max = 40, hot = 0;
  bool gemm1 = true, gemm2 = true;
  float x_scale = 1.f;      // GEMM1 inputs uniform in [-x_scale, x_scale)
  int tpc = 0;              // forced weight tiles per CTA
  bool simple_view = false; // force the simple weight TMA view
  bool staged = false;      // staged epilogue (normal family: outputs through shared memory)
  int k_splits = 0;         // Swap-AB split-K: 0 heuristic, 1 off, n forced
  int balanced = 0;         // the balanced schedule: 0 rule, 1 forced where it can run, -1 off
  int expect_flat1 = -1, expect_flat2 = -1;  // >= 0: the schedule GEMM1 / GEMM2 must run (1 balanced, 2 dynamic)
  bool dyn = false;         // a zeroed work counter (GroupedGemmArgs::queue): the balanced schedule runs dynamic
  int pingpong = 0;         // GroupedGemmArgs::pingpong (normal family, GEMM2 only): the ping-pong instance
};

std::string fam(const Case& c) {
  return c.family == TileFamily::kNormal ? std::string("normal") : "swapab" + std::to_string(c.tile);
}

void fill_rows_with_nan_padding(std::vector<uint16_t>& a, const Layout& l, int64_t cols) {
  // every row that is not a valid row of some expert is NaN
  std::vector<char> valid(size_t(l.max_rows), 0);
  for (size_t e = 0; e + 1 < l.padded.size(); ++e)
    for (int i = 0; i < l.counts[e]; ++i) valid[size_t(l.padded[e] + i)] = 1;
  for (int64_t r = 0; r < l.max_rows; ++r)
    if (!valid[size_t(r)]) std::fill(a.begin() + r * cols, a.begin() + (r + 1) * cols, kBf16NaN);
}

GroupedGemmArgs base_args(const Case& c, const Layout& l, const DeviceBuffer& counts, const DeviceBuffer& offsets,
                          const DeviceBuffer& padded) {
  GroupedGemmArgs a;
  a.counts = counts.as<int32_t>();
  a.offsets = offsets.as<int32_t>();
  a.padded_offsets = padded.as<int32_t>();
  a.num_groups = c.G;
  a.n = c.N;
  a.k = c.K;
  a.activation = c.act;
  a.max_rows = l.max_rows;
  a.family = c.family;
  a.tokens_tile = c.tile;
  a.weight_tiles_per_cta = c.tpc;
  a.staged_epilogue = c.staged;
  a.pingpong = c.pingpong;
  a.k_splits = c.k_splits;
  a.balanced = c.balanced;
  a.rows_hint = l.rows;
  return a;
}

void check_gemm1(const Case& c, const Layout& l, uint64_t seed) {
  const int G = c.G, N = c.N, K = c.K, R1 = c.act.gemm1_rows(N);
  std::vector<uint16_t> x(size_t(l.max_rows) * size_t(K)), w1(size_t(G) * size_t(R1) * size_t(K));
  fill_bf16(x, seed ^ 0x1111, -c.x_scale, c.x_scale);
  fill_rows_with_nan_padding(x, l, K);
  const float wa = std::sqrt(3.f / float(K));
  fill_bf16(w1, seed ^ 0x2222, -wa, wa);
  std::vector<float> b1;
  if (c.bias) {
    b1.resize(size_t(G) * size_t(R1));
    uint64_t s = seed ^ 0x3333;
    for (auto& b : b1) b = float(unit(s) - 0.5);
  }
  DeviceBuffer d_x = to_device(x), d_w = to_device(w1), d_b = to_device(b1);
  DeviceBuffer d_counts = to_device(l.counts), d_off = to_device(l.offsets), d_pad = to_device(l.padded);
  constexpr int64_t kGuardRows = 4;
  DeviceBuffer d_h(size_t(l.max_rows + kGuardRows) * size_t(N) * 2);
  ASSERT_TRUE(d_x.get() && d_w.get() && d_h.get());
  d_h.poison(0xFF);

  GroupedGemmArgs a = base_args(c, l, d_counts, d_off, d_pad);
  a.a = d_x.get();
  a.w = d_w.get();
  a.bias = c.bias ? d_b.as<float>() : nullptr;
  a.out = d_h.get();
  DeviceBuffer d_q(16);
  if (c.dyn) {
    FM_CUDA_CHECK(cudaMemset(d_q.get(), 0, 16));
    a.queue = d_q.as<int>();
  }
  int boxes = 0;
  FM_CUDA_CHECK(fusedmoe::kernels::launch_grouped_gemm_test(a, /*gemm2=*/false, c.simple_view, &boxes, nullptr));
  if (c.expect_flat1 >= 0) EXPECT_EQ(fusedmoe::kernels::last_grouped_gemm_balanced(), c.expect_flat1) << "GEMM1 schedule";
  FM_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<uint16_t> h = to_host<uint16_t>(d_h.get(), size_t(l.max_rows + kGuardRows) * size_t(N));

  const std::vector<float> xf = to_float(x), wf = to_float(w1);
  const bool il = c.act.gated() && c.act.interleaved;
  std::vector<std::pair<int, int>> rows;  // (expert, i)
  for (int e = 0; e < G; ++e)
    for (int i = 0; i < l.counts[size_t(e)]; ++i) rows.emplace_back(e, i);
  std::vector<double> ref(rows.size() * size_t(N));
  parallel_for(int64_t(rows.size()), [&](int64_t b, int64_t e_) {
    for (int64_t r = b; r < e_; ++r) {
      const int e = rows[size_t(r)].first, i = rows[size_t(r)].second;
      const float* xr = xf.data() + size_t(l.padded[size_t(e)] + i) * size_t(K);
      for (int n = 0; n < N; ++n) {
        const int gr = c.act.gated() ? (il ? 2 * n : n) : n;
        const int ur = il ? 2 * n + 1 : N + n;
        double g = dot(xr, wf.data() + (size_t(e) * R1 + size_t(gr)) * size_t(K), K);
        double u = 0;
        if (c.bias) g += b1[size_t(e) * R1 + size_t(gr)];
        if (c.act.gated()) {
          u = dot(xr, wf.data() + (size_t(e) * R1 + size_t(ur)) * size_t(K), K);
          if (c.bias) u += b1[size_t(e) * R1 + size_t(ur)];
        }
        ref[size_t(r) * size_t(N) + size_t(n)] = fusedmoe::ref::activate(c.act, g, u);
      }
    }
  });
  double rms = 0;
  for (double v : ref) rms += v * v;
  rms = std::sqrt(rms / std::max<size_t>(1, ref.size()));
  Stats st;
  for (size_t r = 0; r < rows.size(); ++r) {
    const int64_t hrow = l.padded[size_t(rows[r].first)] + rows[r].second;
    for (int n = 0; n < N; ++n)
      st.add(bf2f(h[size_t(hrow) * size_t(N) + size_t(n)]), ref[r * size_t(N) + size_t(n)], rms, "H", hrow, n);
  }
  int64_t guard = 0;
  for (size_t i = size_t(l.max_rows) * size_t(N); i < h.size(); ++i) guard += (h[i] != kBf16NaN);
  std::printf("[ grouped  ] %-44s gemm1 %-28s G=%d N=%d K=%d rows=%lld boxes=%d rel_l2=%.3e max_abs=%.2e checked=%lld\n",
              c.name.c_str(), fusedmoe::kernels::grouped_gemm1_name(c.family, c.tile), G, N, K,
              static_cast<long long>(l.rows), boxes, st.rel(), st.max_abs, static_cast<long long>(st.checked));
  EXPECT_EQ(st.non_finite, 0) << st.first_bad;
  EXPECT_EQ(st.gross, 0) << st.first_bad;
  EXPECT_EQ(guard, 0) << "GEMM1 wrote past max_rows";
  EXPECT_LE(st.rel(), 1e-2);
}

void check_gemm2(const Case& c, const Layout& l, uint64_t seed) {
  const int G = c.G, N = c.N, K = c.K;
  std::vector<uint16_t> hin(size_t(l.max_rows) * size_t(N)), w2(size_t(G) * size_t(K) * size_t(N));
  fill_bf16(hin, seed ^ 0x4444, -1.f, 1.f);
  fill_rows_with_nan_padding(hin, l, N);
  const float wa = std::sqrt(3.f / float(N));
  fill_bf16(w2, seed ^ 0x5555, -wa, wa);
  std::vector<float> b2;
  if (c.bias) {
    b2.resize(size_t(G) * size_t(K));
    uint64_t s = seed ^ 0x6666;
    for (auto& b : b2) b = float(unit(s) - 0.5);
  }
  DeviceBuffer d_h = to_device(hin), d_w = to_device(w2), d_b = to_device(b2);
  DeviceBuffer d_counts = to_device(l.counts), d_off = to_device(l.offsets), d_pad = to_device(l.padded);
  constexpr int64_t kGuardRows = 4;
  DeviceBuffer d_y(size_t(l.rows + kGuardRows) * size_t(K) * 2);
  ASSERT_TRUE(d_h.get() && d_w.get() && d_y.get());
  d_y.poison(0xFF);

  GroupedGemmArgs a = base_args(c, l, d_counts, d_off, d_pad);
  a.a = d_h.get();
  a.w = d_w.get();
  a.bias = c.bias ? d_b.as<float>() : nullptr;
  a.out = d_y.get();
  DeviceBuffer d_q(16);
  if (c.dyn) {
    FM_CUDA_CHECK(cudaMemset(d_q.get(), 0, 16));
    a.queue = d_q.as<int>();
  }
  int boxes = 0;
  FM_CUDA_CHECK(fusedmoe::kernels::launch_grouped_gemm_test(a, /*gemm2=*/true, c.simple_view, &boxes, nullptr));
  if (c.expect_flat2 >= 0) EXPECT_EQ(fusedmoe::kernels::last_grouped_gemm_balanced(), c.expect_flat2) << "GEMM2 schedule";
  FM_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<uint16_t> y = to_host<uint16_t>(d_y.get(), size_t(l.rows + kGuardRows) * size_t(K));

  const std::vector<float> hf = to_float(hin), wf = to_float(w2);
  std::vector<int> row_expert(size_t(l.rows));
  for (int e = 0; e < G; ++e)
    for (int i = 0; i < l.counts[size_t(e)]; ++i) row_expert[size_t(l.offsets[size_t(e)] + i)] = e;
  std::vector<double> ref(size_t(l.rows) * size_t(K));
  parallel_for(l.rows, [&](int64_t b, int64_t e_) {
    for (int64_t r = b; r < e_; ++r) {
      const int e = row_expert[size_t(r)];
      const float* hr = hf.data() + size_t(l.padded[size_t(e)] + (r - l.offsets[size_t(e)])) * size_t(N);
      for (int col = 0; col < K; ++col) {
        double v = dot(hr, wf.data() + (size_t(e) * K + size_t(col)) * size_t(N), N);
        if (c.bias) v += b2[size_t(e) * K + size_t(col)];
        ref[size_t(r) * size_t(K) + size_t(col)] = v;
      }
    }
  });
  double rms = 0;
  for (double v : ref) rms += v * v;
  rms = std::sqrt(rms / std::max<size_t>(1, ref.size()));
  Stats st;
  for (int64_t r = 0; r < l.rows; ++r)
    for (int col = 0; col < K; ++col)
      st.add(bf2f(y[size_t(r) * size_t(K) + size_t(col)]), ref[size_t(r) * size_t(K) + size_t(col)], rms, "Y", r, col);
  int64_t guard = 0;
  for (size_t i = size_t(l.rows) * size_t(K); i < y.size(); ++i) guard += (y[i] != kBf16NaN);
  std::printf("[ grouped  ] %-44s gemm2 %-28s G=%d N=%d K=%d rows=%lld boxes=%d rel_l2=%.3e max_abs=%.2e checked=%lld\n",
              c.name.c_str(), fusedmoe::kernels::grouped_gemm2_name(c.family, c.tile), G, N, K,
              static_cast<long long>(l.rows), boxes, st.rel(), st.max_abs, static_cast<long long>(st.checked));
  EXPECT_EQ(st.non_finite, 0) << st.first_bad;
  EXPECT_EQ(st.gross, 0) << st.first_bad;
  EXPECT_EQ(guard, 0) << "GEMM2 wrote past row R";
  EXPECT_LE(st.rel(), 1e-2);
}

Case mk(const std::string& name, TileFamily f, int tile, int G, int N, int K) {
  Case c;
  c.name = name;
  c.family = f;
  c.tile = tile;
  c.G = G;
  c.N = N;
  c.K = K;
  return c;
}

std::vector<Case> all_cases() {
  std::vector<Case> v;
  const std::vector<std::pair<TileFamily, int>> fams = {
      {TileFamily::kNormal, 128}, {TileFamily::kSwapAB, 8}, {TileFamily::kSwapAB, 16},
      {TileFamily::kSwapAB, 32}, {TileFamily::kSwapAB, 64}};
  // 1. tokens per expert, every family
  for (auto [f, t] : fams) {
    Case c = mk("tokens_sweep_" + std::to_string(t), f, t, 11, 192, 512);
    c.counts = {0, 1, 2, 3, 7, 8, 9, 63, 64, 65, 1000};
    v.push_back(c);
  }
  // 2. N / K boundaries (ragged N predicated, ragged K zero-filled by TMA)
  const std::vector<std::pair<int, int>> nk = {{64, 2880},  {96, 128},   {120, 2688}, {136, 128}, {176, 2880},
                                               {192, 7168}, {320, 2688}, {352, 128},  {360, 2880}, {2880, 2688},
                                               {136, 7168}, {8, 64},     {200, 40}};
  for (auto [f, t] : {std::pair{TileFamily::kNormal, 128}, std::pair{TileFamily::kSwapAB, 16}}) {
    for (auto [n, k] : nk) {
      Case c = mk("nk_" + std::to_string(n) + "x" + std::to_string(k) + "_" + std::to_string(t), f, t, 6, n, k);
      c.random_max = n >= 2880 ? 30 : 70;
      c.hot = n >= 2880 ? 0 : 150;
      v.push_back(c);
    }
  }
  // 3. every activation (gated, interleaved, biases, clamping), ragged N = 360
  struct A {
    const char* name;
    Activation act;
    float xs;
  };
  Activation silu_il = Activation::silu();
  silu_il.interleaved = true;
  const std::vector<A> acts = {
      {"silu", Activation::silu(), 1.f},
      {"silu_il", silu_il, 1.f},
      {"gelu", Activation::gelu(), 1.f},
      {"gelu_tanh", Activation{ActivationKind::kGeluTanhGated}, 1.f},
      {"clamped_swiglu", Activation::clamped_swiglu(1.5f), 4.f},
      {"swiglu_oai_il", Activation::swiglu_oai(1.702f, 7.f, true), 12.f},
      {"swiglu_oai", Activation::swiglu_oai(1.702f, 7.f, false), 12.f},
      {"squared_relu", Activation::squared_relu(), 1.f},
  };
  for (auto [f, t] : {std::pair{TileFamily::kNormal, 128}, std::pair{TileFamily::kSwapAB, 8},
                      std::pair{TileFamily::kSwapAB, 32}}) {
    for (const A& a : acts) {
      Case c = mk(std::string("act_") + a.name + "_" + std::to_string(t), f, t, 5, 360, 256);
      c.act = a.act;
      c.x_scale = a.xs;
      c.gemm2 = false;
      c.hot = 90;
      v.push_back(c);
    }
    Case c = mk("act_silu_nobias_" + std::to_string(t), f, t, 5, 256, 384);
    c.bias = false;
    v.push_back(c);
  }
  // 4. the simple weight TMA view (several boxes per K step), gated, ragged N
  for (auto [f, t] : {std::pair{TileFamily::kNormal, 128}, std::pair{TileFamily::kSwapAB, 16}}) {
    for (bool il : {false, true}) {
      Case c = mk(std::string("simple_view_") + (il ? "il_" : "") + std::to_string(t), f, t, 5, 360, 320);
      c.act = il ? Activation::swiglu_oai(1.702f, 7.f, true) : Activation::silu();
      c.x_scale = il ? 6.f : 1.f;
      c.simple_view = true;
      c.gemm2 = false;
      v.push_back(c);
    }
  }
  // 5. several weight tiles per CTA; layout padded to 128 but run with a small token tile
  for (int tpc : {2, 3, 7}) {
    Case c = mk("tiles_per_cta_" + std::to_string(tpc), TileFamily::kSwapAB, 16, 7, 1000, 2880);
    c.tpc = tpc;
    c.random_max = 20;
    v.push_back(c);
  }
  {
    Case c = mk("tiles_per_cta_2_normal", TileFamily::kNormal, 128, 5, 704, 1024);
    c.tpc = 2;
    v.push_back(c);
  }
  // normal tiles chained over a short reduction (GEMM2 with N = 192: three K steps), chunks that
  // do not divide the weight tiles (1000 output columns = 8 tiles)
  for (int tpc : {3, 7}) {
    Case c = mk("tiles_per_cta_" + std::to_string(tpc) + "_normal_short_k", TileFamily::kNormal, 128, 5, 192, 1000);
    c.tpc = tpc;
    c.random_max = 300;
    v.push_back(c);
  }
  for (int t : {8, 16, 64}) {
    Case c = mk("pad128_tile" + std::to_string(t), TileFamily::kSwapAB, t, 9, 192, 448);
    c.pad = 128;
    c.random_max = 150;
    v.push_back(c);
  }
  // 5a. the balanced schedule (Swap-AB, chained tiles by the heuristic: Params::flat): many token
  // tiles per CTA (2 weight tiles per token tile, ~3000 rows on one expert: the grid grows past one
  // wave so that no range spans more than kMaxSegments token tiles); G above the scan's threads;
  // G beyond its bound (the grouped raster again); gated GEMM1 with short K; empty + hot experts.
  {
    Case c = mk("balanced_many_segments_8", TileFamily::kSwapAB, 8, 8, 64, 128);
    c.counts = {0, 6000, 0, 0, 5000, 3001, 0, 1000};  // 1876 token tiles: ~290 CTAs on an H200's 264 slots
    c.balanced = 1;
    c.k_splits = 1;
    c.expect_flat1 = c.expect_flat2 = 1;
    v.push_back(c);
    Case g = mk("balanced_g300_16", TileFamily::kSwapAB, 16, 300, 192, 512);
    g.random_max = 12;
    g.hot = 77;
    g.balanced = 1;
    g.k_splits = 1;
    g.expect_flat1 = g.expect_flat2 = 1;
    v.push_back(g);
    Case r = mk("balanced_g1290_raster_32", TileFamily::kSwapAB, 32, 1290, 64, 192);
    r.random_max = 3;
    r.bias = false;
    r.balanced = 1;
    r.expect_flat1 = r.expect_flat2 = 0;  // G above 8 x 160 threads: the raster
    v.push_back(r);
    Case a = mk("balanced_gated_8", TileFamily::kSwapAB, 8, 24, 360, 256);
    a.random_max = 30;
    a.hot = 200;
    a.balanced = 1;
    a.k_splits = 1;
    a.expect_flat1 = a.expect_flat2 = 1;
    v.push_back(a);
    Case q = mk("balanced_rule_qwen235_tp8_like_8", TileFamily::kSwapAB, 8, 128, 192, 4096);
    q.random_max = 1;  // ~50 rows on 128 experts (G / 4 < rows <= G): the rule takes the balanced GEMM2
    q.hot = 5;
    q.bias = false;
    q.expect_flat1 = 0;  // (GEMM2 only)
    q.expect_flat2 = 1;
    v.push_back(q);
    // the same cases with a work counter: the dynamic schedule (chunks taken as CTAs finish), and
    // the raster where the balanced schedule cannot run (the counter is then ignored)
    for (Case d : {c, g, r, a, q}) {
      d.name = "dyn_" + d.name;
      d.dyn = true;
      if (d.expect_flat1 == 1) d.expect_flat1 = 2;
      if (d.expect_flat2 == 1) d.expect_flat2 = 2;
      v.push_back(d);
    }
  }
  // 5b. split-K over a cluster (Swap-AB): every token tile, ragged K (2880 = 45 K steps, 200 = 4
  // steps with 8 asked: capped), gated / interleaved / plain, with and without bias; GEMM2's
  // reduction is N
  {
    struct S {
      int tile, splits, N, K;
      Activation act;
      bool bias;
    };
    const std::vector<S> splits = {
        {8, 5, 192, 4096, Activation::silu(), false},
        {8, 8, 360, 2880, Activation::swiglu_oai(1.702f, 7.f, true), true},
        {16, 2, 256, 7168, Activation::silu(), true},
        {16, 3, 1024, 2880, Activation::gelu(), false},
        {32, 4, 512, 1000, Activation::squared_relu(), true},
        {64, 7, 2880, 2880, Activation::silu(), true},
        {8, 8, 200, 200, Activation::silu(), true},
    };
    for (const S& sp : splits) {
      Case c = mk("split_k" + std::to_string(sp.splits) + "_" + std::to_string(sp.tile) + "_" + std::to_string(sp.N) +
                      "x" + std::to_string(sp.K),
                  TileFamily::kSwapAB, sp.tile, 6, sp.N, sp.K);
      c.k_splits = sp.splits;
      c.act = sp.act;
      c.bias = sp.bias;
      c.x_scale = sp.act.kind == ActivationKind::kSwigluOai ? 6.f : 1.f;
      c.random_max = 2 * sp.tile;
      v.push_back(c);
    }
  }
  // 6. suite shapes at moderate size
  for (auto [f, t] : {std::pair{TileFamily::kNormal, 128}, std::pair{TileFamily::kSwapAB, 16}}) {
    Case d = mk("dsv3_tp8_like_" + std::to_string(t), f, t, 32, 256, 7168);
    d.random_max = 24;
    d.hot = 200;
    d.bias = false;
    v.push_back(d);
    Case q = mk("qwen235_tp8_like_" + std::to_string(t), f, t, 16, 192, 4096);
    q.random_max = 40;
    q.hot = 300;
    q.bias = false;
    v.push_back(q);
    Case m = mk("mixtral_like_" + std::to_string(t), f, t, 2, 7168, 4096);
    m.counts = {37, 90};
    m.bias = false;
    v.push_back(m);
  }
  {
    Case g = mk("gptoss_like_32", TileFamily::kSwapAB, 32, 8, 2880, 2880);
    g.act = Activation::swiglu_oai();
    g.x_scale = 4.f;
    g.random_max = 20;
    v.push_back(g);
  }
  // Every normal-family case again with the staged epilogue (same values, whole-chunk stores).
  const size_t plain = v.size();
  for (size_t i = 0; i < plain; ++i)
    if (v[i].family == TileFamily::kNormal) {
      Case c = v[i];
      c.name += "_staged";
      c.staged = true;
      v.push_back(c);
    }
  // Every normal-family case's GEMM2 again on the ping-pong instance (ForwardOptions::pingpong_gemm2;
  // same values): K steps per tile from 1 to 112, chained tiles, ragged N and K.
  for (size_t i = 0; i < plain; ++i)
    if (v[i].family == TileFamily::kNormal && v[i].gemm2) {
      Case c = v[i];
      c.name += "_pingpong";
      c.pingpong = 1;
      c.gemm1 = false;
      v.push_back(c);
    }
  return v;
}

class GroupedGemm : public ::testing::TestWithParam<Case> {};

TEST_P(GroupedGemm, MatchesFloat64Reference) {
  Case c = GetParam();
  const uint64_t seed = fusedmoe::gputest::test_seed();
  RecordProperty("seed", std::to_string(seed));
  std::printf("[ grouped  ] %s (%s) seed=%llu\n", c.name.c_str(), fam(c).c_str(), static_cast<unsigned long long>(seed));
  uint64_t s = seed;
  std::vector<int> counts = c.counts.empty() ? random_counts(s, c.G, c.random_max, c.hot) : c.counts;
  c.G = int(counts.size());
  const Layout l = make_layout(counts, c.pad > 0 ? c.pad : c.tile);
  if (c.gemm1) check_gemm1(c, l, seed);
  if (c.gemm2) check_gemm2(c, l, seed);
}

INSTANTIATE_TEST_SUITE_P(Cases, GroupedGemm, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

// Rows beyond 2^31 / cols elements: byte offsets of the outputs need 64-bit arithmetic.
TEST(GroupedGemmLarge, RowCountBeyondInt32Elements) {
  const uint64_t seed = fusedmoe::gputest::test_seed();
  std::printf("[ grouped  ] large rows seed=%llu\n", static_cast<unsigned long long>(seed));
  const std::vector<int> counts = {0, 2'100'000, 77};
  const int G = 3;
  for (int which = 1; which <= 2; ++which) {
    const int N = which == 1 ? 1024 : 64, K = which == 1 ? 64 : 1024;  // outputs [rows, 1024]
    const int red = which == 1 ? K : N, out_cols = which == 1 ? N : K;
    const int wrows = which == 1 ? 2 * N : K;
    const Layout l = make_layout(counts, 128);
    std::vector<uint16_t> a(size_t(l.max_rows) * size_t(red)), w(size_t(G) * size_t(wrows) * size_t(red));
    fill_bf16(a, seed ^ 0x77, -1.f, 1.f);
    fill_rows_with_nan_padding(a, l, red);
    const float wa = std::sqrt(3.f / float(red));
    fill_bf16(w, seed ^ 0x88, -wa, wa);
    DeviceBuffer d_a = to_device(a), d_w = to_device(w);
    DeviceBuffer d_counts = to_device(l.counts), d_off = to_device(l.offsets), d_pad = to_device(l.padded);
    const int64_t out_rows = which == 1 ? l.max_rows : l.rows;
    DeviceBuffer d_out(size_t(out_rows) * size_t(out_cols) * 2);
    ASSERT_TRUE(d_a.get() && d_w.get() && d_out.get());
    d_out.poison(0xFF);
    Case c = mk("large", TileFamily::kNormal, 128, G, N, K);
    c.bias = false;
    GroupedGemmArgs args = base_args(c, l, d_counts, d_off, d_pad);
    args.a = d_a.get();
    args.w = d_w.get();
    args.out = d_out.get();
    FM_CUDA_CHECK(which == 1 ? fusedmoe::kernels::launch_grouped_gemm1(args, nullptr)
                             : fusedmoe::kernels::launch_grouped_gemm2(args, nullptr));
    FM_CUDA_CHECK(cudaDeviceSynchronize());
    // sampled rows: start and end of the big expert, all of the last one
    std::vector<std::pair<int, int>> rows;
    for (int i : {0, 1, 1'000'000, 2'099'871, 2'099'999}) rows.emplace_back(1, i);
    for (int i = 0; i < 77; ++i) rows.emplace_back(2, i);
    const std::vector<float> af = to_float(a), wf = to_float(w);
    Stats st;
    double rms = 0.6;
    for (auto [e, i] : rows) {
      const int64_t in_row = l.padded[size_t(e)] + i;
      const int64_t out_row = which == 1 ? in_row : l.offsets[size_t(e)] + i;
      std::vector<uint16_t> got(static_cast<size_t>(out_cols));
      FM_CUDA_CHECK(cudaMemcpy(got.data(), d_out.as<uint16_t>() + out_row * out_cols, size_t(out_cols) * 2,
                               cudaMemcpyDeviceToHost));
      const float* ar = af.data() + size_t(in_row) * size_t(red);
      for (int col = 0; col < out_cols; ++col) {
        double ref;
        if (which == 1) {
          const double g = dot(ar, wf.data() + (size_t(e) * wrows + size_t(col)) * size_t(red), red);
          const double u = dot(ar, wf.data() + (size_t(e) * wrows + size_t(N + col)) * size_t(red), red);
          ref = fusedmoe::ref::activate(Activation::silu(), g, u);
        } else {
          ref = dot(ar, wf.data() + (size_t(e) * wrows + size_t(col)) * size_t(red), red);
        }
        st.add(bf2f(got[size_t(col)]), ref, rms, which == 1 ? "H" : "Y", out_row, col);
      }
    }
    std::printf("[ grouped  ] large rows gemm%d rows=%lld out=[%lld, %d] rel_l2=%.3e checked=%lld\n", which,
                static_cast<long long>(l.rows), static_cast<long long>(out_rows), out_cols, st.rel(),
                static_cast<long long>(st.checked));
    EXPECT_EQ(st.non_finite, 0) << st.first_bad;
    EXPECT_EQ(st.gross, 0) << st.first_bad;
    EXPECT_LE(st.rel(), 1e-2);
  }
}

TEST(GroupedGemmArgs, RejectsBadArguments) {
  DeviceBuffer buf(1 << 20), cnt(64);
  GroupedGemmArgs a;
  a.a = buf.get();
  a.w = buf.get();
  a.out = buf.get();
  a.counts = cnt.as<int32_t>();
  a.offsets = cnt.as<int32_t>();
  a.padded_offsets = cnt.as<int32_t>();
  a.num_groups = 2;
  a.n = 64;
  a.k = 64;
  a.max_rows = 16;
  using fusedmoe::kernels::launch_grouped_gemm1;
  using fusedmoe::kernels::launch_grouped_gemm2;
  GroupedGemmArgs b = a;
  b.k = 60;
  EXPECT_EQ(launch_grouped_gemm1(b, nullptr), cudaErrorInvalidValue);
  b = a;
  b.n = 68;
  EXPECT_EQ(launch_grouped_gemm2(b, nullptr), cudaErrorInvalidValue);
  b = a;
  b.a = static_cast<char*>(buf.get()) + 2;
  EXPECT_EQ(launch_grouped_gemm1(b, nullptr), cudaErrorInvalidValue);
  b = a;
  b.out = static_cast<char*>(buf.get()) + 8;
  EXPECT_EQ(launch_grouped_gemm2(b, nullptr), cudaErrorInvalidValue);
  b = a;
  b.family = TileFamily::kSwapAB;
  b.tokens_tile = 24;
  EXPECT_EQ(launch_grouped_gemm1(b, nullptr), cudaErrorInvalidValue);
  b = a;
  b.family = TileFamily::kNormal;
  b.tokens_tile = 64;
  EXPECT_EQ(launch_grouped_gemm1(b, nullptr), cudaErrorInvalidValue);
  b = a;
  b.offsets = nullptr;
  EXPECT_EQ(launch_grouped_gemm2(b, nullptr), cudaErrorInvalidValue);
  b = a;
  b.max_rows = 0;  // nothing to do
  EXPECT_EQ(launch_grouped_gemm1(b, nullptr), cudaSuccess);
  FM_CUDA_CHECK(cudaDeviceSynchronize());
}

TEST(GroupedGemmArgs, NamesAndHeuristic) {
  int n = 0;
  const char* const* names = fusedmoe::kernels::grouped_gemm_instance_names(&n);
  ASSERT_EQ(n, 10);
  for (int i = 0; i < n; ++i) {
    std::printf("[ grouped  ] instance %s\n", names[i]);
    for (int j = 0; j < i; ++j) EXPECT_STRNE(names[i], names[j]);
  }
  EXPECT_STREQ(fusedmoe::kernels::grouped_gemm1_name(TileFamily::kNormal, 0), "sm90_bf16_grouped_gemm1_128x128x64_s5");
  EXPECT_EQ(fusedmoe::kernels::grouped_gemm1_name(TileFamily::kSwapAB, 12), nullptr);
  auto c = fusedmoe::kernels::choose_tokens_tile(64, 8, 256);  // 2 rows per expert
  EXPECT_EQ(c.family, TileFamily::kSwapAB);
  EXPECT_EQ(c.tokens_tile, 8);
  c = fusedmoe::kernels::choose_tokens_tile(512, 8, 256);  // 16 per expert
  EXPECT_EQ(c.family, TileFamily::kSwapAB);
  c = fusedmoe::kernels::choose_tokens_tile(4096, 8, 256);  // 128 per expert
  EXPECT_EQ(c.family, TileFamily::kNormal);
  EXPECT_EQ(c.tokens_tile, 128);
  // 16-32 per expert: the widest Swap-AB tile of the weight format, or normal (0)
  for (const int wide : {64, 32, 0}) {
    c = fusedmoe::kernels::choose_tokens_tile(1024, 8, 256, wide);  // 32 per expert
    EXPECT_EQ(c.family, wide > 0 ? TileFamily::kSwapAB : TileFamily::kNormal);
    EXPECT_EQ(c.tokens_tile, wide > 0 ? wide : 128);
    c = fusedmoe::kernels::choose_tokens_tile(1032, 8, 256, wide);  // 32.25 per expert
    EXPECT_EQ(c.family, TileFamily::kNormal);
  }
}

// ---------------------------------------------------------------- timings (informational)

float median_us(const std::function<void()>& launch) {
  for (int i = 0; i < 3; ++i) launch();  // warm-up
  cudaDeviceSynchronize();
  constexpr int kIters = 20;
  std::vector<cudaEvent_t> ev(2 * kIters);
  for (auto& e : ev) cudaEventCreate(&e);
  for (int i = 0; i < kIters; ++i) {
    cudaEventRecord(ev[size_t(2 * i)], nullptr);
    launch();
    cudaEventRecord(ev[size_t(2 * i + 1)], nullptr);
  }
  cudaEventSynchronize(ev.back());
  std::vector<float> t(kIters);
  for (int i = 0; i < kIters; ++i) cudaEventElapsedTime(&t[size_t(i)], ev[size_t(2 * i)], ev[size_t(2 * i + 1)]);
  for (auto& e : ev) cudaEventDestroy(e);
  std::sort(t.begin(), t.end());
  return 1e3f * 0.5f * (t[kIters / 2 - 1] + t[kIters / 2]);
}

TEST(GroupedGemmTiming, DecodeAndPrefill) {
  const uint64_t seed = fusedmoe::gputest::test_seed();
  std::printf("[ timing   ] seed=%llu (median of 20 after warm-up)\n", static_cast<unsigned long long>(seed));
  auto run_case = [&](const char* label, int G, std::vector<int> counts, int N, int K,
                      std::vector<std::pair<TileFamily, int>> fams) {
    const int R1 = 2 * N;
    std::vector<uint16_t> w1(size_t(G) * R1 * K), w2(size_t(G) * K * N);
    fill_bf16(w1, seed ^ 0xA1, -std::sqrt(3.f / K), std::sqrt(3.f / K));
    fill_bf16(w2, seed ^ 0xA2, -std::sqrt(3.f / N), std::sqrt(3.f / N));
    DeviceBuffer d_w1 = to_device(w1), d_w2 = to_device(w2);
    const std::vector<float> w1f = to_float(w1), w2f = to_float(w2);
    for (auto [f, tile] : fams) {
      const Layout l = make_layout(counts, tile);
      std::vector<uint16_t> x(size_t(l.max_rows) * K);
      fill_bf16(x, seed ^ 0xA3, -1.f, 1.f);
      fill_rows_with_nan_padding(x, l, K);
      DeviceBuffer d_x = to_device(x), d_counts = to_device(l.counts), d_off = to_device(l.offsets),
                   d_pad = to_device(l.padded);
      DeviceBuffer d_h(size_t(l.max_rows) * N * 2), d_y(size_t(std::max<int64_t>(1, l.rows)) * K * 2);
      ASSERT_TRUE(d_x.get() && d_w1.get() && d_w2.get() && d_h.get() && d_y.get());
      d_h.poison(0xFF);
      d_y.poison(0xFF);
      GroupedGemmArgs a;
      a.counts = d_counts.as<int32_t>();
      a.offsets = d_off.as<int32_t>();
      a.padded_offsets = d_pad.as<int32_t>();
      a.num_groups = G;
      a.n = N;
      a.k = K;
      a.max_rows = l.max_rows;
      a.family = f;
      a.tokens_tile = tile;
      GroupedGemmArgs a1 = a, a2 = a;
      a1.a = d_x.get();
      a1.w = d_w1.get();
      a1.out = d_h.get();
      a2.a = d_h.get();
      a2.w = d_w2.get();
      a2.out = d_y.get();
      cudaError_t e1 = cudaSuccess, e2 = cudaSuccess;
      const float t1 = median_us([&] { e1 = fusedmoe::kernels::launch_grouped_gemm1(a1, nullptr); });
      const float t2 = median_us([&] { e2 = fusedmoe::kernels::launch_grouped_gemm2(a2, nullptr); });
      FM_CUDA_CHECK(e1);
      FM_CUDA_CHECK(e2);
      FM_CUDA_CHECK(cudaDeviceSynchronize());
      // spot check: up to 2 rows per expert of H (from x, W1) and Y (from the GPU's H, W2)
      Stats s1, s2;
      for (int e = 0; e < G; ++e) {
        for (int i = 0; i < std::min(2, l.counts[size_t(e)]); ++i) {
          const int64_t hrow = l.padded[size_t(e)] + i, yrow = l.offsets[size_t(e)] + i;
          std::vector<uint16_t> h(static_cast<size_t>(N)), y(static_cast<size_t>(K));
          FM_CUDA_CHECK(cudaMemcpy(h.data(), d_h.as<uint16_t>() + hrow * N, size_t(N) * 2, cudaMemcpyDeviceToHost));
          FM_CUDA_CHECK(cudaMemcpy(y.data(), d_y.as<uint16_t>() + yrow * K, size_t(K) * 2, cudaMemcpyDeviceToHost));
          std::vector<float> xr(static_cast<size_t>(K)), hr(static_cast<size_t>(N));
          for (int k = 0; k < K; ++k) xr[size_t(k)] = bf2f(x[size_t(hrow) * K + size_t(k)]);
          for (int n = 0; n < N; ++n) hr[size_t(n)] = bf2f(h[size_t(n)]);
          for (int n = 0; n < N; ++n) {
            const double g = dot(xr.data(), w1f.data() + (size_t(e) * R1 + size_t(n)) * K, K);
            const double u = dot(xr.data(), w1f.data() + (size_t(e) * R1 + size_t(N + n)) * K, K);
            s1.add(bf2f(h[size_t(n)]), fusedmoe::ref::activate(Activation::silu(), g, u), 0.3, "H", hrow, n);
          }
          for (int c = 0; c < K; ++c)
            s2.add(bf2f(y[size_t(c)]), dot(hr.data(), w2f.data() + (size_t(e) * K + size_t(c)) * N, N), 0.3, "Y",
                   yrow, c);
        }
      }
      int active = 0;
      for (int c : counts) active += c > 0;
      const double wb1 = double(active) * R1 * K * 2, wb2 = double(active) * K * N * 2;
      const double fl1 = 2.0 * double(l.rows) * R1 * K, fl2 = 2.0 * double(l.rows) * K * N;
      const char* fname = f == TileFamily::kNormal ? "normal" : "swapab";
      std::printf("[ timing   ] %-8s %s tile %3d rows=%lld  gemm1 %8.1f us %7.0f GB/s %6.1f TFLOP/s (rel %.1e)  "
                  "gemm2 %8.1f us %7.0f GB/s %6.1f TFLOP/s (rel %.1e)\n",
                  label, fname, tile, static_cast<long long>(l.rows), t1, wb1 / (t1 * 1e3), fl1 / (t1 * 1e6), s1.rel(),
                  t2, wb2 / (t2 * 1e3), fl2 / (t2 * 1e6), s2.rel());
      EXPECT_EQ(s1.non_finite + s2.non_finite, 0) << s1.first_bad << " " << s2.first_bad;
      EXPECT_LE(s1.rel(), 1e-2);
      EXPECT_LE(s2.rel(), 1e-2);
    }
  };
  // decode-like: 32 experts, each 1..8 rows, N=256, K=7168
  uint64_t s = seed;
  std::vector<int> dec(32);
  for (auto& c : dec) c = 1 + int(splitmix(s) % 8);
  run_case("decode", 32, dec, 256, 7168,
           {{TileFamily::kSwapAB, 8}, {TileFamily::kSwapAB, 16}, {TileFamily::kNormal, 128}});
  // prefill-like: 8 experts x 2048 rows, N=2048, K=7168, normal family
  run_case("prefill", 8, std::vector<int>(8, 2048), 2048, 7168, {{TileFamily::kNormal, 128}});
}

// Packed weights (GroupedGemmArgs::w_packed, pack_grouped_gemm_weights): the same bits as the 2D
// weight boxes on every Swap-AB path (gated, interleaved with a ragged N, a plain activation with a
// ragged N and split-K, the dense instances, the dynamic balanced GEMM2), and the time of both at
// decode shapes (informational; weights cold: each GEMM streams more than the L2 holds). Every case
// packs at least GEMM1 (a GEMM whose reduction leaves its last K step ragged reads the boxes: GEMM2
// of the two ragged-N cases).
TEST(GroupedGemmPacked, SameBitsAndTiming) {
  const uint64_t seed = fusedmoe::gputest::test_seed();
  std::printf("[ packed   ] seed=%llu\n", static_cast<unsigned long long>(seed));
  struct P {
    const char* name;
    int G, N, K, tile, rows_lo, rows_hi;
    Activation act;
    bool bias, timed;
    int k_splits = 0, dense = 0, balanced = 0;
  };
  const std::vector<P> cases = {
      {"qwen235-tp8 T=256", 128, 192, 4096, 32, 8, 24, Activation::silu(), false, true},
      {"dsv3-tp8 T=256", 256, 256, 7168, 16, 2, 14, Activation::silu(), false, true},
      {"dsv3-tp8 T=16", 256, 256, 7168, 8, 0, 1, Activation::silu(), false, true},
      {"swiglu_oai N=336 K=512", 8, 336, 512, 16, 0, 40, Activation::swiglu_oai(1.702f, 7.f, true), true, false},
      {"ragged N=176 split-K 2", 8, 176, 2880, 8, 0, 6, Activation::squared_relu(), true, false, 2},
      {"dense tile 16", 64, 128, 1024, 16, 0, 20, Activation::silu(), true, false, 0, 1},
      {"balanced GEMM2 tile 8", 64, 256, 1024, 8, 0, 3, Activation::silu(), false, false, 0, 0, 1},
  };
  uint64_t s = seed;
  for (const P& c : cases) {
    std::vector<int> counts(size_t(c.G));
    for (auto& n : counts) n = c.rows_lo + int(splitmix(s) % uint64_t(c.rows_hi - c.rows_lo + 1));
    const Layout l = make_layout(counts, c.tile);
    const int R1 = c.act.gemm1_rows(c.N);
    std::vector<uint16_t> x(size_t(std::max<int64_t>(1, l.max_rows)) * size_t(c.K)), w1(size_t(c.G) * R1 * c.K),
        w2(size_t(c.G) * c.K * c.N);
    fill_bf16(x, seed ^ 0xB1, -1.f, 1.f);
    fill_bf16(w1, seed ^ 0xB2, -std::sqrt(3.f / c.K), std::sqrt(3.f / c.K));
    fill_bf16(w2, seed ^ 0xB3, -std::sqrt(3.f / c.N), std::sqrt(3.f / c.N));
    std::vector<float> b1(c.bias ? size_t(c.G) * R1 : 0), b2(c.bias ? size_t(c.G) * c.K : 0);
    for (auto& b : b1) b = float(unit(s) - 0.5);
    for (auto& b : b2) b = float(unit(s) - 0.5);
    DeviceBuffer d_x = to_device(x), d_w1 = to_device(w1), d_w2 = to_device(w2), d_b1 = to_device(b1),
                 d_b2 = to_device(b2), d_counts = to_device(l.counts), d_off = to_device(l.offsets),
                 d_pad = to_device(l.padded), d_q(16);
    const size_t h_elems = size_t(std::max<int64_t>(1, l.max_rows)) * c.N, y_elems = size_t(std::max<int64_t>(1, l.rows)) * c.K;
    DeviceBuffer d_h(h_elems * 2), d_h2(h_elems * 2), d_y(y_elems * 2), d_y2(y_elems * 2);
    GroupedGemmArgs a;
    a.counts = d_counts.as<int32_t>();
    a.offsets = d_off.as<int32_t>();
    a.padded_offsets = d_pad.as<int32_t>();
    a.num_groups = c.G;
    a.n = c.N;
    a.k = c.K;
    a.activation = c.act;
    a.max_rows = l.max_rows;
    a.family = TileFamily::kSwapAB;
    a.tokens_tile = c.tile;
    a.rows_hint = l.rows;
    a.k_splits = c.k_splits;
    a.dense = c.dense;
    GroupedGemmArgs a1 = a, a2 = a;
    a1.a = d_x.get();
    a1.w = d_w1.get();
    a1.bias = c.bias ? d_b1.as<float>() : nullptr;
    a2.a = d_h.get();
    a2.w = d_w2.get();
    a2.bias = c.bias ? d_b2.as<float>() : nullptr;
    a2.balanced = c.balanced;
    if (c.balanced) a2.queue = d_q.as<int>();
    const int64_t pb1 = fusedmoe::kernels::packed_grouped_gemm_weight_bytes(a1, false),
                  pb2 = fusedmoe::kernels::packed_grouped_gemm_weight_bytes(a2, true);
    DeviceBuffer d_p1{static_cast<size_t>(pb1)}, d_p2{static_cast<size_t>(pb2)};
    ASSERT_TRUE(d_p1.get() && d_p2.get() && d_h.get() && d_y.get());
    FM_CUDA_CHECK(fusedmoe::kernels::pack_grouped_gemm_weights(a1, false, d_p1.get(), nullptr));
    FM_CUDA_CHECK(fusedmoe::kernels::pack_grouped_gemm_weights(a2, true, d_p2.get(), nullptr));
    // plain, then packed (GEMM2 of both from the plain H, so that each GEMM is compared alone)
    d_h.poison(0xFF); d_h2.poison(0xFF); d_y.poison(0xFF); d_y2.poison(0xFF);
    auto gemm1 = [&](bool packed, void* out) {
      GroupedGemmArgs g = a1;
      g.w_packed = packed ? d_p1.get() : nullptr;
      g.out = out;
      return fusedmoe::kernels::launch_grouped_gemm1(g, nullptr);
    };
    auto gemm2 = [&](bool packed, void* out) {
      GroupedGemmArgs g = a2;
      g.w_packed = packed ? d_p2.get() : nullptr;
      g.out = out;
      if (g.queue) cudaMemsetAsync(g.queue, 0, 16, nullptr);
      return fusedmoe::kernels::launch_grouped_gemm2(g, nullptr);
    };
    FM_CUDA_CHECK(gemm1(false, d_h.get()));
    FM_CUDA_CHECK(gemm1(true, d_h2.get()));
    FM_CUDA_CHECK(gemm2(false, d_y.get()));
    FM_CUDA_CHECK(gemm2(true, d_y2.get()));
    FM_CUDA_CHECK(cudaDeviceSynchronize());
    const auto h = to_host<uint16_t>(d_h.get(), h_elems), h2 = to_host<uint16_t>(d_h2.get(), h_elems);
    const auto y = to_host<uint16_t>(d_y.get(), y_elems), y2 = to_host<uint16_t>(d_y2.get(), y_elems);
    int64_t written = 0;
    for (size_t i = 0; i < h.size(); ++i) written += h[i] != kBf16NaN;
    EXPECT_GT(written, 0) << c.name;
    EXPECT_TRUE(h == h2) << c.name << ": GEMM1 with packed weights differs";
    EXPECT_TRUE(y == y2) << c.name << ": GEMM2 with packed weights differs";
    std::printf("[ packed   ] %-30s G=%d N=%d K=%d tile %d rows=%lld packed %lld + %lld bytes: GEMM1 %s, GEMM2 %s\n",
                c.name, c.G, c.N, c.K, c.tile, static_cast<long long>(l.rows), static_cast<long long>(pb1),
                static_cast<long long>(pb2), h == h2 ? "same bits" : "DIFFERENT", y == y2 ? "same bits" : "DIFFERENT");
    if (!c.timed) continue;
    int active = 0;
    for (int n : counts) active += n > 0;
    const double wb1 = double(active) * R1 * c.K * 2, wb2 = double(active) * c.K * c.N * 2;
    float t[2][2];
    for (int round = 0; round < 2; ++round)  // plain, packed, plain, packed: the better of two rounds
      for (int packed = 0; packed < 2; ++packed) {
        const float t1 = median_us([&] { (void)gemm1(packed != 0, d_h2.get()); });
        const float t2 = median_us([&] { (void)gemm2(packed != 0, d_y2.get()); });
        t[packed][0] = round == 0 ? t1 : std::min(t[packed][0], t1);
        t[packed][1] = round == 0 ? t2 : std::min(t[packed][1], t2);
      }
    FM_CUDA_CHECK(cudaGetLastError());
    std::printf("[ packed   ] %-30s GEMM1 plain %7.1f us (%5.0f GB/s) packed %7.1f us (%5.0f GB/s) | GEMM2 plain %7.1f us "
                "(%5.0f GB/s) packed %7.1f us (%5.0f GB/s)\n",
                c.name, t[0][0], wb1 / (t[0][0] * 1e3), t[1][0], wb1 / (t[1][0] * 1e3), t[0][1], wb2 / (t[0][1] * 1e3),
                t[1][1], wb2 / (t[1][1] * 1e3));
  }
}

}  // namespace
