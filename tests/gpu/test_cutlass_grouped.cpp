// The CUTLASS grouped GEMM (kernels/gemm/cutlass_grouped_gemm.h), every compiled configuration,
// against a float64 reference: ragged groups (empty, one row, tile +- 1, long), rows read and
// written at arbitrary offsets, N and K odd multiples of 8. Every output row of a group checked;
// rows outside the groups must keep their poison. Relative L2 error <= 5e-3 per group set (bf16
// inputs, fp32 accumulation, one bf16 rounding: ~2e-3).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "fusedmoe/reference.h"
#include "gpu_test_util.h"
#include "kernels/gemm/cutlass_grouped_gemm.h"

namespace fm = fusedmoe;
using fm::gputest::DeviceBuffer;
using fm::gputest::to_device;
using fm::gputest::to_host;

namespace {

void check_config(fm::kernels::CutlassConfig cfg, int n, int k, const std::vector<int32_t>& counts) {
  const int groups = static_cast<int>(counts.size());
  const uint64_t seed = fm::gputest::test_seed();
  SCOPED_TRACE(std::string(fm::kernels::cutlass_grouped_gemm_name(cfg)) + " N=" + std::to_string(n) +
               " K=" + std::to_string(k) + " seed=" + std::to_string(seed));
  // A rows at offsets padded to 8 with a gap of 8 rows between groups; outputs packed (unpadded).
  std::vector<int32_t> a_off(groups), o_off(groups);
  int64_t a_rows = 0, o_rows = 0;
  for (int g = 0; g < groups; ++g) {
    a_off[g] = static_cast<int32_t>(a_rows);
    o_off[g] = static_cast<int32_t>(o_rows);
    a_rows += (counts[g] + 7) / 8 * 8 + 8;
    o_rows += counts[g];
  }
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<uint16_t> a(static_cast<size_t>(a_rows) * k), w(static_cast<size_t>(groups) * n * k);
  for (auto& v : a) v = fm::ref::float_to_bf16(nd(rng));
  for (auto& v : w) v = fm::ref::float_to_bf16(nd(rng) * 0.05f);
  DeviceBuffer da = to_device(a), dw = to_device(w), dc = to_device(counts), dao = to_device(a_off), doo = to_device(o_off);
  DeviceBuffer out(static_cast<size_t>(o_rows + 4) * n * 2);
  DeviceBuffer scratch(fm::kernels::cutlass_grouped_scratch_bytes(groups));
  out.poison();
  fm::kernels::CutlassGroupedArgs args;
  args.a = da.get();
  args.w = dw.get();
  args.out = out.get();
  args.counts = dc.as<int32_t>();
  args.a_offsets = dao.as<int32_t>();
  args.out_offsets = doo.as<int32_t>();
  args.num_groups = groups;
  args.n = n;
  args.k = k;
  args.config = cfg;
  args.scratch = scratch.get();
  args.scratch_bytes = scratch.bytes();
  ASSERT_EQ(fm::kernels::launch_cutlass_grouped_gemm(args, nullptr), cudaSuccess);
  FM_CUDA_CHECK(cudaDeviceSynchronize());
  const auto got = to_host<uint16_t>(out.get(), static_cast<size_t>(o_rows + 4) * n);
  double num = 0, den = 0;
  for (int g = 0; g < groups; ++g)
    for (int i = 0; i < counts[g]; ++i)
      for (int c = 0; c < n; ++c) {
        double ref = 0;
        const uint16_t* ar = &a[static_cast<size_t>(a_off[g] + i) * k];
        const uint16_t* wr = &w[(static_cast<size_t>(g) * n + c) * k];
        for (int j = 0; j < k; ++j) ref += double(fm::ref::bf16_to_float(ar[j])) * fm::ref::bf16_to_float(wr[j]);
        const double v = fm::ref::bf16_to_float(got[static_cast<size_t>(o_off[g] + i) * n + c]);
        ASSERT_TRUE(std::isfinite(v)) << "group " << g << " row " << i << " col " << c << " unwritten";
        num += (v - ref) * (v - ref);
        den += ref * ref;
      }
  for (size_t i = static_cast<size_t>(o_rows) * n; i < got.size(); ++i)
    ASSERT_EQ(got[i], 0xFFFF) << "written past the last group's rows";
  const double err = std::sqrt(num / std::max(den, 1e-300));
  std::printf("[ cutlass  ] %-52s N=%-5d K=%-5d groups %-3d rows %-6lld rel_err %.3e\n",
              fm::kernels::cutlass_grouped_gemm_name(cfg), n, k, groups, static_cast<long long>(o_rows), err);
  EXPECT_LE(err, 5e-3);
}

}  // namespace

TEST(CutlassGroupedGemm, EveryConfigRaggedGroups) {
  // empty groups (first, middle, last), a single row, tile heights +- 1, a long group
  const std::vector<int32_t> counts = {0, 1, 127, 128, 129, 0, 300, 7, 255, 257, 0};
  for (int c = 1; c <= fm::kernels::kCutlassConfigs; ++c) {
    const auto cfg = static_cast<fm::kernels::CutlassConfig>(c);
    check_config(cfg, 256, 512, counts);
    check_config(cfg, 136, 264, counts);  // odd multiples of 8: partial tiles in N and K
    check_config(cfg, 384, 1024, {64, 0, 513, 33});
  }
  // all groups empty: nothing written, no error
  check_config(fm::kernels::CutlassConfig::kPingpong128x128, 256, 256, {0, 0, 0});
}

TEST(CutlassGroupedGemm, RejectsBadArguments) {
  DeviceBuffer buf(1 << 16), scratch(fm::kernels::cutlass_grouped_scratch_bytes(4));
  fm::kernels::CutlassGroupedArgs a;
  a.a = a.w = buf.get();
  a.out = buf.get();
  a.counts = a.a_offsets = a.out_offsets = buf.as<int32_t>();
  a.num_groups = 4;
  a.n = 64;
  a.k = 64;
  a.scratch = scratch.get();
  a.scratch_bytes = scratch.bytes();
  auto bad = [&](fm::kernels::CutlassGroupedArgs b) { return fm::kernels::launch_cutlass_grouped_gemm(b, nullptr); };
  fm::kernels::CutlassGroupedArgs b = a;
  b.n = 60;  // not a multiple of 8
  EXPECT_EQ(bad(b), cudaErrorInvalidValue);
  b = a;
  b.scratch_bytes = 16;
  EXPECT_EQ(bad(b), cudaErrorInvalidValue);
  b = a;
  b.a = static_cast<const char*>(buf.get()) + 8;  // misaligned
  EXPECT_EQ(bad(b), cudaErrorInvalidValue);
  b = a;
  b.num_groups = 0;
  EXPECT_EQ(bad(b), cudaErrorInvalidValue);
  cudaGetLastError();
}

// Informational (prints, asserts only that the launches succeed): the cooperative 128x256 GEMM at
// GEMM2's shape of dsv3-tp8 at 16384 tokens (131072 rows, N = 7168 output columns, K = 256) split
// into 8, 32 or 256 equal groups: the same FLOPs and output bytes; the weights grow with the groups
// (29 MB to 940 MB). A time that grows with the groups by more than the weights' streaming (~0.2 ms
// at 940 MB) is a per-group cost of the pointer-array kernel (its tensor maps are rewritten whenever
// a CTA's next tile lies in another group). H200, session 39 call 5: 1013 / 1033 / 1119 us, i.e. ~10 %.
TEST(CutlassGroupedTiming, GroupCountAtFixedWork) {
  constexpr int64_t kRows = 131072;
  constexpr int kN = 7168, kK = 256;
  DeviceBuffer a(static_cast<size_t>(kRows) * kK * 2), out(static_cast<size_t>(kRows) * kN * 2);
  DeviceBuffer w(static_cast<size_t>(256) * kN * kK * 2);
  FM_CUDA_CHECK(cudaMemset(a.get(), 0x3c, a.bytes()));  // bf16 0x3c3c ~ 0.0115: finite, nonzero
  FM_CUDA_CHECK(cudaMemset(w.get(), 0x3c, w.bytes()));
  DeviceBuffer scratch(fm::kernels::cutlass_grouped_scratch_bytes(256));
  cudaEvent_t e0, e1;
  FM_CUDA_CHECK(cudaEventCreate(&e0));
  FM_CUDA_CHECK(cudaEventCreate(&e1));
  for (int groups : {8, 32, 256}) {
    std::vector<int32_t> counts(groups, static_cast<int32_t>(kRows / groups)), offs(groups);
    for (int g = 0; g < groups; ++g) offs[g] = static_cast<int32_t>(g * (kRows / groups));
    DeviceBuffer dc = to_device(counts), doff = to_device(offs);
    fm::kernels::CutlassGroupedArgs args;
    args.a = a.get();
    args.w = w.get();
    args.out = out.get();
    args.counts = dc.as<int32_t>();
    args.a_offsets = args.out_offsets = doff.as<int32_t>();
    args.num_groups = groups;
    args.n = kN;
    args.k = kK;
    args.config = fm::kernels::CutlassConfig::kCoop128x256;
    args.scratch = scratch.get();
    args.scratch_bytes = scratch.bytes();
    std::vector<float> ms;
    for (int it = 0; it < 7; ++it) {
      FM_CUDA_CHECK(cudaEventRecord(e0));
      ASSERT_EQ(fm::kernels::launch_cutlass_grouped_gemm(args, nullptr), cudaSuccess);
      FM_CUDA_CHECK(cudaEventRecord(e1));
      FM_CUDA_CHECK(cudaEventSynchronize(e1));
      float t = 0;
      FM_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
      if (it > 1) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    const double us = ms[ms.size() / 2] * 1e3;
    std::printf("[ cutlass  ] timing groups %-3d rows %lld N %d K %d: %.1f us, %.0f TFLOP/s\n", groups,
                static_cast<long long>(kRows), kN, kK, us, 2.0 * kRows * kN * kK / (us * 1e-6) / 1e12);
  }
  FM_CUDA_CHECK(cudaEventDestroy(e0));
  FM_CUDA_CHECK(cudaEventDestroy(e1));
}

// CUTLASS's GEMM1 with the activation in its epilogue (launch_cutlass_gated_gemm1, session 43),
// every gate / up pairing: W1 split into gate and up halves (given to the GEMM in blocks of 8 rows,
// made on the GPU by launch_gate_up_blocks8 and checked bitwise against reference::gate_up_blocks8),
// interleaved (GPT-OSS order), and not gated; every activation kind; with and without b1; ragged
// groups (empty, one row, tile +- 1) at padded row offsets; N off the 256-wide tile (odd multiples of
// 8) and K off the 64-wide step. H against float64 (g, u accumulated from the same bf16 inputs, b1
// added, the activation of reference::activate): relative L2 <= 5e-3; rows outside the groups keep
// their poison.
namespace {

void check_gated(const fm::Activation& act, int n, int k, bool with_bias, const std::vector<int32_t>& counts) {
  const int groups = static_cast<int>(counts.size());
  const uint64_t seed = fm::gputest::test_seed();
  const int n_w = act.gemm1_rows(n);
  const bool blocks = act.gated() && !act.interleaved;
  SCOPED_TRACE(std::string(fm::to_string(act.kind)) + (act.interleaved ? " interleaved" : "") +
               (with_bias ? " b1" : "") + " N=" + std::to_string(n) + " K=" + std::to_string(k) +
               " seed=" + std::to_string(seed));
  std::vector<int32_t> off(groups);  // A and H rows: padded to 8, a gap of 8 rows between groups
  int64_t rows = 0;
  for (int g = 0; g < groups; ++g) {
    off[g] = static_cast<int32_t>(rows);
    rows += (counts[g] + 7) / 8 * 8 + 8;
  }
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<uint16_t> a(static_cast<size_t>(rows) * k), w(static_cast<size_t>(groups) * n_w * k);
  std::vector<float> b1(with_bias ? static_cast<size_t>(groups) * n_w : 0);
  for (auto& v : a) v = fm::ref::float_to_bf16(nd(rng));
  for (auto& v : w) v = fm::ref::float_to_bf16(nd(rng) * 0.05f);
  for (auto& v : b1) v = nd(rng) * 0.5f;
  DeviceBuffer da = to_device(a), dw = to_device(w), dc = to_device(counts), doff = to_device(off);
  DeviceBuffer dwb(blocks ? w.size() * 2 : 16), db1 = to_device(b1);
  if (blocks) {
    dwb.poison();
    ASSERT_EQ(fm::kernels::launch_gate_up_blocks8(dw.get(), dwb.get(), groups, n, k, nullptr), cudaSuccess);
    std::vector<uint16_t> wb(w.size());
    fm::ref::gate_up_blocks8(w.data(), groups, n, k, wb.data());
    FM_CUDA_CHECK(cudaDeviceSynchronize());
    ASSERT_EQ(to_host<uint16_t>(dwb.get(), wb.size()), wb) << "gate / up blocks of 8 differ from the reference";
  }
  DeviceBuffer out(static_cast<size_t>(rows) * n * 2), scratch(fm::kernels::cutlass_grouped_scratch_bytes(groups));
  out.poison();
  fm::kernels::CutlassGatedArgs args;
  args.a = da.get();
  args.w = blocks ? dwb.get() : dw.get();
  args.out = out.get();
  args.bias = with_bias ? db1.as<float>() : nullptr;
  args.counts = dc.as<int32_t>();
  args.a_offsets = args.out_offsets = doff.as<int32_t>();
  args.num_groups = groups;
  args.n = n;
  args.k = k;
  args.activation = act;
  args.scratch = scratch.get();
  args.scratch_bytes = scratch.bytes();
  ASSERT_EQ(fm::kernels::launch_cutlass_gated_gemm1(args, nullptr), cudaSuccess);
  FM_CUDA_CHECK(cudaDeviceSynchronize());
  const auto got = to_host<uint16_t>(out.get(), static_cast<size_t>(rows) * n);
  std::vector<char> inside(static_cast<size_t>(rows), 0);
  double num = 0, den = 0;
  std::vector<double> acc(static_cast<size_t>(n_w));
  for (int g = 0; g < groups; ++g)
    for (int i = 0; i < counts[g]; ++i) {
      inside[static_cast<size_t>(off[g] + i)] = 1;
      const uint16_t* ar = &a[static_cast<size_t>(off[g] + i) * k];
      for (int r = 0; r < n_w; ++r) {
        const uint16_t* wr = &w[(static_cast<size_t>(g) * n_w + r) * k];
        double s = 0;
        for (int j = 0; j < k; ++j) s += double(fm::ref::bf16_to_float(ar[j])) * fm::ref::bf16_to_float(wr[j]);
        acc[static_cast<size_t>(r)] = s + (with_bias ? b1[static_cast<size_t>(g) * n_w + r] : 0.f);
      }
      for (int c = 0; c < n; ++c) {
        const int gi = !act.gated() ? c : act.interleaved ? 2 * c : c;
        const int ui = !act.gated() ? c : act.interleaved ? 2 * c + 1 : n + c;
        const double ref = fm::ref::activate(act, acc[static_cast<size_t>(gi)], acc[static_cast<size_t>(ui)]);
        const double v = fm::ref::bf16_to_float(got[static_cast<size_t>(off[g] + i) * n + c]);
        ASSERT_TRUE(std::isfinite(v)) << "group " << g << " row " << i << " col " << c << " unwritten";
        num += (v - ref) * (v - ref);
        den += ref * ref;
      }
    }
  for (int64_t r = 0; r < rows; ++r)
    if (!inside[static_cast<size_t>(r)])
      for (int c = 0; c < n; ++c)
        ASSERT_EQ(got[static_cast<size_t>(r) * n + c], 0xFFFF) << "row " << r << " outside the groups written";
  const double err = std::sqrt(num / std::max(den, 1e-300));
  std::printf("[ cutlass  ] %-52s %-14s%s N=%-4d K=%-5d rel_err %.3e\n", fm::kernels::cutlass_gated_gemm1_name(),
              fm::to_string(act.kind), act.interleaved ? " (il)" : "", n, k, err);
  EXPECT_LE(err, 5e-3);
}

}  // namespace

TEST(CutlassGatedGemm1, EveryPairingAndActivation) {
  const std::vector<int32_t> counts = {0, 1, 127, 128, 129, 0, 300, 7};
  for (fm::Activation act : {fm::Activation::silu(), fm::Activation::gelu(), fm::Activation{fm::ActivationKind::kGeluTanhGated},
                             fm::Activation::clamped_swiglu(1.5f), fm::Activation::swiglu_oai(1.702f, 1.0f, true),
                             fm::Activation::swiglu_oai(1.702f, 7.f, false), fm::Activation::squared_relu()}) {
    check_gated(act, 136, 264, act.interleaved, counts);  // (b1 on the interleaved order at N 136 too)
    check_gated(act, 256, 512, true, counts);
  }
  for (int n : {64, 192, 360})  // 2N 128 / 384 / 720: partial 256-wide tiles
    for (int k : {128, 2688}) check_gated(fm::Activation::silu(), n, k, n == 192, {5, 0, 200, 64});
  check_gated(fm::Activation::silu(), 256, 256, false, {0, 0, 0});  // nothing to do
}

TEST(CutlassGatedGemm1, RejectsBadArguments) {
  DeviceBuffer buf(1 << 16), scratch(fm::kernels::cutlass_grouped_scratch_bytes(4));
  fm::kernels::CutlassGatedArgs a;
  a.a = a.w = buf.get();
  a.out = buf.get();
  a.counts = a.a_offsets = a.out_offsets = buf.as<int32_t>();
  a.num_groups = 4;
  a.n = 64;
  a.k = 64;
  a.scratch = scratch.get();
  a.scratch_bytes = scratch.bytes();
  auto bad = [&](fm::kernels::CutlassGatedArgs b) { return fm::kernels::launch_cutlass_gated_gemm1(b, nullptr); };
  fm::kernels::CutlassGatedArgs b = a;
  b.n = 60;
  EXPECT_EQ(bad(b), cudaErrorInvalidValue);
  b = a;
  b.scratch_bytes = 16;
  EXPECT_EQ(bad(b), cudaErrorInvalidValue);
  b = a;
  b.out = static_cast<char*>(buf.get()) + 8;
  EXPECT_EQ(bad(b), cudaErrorInvalidValue);
  b = a;
  b.bias = reinterpret_cast<const float*>(static_cast<const char*>(buf.get()) + 2);
  EXPECT_EQ(bad(b), cudaErrorInvalidValue);
  EXPECT_EQ(fm::kernels::launch_gate_up_blocks8(buf.get(), buf.get(), 1, 64, 64, nullptr), cudaErrorInvalidValue);  // overlap
  EXPECT_EQ(fm::kernels::launch_gate_up_blocks8(buf.get(), static_cast<char*>(buf.get()) + 32768, 1, 60, 64, nullptr),
            cudaErrorInvalidValue);  // N not a multiple of 8
  cudaGetLastError();
}
