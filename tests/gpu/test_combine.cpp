// The weighted combine on the GPU (kernels/combine/combine_launch.h): within 1 ulp (bf16/f16) of
// the float64 reference, bit-equal to a host emulation of its float64 fma chain in slot order,
// bitwise identical across 10 runs; shared expert; -1 slots (whose weights are NaN here) ignored;
// the expert bias of each slot's group (CombineArgs::bias), added after the rows in slot order.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "fusedmoe/reference.h"
#include "gpu_test_util.h"
#include "kernels/combine/combine_launch.h"

namespace fm = fusedmoe;
namespace fk = fusedmoe::kernels;
namespace ref = fusedmoe::ref;
using fm::DType;
using fm::gputest::DeviceBuffer;
using fm::gputest::to_device;
using fm::gputest::to_host;

namespace {

struct CCase {
  int64_t tokens;
  int hidden;
  int k;
  int shared;
  bool weights;  // false: topk_weights = nullptr (weight 1)
  DType dtype;
  int stride_pad = 0;
  float shared_scale = 1.f;
  // Adversarial values: slot 1 cancels slot 0 (same weight, negated values) in two of every three
  // columns, and every 101st value is near the format's largest (sums that overflow float32).
  bool cancel = false;
  // CombineArgs::bias: > 0 gives a [groups, K] f32 bias and random group offsets over the rows
  // (some groups empty); bias_misaligned offsets the bias by 4 bytes (scalar loads), rows_past_end
  // leaves the last rows past offsets[G] (no bias).
  int bias_groups = 0;
  bool bias_misaligned = false;
  bool rows_past_end = false;
};

uint16_t to_bits(DType t, float v) { return t == DType::kBFloat16 ? ref::float_to_bf16(v) : ref::float_to_fp16(v); }
float from_bits(DType t, uint16_t b) { return t == DType::kBFloat16 ? ref::bf16_to_float(b) : ref::fp16_to_float(b); }

// Spacing of the output format at |v| (bf16: 8 significant bits, f16: 11, with f16 subnormals).
double ulp_of(DType t, double v) {
  const double a = std::fabs(v);
  const int bits = t == DType::kBFloat16 ? 8 : 11;
  const int min_exp = t == DType::kBFloat16 ? -126 : -14;
  const int e = a > 0 ? std::max(static_cast<int>(std::floor(std::log2(a))), min_exp) : min_exp;
  return std::ldexp(1.0, e - (bits - 1));
}

void run_case(const CCase& c) {
  const uint64_t seed = fm::gputest::test_seed();
  char name[200];
  std::snprintf(name, sizeof name, "T=%lld K=%d k=%d shared=%d weights=%d %s stride+%d seed=%llu",
                static_cast<long long>(c.tokens), c.hidden, c.k, c.shared, int(c.weights), fm::to_string(c.dtype),
                c.stride_pad, static_cast<unsigned long long>(seed));
  SCOPED_TRACE(name);
  std::mt19937_64 rng(seed);
  const int64_t T = c.tokens;
  const int K = c.hidden;
  const int slots = c.k + c.shared;
  const int64_t stride = K + c.stride_pad;

  // slot_row: a random permutation of the rows over the valid (token, slot) pairs; ~15% are -1.
  std::vector<int32_t> slot_row(static_cast<size_t>(T * slots), -1);
  int64_t R = 0;
  for (auto& r : slot_row)
    if (rng() % 100 >= 15) r = static_cast<int32_t>(R++);
  std::vector<int32_t> perm(static_cast<size_t>(R));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  for (auto& r : slot_row)
    if (r >= 0) r = perm[r];

  std::vector<float> w(static_cast<size_t>(T * c.k));
  std::uniform_real_distribution<float> uw(0.f, 1.f);
  for (size_t i = 0; i < w.size(); ++i) {
    const int64_t t = static_cast<int64_t>(i) / c.k;
    const int s = static_cast<int>(i % c.k);
    w[i] = slot_row[t * slots + s] < 0 ? std::numeric_limits<float>::quiet_NaN() : uw(rng);
  }
  std::vector<uint16_t> y(static_cast<size_t>(R * K));
  std::normal_distribution<float> nd(0.f, 1.f);
  for (size_t i = 0; i < y.size(); ++i) y[i] = to_bits(c.dtype, nd(rng) * (1 + (i % 97 == 0) * 30.f));
  if (c.cancel) {
    const float big = c.dtype == DType::kBFloat16 ? 3.0e38f : 60000.f;
    for (size_t i = 0; i < y.size(); i += 101) y[i] = to_bits(c.dtype, (i / 101) % 2 ? big : -big);
    for (int64_t t = 0; t < T && c.k >= 2; ++t) {
      const int32_t r0 = slot_row[t * slots], r1 = slot_row[t * slots + 1];
      if (r0 < 0 || r1 < 0) continue;
      if (c.weights) w[t * c.k + 1] = w[t * c.k];
      for (int i = 0; i < K; ++i)
        if (i % 3 != 2) y[static_cast<size_t>(r1) * K + i] = y[static_cast<size_t>(r0) * K + i] ^ 0x8000;
    }
  }

  // the expert bias: row r's group g has offsets[g] <= r < offsets[g + 1]
  const int G = c.bias_groups;
  std::vector<int32_t> offsets(static_cast<size_t>(G) + 1, 0);
  std::vector<float> bias(static_cast<size_t>(G) * K + 1);
  if (G > 0) {
    const int64_t covered = c.rows_past_end ? R - R / 5 : R;
    std::vector<int32_t> cuts(static_cast<size_t>(G) - 1);
    for (auto& x : cuts) x = static_cast<int32_t>(covered > 0 ? rng() % (covered + 1) : 0);
    std::sort(cuts.begin(), cuts.end());
    for (int g = 1; g < G; ++g) offsets[g] = cuts[g - 1];
    offsets[G] = static_cast<int32_t>(covered);
    for (auto& b : bias) b = nd(rng) * 4.f;
  }
  auto group_of = [&](int32_t r) {
    if (G == 0 || r >= offsets[G]) return -1;
    return static_cast<int>(std::upper_bound(offsets.begin(), offsets.end(), r) - offsets.begin()) - 1;
  };
  const size_t bias_shift = c.bias_misaligned ? 1 : 0;  // floats: 4 bytes off the 16-byte allocation

  DeviceBuffer dbias = to_device(bias), doff = to_device(offsets);
  DeviceBuffer dy = to_device(y), dsr = to_device(slot_row), dw = to_device(w);
  DeviceBuffer dout(static_cast<size_t>(T * stride * 2));
  fk::CombineArgs a;
  a.expert_out = dy.get();
  a.slot_row = dsr.as<int32_t>();
  a.topk_weights = c.weights ? dw.as<float>() : nullptr;
  a.shared_scale = c.shared_scale;
  a.num_tokens = T;
  a.top_k = c.k;
  a.num_shared = c.shared;
  a.hidden = K;
  a.act_dtype = c.dtype;
  a.out = dout.get();
  a.out_row_stride = c.stride_pad ? stride : 0;
  a.plan_ready = (seed & 1) != 0;  // (no PDL here: the plan may be read before the wait or after)
  if (G > 0) {
    // the bias rows as stored: bias[bias_shift + g * K + i]
    a.bias = dbias.as<float>() + bias_shift;
    a.group_offsets = doff.as<int32_t>();
    a.num_groups = G;
  }

  std::vector<uint16_t> first;
  for (int run = 0; run < 10; ++run) {
    dout.poison(0xFF);
    FM_CUDA_CHECK(fk::launch_combine(a, nullptr));
    FM_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<uint16_t> out = to_host<uint16_t>(dout.get(), static_cast<size_t>(T * stride));
    if (run == 0) {
      first = std::move(out);
    } else if (out != first) {
      ADD_FAILURE() << "run " << run << " differs from run 0";
      break;
    }
  }

  int64_t not_emulated = 0, beyond_ulp = 0, beyond_bound = 0, pad_written = 0;
  for (int64_t t = 0; t < T; ++t) {
    for (int i = 0; i < K; ++i) {
      double acc = 0.0;
      double ref64 = 0.0, mag = 0.0;
      for (int s = 0; s < slots; ++s) {
        const int32_t r = slot_row[t * slots + s];
        if (r < 0) continue;
        const float ws = s < c.k ? (c.weights ? w[t * c.k + s] : 1.f) : c.shared_scale;
        const float v = from_bits(c.dtype, y[static_cast<size_t>(r) * K + i]);
        acc = std::fma(static_cast<double>(ws), static_cast<double>(v), acc);
        ref64 += static_cast<double>(ws) * v;
        mag += std::fabs(static_cast<double>(ws) * v);
      }
      for (int s = 0; s < slots && G > 0; ++s) {  // the bias rows after the expert rows, in slot order
        const int32_t r = slot_row[t * slots + s];
        const int g = r < 0 ? -1 : group_of(r);
        if (g < 0) continue;
        const float ws = s < c.k ? (c.weights ? w[t * c.k + s] : 1.f) : c.shared_scale;
        const float b = bias[bias_shift + static_cast<size_t>(g) * K + i];
        acc = std::fma(static_cast<double>(ws), static_cast<double>(b), acc);
        ref64 += static_cast<double>(ws) * b;
        mag += std::fabs(static_cast<double>(ws) * b);
      }
      const uint16_t got = first[t * stride + i];
      if (got != to_bits(c.dtype, static_cast<float>(acc))) {
        if (not_emulated++ < 5)
          ADD_FAILURE() << "t " << t << " col " << i << ": got 0x" << std::hex << got << ", f32 fma chain gives 0x"
                        << to_bits(c.dtype, static_cast<float>(acc));
      }
      if (c.cancel && !std::isfinite(from_bits(c.dtype, got))) continue;  // overflow: the emulation above decides
      const double err = std::fabs(from_bits(c.dtype, got) - ref64);
      if (err > ulp_of(c.dtype, ref64)) {
        ++beyond_ulp;
        // float32 accumulation can only miss by its own rounding under cancellation.
        if (err > ulp_of(c.dtype, ref64) + mag * slots * std::ldexp(1.0, -24)) {
          if (beyond_bound++ < 5)
            ADD_FAILURE() << "t " << t << " col " << i << ": " << from_bits(c.dtype, got) << " vs " << ref64;
        }
      }
    }
    for (int64_t i = K; i < stride; ++i) pad_written += first[t * stride + i] != 0xFFFF;
  }
  EXPECT_EQ(not_emulated, 0);
  EXPECT_EQ(beyond_bound, 0);
  EXPECT_EQ(beyond_ulp, 0) << "float64 accumulation must stay within 1 ulp of the float64 reference";
  EXPECT_EQ(pad_written, 0) << "columns past K of an out row were written";
  if (beyond_ulp) std::printf("[info] %s: %lld of %lld outputs beyond 1 ulp (cancellation, within f32 bound)\n", name,
                              static_cast<long long>(beyond_ulp), static_cast<long long>(T * K));
}

}  // namespace

TEST(Combine, MatchesReferenceAndIsDeterministic) {
  const DType bf = DType::kBFloat16, hf = DType::kFloat16;
  const std::vector<CCase> cases = {
      {1, 128, 1, 0, true, bf},
      {7, 2048, 8, 1, true, bf, 64, 0.5f},
      {256, 7168, 8, 1, true, bf, 0, 2.5f},
      {300, 128, 6, 0, true, bf},
      {65, 96, 4, 1, true, bf},
      {1000, 7168, 16, 1, true, hf},
      {4096, 2880, 4, 1, false, bf},
      {4096, 2048, 8, 1, true, bf},
      {16, 16384, 2, 1, true, bf},  // 8 units per thread
      {33, 2888, 10, 0, true, hf, 8},
      // decode: rows split in column chunks over blocks (combine_launch.cu)
      {1, 4096, 8, 0, true, bf},
      {1, 7168, 8, 1, true, bf},
      {3, 2880, 4, 0, false, hf},
      // cancellation and overflow, at decode and beyond
      {1, 4096, 8, 0, true, bf, 0, 1.f, true},
      {256, 7168, 8, 0, true, bf, 0, 1.f, true},
      {64, 2880, 4, 0, false, hf, 8, 1.f, true},
      {700, 2048, 8, 0, true, bf, 0, 1.f, true},
      // 17 slots (k 16 + shared): teams of 8 lanes (two passes over the plan), and a row team
      {5, 8, 16, 1, true, bf},
      {2, 7168, 16, 1, true, hf, 8},
      // the expert bias (bf16; the CUTLASS backend's b2): prefill, decode column chunks, 1025 groups
      // (1024 local experts + a shared one), 4-byte aligned bias (scalar loads), rows past the
      // offsets, every values-per-thread instance
      {4096, 2880, 4, 0, true, bf, 0, 1.f, false, 128},
      {3, 2880, 4, 1, true, bf, 0, 0.5f, false, 129},
      {300, 7168, 8, 1, true, bf, 64, 1.f, false, 1025},
      {65, 96, 16, 1, false, bf, 8, 1.f, false, 33, true},
      {200, 2048, 8, 0, true, bf, 0, 1.f, false, 64, true, true},
      {16, 16384, 2, 1, true, bf, 0, 1.f, false, 9},
      {40, 4096, 6, 0, true, bf, 0, 1.f, true, 16},
  };
  for (const CCase& c : cases) run_case(c);
}

TEST(Combine, RejectsMoreThan17Slots) {
  fk::CombineArgs a;
  DeviceBuffer y(256), o(256), sr(1024);
  a.expert_out = y.get();
  sr.poison(0xFF);  // every slot -1: routed nowhere
  a.slot_row = sr.as<int32_t>();
  a.out = o.get();
  a.num_tokens = 1;
  a.hidden = 64;
  a.top_k = 18;
  EXPECT_EQ(fk::launch_combine(a, nullptr), cudaErrorInvalidValue);
  a.top_k = 16;
  a.num_shared = 1;
  EXPECT_EQ(fk::launch_combine(a, nullptr), cudaSuccess);
  FM_CUDA_CHECK(cudaDeviceSynchronize());
  // the bias kernels stage at most 1088 groups' offsets
  DeviceBuffer b(64 * 4), off(1090 * 4);
  off.poison(0);
  a.bias = b.as<float>();
  a.group_offsets = off.as<int32_t>();
  a.num_groups = 1089;
  EXPECT_EQ(fk::launch_combine(a, nullptr), cudaErrorInvalidValue);
  a.num_groups = 1088;
  EXPECT_EQ(fk::launch_combine(a, nullptr), cudaSuccess);
  FM_CUDA_CHECK(cudaDeviceSynchronize());
}

TEST(Combine, ZeroTokensLaunchesNothing) {
  fk::CombineArgs a;
  a.num_tokens = 0;
  a.hidden = 128;
  a.top_k = 2;
  EXPECT_EQ(fk::launch_combine(a, nullptr), cudaSuccess);
}

using fusedmoe::gputest::graph_us;
using fusedmoe::gputest::median_us;

// The timing tests' inputs: T tokens of `slots` rows each (slot rows shuffled, every row used once),
// weights w, expert rows of K bf16 filled with 0x3C bytes, and CombineArgs over them.
struct TimingInputs {
  DeviceBuffer rows, slot_row, weights, out;
  fk::CombineArgs args;
  TimingInputs(int64_t T, int K, int top_k, int shared, float w, uint64_t seed)
      : rows(static_cast<size_t>(T * (top_k + shared) * K * 2)), out(static_cast<size_t>(T * K * 2)) {
    std::vector<int32_t> sr(static_cast<size_t>(T * (top_k + shared)));
    std::iota(sr.begin(), sr.end(), 0);
    std::shuffle(sr.begin(), sr.end(), std::mt19937_64(seed));
    slot_row = to_device(sr);
    weights = to_device(std::vector<float>(static_cast<size_t>(T * top_k), w));
    cudaMemset(rows.get(), 0x3C, rows.bytes());
    args.expert_out = rows.get();
    args.slot_row = slot_row.as<int32_t>();
    args.topk_weights = weights.as<float>();
    args.num_tokens = T;
    args.top_k = top_k;
    args.num_shared = shared;
    args.hidden = K;
    args.out = out.get();
  }
};

TEST(CombineTiming, Informational) {
  const int K = 7168, k = 8, slots = 9;
  for (int64_t T : {int64_t{1}, int64_t{16}, int64_t{256}, int64_t{4096}, int64_t{16384}}) {
    const int64_t R = T * slots;
    TimingInputs in(T, K, k, slots - k, 0.125f, 3);
    auto launch = [&](cudaStream_t s) { EXPECT_EQ(fk::launch_combine(in.args, s), cudaSuccess); };
    const float single = median_us(launch);
    const float us = graph_us(launch);
    const double bytes = double(R) * K * 2 + double(T) * K * 2;
    std::printf("[timing] combine T=%lld K=%d k=%d+1 bf16: %.2f us per launch in a graph (%.0f GB/s); %.2f us single "
                "launch incl. host submission\n",
                static_cast<long long>(T), K, k, us, bytes / us * 1e-3, single);
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// The expert bias's cost (gptoss-tp1's combine on the CUTLASS backend: K 2880, k 4, 128 groups).
TEST(CombineTiming, BiasInformational) {
  const int K = 2880, k = 4, G = 128;
  for (int64_t T : {int64_t{1}, int64_t{256}, int64_t{4096}, int64_t{16384}}) {
    const int64_t R = T * k;
    TimingInputs in(T, K, k, 0, 0.25f, 5);
    std::vector<int32_t> offsets(G + 1);
    for (int g = 0; g <= G; ++g) offsets[g] = static_cast<int32_t>(R * g / G);
    DeviceBuffer db = to_device(std::vector<float>(static_cast<size_t>(G) * K, 0.5f)), doff = to_device(offsets);
    fk::CombineArgs& a = in.args;
    auto launch = [&](cudaStream_t s) { EXPECT_EQ(fk::launch_combine(a, s), cudaSuccess); };
    const float plain = graph_us(launch);
    a.bias = db.as<float>();
    a.group_offsets = doff.as<int32_t>();
    a.num_groups = G;
    const float with_bias = graph_us(launch);
    std::printf("[timing] combine T=%lld K=%d k=%d bf16, %d groups: %.2f us with the bias, %.2f us without\n",
                static_cast<long long>(T), K, k, G, with_bias, plain);
  }
}
