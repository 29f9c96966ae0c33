// The GPU dispatch plan (kernels/dispatch/plan_launch.h) against ref::plan_dispatch: every output
// element equal, for single-block and chunked paths, skews, expert maps, the shared expert, tile
// sizes, -1 ids and ids outside [0, E) (skipped and reported in error_flag); outputs poisoned
// before each run and rerun to check determinism. Also: CUDA-graph capture of plan ->
// permute/quantise, and informational timings.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "fusedmoe/reference.h"
#include "gpu_test_util.h"
#include "kernels/dispatch/plan_launch.h"
#include "kernels/quant/permute_quant_launch.h"
#include "kernels/router/router_launch.h"

namespace fm = fusedmoe;
namespace fk = fusedmoe::kernels;
namespace ref = fusedmoe::ref;
using fm::gputest::DeviceBuffer;
using fm::gputest::to_device;
using fm::gputest::to_host;
using fm::gputest::upload;

namespace {


enum class Dist { kUniform, kZipf, kOneHot, kAllOne };

const char* dist_name(Dist d) {
  switch (d) {
    case Dist::kUniform: return "uniform";
    case Dist::kZipf: return "zipf";
    case Dist::kOneHot: return "onehot";
    case Dist::kAllOne: return "all-one";
  }
  return "?";
}

struct PlanCase {
  int64_t tokens;
  int experts;
  int k;
  int local;        // -1: no expert map (all E local); else local experts behind a random map
  int shared;       // 0 or 1
  int tile;
  Dist dist;
  double bad_rate;  // fraction of ids replaced by -1 / >= E / < -1
};

std::string describe(const PlanCase& c) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "T=%lld E=%d k=%d local=%d shared=%d tile=%d %s bad=%.3f",
                static_cast<long long>(c.tokens), c.experts, c.k, c.local, c.shared, c.tile, dist_name(c.dist),
                c.bad_rate);
  return buf;
}

// Distinct ids per token from a seeded RNG (fast: rejection on a k-long row).
std::vector<int32_t> make_ids(const PlanCase& c, std::mt19937_64& rng) {
  const int E = c.experts, k = c.k;
  std::vector<int32_t> ids(static_cast<size_t>(c.tokens * k));
  std::vector<double> cdf;
  if (c.dist == Dist::kZipf) {
    cdf.resize(E);
    double acc = 0;
    for (int e = 0; e < E; ++e) cdf[e] = acc += 1.0 / std::pow(1.0 + e, 1.2);
    for (double& v : cdf) v /= acc;
  }
  std::uniform_int_distribution<int> uni(0, E - 1);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  const int hot = E > 1 ? E / 3 : 0;
  for (int64_t t = 0; t < c.tokens; ++t) {
    int32_t* row = &ids[t * k];
    for (int j = 0; j < k; ++j) {
      for (;;) {
        int32_t id;
        if (c.dist == Dist::kZipf) {
          id = static_cast<int32_t>(std::lower_bound(cdf.begin(), cdf.end(), u01(rng)) - cdf.begin());
          id = std::min(id, E - 1);
        } else if (j == 0 && (c.dist == Dist::kAllOne || (c.dist == Dist::kOneHot && u01(rng) < 0.7))) {
          id = hot;  // all-one: every token's first slot; one-hot: 70% of them
        } else {
          id = uni(rng);
        }
        bool dup = false;
        for (int i = 0; i < j; ++i) dup |= row[i] == id;
        if (!dup) { row[j] = id; break; }
      }
    }
  }
  if (c.bad_rate > 0) {
    for (auto& id : ids) {
      const double r = u01(rng);
      if (r < c.bad_rate * 0.5) id = -1;
      else if (r < c.bad_rate * 0.8) id = E + static_cast<int32_t>(rng() % 5);  // just past the end
      else if (r < c.bad_rate * 0.9) id = 0x7FFFFFFF;
      else if (r < c.bad_rate) id = -2 - static_cast<int32_t>(rng() % 100);
    }
  }
  return ids;
}

// Random map: `local` experts (a random subset) get local indices 0..local-1 in random order;
// a few others map outside [0, local) (treated as non-local, like -1).
std::vector<int32_t> make_map(int E, int local, std::mt19937_64& rng) {
  std::vector<int32_t> perm(E);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<int32_t> map(E, -1);
  for (int i = 0; i < std::min(local, E); ++i) map[perm[i]] = i;
  for (int i = local; i < E; ++i)
    if (rng() % 7 == 0) map[perm[i]] = local + static_cast<int32_t>(rng() % 3);  // out of range: non-local
  return map;
}

struct HostPlan {
  std::vector<int32_t> counts, offsets, padded, row_token, row_slot, slot_row;
};

// The reference plan. ref::plan_dispatch indexes expert_map[id] directly, so ids outside [0, E)
// are first turned into -1 and the map applied here: the plan of the mapped ids with an identity
// map over `local` experts is the same plan.
ref::DispatchPlan reference_plan(const PlanCase& c, const std::vector<int32_t>& ids, const std::vector<int32_t>& map,
                                 int local) {
  fm::MoeProblem p;
  p.num_experts = local;
  p.num_local_experts = -1;
  p.router = fm::RouterConfig::precomputed(c.k);
  p.num_shared_experts = c.shared;
  ref::Routing r;
  r.num_tokens = c.tokens;
  r.top_k = c.k;
  r.ids.resize(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    int32_t g = -1;
    if (id >= 0 && id < c.experts) g = map.empty() ? id : map[id];
    r.ids[i] = (g >= 0 && g < local) ? g : -1;
  }
  return ref::plan_dispatch(p, r, nullptr, c.tile);
}

struct DevicePlan {
  DeviceBuffer ids, map, counts, offsets, padded, row_token, row_slot, slot_row, err, scratch;
  int64_t entries = 0;
  int groups = 0;
};

fk::PlanArgs plan_args(const PlanCase& c, DevicePlan& d, int local) {
  fk::PlanArgs a;
  a.topk_ids = d.ids.as<int32_t>();
  a.num_tokens = c.tokens;
  a.top_k = c.k;
  a.num_experts = c.experts;
  a.expert_map = c.local >= 0 ? d.map.as<int32_t>() : nullptr;
  a.num_local_experts = local;
  a.num_shared_experts = c.shared;
  a.tile_m = c.tile;
  a.counts = d.counts.as<int32_t>();
  a.offsets = d.offsets.as<int32_t>();
  a.padded_offsets = d.padded.as<int32_t>();
  a.row_token = d.row_token.as<int32_t>();
  a.row_slot = d.row_slot.as<int32_t>();
  a.slot_row = d.slot_row.as<int32_t>();
  a.error_flag = d.err.as<int32_t>();
  a.scratch = d.scratch.get();
  a.scratch_bytes = d.scratch.bytes();
  return a;
}

void alloc_plan(DevicePlan& d, const PlanCase& c, int local) {
  const int slots = c.k + c.shared;
  d.entries = c.tokens * slots;
  d.groups = local + c.shared;
  const size_t e = static_cast<size_t>(d.entries) + 64;  // + a tail that must stay untouched
  d.counts.resize((d.groups + 1) * 4);
  d.offsets.resize((d.groups + 2) * 4);
  d.padded.resize((d.groups + 2) * 4);
  d.row_token.resize(e * 4);
  d.row_slot.resize(e * 4);
  d.slot_row.resize(e * 4);
  d.err.resize(16);
  d.scratch.resize(fk::plan_scratch_bytes(c.tokens, c.k, d.groups));
}

void poison(DevicePlan& d) {
  for (DeviceBuffer* b : {&d.counts, &d.offsets, &d.padded, &d.row_token, &d.row_slot, &d.slot_row}) b->poison(0xFF);
  d.scratch.poison(0xA5);  // scratch starts as garbage: nothing may rely on its contents
  cudaMemset(d.err.get(), 0, 16);
}

HostPlan download(const DevicePlan& d) {
  HostPlan h;
  const size_t e = static_cast<size_t>(d.entries) + 64;
  h.counts = to_host<int32_t>(d.counts.get(), d.groups + 1);
  h.offsets = to_host<int32_t>(d.offsets.get(), d.groups + 2);
  h.padded = to_host<int32_t>(d.padded.get(), d.groups + 2);
  h.row_token = to_host<int32_t>(d.row_token.get(), e);
  h.row_slot = to_host<int32_t>(d.row_slot.get(), e);
  h.slot_row = to_host<int32_t>(d.slot_row.get(), e);
  return h;
}

// Compares every element; stops after a few mismatches per array.
void expect_plan_equal(const ref::DispatchPlan& r, const HostPlan& h, int64_t entries) {
  const int G = r.num_groups;
  const int64_t R = r.num_rows();
  auto cmp = [&](const char* what, int64_t n, auto expected, const std::vector<int32_t>& got) {
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 5; ++i) {
      const int64_t e = expected(i);
      if (e != got[i]) {
        ADD_FAILURE() << what << "[" << i << "] = " << got[i] << ", expected " << e;
        ++bad;
      }
    }
  };
  cmp("counts", G, [&](int64_t i) { return int64_t{r.counts[i]}; }, h.counts);
  cmp("offsets", G + 1, [&](int64_t i) { return r.offsets[i]; }, h.offsets);
  cmp("padded_offsets", G + 1, [&](int64_t i) { return r.padded_offsets[i]; }, h.padded);
  cmp("row_token", R, [&](int64_t i) { return int64_t{r.row_token[i]}; }, h.row_token);
  cmp("row_slot", R, [&](int64_t i) { return int64_t{r.row_slot[i]}; }, h.row_slot);
  cmp("slot_row", entries, [&](int64_t i) { return int64_t{r.slot_row[i]}; }, h.slot_row);
  // Past the ends: untouched poison.
  cmp("counts tail", 1, [&](int64_t) { return int64_t{-1}; }, std::vector<int32_t>(h.counts.begin() + G, h.counts.end()));
  cmp("offsets tail", 1, [&](int64_t) { return int64_t{-1}; },
      std::vector<int32_t>(h.offsets.begin() + G + 1, h.offsets.end()));
  cmp("row_token tail", 64, [&](int64_t) { return int64_t{-1}; },
      std::vector<int32_t>(h.row_token.begin() + R, h.row_token.begin() + R + 64));
  cmp("row_slot tail", 64, [&](int64_t) { return int64_t{-1}; },
      std::vector<int32_t>(h.row_slot.begin() + R, h.row_slot.begin() + R + 64));
  cmp("slot_row tail", 64, [&](int64_t) { return int64_t{-1}; },
      std::vector<int32_t>(h.slot_row.begin() + entries, h.slot_row.begin() + entries + 64));
}

void run_case(const PlanCase& c) {
  const uint64_t seed = fm::gputest::test_seed();
  SCOPED_TRACE(describe(c) + " seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::vector<int32_t> ids = make_ids(c, rng);
  const int local = c.local >= 0 ? c.local : c.experts;
  const std::vector<int32_t> map = c.local >= 0 ? make_map(c.experts, c.local, rng) : std::vector<int32_t>{};
  const ref::DispatchPlan expected = reference_plan(c, ids, map, local);

  // Without bad ids the reference also takes the real map directly: both must agree.
  bool any_bad = false;
  for (int32_t id : ids) any_bad |= id < 0 || id >= c.experts;
  if (!any_bad && !map.empty() && c.tokens <= 4096) {
    fm::MoeProblem p;
    p.num_experts = c.experts;
    p.num_local_experts = local;
    p.router = fm::RouterConfig::precomputed(c.k);
    p.num_shared_experts = c.shared;
    ref::Routing r;
    r.num_tokens = c.tokens;
    r.top_k = c.k;
    r.ids = ids;
    const ref::DispatchPlan direct = ref::plan_dispatch(p, r, map.data(), c.tile);
    ASSERT_EQ(direct.slot_row, expected.slot_row);
    ASSERT_EQ(direct.padded_offsets, expected.padded_offsets);
  }

  DevicePlan d;
  alloc_plan(d, c, local);
  upload(d.ids, ids);
  upload(d.map, map);
  fk::PlanArgs a = plan_args(c, d, local);
  HostPlan first;
  for (int run = 0; run < 2; ++run) {
    poison(d);
    FM_CUDA_CHECK(fk::launch_plan(a, nullptr));
    FM_CUDA_CHECK(cudaDeviceSynchronize());
    HostPlan h = download(d);
    const std::vector<int32_t> err = to_host<int32_t>(d.err.get(), 4);
    if (run == 0) {
      expect_plan_equal(expected, h, d.entries);
      if (any_bad) {
        // Some id outside [-1, E) -> code 1 with the token, slot and id of one such entry.
        bool any_oob = false;
        for (int32_t id : ids) any_oob |= id < -1 || id >= c.experts;
        if (any_oob) {
          EXPECT_EQ(err[0], fk::kErrorIdOutOfRange);
          ASSERT_GE(err[1], 0);
          ASSERT_LT(err[1], c.tokens);
          ASSERT_GE(err[2], 0);
          ASSERT_LT(err[2], c.k);
          EXPECT_EQ(ids[static_cast<size_t>(err[1]) * c.k + err[2]], err[3]);
          EXPECT_TRUE(err[3] < -1 || err[3] >= c.experts) << err[3];
        } else {
          EXPECT_EQ(err[0], 0);
        }
      } else {
        EXPECT_EQ(err, (std::vector<int32_t>{0, 0, 0, 0}));
      }
      first = std::move(h);
    } else {
      // Deterministic: the same bits again.
      EXPECT_TRUE(h.row_token == first.row_token && h.row_slot == first.row_slot && h.slot_row == first.slot_row &&
                  h.counts == first.counts && h.offsets == first.offsets && h.padded == first.padded)
          << "second run differs";
    }
  }
}

}  // namespace

TEST(Plan, SmallSingleBlock) {
  const std::vector<PlanCase> cases = {
      {0, 8, 2, -1, 1, 8, Dist::kUniform, 0},
      {1, 8, 1, -1, 0, 1, Dist::kUniform, 0},
      {2, 8, 2, -1, 1, 8, Dist::kUniform, 0},
      {3, 32, 4, 8, 1, 64, Dist::kUniform, 0.2},
      {17, 64, 6, -1, 0, 128, Dist::kZipf, 0},
      {64, 128, 8, -1, 1, 64, Dist::kUniform, 0},
      {255, 160, 10, 40, 1, 128, Dist::kZipf, 0.05},
      {256, 256, 8, -1, 1, 128, Dist::kUniform, 0},
      {256, 257, 16, -1, 0, 8, Dist::kOneHot, 0.03},     // N = 4096
      {240, 1024, 16, -1, 1, 128, Dist::kUniform, 0.01},  // G = 1025, single block
      {100, 16, 4, 4, 1, 8, Dist::kUniform, 0},
      {64, 8, 8, -1, 1, 1, Dist::kUniform, 0},            // k = E
      {512, 384, 16, -1, 0, 64, Dist::kZipf, 0},          // N = 8192: the largest single block
      {1000, 384, 8, -1, 0, 64, Dist::kZipf, 0},          // N = 8000
      {300, 32, 1, -1, 0, 1, Dist::kAllOne, 0},
  };
  for (const PlanCase& c : cases) run_case(c);
}

TEST(Plan, NoLocalExpertsOnlyShared) {
  // A map that sends every routed id elsewhere: only the shared group has rows.
  PlanCase c{100, 16, 4, 0, 1, 8, Dist::kUniform, 0};
  run_case(c);
  PlanCase c2{5000, 16, 4, 0, 1, 8, Dist::kUniform, 0.01};
  run_case(c2);
}

TEST(Plan, ChunkedPaths) {
  const std::vector<PlanCase> cases = {
      {513, 384, 16, -1, 0, 64, Dist::kZipf, 0},        // N = 8208: the smallest chunked
      {256, 257, 16, -1, 1, 8, Dist::kOneHot, 0.03},    // T = 256, k = 16 + shared (N = 4352, single)
      {1000, 512, 10, 64, 1, 128, Dist::kUniform, 0.02},
      {4096, 1024, 16, -1, 1, 128, Dist::kUniform, 0.01},  // G = 1025
      {4096, 8, 1, -1, 0, 1, Dist::kAllOne, 0},
      {16384, 256, 8, -1, 1, 128, Dist::kZipf, 0},
      {16384, 64, 6, 16, 0, 8, Dist::kOneHot, 0.02},
      {65536, 128, 4, -1, 0, 64, Dist::kUniform, 0},
      {65536, 1024, 16, 1024, 1, 128, Dist::kZipf, 0.001},  // permuting map, all local
      {262144, 256, 8, -1, 1, 128, Dist::kUniform, 0},
      {262144, 1024, 16, -1, 1, 128, Dist::kUniform, 0.0001},  // the largest: N = 4.46M, G = 1025
      {262144, 32, 2, -1, 0, 1, Dist::kAllOne, 0},
  };
  for (const PlanCase& c : cases) run_case(c);
}

TEST(Plan, ScratchTooSmallIsRejected) {
  PlanCase c{16384, 64, 8, -1, 0, 8, Dist::kUniform, 0};
  DevicePlan d;
  alloc_plan(d, c, 64);
  std::mt19937_64 rng(1);
  upload(d.ids, make_ids(c, rng));
  fk::PlanArgs a = plan_args(c, d, 64);
  a.scratch_bytes = 64;
  EXPECT_EQ(fk::launch_plan(a, nullptr), cudaErrorInvalidValue);
  cudaGetLastError();
}

// ---- CUDA graph: plan -> permute/quantise captured once per size, replayed ---------------------

TEST(PlanGraph, CapturePlanAndPermuteQuantReplay) {
  const uint64_t seed = fm::gputest::test_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const int E = 64, k = 6, K = 256, tile = 64;
  for (int64_t T : {int64_t{5}, int64_t{300}, int64_t{5000}}) {
    SCOPED_TRACE("T=" + std::to_string(T));
    PlanCase c{T, E, k, -1, 1, tile, Dist::kUniform, 0};
    const std::vector<int32_t> ids = make_ids(c, rng);
    const ref::DispatchPlan expected = reference_plan(c, ids, {}, E);
    DevicePlan d;
    alloc_plan(d, c, E);
    upload(d.ids, ids);
    fk::PlanArgs pa = plan_args(c, d, E);

    // Activations: bf16 random.
    std::vector<uint16_t> x(static_cast<size_t>(T * K));
    std::normal_distribution<float> nd(0.f, 1.f);
    for (auto& v : x) v = ref::float_to_bf16(nd(rng));
    DeviceBuffer dx = to_device(x);
    const int slots = k + 1;
    const int64_t rows_out = T * slots + int64_t{E + 1} * (tile - 1);
    const int64_t rows_pad4 = (rows_out + 3) / 4 * 4;
    DeviceBuffer q(static_cast<size_t>(rows_out * K)), sc(static_cast<size_t>(rows_pad4 * (K / 128) * 4));
    DeviceBuffer qs(fk::permute_quant_scratch_bytes(T, K));
    fk::PermuteQuantArgs qa;
    qa.x = dx.get();
    qa.num_tokens = T;
    qa.hidden = K;
    qa.quant = fm::ActQuant::kGroup128;
    qa.scale_format = fm::ScaleFormat::kUE8M0;
    qa.permute = true;
    qa.slots = slots;
    qa.num_groups = E + 1;
    qa.slot_row = pa.slot_row;
    qa.row_token = pa.row_token;
    qa.row_slot = pa.row_slot;
    qa.offsets = pa.offsets;
    qa.padded_offsets = pa.padded_offsets;
    qa.top_k = k;
    qa.out = q.get();
    qa.out_scales = sc.as<float>();
    qa.rows_out = rows_out;
    qa.scratch = qs.get();
    qa.scratch_bytes = qs.bytes();

    cudaStream_t s;
    FM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraph_t graph;
    FM_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    const cudaError_t e1 = fk::launch_plan(pa, s);
    const cudaError_t e2 = fk::launch_permute_quant(qa, s);
    FM_CUDA_CHECK(cudaStreamEndCapture(s, &graph));
    FM_CUDA_CHECK(e1);
    FM_CUDA_CHECK(e2);
    cudaGraphExec_t exec;
    FM_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));

    // Expected quantised rows (reference quantiser, UE8M0 groups), at padded rows.
    std::vector<uint8_t> first_q;
    for (int rep = 0; rep < 3; ++rep) {
      poison(d);
      q.poison(0xFF);
      FM_CUDA_CHECK(cudaDeviceSynchronize());
      FM_CUDA_CHECK(cudaGraphLaunch(exec, s));
      FM_CUDA_CHECK(cudaStreamSynchronize(s));
      expect_plan_equal(expected, download(d), d.entries);
      const std::vector<uint8_t> hq = to_host<uint8_t>(q.get(), static_cast<size_t>(rows_out * K));
      const std::vector<float> hs = to_host<float>(sc.get(), static_cast<size_t>(rows_pad4 * (K / 128)));
      if (rep == 0) {
        std::vector<float> xf(K);
        std::vector<uint8_t> eq(K);
        std::vector<float> es(K / 128);
        int bad = 0;
        for (int g = 0; g < expected.num_groups && bad < 5; ++g) {
          for (int64_t r = expected.offsets[g]; r < expected.offsets[g + 1] && bad < 5; ++r) {
            const int64_t dest = expected.padded_offsets[g] + (r - expected.offsets[g]);
            const int64_t t = expected.row_token[r];
            for (int i = 0; i < K; ++i) xf[i] = ref::bf16_to_float(x[t * K + i]);
            ref::quantize_fp8_groups(xf.data(), 1, K, 128, fm::ScaleFormat::kUE8M0, eq.data(), es.data());
            if (std::memcmp(eq.data(), &hq[dest * K], K) != 0) { ADD_FAILURE() << "row " << dest; ++bad; }
            for (int b = 0; b < K / 128; ++b)
              if (std::memcmp(&es[b], &hs[b * rows_pad4 + dest], 4) != 0) { ADD_FAILURE() << "scale row " << dest; ++bad; }
          }
        }
        first_q = hq;
      } else {
        EXPECT_TRUE(hq == first_q) << "replay " << rep << " differs";
      }
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(s);
  }
}

// ---- informational timings -------------------------------------------------------------------

using fusedmoe::gputest::graph_us;
using fusedmoe::gputest::median_us;

TEST(PlanTiming, Informational) {
  std::mt19937_64 rng(7);
  for (auto [T, E, k, shared] : {std::tuple<int64_t, int, int, int>{256, 256, 8, 1}, {16384, 256, 8, 1},
                                 {262144, 1024, 16, 1}}) {
    PlanCase c{T, E, k, -1, shared, 128, Dist::kUniform, 0};
    DevicePlan d;
    alloc_plan(d, c, E);
    upload(d.ids, make_ids(c, rng));
    fk::PlanArgs a = plan_args(c, d, E);
    auto launch = [&](cudaStream_t s) { fk::launch_plan(a, s); };
    const float single = median_us(launch);
    const float us = graph_us(launch);
    const double bytes = double(T) * k * 4 + double(d.entries) * 4 * 3;
    std::printf("[timing] plan T=%lld E=%d k=%d+%d: %.2f us per launch in a graph (%.0f GB/s of ids + row maps); "
                "%.2f us single launch incl. host submission\n",
                static_cast<long long>(T), E, k, shared, us, bytes / us * 1e-3, single);
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}
