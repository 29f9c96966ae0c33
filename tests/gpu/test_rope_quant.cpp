// DeepSeek-V4 fused inverse RoPE + FP8 per-head quantisation on the GPU (fusedmoe/rope_quant.h):
// FP8 bytes and scales bit-identical to ref::inv_rope_fp8_quant for token counts 1 .. 65536 in
// the DeepSeek-V4-Flash shape (64 heads in 8 groups) and the per-rank TP8 shape (1 group of 8
// heads); outputs poisoned before every run; scale padding zeroed; out-of-range positions give
// zeros and the error flag; CUDA-graph capture and replay; informational timings.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fusedmoe/fusedmoe.h"
#include "fusedmoe/reference.h"
#include "gpu_test_util.h"

namespace fm = fusedmoe;
namespace ref = fusedmoe::ref;
using fm::InvRopeQuantProblem;
using fm::gputest::DeviceBuffer;
using fm::gputest::to_device;
using fm::gputest::to_host;

namespace {

constexpr int kD = 512;
constexpr int64_t kMaxPos = 65536;

struct Shape {
  const char* name;
  int groups;
  int heads_per_group;
};
constexpr Shape kFlash{"DSV4-Flash G=8 x 8 heads", 8, 8};
constexpr Shape kTp8{"TP8 rank G=1 x 8 heads", 1, 8};

InvRopeQuantProblem problem(int64_t T, const Shape& s) {
  InvRopeQuantProblem p;
  p.num_tokens = T;
  p.num_groups = s.groups;
  p.heads_per_group = s.heads_per_group;
  p.max_pos = kMaxPos;
  return p;
}

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Runs f(begin, end) over [0, n) in chunks on all cores.
template <class F>
void parallel_for(int64_t n, F&& f) {
  const int threads = static_cast<int>(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1u, 32u));
  const int64_t chunk = std::max<int64_t>(1, (n + threads * 8 - 1) / (threads * 8));
  std::atomic<int64_t> next{0};
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i)
    pool.emplace_back([&] {
      for (int64_t b; (b = next.fetch_add(chunk)) < n;) f(b, std::min(n, b + chunk));
    });
  for (auto& th : pool) th.join();
}

// bf16 element (item = t * H + h, dim d). Each 128-dim chunk has its own character: mostly
// normal values around a chunk-specific magnitude (2^-36 .. 2^30); some chunks all zero, huge
// (~1e38: rotated pairs can overflow to +-inf), tiny (bf16 subnormals), or with sprinkled NaN/inf.
uint16_t gen_elem(uint64_t seed, int64_t item, int d) {
  const uint64_t chunk_key = mix(seed ^ mix(static_cast<uint64_t>(item) * 4 + static_cast<uint64_t>(d / 128)));
  const uint64_t r = mix(chunk_key ^ (static_cast<uint64_t>(d) + 1) * 0x2545F4914F6CDD1Dull);
  const uint16_t sign = (r >> 63) ? 0x8000 : 0;
  const uint16_t man = static_cast<uint16_t>((r >> 8) & 0x7F);
  switch (chunk_key % 64) {
    case 0: return 0;
    case 1: return sign | static_cast<uint16_t>((254 - (r >> 16) % 3) << 7) | man;
    case 2: return sign | static_cast<uint16_t>(((r >> 16) % 3) << 7) | man;
    case 3:
      if ((r >> 20) % 64 == 0) {
        const uint16_t specials[3] = {0x7FC0, 0x7F80, 0xFF80};  // NaN, +inf, -inf
        return specials[(r >> 30) % 3];
      }
      break;
    default: break;
  }
  const int center = 97 + static_cast<int>((chunk_key >> 8) % 61);
  const int e = center - static_cast<int>((r >> 16) % 7);
  return sign | static_cast<uint16_t>(e << 7) | man;
}

struct Data {
  std::vector<uint16_t> x;
  std::vector<int64_t> pos;
};

Data make_data(const InvRopeQuantProblem& p, uint64_t seed) {
  Data d;
  const int64_t items = p.num_tokens * p.num_heads();
  d.x.resize(static_cast<size_t>(items * kD));
  parallel_for(items, [&](int64_t b, int64_t e) {
    for (int64_t it = b; it < e; ++it)
      for (int k = 0; k < kD; ++k) d.x[static_cast<size_t>(it * kD + k)] = gen_elem(seed, it, k);
  });
  d.pos.resize(static_cast<size_t>(p.num_tokens));
  for (int64_t t = 0; t < p.num_tokens; ++t)
    d.pos[static_cast<size_t>(t)] = static_cast<int64_t>(mix(seed * 31 + static_cast<uint64_t>(t)) % kMaxPos);
  return d;
}

// DeepSeek-style cache: theta_i(pos) = pos * 10000^(-2i / 64), 32 cos then 32 sin per row.
const std::vector<float>& cos_sin_cache() {
  static const std::vector<float> cache = [] {
    std::vector<float> c(static_cast<size_t>(kMaxPos * 64));
    for (int64_t r = 0; r < kMaxPos; ++r)
      for (int i = 0; i < 32; ++i) {
        const double theta = static_cast<double>(r) * std::pow(10000.0, -2.0 * i / 64.0);
        c[static_cast<size_t>(r * 64 + i)] = static_cast<float>(std::cos(theta));
        c[static_cast<size_t>(r * 64 + 32 + i)] = static_cast<float>(std::sin(theta));
      }
    return c;
  }();
  return cache;
}

struct DeviceRun {
  DeviceBuffer x, pos, cache, out, scales, flag;
};

void alloc_outputs(const InvRopeQuantProblem& p, DeviceRun* r) {
  r->out.resize(static_cast<size_t>(std::max<int64_t>(16, p.num_tokens * p.num_heads() * kD)));
  r->scales.resize(static_cast<size_t>(std::max<int64_t>(4, fm::inv_rope_scales_elems(p))) * sizeof(float));
  r->flag.resize(16);
}

void poison_outputs(DeviceRun* r) {
  r->out.poison(0xFF);     // 0xFF is never produced (NaN encodes as 0x7F)
  r->scales.poison(0xFF);  // NaN
  cudaMemset(r->flag.get(), 0, 16);
}

// Compares the GPU outputs with the reference, computed on all cores by token slices.
// Returns "" when bit-identical (bytes, scales, zeroed scale padding), else a description.
std::string compare_with_reference(const InvRopeQuantProblem& p, const Data& d, const std::vector<uint8_t>& q,
                                   const std::vector<float>& scales) {
  const int64_t T = p.num_tokens, H = p.num_heads(), hpg = p.heads_per_group, G = p.num_groups;
  const int64_t T4 = p.tokens_pad4(), dg = hpg * kD;
  const std::vector<float>& cache = cos_sin_cache();
  std::atomic<int64_t> bad_bytes{0}, bad_scales{0};
  std::mutex mu;
  std::string first;
  auto note = [&](const std::string& s) {
    std::lock_guard<std::mutex> lock(mu);
    if (first.empty()) first = s;
  };
  parallel_for(T, [&](int64_t t0, int64_t t1) {
    InvRopeQuantProblem ps = p;
    ps.num_tokens = t1 - t0;
    const int64_t n = ps.num_tokens, n4 = ps.tokens_pad4();
    std::vector<uint8_t> rq(static_cast<size_t>(n * H * kD));
    std::vector<float> rs(static_cast<size_t>(fm::inv_rope_scales_elems(ps)));
    ref::inv_rope_fp8_quant(ps, d.x.data() + t0 * H * kD, d.pos.data() + t0, cache.data(), rq.data(), rs.data());
    for (int64_t g = 0; g < G; ++g)
      for (int64_t tl = 0; tl < n; ++tl) {
        const uint8_t* gq = q.data() + (g * T + t0 + tl) * dg;
        const uint8_t* eq = rq.data() + (g * n + tl) * dg;
        if (std::memcmp(gq, eq, static_cast<size_t>(dg)) == 0) continue;
        for (int64_t k = 0; k < dg; ++k) {
          if (gq[k] == eq[k]) continue;
          bad_bytes.fetch_add(1);
          const int64_t t = t0 + tl, h = g * hpg + k / kD, dim = k % kD;
          char buf[256];
          std::snprintf(buf, sizeof buf, "fp8 byte of token %lld head %lld dim %lld: gpu 0x%02x, ref 0x%02x (x bf16 0x%04x, pos %lld)",
                        static_cast<long long>(t), static_cast<long long>(h), static_cast<long long>(dim), gq[k], eq[k],
                        d.x[static_cast<size_t>((t * H + h) * kD + dim)], static_cast<long long>(d.pos[static_cast<size_t>(t)]));
          note(buf);
        }
      }
    for (int64_t row = 0; row < H * 4; ++row)
      for (int64_t tl = 0; tl < n; ++tl) {
        const float gs = scales[static_cast<size_t>(row * T4 + t0 + tl)], es = rs[static_cast<size_t>(row * n4 + tl)];
        if (std::memcmp(&gs, &es, sizeof(float)) == 0) continue;
        bad_scales.fetch_add(1);
        char buf[200];
        std::snprintf(buf, sizeof buf, "scale of token %lld head %lld chunk %lld: gpu %a, ref %a",
                      static_cast<long long>(t0 + tl), static_cast<long long>(row / 4), static_cast<long long>(row % 4),
                      static_cast<double>(gs), static_cast<double>(es));
        note(buf);
      }
  });
  int64_t bad_pad = 0;
  for (int64_t row = 0; row < H * 4; ++row)
    for (int64_t t = T; t < T4; ++t) {
      uint32_t bits;
      std::memcpy(&bits, &scales[static_cast<size_t>(row * T4 + t)], 4);
      if (bits != 0u) ++bad_pad;
    }
  if (bad_bytes == 0 && bad_scales == 0 && bad_pad == 0) return "";
  return std::to_string(bad_bytes.load()) + " fp8 bytes, " + std::to_string(bad_scales.load()) + " scales, " +
         std::to_string(bad_pad) + " padding scales differ; first: " + first;
}

void upload_inputs(const Data& d, DeviceRun* r) {
  r->x = to_device(d.x);
  r->pos = to_device(d.pos);
  if (r->cache.get() == nullptr) r->cache = to_device(cos_sin_cache());
}

fm::Status launch(const InvRopeQuantProblem& p, DeviceRun& r, bool with_flag, cudaStream_t s) {
  return fm::inv_rope_fp8_quant(p, r.x.get(), r.pos.as<int64_t>(), r.cache.as<float>(), r.out.get(),
                                r.scales.as<float>(), with_flag ? r.flag.as<int32_t>() : nullptr, s);
}

struct Result {
  std::vector<uint8_t> q;
  std::vector<float> scales;
  std::vector<int32_t> flag;
};

Result download(const InvRopeQuantProblem& p, const DeviceRun& r) {
  Result res;
  res.q = to_host<uint8_t>(r.out.get(), static_cast<size_t>(p.num_tokens * p.num_heads() * kD));
  res.scales = to_host<float>(r.scales.get(), static_cast<size_t>(fm::inv_rope_scales_elems(p)));
  res.flag = to_host<int32_t>(r.flag.get(), 4);
  return res;
}

void check_bit_exact(int64_t T, const Shape& shape, uint64_t seed) {
  SCOPED_TRACE(std::string(shape.name) + " T=" + std::to_string(T));
  const InvRopeQuantProblem p = problem(T, shape);
  const Data d = make_data(p, seed ^ static_cast<uint64_t>(T) * 1000003u ^ static_cast<uint64_t>(shape.groups));
  DeviceRun r;
  upload_inputs(d, &r);
  alloc_outputs(p, &r);
  ASSERT_NE(r.x.get(), nullptr);
  ASSERT_NE(r.out.get(), nullptr);
  poison_outputs(&r);
  const fm::Status st = launch(p, r, true, nullptr);
  ASSERT_TRUE(st.ok()) << st.to_string();
  FM_CUDA_CHECK(cudaDeviceSynchronize());
  FM_CUDA_CHECK(cudaGetLastError());
  const Result g = download(p, r);
  EXPECT_EQ(g.flag, std::vector<int32_t>(4, 0)) << "no position is out of range";
  const std::string diff = compare_with_reference(p, d, g.q, g.scales);
  EXPECT_TRUE(diff.empty()) << diff << " (FUSEDMOE_TEST_SEED=" << seed << ")";
}

const std::vector<int64_t> kTokenCounts = {1, 2, 3, 15, 16, 17, 100, 1024, 4097, 32768, 65536};

TEST(RopeQuantGpu, BitExactFlashShape) {
  const uint64_t seed = fm::gputest::test_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  for (int64_t T : kTokenCounts) check_bit_exact(T, kFlash, seed);
}

TEST(RopeQuantGpu, BitExactTp8Shape) {
  const uint64_t seed = fm::gputest::test_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  for (int64_t T : kTokenCounts) check_bit_exact(T, kTp8, seed);
}

// Odd head counts and single heads: the (token, head) pairs of one warp task straddle tokens.
TEST(RopeQuantGpu, BitExactOtherHeadCounts) {
  const uint64_t seed = fm::gputest::test_seed();
  for (Shape s : {Shape{"G=1 x 1", 1, 1}, Shape{"G=3 x 5", 3, 5}, Shape{"G=7 x 1", 7, 1}, Shape{"G=128 x 8", 128, 8}})
    for (int64_t T : {int64_t{1}, int64_t{5}, int64_t{33}, int64_t{1001}}) check_bit_exact(T, s, seed);
}

TEST(RopeQuantGpu, ZeroTokensWritesNothing) {
  const InvRopeQuantProblem p = problem(0, kFlash);
  DeviceBuffer out(64), scales(64);
  out.poison(0xFF);
  scales.poison(0xFF);
  // No pointer is needed for T = 0; given ones are not touched (not even the scale padding: T_pad4 = 0).
  fm::Status st = fm::inv_rope_fp8_quant(p, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  ASSERT_TRUE(st.ok()) << st.to_string();
  st = fm::inv_rope_fp8_quant(p, nullptr, nullptr, nullptr, out.get(), scales.as<float>(), nullptr, nullptr);
  ASSERT_TRUE(st.ok()) << st.to_string();
  FM_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(to_host<uint8_t>(out.get(), 64), std::vector<uint8_t>(64, 0xFF));
  EXPECT_EQ(to_host<uint8_t>(scales.get(), 64), std::vector<uint8_t>(64, 0xFF));
}

// Positions outside [0, max_pos): that token's bytes and scales are 0, the cache is not read at
// that position, and the error flag records one offender (first recorded wins).
TEST(RopeQuantGpu, PositionOutOfRangeZerosAndFlag) {
  const uint64_t seed = fm::gputest::test_seed();
  for (int64_t T : {int64_t{37}, int64_t{4097}}) {
    SCOPED_TRACE("T=" + std::to_string(T));
    const InvRopeQuantProblem p = problem(T, kFlash);
    Data d = make_data(p, seed + 17);
    std::vector<int64_t> bad = {3, 10, 20, T - 1};
    if (T > 1000) bad.push_back(2048);
    d.pos[3] = -5;
    d.pos[10] = kMaxPos;
    d.pos[20] = (int64_t{1} << 40) + 7;
    d.pos[static_cast<size_t>(T - 1)] = std::numeric_limits<int64_t>::min();
    if (T > 1000) d.pos[2048] = std::numeric_limits<int64_t>::max();
    DeviceRun r;
    upload_inputs(d, &r);
    alloc_outputs(p, &r);
    for (bool with_flag : {true, false}) {
      poison_outputs(&r);
      const fm::Status st = launch(p, r, with_flag, nullptr);
      ASSERT_TRUE(st.ok()) << st.to_string();
      FM_CUDA_CHECK(cudaDeviceSynchronize());
      const Result g = download(p, r);
      const std::string diff = compare_with_reference(p, d, g.q, g.scales);
      EXPECT_TRUE(diff.empty()) << diff;
      // The reference writes zeros for those tokens; check it here too, independently.
      for (int64_t t : bad) {
        for (int h = 0; h < 64; ++h) {
          const int64_t g8 = h / 8, j = h % 8;
          const uint8_t* q = g.q.data() + ((g8 * T + t) * 8 + j) * kD;
          EXPECT_TRUE(std::all_of(q, q + kD, [](uint8_t b) { return b == 0; })) << "token " << t << " head " << h;
          for (int c = 0; c < 4; ++c) EXPECT_EQ(g.scales[static_cast<size_t>((h * 4 + c) * p.tokens_pad4() + t)], 0.f);
        }
      }
      if (with_flag) {
        EXPECT_EQ(g.flag[0], 1);
        EXPECT_TRUE(std::find(bad.begin(), bad.end(), static_cast<int64_t>(g.flag[1])) != bad.end()) << g.flag[1];
        if (g.flag[1] >= 0 && g.flag[1] < T) {
          const uint64_t recorded =
              (static_cast<uint64_t>(static_cast<uint32_t>(g.flag[2])) << 32) | static_cast<uint32_t>(g.flag[3]);
          EXPECT_EQ(static_cast<int64_t>(recorded), d.pos[static_cast<size_t>(g.flag[1])]);
        }
      } else {
        EXPECT_EQ(g.flag, std::vector<int32_t>(4, 0)) << "a null error flag must not be written";
      }
    }
  }
}

// Captured once, replayed: the graph reads the live buffers, so new inputs in the same buffers
// give the new results.
TEST(RopeQuantGpu, GraphCaptureAndReplay) {
  const uint64_t seed = fm::gputest::test_seed();
  for (const Shape& shape : {kFlash, kTp8}) {
    SCOPED_TRACE(shape.name);
    const InvRopeQuantProblem p = problem(1000, shape);
    Data d = make_data(p, seed + 1);
    DeviceRun r;
    upload_inputs(d, &r);
    alloc_outputs(p, &r);
    cudaStream_t s;
    FM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    FM_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    const fm::Status st = launch(p, r, true, s);
    FM_CUDA_CHECK(cudaStreamEndCapture(s, &graph));
    ASSERT_TRUE(st.ok()) << st.to_string();
    FM_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int round = 0; round < 2; ++round) {
      if (round == 1) {  // new activations and positions in the same device buffers
        d = make_data(p, seed + 2);
        FM_CUDA_CHECK(cudaMemcpy(r.x.get(), d.x.data(), d.x.size() * 2, cudaMemcpyHostToDevice));
        FM_CUDA_CHECK(cudaMemcpy(r.pos.get(), d.pos.data(), d.pos.size() * 8, cudaMemcpyHostToDevice));
      }
      poison_outputs(&r);
      FM_CUDA_CHECK(cudaDeviceSynchronize());
      for (int rep = 0; rep < 3; ++rep) FM_CUDA_CHECK(cudaGraphLaunch(exec, s));
      FM_CUDA_CHECK(cudaStreamSynchronize(s));
      const Result g = download(p, r);
      EXPECT_EQ(g.flag, std::vector<int32_t>(4, 0));
      const std::string diff = compare_with_reference(p, d, g.q, g.scales);
      EXPECT_TRUE(diff.empty()) << "round " << round << ": " << diff;
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(s);
  }
}

// ---- informational timings -------------------------------------------------------------------

TEST(RopeQuantTiming, Informational) {
  for (const Shape& shape : {kFlash, kTp8}) {
    for (int64_t T : {int64_t{1}, int64_t{8}, int64_t{64}, int64_t{512}, int64_t{4096}, int64_t{32768}}) {
      const InvRopeQuantProblem p = problem(T, shape);
      const Data d = make_data(p, 99 + static_cast<uint64_t>(T));
      DeviceRun r;
      upload_inputs(d, &r);
      alloc_outputs(p, &r);
      bool ok = true;
      auto run = [&](cudaStream_t s) { ok = launch(p, r, true, s).ok() && ok; };
      const float single = fm::gputest::median_us(run);
      const float us = fm::gputest::graph_us(run);
      const double elems = static_cast<double>(T) * p.num_heads() * kD;
      // Byte floor: bf16 in, e4m3 out, the f32 scales (padded), one cache row and one position per token.
      const double bytes = elems * 2 + elems + static_cast<double>(fm::inv_rope_scales_elems(p)) * 4 +
                           static_cast<double>(T) * (64 * 4 + 8);
      std::printf("[timing] inv-RoPE+FP8 %s T=%lld: %.2f us per launch in a graph, %.0f GB/s of the %.1f MB floor "
                  "(%.0f%% of 4.8 TB/s); %.2f us single launch incl. host submission and API checks\n",
                  shape.name, static_cast<long long>(T), us, bytes / us * 1e-3, bytes / 1e6,
                  bytes / us * 1e-3 / 4800.0 * 100.0, single);
      EXPECT_TRUE(ok);
    }
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
