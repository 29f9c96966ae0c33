// GPU router kernels (src/kernels/router) against the CPU reference ref::route: ids EXACTLY equal
// and weights bit-equal for every router variant, bf16 and fp32 logits, uniform / Zipf / one-hot
// routing, token counts 1..262144, E 8..1024, k 1..16; grouped selection; non-finite logits;
// out-of-range ids (error flag, no out-of-bounds write); unaligned logits; CUDA-graph replay; the
// shared float32 math on the device equal to the host's. Outputs are poisoned before every run.
// Fresh random inputs each run; the seed is printed (replay with FUSEDMOE_TEST_SEED=<seed>).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#include "fusedmoe/reference.h"
#include "gpu_test_util.h"
#include "kernels/common/hd_math.h"
#include "kernels/router/router_launch.h"
#include "kernels/router/router_math_check.h"

namespace {

namespace fm = fusedmoe;
namespace ref = fusedmoe::ref;
namespace kn = fusedmoe::kernels;
using fusedmoe::gputest::DeviceBuffer;
using fusedmoe::gputest::to_device;
using fusedmoe::gputest::to_host;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

uint64_t seed_once() {
  static const uint64_t seed = [] {
    const uint64_t s = fusedmoe::gputest::test_seed();
    std::printf("[router] FUSEDMOE_TEST_SEED=%llu\n", static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

// ---- fast deterministic random numbers (splitmix64), usable per chunk from many threads ----
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float uniform() { return static_cast<float>(next() >> 40) * 0x1p-24f; }  // [0, 1)
  uint32_t below(uint32_t n) { return static_cast<uint32_t>((next() >> 32) % n); }
  float normal() {
    const double u1 = (static_cast<double>(next() >> 11) + 1.0) * 0x1p-53, u2 = static_cast<double>(next() >> 11) * 0x1p-53;
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
};

// f(begin, end) over [0, n) split across the host's cores.
void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& f) {
  const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(std::thread::hardware_concurrency(), (n + 255) / 256));
  if (workers == 1) {
    f(0, n);
    return;
  }
  std::vector<std::thread> threads;
  const int64_t chunk = (n + workers - 1) / workers;
  for (int64_t w = 0; w < workers; ++w) {
    const int64_t b = w * chunk, e = std::min(n, b + chunk);
    if (b < e) threads.emplace_back(f, b, e);
  }
  for (auto& t : threads) t.join();
}

enum class Skew { kUniform, kZipf, kOneHot };
const char* skew_name(Skew s) { return s == Skew::kUniform ? "uniform" : s == Skew::kZipf ? "zipf" : "onehot"; }

// ---- the variants under test ----
enum class Variant {
  kSoftmax, kSoftmaxRenorm, kSigmoidBias, kDeepSeekV3, kDeepSeekV4, kBiasedSoftmax, kSigmoidGroupedNoBias,
  kSqrtSoftplusNoBias, kGptOss, kLlama4, kHashSoftmax, kHashSigmoid, kHashSqrtSoftplus, kHashNoLogits,
  kPrecomputed,
};
constexpr Variant kAllVariants[] = {
    Variant::kSoftmax,       Variant::kSoftmaxRenorm,         Variant::kSigmoidBias,       Variant::kDeepSeekV3,
    Variant::kDeepSeekV4,    Variant::kBiasedSoftmax,         Variant::kSigmoidGroupedNoBias,
    Variant::kSqrtSoftplusNoBias, Variant::kGptOss,           Variant::kLlama4,            Variant::kHashSoftmax,
    Variant::kHashSigmoid,   Variant::kHashSqrtSoftplus,      Variant::kHashNoLogits,      Variant::kPrecomputed};
const char* variant_name(Variant v) {
  switch (v) {
    case Variant::kSoftmax: return "softmax";
    case Variant::kSoftmaxRenorm: return "softmax_renorm";
    case Variant::kSigmoidBias: return "sigmoid_bias";
    case Variant::kDeepSeekV3: return "dsv3_grouped";
    case Variant::kDeepSeekV4: return "dsv4_sqrt_softplus";
    case Variant::kBiasedSoftmax: return "biased_softmax";
    case Variant::kSigmoidGroupedNoBias: return "sigmoid_grouped_nobias";
    case Variant::kSqrtSoftplusNoBias: return "sqrt_softplus_nobias";
    case Variant::kGptOss: return "gpt_oss";
    case Variant::kLlama4: return "sigmoid_top1";
    case Variant::kHashSoftmax: return "hash_softmax";
    case Variant::kHashSigmoid: return "hash_sigmoid";
    case Variant::kHashSqrtSoftplus: return "hash_sqrt_softplus";
    case Variant::kHashNoLogits: return "hash_nologits";
    case Variant::kPrecomputed: return "precomputed";
  }
  return "?";
}

struct Case {
  Variant variant = Variant::kSoftmax;
  int64_t tokens = 1;
  int experts = 8;
  int k = 1;
  bool bf16 = false;
  Skew skew = Skew::kUniform;
  int n_group = 1;     // grouped variants; 0 = pick one that divides E
  int topk_group = 1;
  std::string name() const {
    char b[256];
    std::snprintf(b, sizeof(b), "%s T=%lld E=%d k=%d %s %s groups=%d/%d", variant_name(variant),
                  static_cast<long long>(tokens), experts, k, bf16 ? "bf16" : "f32", skew_name(skew), n_group,
                  topk_group);
    return b;
  }
};

bool grouped(Variant v) { return v == Variant::kDeepSeekV3 || v == Variant::kSigmoidGroupedNoBias; }

fm::RouterConfig make_config(const Case& c) {
  fm::RouterConfig rc;
  switch (c.variant) {
    case Variant::kSoftmax: rc = fm::RouterConfig::softmax_topk(c.k, false); break;
    case Variant::kSoftmaxRenorm:
      rc = fm::RouterConfig::softmax_topk(c.k, true);
      rc.routed_scaling = 1.7f;
      break;
    case Variant::kSigmoidBias: rc = fm::RouterConfig::sigmoid_bias(c.k, 2.827f); break;
    case Variant::kDeepSeekV3: rc = fm::RouterConfig::deepseek_v3(c.k, c.n_group, c.topk_group, 2.5f); break;
    case Variant::kDeepSeekV4: rc = fm::RouterConfig::deepseek_v4(c.k, 1.5f); break;
    case Variant::kBiasedSoftmax:
      rc = fm::RouterConfig::sigmoid_bias(c.k, 1.f);
      rc.score = fm::ScoreFunction::kSoftmax;
      rc.renormalize = false;
      break;
    case Variant::kSigmoidGroupedNoBias:
      rc = fm::RouterConfig::deepseek_v3(c.k, c.n_group, c.topk_group, 1.f);
      rc.use_correction_bias = false;
      rc.renormalize = false;
      break;
    case Variant::kSqrtSoftplusNoBias:
      rc = fm::RouterConfig::deepseek_v4(c.k, 1.f);
      rc.use_correction_bias = false;
      rc.renormalize = false;
      break;
    case Variant::kGptOss: rc = fm::RouterConfig::gpt_oss(c.k); break;
    case Variant::kLlama4:
      rc = fm::RouterConfig::llama4();
      rc.top_k = c.k;  // the kernel is generic in k; Llama-4 itself uses 1
      break;
    case Variant::kHashSoftmax:
      rc = fm::RouterConfig::hash(c.k, fm::ScoreFunction::kSoftmax, 1.f);
      rc.renormalize = true;
      break;
    case Variant::kHashSigmoid: rc = fm::RouterConfig::hash(c.k, fm::ScoreFunction::kSigmoid, 1.5f); break;
    case Variant::kHashSqrtSoftplus: rc = fm::RouterConfig::hash(c.k, fm::ScoreFunction::kSqrtSoftplus, 1.5f); break;
    case Variant::kHashNoLogits:
      rc = fm::RouterConfig::hash(c.k, fm::ScoreFunction::kSigmoid, 2.f);
      rc.renormalize = true;
      break;
    case Variant::kPrecomputed:
      rc = fm::RouterConfig::precomputed(c.k);
      rc.renormalize = true;
      rc.routed_scaling = 2.f;
      break;
  }
  rc.top_k = c.k;
  if (!grouped(c.variant)) rc.n_group = 1, rc.topk_group = 1;
  rc.logits_dtype = c.bf16 ? fm::DType::kBFloat16 : fm::DType::kFloat32;
  return rc;
}

bool needs_logits(Variant v) { return v != Variant::kHashNoLogits && v != Variant::kPrecomputed; }
bool is_hash(Variant v) {
  return v == Variant::kHashSoftmax || v == Variant::kHashSigmoid || v == Variant::kHashSqrtSoftplus ||
         v == Variant::kHashNoLogits;
}

// ---- host inputs ----
struct Inputs {
  fm::MoeProblem p;
  std::vector<float> logits;          // [T, E] (bf16-rounded when bf16)
  std::vector<uint16_t> logits_bf16;  // [T, E] when bf16
  std::vector<float> bias;            // [E] or empty
  std::vector<int64_t> token_ids;     // [T]
  std::vector<int32_t> table;         // [vocab, k]
  int64_t vocab = 0;
  std::vector<int32_t> ids_in;        // [T, k]
  std::vector<float> w_in;            // [T, k]

  bool bf16() const { return p.router.logits_dtype == fm::DType::kBFloat16; }
  fm::MoeTensors tensors() const {
    fm::MoeTensors t;
    if (!logits.empty()) t.router_logits = bf16() ? static_cast<const void*>(logits_bf16.data()) : logits.data();
    if (!bias.empty()) t.correction_bias = bias.data();
    if (!token_ids.empty()) t.token_ids = token_ids.data();
    if (!table.empty()) t.hash_table = table.data(), t.hash_vocab = vocab;
    if (!ids_in.empty()) t.topk_ids = ids_in.data(), t.topk_weights = w_in.data();
    return t;
  }
};

// Distinct random ids [k] out of [0, E).
void distinct_ids(Rng& rng, int experts, int k, int32_t* out) {
  for (int j = 0; j < k; ++j) {
    int32_t id;
    bool again;
    do {
      id = static_cast<int32_t>(rng.below(static_cast<uint32_t>(experts)));
      again = false;
      for (int i = 0; i < j; ++i) again |= out[i] == id;
    } while (again);
    out[j] = id;
  }
}

void fill_logits(Inputs& in, Skew skew, uint64_t seed) {
  const int64_t t_count = in.p.num_tokens;
  const int e_count = in.p.num_experts;
  in.logits.resize(static_cast<size_t>(t_count) * e_count);
  if (in.bf16()) in.logits_bf16.resize(in.logits.size());
  parallel_for(t_count, [&](int64_t b, int64_t e) {
    Rng rng(seed ^ (static_cast<uint64_t>(b) * 0xA24BAED4963EE407ull));
    for (int64_t t = b; t < e; ++t) {
      float* row = in.logits.data() + t * e_count;
      for (int x = 0; x < e_count; ++x) {
        float v = 1.5f * rng.normal();
        if (skew == Skew::kZipf) v -= 1.2f * std::log1p(static_cast<float>(x));
        // Exact ties: 1/16 of the experts copy their neighbour, 1/64 a random earlier expert.
        const uint32_t r = rng.below(64);
        if (x > 0 && r < 4) v = row[x - 1];
        else if (x > 0 && r == 4) v = row[rng.below(static_cast<uint32_t>(x))];
        row[x] = v;
      }
      if (skew == Skew::kOneHot) row[0] = 12.f;  // expert 0 wins every token
      if (in.bf16()) {
        uint16_t* brow = in.logits_bf16.data() + t * e_count;
        for (int x = 0; x < e_count; ++x) {
          brow[x] = ref::float_to_bf16(row[x]);
          row[x] = ref::bf16_to_float(brow[x]);
        }
      }
    }
  });
}

Inputs make_inputs(const Case& c, uint64_t seed) {
  Inputs in;
  in.p.num_tokens = c.tokens;
  in.p.max_tokens = c.tokens;
  in.p.num_experts = c.experts;
  in.p.router = make_config(c);
  const int k = c.k;
  Rng rng(seed);
  if (needs_logits(c.variant)) fill_logits(in, c.skew, seed + 1);
  if (in.p.router.use_correction_bias) {
    in.bias.resize(c.experts);
    for (float& b : in.bias) b = 0.1f * rng.normal();
    for (int e = 1; e < c.experts; e += 7) in.bias[e] = in.bias[e - 1];  // some equal biases
  }
  if (is_hash(c.variant)) {
    in.vocab = 1000;
    in.table.resize(static_cast<size_t>(in.vocab) * k);
    for (int64_t v = 0; v < in.vocab; ++v) distinct_ids(rng, c.experts, k, in.table.data() + v * k);
    in.token_ids.resize(c.tokens);
    for (auto& t : in.token_ids) t = rng.below(static_cast<uint32_t>(in.vocab));
  }
  if (c.variant == Variant::kPrecomputed) {
    in.ids_in.resize(static_cast<size_t>(c.tokens) * k);
    in.w_in.resize(in.ids_in.size());
    parallel_for(c.tokens, [&](int64_t b, int64_t e) {
      Rng r(seed ^ (static_cast<uint64_t>(b) * 0x9FB21C651E98DF25ull) ^ 77);
      for (int64_t t = b; t < e; ++t) {
        distinct_ids(r, c.experts, k, in.ids_in.data() + t * k);
        for (int j = 0; j < k; ++j) in.w_in[t * k + j] = 0.05f + 0.95f * r.uniform();
      }
    });
  }
  return in;
}

// ref::route over token chunks on all cores.
ref::Routing reference(const Inputs& in) {
  const int64_t t_count = in.p.num_tokens;
  const int k = in.p.router.top_k;
  const size_t elem = in.bf16() ? 2 : 4;
  ref::Routing all;
  all.num_tokens = t_count;
  all.top_k = k;
  all.ids.assign(static_cast<size_t>(t_count) * k, 0);
  all.weights.assign(all.ids.size(), 0.f);
  std::vector<std::string> errors;
  std::mutex mu;
  parallel_for(t_count, [&](int64_t b, int64_t e) {
    fm::MoeProblem p = in.p;
    p.num_tokens = e - b;
    fm::MoeTensors t = in.tensors();
    if (t.router_logits) t.router_logits = static_cast<const char*>(t.router_logits) + b * in.p.num_experts * elem;
    if (t.token_ids) t.token_ids += b;
    if (t.topk_ids) t.topk_ids += b * k, t.topk_weights += b * k;
    ref::Routing r;
    const fm::Status s = ref::route(p, t, &r);
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      errors.push_back(s.to_string());
      return;
    }
    std::copy(r.ids.begin(), r.ids.end(), all.ids.begin() + b * k);
    std::copy(r.weights.begin(), r.weights.end(), all.weights.begin() + b * k);
  });
  EXPECT_TRUE(errors.empty()) << (errors.empty() ? "" : errors.front());
  return all;
}

// ---- device side ----
struct DeviceInputs {
  DeviceBuffer logits, bias, token_ids, table, ids_in, w_in;
  explicit DeviceInputs(const Inputs& in)
      : logits(in.logits.empty() ? DeviceBuffer()
               : in.bf16()       ? to_device(in.logits_bf16)
                                 : to_device(in.logits)),
        bias(in.bias.empty() ? DeviceBuffer() : to_device(in.bias)),
        token_ids(in.token_ids.empty() ? DeviceBuffer() : to_device(in.token_ids)),
        table(in.table.empty() ? DeviceBuffer() : to_device(in.table)),
        ids_in(in.ids_in.empty() ? DeviceBuffer() : to_device(in.ids_in)),
        w_in(in.w_in.empty() ? DeviceBuffer() : to_device(in.w_in)) {}
};

struct DeviceOutputs {
  static constexpr size_t kGuard = 64;  // poisoned elements after the [T, k] outputs
  size_t n;
  DeviceBuffer ids, weights, err;
  explicit DeviceOutputs(size_t count)
      : n(count), ids((count + kGuard) * 4), weights((count + kGuard) * 4), err(16) {}
  void poison() const {
    ids.poison(0xFF);      // id -1
    weights.poison(0xFF);  // NaN
    cudaMemset(err.get(), 0, 16);
  }
};

kn::RouterArgs make_args(const Inputs& in, const DeviceInputs& d, const DeviceOutputs& o) {
  kn::RouterArgs a;
  a.config = in.p.router;
  a.num_tokens = in.p.num_tokens;
  a.num_experts = in.p.num_experts;
  a.logits = d.logits.get();
  a.correction_bias = d.bias.as<float>();
  a.token_ids = d.token_ids.as<int64_t>();
  a.hash_table = d.table.as<int32_t>();
  a.hash_vocab = in.vocab;
  a.topk_ids_in = d.ids_in.as<int32_t>();
  a.topk_weights_in = d.w_in.as<float>();
  a.topk_ids = o.ids.as<int32_t>();
  a.topk_weights = o.weights.as<float>();
  a.error_flag = o.err.as<int32_t>();
  return a;
}

struct GpuResult {
  std::vector<int32_t> ids;
  std::vector<float> weights;
  std::vector<int32_t> guard_ids;
  std::vector<float> guard_weights;
  int32_t err[4] = {0, 0, 0, 0};
};

GpuResult fetch(const DeviceOutputs& o) {
  GpuResult r;
  auto ids = to_host<int32_t>(o.ids.get(), o.n + DeviceOutputs::kGuard);
  auto w = to_host<float>(o.weights.get(), o.n + DeviceOutputs::kGuard);
  r.ids.assign(ids.begin(), ids.begin() + static_cast<int64_t>(o.n));
  r.weights.assign(w.begin(), w.begin() + static_cast<int64_t>(o.n));
  r.guard_ids.assign(ids.begin() + static_cast<int64_t>(o.n), ids.end());
  r.guard_weights.assign(w.begin() + static_cast<int64_t>(o.n), w.end());
  cudaMemcpy(r.err, o.err.get(), 16, cudaMemcpyDeviceToHost);
  return r;
}

bool guards_intact(const GpuResult& r) {
  for (int32_t v : r.guard_ids)
    if (v != -1) return false;
  for (float v : r.guard_weights)
    if (std::bit_cast<uint32_t>(v) != 0xFFFFFFFFu) return false;
  return true;
}

GpuResult run_gpu(const Inputs& in, const DeviceInputs& d, const DeviceOutputs& o, cudaError_t* launch_err) {
  o.poison();
  *launch_err = kn::launch_router(make_args(in, d, o), nullptr);
  const cudaError_t sync = cudaDeviceSynchronize();
  if (*launch_err == cudaSuccess) *launch_err = sync;
  return fetch(o);
}

// Distance in representable floats (0 = same bits; NaN vs NaN counts as equal).
int64_t ulp_distance(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return 0;
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<int64_t>::max();
  auto ordered = [](float f) {
    const int32_t i = std::bit_cast<int32_t>(f);
    return i < 0 ? static_cast<int64_t>(std::numeric_limits<int32_t>::min()) - i : static_cast<int64_t>(i);
  };
  return std::llabs(ordered(a) - ordered(b));
}

struct Diff {
  int64_t id_mismatches = 0, weight_mismatches = 0, max_ulp = 0;
  std::string first;
};

// Compares; `skip(i)` excludes entries (error cases).
Diff compare(const ref::Routing& want, const GpuResult& got, int k,
             const std::function<bool(size_t)>& skip = nullptr) {
  Diff d;
  for (size_t i = 0; i < want.ids.size(); ++i) {
    if (skip && skip(i)) continue;
    const bool id_bad = want.ids[i] != got.ids[i];
    const int64_t ulp = ulp_distance(want.weights[i], got.weights[i]);
    if (id_bad) ++d.id_mismatches;
    if (ulp != 0) ++d.weight_mismatches, d.max_ulp = std::max(d.max_ulp, ulp);
    if ((id_bad || ulp != 0) && d.first.empty()) {
      char b[256];
      std::snprintf(b, sizeof(b), "token %zu slot %zu: ref id %d w %.9g (0x%08x), gpu id %d w %.9g (0x%08x)",
                    i / k, i % k, want.ids[i], want.weights[i], std::bit_cast<uint32_t>(want.weights[i]),
                    got.ids[i], got.weights[i], std::bit_cast<uint32_t>(got.weights[i]));
      d.first = b;
    }
  }
  return d;
}

// Fails on any id difference and on any non-bit-equal weight (counts and max ulp reported).
void expect_equal(const ref::Routing& want, const GpuResult& got, int k, const std::string& what,
                  const std::function<bool(size_t)>& skip = nullptr) {
  const Diff d = compare(want, got, k, skip);
  EXPECT_EQ(d.id_mismatches, 0) << what << ": " << d.id_mismatches << " ids differ; first: " << d.first;
  EXPECT_EQ(d.weight_mismatches, 0) << what << ": " << d.weight_mismatches
                                    << " weights not bit-equal, max " << d.max_ulp << " ulp; first: " << d.first;
  EXPECT_TRUE(guards_intact(got)) << what << ": write past the [T, k] outputs";
}

// One full case: inputs, reference, GPU, comparison. Returns wall seconds.
double run_case(const Case& c, uint64_t seed) {
  const auto t0 = std::chrono::steady_clock::now();
  SCOPED_TRACE(c.name());
  const Inputs in = make_inputs(c, seed);
  const ref::Routing want = reference(in);
  const DeviceInputs d(in);
  const DeviceOutputs o(static_cast<size_t>(c.tokens) * c.k);
  cudaError_t e;
  const GpuResult got = run_gpu(in, d, o, &e);
  EXPECT_EQ(e, cudaSuccess) << cudaGetErrorString(e);
  if (e != cudaSuccess) return 0;
  expect_equal(want, got, c.k, c.name());
  EXPECT_EQ(got.err[0], 0) << c.name();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A group count dividing E (cycling 4, 8, 16, 1, 2, ...) and a topk_group that keeps >= k experts.
void pick_groups(Case& c, int salt) {
  const int choices[] = {4, 8, 16, 1, 2, 32, 3, 5};
  c.n_group = 1;
  for (int i = 0; i < 8; ++i) {
    const int g = choices[(salt + i) % 8];
    if (c.experts % g == 0 && g <= c.experts) {
      c.n_group = g;
      break;
    }
  }
  const int size = c.experts / c.n_group;
  const int min_groups = (c.k + size - 1) / size;
  c.topk_group = std::min(c.n_group, std::max(min_groups, 1 + salt % c.n_group));
}

// ================================================================================== tests ====

TEST(RouterGpu, MatchesReferenceCoveringSet) {
  const uint64_t seed = seed_once();
  const int64_t tokens[] = {1, 2, 3, 17, 64, 255, 256, 1000, 4096, 16384, 65536, 262144};
  const int experts[] = {8, 32, 64, 128, 160, 256, 257, 384, 512, 1024};
  const int ks[] = {1, 2, 4, 6, 8, 10, 16};
  constexpr int kVariants = static_cast<int>(std::size(kAllVariants));
  std::vector<Case> cases;
  for (int i = 0; i < 4 * kVariants; ++i) {  // every variant 4 times: both dtypes, all skews
    Case c;
    c.variant = kAllVariants[i % kVariants];
    c.bf16 = (i / kVariants) % 2 == 1;
    c.skew = static_cast<Skew>((i + i / kVariants) % 3);
    c.tokens = tokens[(i * 5 + i / kVariants) % 12];
    c.experts = experts[(i * 3 + i / kVariants) % 10];
    c.k = std::min(ks[(i * 2 + i / kVariants) % 7], c.experts);
    // Keep the CPU reference affordable: the largest token counts with E <= 256 here (the
    // 262144 x 1024 cases are RouterGpu.LargestShapes).
    if (c.tokens >= 65536 && c.experts > 256) c.experts = 160 + 96 * (i % 2);
    if (grouped(c.variant)) pick_groups(c, i);
    cases.push_back(c);
  }
  // Make sure every axis value appears (the rotation above covers them; assert it).
  for (int64_t t : tokens)
    EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [&](const Case& c) { return c.tokens == t; })) << t;
  for (int e : experts)
    EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [&](const Case& c) { return c.experts == e; })) << e;
  for (int k : ks)
    EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [&](const Case& c) { return c.k == k; })) << k;
  double total = 0;
  for (size_t i = 0; i < cases.size(); ++i) total += run_case(cases[i], seed + 1000 * i);
  std::printf("[router] %zu covering cases, %.1f s\n", cases.size(), total);
}

TEST(RouterGpu, LargestShapes) {
  const uint64_t seed = seed_once();
  Case a;  // 262144 x 1024 bf16 softmax top-8 renormalised, Zipf
  a.variant = Variant::kSoftmaxRenorm, a.tokens = 262144, a.experts = 1024, a.k = 8, a.bf16 = true, a.skew = Skew::kZipf;
  Case b;  // 262144 x 1024 fp32 DeepSeek-V3 grouped (8 groups, keep 4), top-8
  b.variant = Variant::kDeepSeekV3, b.tokens = 262144, b.experts = 1024, b.k = 8, b.bf16 = false,
  b.n_group = 8, b.topk_group = 4;
  Case c;  // 262144 x 256 bf16 sigmoid + bias, top-16, one-hot
  c.variant = Variant::kSigmoidBias, c.tokens = 262144, c.experts = 256, c.k = 16, c.bf16 = true, c.skew = Skew::kOneHot;
  for (const Case& x : {a, b, c}) {
    const double s = run_case(x, seed + 77);
    std::printf("[router] %s: %.1f s\n", x.name().c_str(), s);
  }
}

TEST(RouterGpu, GroupedSelection) {
  const uint64_t seed = seed_once();
  struct G { int e, n_group, topk_group, k; };
  const G configs[] = {
      {256, 1, 1, 8},   {256, 4, 1, 8},   {256, 4, 2, 16},  {256, 8, 4, 8},   {256, 8, 1, 1},  {256, 8, 8, 16},
      {256, 16, 1, 4},  {256, 16, 5, 10}, {256, 16, 16, 6}, {256, 32, 3, 6},  {256, 64, 7, 16}, {256, 256, 9, 8},
      {384, 3, 2, 8},   {160, 5, 2, 6},   {160, 16, 3, 10}, {1024, 4, 2, 8},  {1024, 8, 4, 16}, {1024, 1024, 40, 16},
      {64, 2, 1, 8},    {8, 4, 2, 2},     {8, 8, 3, 3},     {257, 257, 16, 16}, {512, 16, 4, 8},
  };
  int i = 0;
  for (const G& g : configs) {
    for (const Variant v : {Variant::kDeepSeekV3, Variant::kSigmoidGroupedNoBias}) {
      Case c;
      c.variant = v, c.tokens = 1000 + 7 * i, c.experts = g.e, c.k = g.k, c.n_group = g.n_group, c.topk_group = g.topk_group;
      c.bf16 = i % 2 == 0;
      c.skew = static_cast<Skew>(i % 3);
      run_case(c, seed + 31 * ++i);
    }
  }
  // Grouped with the other scores (softmax, sqrt-softplus) through the same path.
  for (const fm::ScoreFunction f : {fm::ScoreFunction::kSoftmax, fm::ScoreFunction::kSqrtSoftplus}) {
    Case c;
    c.variant = Variant::kDeepSeekV3, c.tokens = 4096, c.experts = 256, c.k = 8, c.n_group = 8, c.topk_group = 4;
    Inputs in = make_inputs(c, seed + 5);
    in.p.router.score = f;
    SCOPED_TRACE(fm::to_string(f));
    const ref::Routing want = reference(in);
    const DeviceInputs d(in);
    const DeviceOutputs o(static_cast<size_t>(c.tokens) * c.k);
    cudaError_t e;
    const GpuResult got = run_gpu(in, d, o, &e);
    ASSERT_EQ(e, cudaSuccess);
    expect_equal(want, got, c.k, "grouped score");
  }
}

TEST(RouterGpu, NonFiniteLogitsAndExactTies) {
  const uint64_t seed = seed_once();
  for (const int experts : {64, 257, 1024}) {
    for (const bool bf16 : {false, true}) {
      for (const Variant v : {Variant::kSoftmax, Variant::kSoftmaxRenorm, Variant::kSigmoidBias, Variant::kDeepSeekV3,
                              Variant::kDeepSeekV4, Variant::kBiasedSoftmax, Variant::kGptOss, Variant::kLlama4,
                              Variant::kHashSoftmax, Variant::kHashSigmoid}) {
        Case c;
        c.variant = v, c.tokens = 300, c.experts = experts, c.k = v == Variant::kLlama4 ? 1 : 6, c.bf16 = bf16;
        if (grouped(v)) pick_groups(c, 1);
        SCOPED_TRACE(c.name());
        Inputs in = make_inputs(c, seed + experts + bf16);
        Rng rng(seed ^ 0x51ED);
        const float specials[] = {kNaN, kInf, -kInf, -0.f, 0.f, FLT_MAX, -FLT_MAX, 1e-40f, 88.f, -100.f};
        for (int64_t t = 0; t < c.tokens; ++t) {
          float* row = in.logits.data() + t * experts;
          switch (t % 10) {
            case 0: std::fill(row, row + experts, kNaN); break;          // all NaN: all -inf
            case 1: std::fill(row, row + experts, -kInf); break;         // all -inf
            case 2: std::fill(row, row + experts, 0.25f); break;         // all equal
            case 3:                                                      // two +inf (FLT_MAX tie)
              row[experts / 3] = kInf, row[experts - 1] = kInf;
              break;
            case 4: std::fill(row, row + experts, -0.f), row[5] = 0.f; break;  // signed zeros tie
            default:
              for (int j = 0; j < experts / 8; ++j) row[rng.below(experts)] = specials[rng.below(10)];
          }
          if (bf16)
            for (int x = 0; x < experts; ++x) {
              in.logits_bf16[t * experts + x] = ref::float_to_bf16(row[x]);
              row[x] = ref::bf16_to_float(in.logits_bf16[t * experts + x]);
            }
        }
        const ref::Routing want = reference(in);
        const DeviceInputs d(in);
        const DeviceOutputs o(static_cast<size_t>(c.tokens) * c.k);
        cudaError_t e;
        const GpuResult got = run_gpu(in, d, o, &e);
        ASSERT_EQ(e, cudaSuccess);
        expect_equal(want, got, c.k, c.name());
        for (float w : got.weights) ASSERT_FALSE(std::isnan(w)) << "NaN weight";
      }
    }
  }
}

TEST(RouterGpu, PrecomputedOutOfRangeIds) {
  const uint64_t seed = seed_once();
  for (const int bad_id : {16, 17, 1 << 30, -1, -7, std::numeric_limits<int32_t>::min()}) {
    Case c;
    c.variant = Variant::kPrecomputed, c.tokens = 1000, c.experts = 16, c.k = 4;
    Inputs in = make_inputs(c, seed + 3);
    const int64_t bad_token = 617, bad_slot = 2;
    in.ids_in[bad_token * c.k + bad_slot] = bad_id;
    // The reference rejects the whole call; compare the rest against a copy where the bad slot
    // carries weight 0 (what the kernel routes: id -1, weight 0).
    Inputs sane = in;
    sane.ids_in[bad_token * c.k + bad_slot] = 0;
    sane.w_in[bad_token * c.k + bad_slot] = 0.f;
    ref::Routing r;
    EXPECT_EQ(ref::route(in.p, in.tensors(), &r).code(), fm::StatusCode::kOutOfRange);
    ref::Routing want = reference(sane);
    want.ids[bad_token * c.k + bad_slot] = -1;
    const DeviceInputs d(in);
    const DeviceOutputs o(static_cast<size_t>(c.tokens) * c.k);
    cudaError_t e;
    const GpuResult got = run_gpu(in, d, o, &e);
    ASSERT_EQ(e, cudaSuccess);
    expect_equal(want, got, c.k, "precomputed bad id " + std::to_string(bad_id));
    EXPECT_EQ(got.err[0], kn::kErrorIdOutOfRange);
    EXPECT_EQ(got.err[1], bad_token);
    EXPECT_EQ(got.err[2], bad_slot);
    EXPECT_EQ(got.err[3], bad_id);
    EXPECT_EQ(got.ids[bad_token * c.k + bad_slot], -1);
    EXPECT_EQ(got.weights[bad_token * c.k + bad_slot], 0.f);
  }
  // Several offenders: one of them is reported (atomicCAS: the first to arrive), consistently.
  Case c;
  c.variant = Variant::kPrecomputed, c.tokens = 50000, c.experts = 64, c.k = 8;
  Inputs in = make_inputs(c, seed + 4);
  std::vector<std::pair<int64_t, int>> bad = {{3, 0}, {4999, 7}, {25000, 3}, {49999, 5}};
  for (auto [t, s] : bad) in.ids_in[t * c.k + s] = t % 2 ? 64 + s : -1 - s;
  const DeviceInputs d(in);
  const DeviceOutputs o(static_cast<size_t>(c.tokens) * c.k);
  cudaError_t e;
  const GpuResult got = run_gpu(in, d, o, &e);
  ASSERT_EQ(e, cudaSuccess);
  EXPECT_EQ(got.err[0], kn::kErrorIdOutOfRange);
  bool found = false;
  for (auto [t, s] : bad) {
    EXPECT_EQ(got.ids[t * c.k + s], -1);
    EXPECT_EQ(got.weights[t * c.k + s], 0.f);
    found |= got.err[1] == t && got.err[2] == s && got.err[3] == in.ids_in[t * c.k + s];
  }
  EXPECT_TRUE(found) << "reported token " << got.err[1] << " slot " << got.err[2] << " id " << got.err[3];
  EXPECT_TRUE(guards_intact(got));
}

TEST(RouterGpu, HashOutOfRange) {
  const uint64_t seed = seed_once();
  for (const Variant v : {Variant::kHashNoLogits, Variant::kHashSigmoid, Variant::kHashSoftmax}) {
    Case c;
    c.variant = v, c.tokens = 2000, c.experts = 32, c.k = 6;
    SCOPED_TRACE(c.name());
    {  // a table entry >= E
      Inputs in = make_inputs(c, seed + 9);
      const int64_t vocab_row = in.token_ids[1234];
      in.table[vocab_row * c.k + 4] = 32;
      const DeviceInputs d(in);
      const DeviceOutputs o(static_cast<size_t>(c.tokens) * c.k);
      cudaError_t e;
      const GpuResult got = run_gpu(in, d, o, &e);
      ASSERT_EQ(e, cudaSuccess);
      ASSERT_EQ(got.err[0], kn::kErrorIdOutOfRange);
      ASSERT_TRUE(got.err[1] >= 0 && got.err[1] < c.tokens) << got.err[1];
      EXPECT_EQ(in.token_ids[got.err[1]], vocab_row);
      EXPECT_EQ(got.err[2], 4);
      EXPECT_EQ(got.err[3], 32);
      Inputs sane = in;
      sane.table[vocab_row * c.k + 4] = 0;
      const ref::Routing want = reference(sane);
      for (int64_t t = 0; t < c.tokens; ++t) {
        if (in.token_ids[t] != vocab_row) continue;
        EXPECT_EQ(got.ids[t * c.k + 4], -1);
        EXPECT_EQ(got.weights[t * c.k + 4], 0.f);
      }
      expect_equal(want, got, c.k, "hash bad table entry",
                   [&](size_t i) { return in.token_ids[i / c.k] == vocab_row; });
    }
    {  // a token id outside the table
      Inputs in = make_inputs(c, seed + 10);
      in.token_ids[777] = in.vocab + 5;
      const DeviceInputs d(in);
      const DeviceOutputs o(static_cast<size_t>(c.tokens) * c.k);
      cudaError_t e;
      const GpuResult got = run_gpu(in, d, o, &e);
      ASSERT_EQ(e, cudaSuccess);
      EXPECT_EQ(got.err[0], kn::kErrorHashTokenOutOfRange);
      EXPECT_EQ(got.err[1], 777);
      EXPECT_EQ(got.err[2], -1);
      EXPECT_EQ(got.err[3], in.vocab + 5);
      for (int j = 0; j < c.k; ++j) {
        EXPECT_EQ(got.ids[777 * c.k + j], -1);
        EXPECT_EQ(got.weights[777 * c.k + j], 0.f);
      }
      Inputs sane = in;
      sane.token_ids[777] = 0;
      const ref::Routing want = reference(sane);
      expect_equal(want, got, c.k, "hash bad token id", [&](size_t i) { return i / c.k == 777; });
    }
  }
}

TEST(RouterGpu, UnalignedLogitsUseTheSameOrder) {
  // A logits pointer that is not 16-byte aligned takes the scalar loads of the same layout.
  const uint64_t seed = seed_once();
  for (const bool bf16 : {false, true}) {
    for (const Variant v : {Variant::kSoftmaxRenorm, Variant::kDeepSeekV3, Variant::kGptOss}) {
      Case c;
      c.variant = v, c.tokens = 999, c.experts = 256, c.k = 8, c.bf16 = bf16, c.n_group = 8, c.topk_group = 4;
      SCOPED_TRACE(c.name());
      const Inputs in = make_inputs(c, seed + 11);
      const ref::Routing want = reference(in);
      const size_t elem = bf16 ? 2 : 4, bytes = in.logits.size() * elem;
      DeviceInputs d(in);
      DeviceBuffer shifted(bytes + 16);
      const void* src = bf16 ? static_cast<const void*>(in.logits_bf16.data()) : in.logits.data();
      cudaMemcpy(static_cast<char*>(shifted.get()) + elem, src, bytes, cudaMemcpyHostToDevice);
      const DeviceOutputs o(static_cast<size_t>(c.tokens) * c.k);
      o.poison();
      kn::RouterArgs a = make_args(in, d, o);
      a.logits = static_cast<char*>(shifted.get()) + elem;
      ASSERT_EQ(kn::launch_router(a, nullptr), cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      expect_equal(want, fetch(o), c.k, "unaligned");
    }
  }
}

TEST(RouterGpu, CudaGraphReplay) {
  const uint64_t seed = seed_once();
  for (const Variant v : {Variant::kDeepSeekV3, Variant::kPrecomputed, Variant::kSoftmax}) {
    Case c;
    c.variant = v, c.tokens = 4096, c.experts = 256, c.k = 8, c.bf16 = true, c.n_group = 8, c.topk_group = 4;
    SCOPED_TRACE(c.name());
    const Inputs in = make_inputs(c, seed + 12);
    const ref::Routing want = reference(in);
    const DeviceInputs d(in);
    const DeviceOutputs o(static_cast<size_t>(c.tokens) * c.k);
    cudaStream_t s;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    const cudaError_t launched = kn::launch_router(make_args(in, d, o), s);
    ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
    ASSERT_EQ(launched, cudaSuccess);
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    for (int replay = 0; replay < 3; ++replay) {
      o.poison();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      expect_equal(want, fetch(o), c.k, "graph replay " + std::to_string(replay));
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(s);
  }
}

TEST(RouterGpu, InvalidArgumentsAndEmpty) {
  kn::RouterArgs a;
  a.config = fm::RouterConfig::softmax_topk(2, false);
  a.num_tokens = 0;
  a.num_experts = 8;
  EXPECT_EQ(kn::launch_router(a, nullptr), cudaSuccess);  // nothing to do, nothing launched
  DeviceBuffer logits(64 * 4), ids(64 * 4), w(64 * 4);
  a.num_tokens = 4;
  a.logits = logits.get();
  a.topk_ids = ids.as<int32_t>();
  a.topk_weights = w.as<float>();
  EXPECT_EQ(kn::launch_router(a, nullptr), cudaSuccess);
  kn::RouterArgs b = a;
  b.num_experts = 1025;
  EXPECT_EQ(kn::launch_router(b, nullptr), cudaErrorInvalidValue);
  b = a;
  b.config.top_k = 9;
  EXPECT_EQ(kn::launch_router(b, nullptr), cudaErrorInvalidValue);  // k > E
  b = a;
  b.config.top_k = 17;
  b.num_experts = 64;
  EXPECT_EQ(kn::launch_router(b, nullptr), cudaErrorInvalidValue);  // k > 16
  b = a;
  b.logits = nullptr;
  EXPECT_EQ(kn::launch_router(b, nullptr), cudaErrorInvalidValue);
  b = a;
  b.config = fm::RouterConfig::deepseek_v3(2, 3, 1, 1.f);  // 3 groups do not divide 8
  b.correction_bias = w.as<float>();
  EXPECT_EQ(kn::launch_router(b, nullptr), cudaErrorInvalidValue);
  b.config = fm::RouterConfig::deepseek_v3(2, 4, 1, 1.f);
  b.correction_bias = nullptr;  // bias required
  EXPECT_EQ(kn::launch_router(b, nullptr), cudaErrorInvalidValue);
  b = a;
  b.config = fm::RouterConfig::precomputed(2);
  EXPECT_EQ(kn::launch_router(b, nullptr), cudaErrorInvalidValue);  // no ids/weights in
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_NE(std::string(kn::router_kernel_name()), "");
}

// The shared float32 math evaluated on the device equals the host's, bit for bit.
TEST(RouterGpu, DeviceMathEqualsHost) {
  const uint64_t seed = seed_once();
  Rng rng(seed ^ 0xABCDEF);
  std::vector<float> a, b;
  auto push = [&](float x, float y) { a.push_back(x), b.push_back(y); };
  const float specials[] = {0.f, -0.f, 1.f, -1.f, 0.5f, 2.f, 1e-45f, -1e-45f, 1e-40f, 1.17549435e-38f, 3e-39f,
                            FLT_MAX, -FLT_MAX, kInf, -kInf, kNaN, 20.f, 20.000002f, 88.72f, 88.73f, -87.3f,
                            -103.97f, -104.f, 1e30f, 1025.f, 3.f, 7.f, 1e-20f, 0x1.fffffep0f, 0x1p-126f};
  for (float x : specials)
    for (float y : specials) push(x, y);
  for (int i = 0; i < (1 << 21); ++i) {  // every 2048th float bit pattern, against random partners
    const float x = std::bit_cast<float>(static_cast<uint32_t>(i) << 11 | rng.below(2048));
    push(x, std::bit_cast<float>(static_cast<uint32_t>(rng.next())));
  }
  for (int i = 0; i < (1 << 21); ++i) {  // the router's ranges: scores, softmax terms and sums
    const float x = 40.f * (rng.uniform() - 0.75f);
    push(x, 1.f + 1024.f * rng.uniform());
    push(std::ldexp(rng.uniform(), -static_cast<int>(rng.below(150))), 1.f + 16.f * rng.uniform());
  }
  const int64_t n = static_cast<int64_t>(a.size());
  const DeviceBuffer da = to_device(a), db = to_device(b);
  DeviceBuffer dout(static_cast<size_t>(n) * 4);
  struct F {
    kn::HdFunction f;
    const char* name;
    std::function<float(float, float)> host;
  };
  const F fns[] = {
      {kn::HdFunction::kExpf, "expf", [](float x, float) { return fm::hd::expf(x); }},
      {kn::HdFunction::kLog1pf, "log1pf", [](float x, float) { return fm::hd::log1pf(x); }},
      {kn::HdFunction::kSigmoid, "sigmoid", [](float x, float) { return fm::hd::sigmoid(x); }},
      {kn::HdFunction::kSqrtSoftplus, "sqrt_softplus", [](float x, float) { return fm::hd::sqrt_softplus(x); }},
      {kn::HdFunction::kDiv, "div", [](float x, float y) { return fm::hd::div(x, y); }},
      {kn::HdFunction::kSqrt, "sqrt", [](float x, float) { return fm::hd::sqrt(x); }},
      {kn::HdFunction::kDivisor, "divisor", [](float x, float y) { return fm::hd::Divisor(y).divide(x); }},
      {kn::HdFunction::kDivisorNonnegative, "divisor_nonnegative",
       [](float x, float y) {
         const float a2 = std::isfinite(x) ? std::fabs(x) : 0.f;
         const float b2 = (std::isfinite(y) && y != 0.f) ? std::fabs(y) : 1.f;
         return fm::hd::Divisor(b2).divide_nonnegative(a2);
       }},
  };
  for (const F& f : fns) {
    dout.poison(0xAB);
    ASSERT_EQ(kn::eval_hd_function(f.f, da.as<float>(), db.as<float>(), dout.as<float>(), n, nullptr), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<float> got = to_host<float>(dout.get(), static_cast<size_t>(n));
    int64_t bad = 0;
    std::string first;
    for (int64_t i = 0; i < n; ++i) {
      const float want = f.host(a[i], b[i]);
      if (ulp_distance(want, got[i]) == 0) continue;
      if (bad++ == 0) {
        char buf[200];
        std::snprintf(buf, sizeof(buf), "(%a, %a): host %a, device %a", a[i], b[i], want, got[i]);
        first = buf;
      }
    }
    EXPECT_EQ(bad, 0) << f.name << ": " << bad << " of " << n << " differ; first " << first;
  }
}

// The sigmoid's reciprocal (hd::recip_ge1_device: rcp.approx.ftz.f32 + one Newton step in float
// below 2^126, the double-precision version above) is
// correctly rounded for EVERY float d in [1, FLT_MAX] (1.07e9 values; the sigmoid's denominator
// 1 + e^-x is >= 1), compared with __frcp_rn. Also prints the other candidates' mismatches.
TEST(RouterGpu, RecipGe1Exhaustive) {
  DeviceBuffer counts(4 * sizeof(unsigned long long)), first(4 * sizeof(unsigned int));
  ASSERT_EQ(kn::check_recip_ge1_all(counts.as<unsigned long long>(), first.as<unsigned int>(), nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<unsigned long long> c = to_host<unsigned long long>(counts.get(), 4);
  const std::vector<unsigned int> f = to_host<unsigned int>(first.get(), 4);
  const char* names[4] = {"recip_ge1_device (sigmoid)", "double precision (3 Newton)",
                          "rcp.approx.ftz + 1 Newton", "rcp.approx + 2 Newton"};
  for (int i = 0; i < 4; ++i)
    std::printf("[recip exhaustive] %-42s mismatches %llu, first d bits 0x%08x\n", names[i], c[i],
                c[i] != 0 ? f[i] : 0u);
  EXPECT_EQ(c[0], 0u) << "first mismatch at d bits " << std::hex << f[0];
  EXPECT_EQ(c[1], 0u) << "first mismatch at d bits " << std::hex << f[1];
}

// Not a check: kernel times (printed) for the shapes the brief names.
TEST(RouterGpu, Timing) {
  const uint64_t seed = seed_once();
  struct T { Variant v; int64_t tokens; int e, k; bool bf16; };
  const T shapes[] = {
      {Variant::kSoftmax, 1, 256, 8, true},          {Variant::kSoftmax, 256, 256, 8, true},
      {Variant::kDeepSeekV3, 256, 256, 8, true},     {Variant::kSoftmax, 16384, 256, 8, true},
      {Variant::kSoftmax, 16384, 256, 8, false},     {Variant::kDeepSeekV3, 16384, 256, 8, true},
      {Variant::kDeepSeekV3, 16384, 256, 8, false},  {Variant::kSigmoidBias, 16384, 384, 8, true},
      {Variant::kDeepSeekV4, 16384, 256, 6, true},   {Variant::kGptOss, 16384, 128, 4, true},
      {Variant::kLlama4, 16384, 128, 1, true},       {Variant::kSoftmaxRenorm, 16384, 8, 2, true},
      {Variant::kSoftmax, 16384, 1024, 8, true},     {Variant::kSoftmax, 262144, 256, 8, true},
      {Variant::kPrecomputed, 262144, 256, 8, true}, {Variant::kHashSigmoid, 262144, 256, 8, true},
  };
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (const T& s : shapes) {
    Case c;
    c.variant = s.v, c.tokens = s.tokens, c.experts = s.e, c.k = s.k, c.bf16 = s.bf16, c.n_group = 8, c.topk_group = 4;
    const Inputs in = make_inputs(c, seed);
    const DeviceInputs d(in);
    const DeviceOutputs o(static_cast<size_t>(c.tokens) * c.k);
    const kn::RouterArgs args = make_args(in, d, o);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(kn::launch_router(args, nullptr), cudaSuccess);
    constexpr int kIters = 20;
    cudaEventRecord(e0);
    for (int i = 0; i < kIters; ++i) kn::launch_router(args, nullptr);
    cudaEventRecord(e1);
    ASSERT_EQ(cudaEventSynchronize(e1), cudaSuccess);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    const double us = 1000.0 * ms / kIters;
    const double bytes = needs_logits(s.v) ? static_cast<double>(s.tokens) * s.e * (s.bf16 ? 2 : 4) : 0.0;
    std::printf("[router timing] %-26s T=%-6lld E=%-4d k=%-2d %s: %8.2f us  (logits %.1f MB, %.0f GB/s)\n",
                variant_name(s.v), static_cast<long long>(s.tokens), s.e, s.k, s.bf16 ? "bf16" : "f32 ", us,
                bytes / 1e6, bytes / (us * 1e3));
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
}

}  // namespace
