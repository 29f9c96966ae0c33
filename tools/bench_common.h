// Helpers shared by the `fusedmoe bench` suites (bench.cpp: dispatch, layer; bench_coldstart.cpp;
// bench_rope.cpp): allocation, upload, event/graph timing, the same-run read bandwidth, the row
// table. Method: shared/benchmark-protocol.md.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "fusedmoe/fusedmoe.h"
#include "fusedmoe/reference.h"
#include "kernels/util/stream_read.h"

namespace fusedmoe_bench {

namespace fm = fusedmoe;

inline constexpr int kGraphCalls = 20;

#define BENCH_CUDA(expr)                                                                          \
  do {                                                                                            \
    cudaError_t e_ = (expr);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "bench: %s failed: %s (%s:%d)\n", #expr, cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

struct Buf {
  void* p = nullptr;
  explicit Buf(size_t n) { BENCH_CUDA(cudaMalloc(&p, std::max<size_t>(n, 256))); }
  ~Buf() { cudaFree(p); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
};

template <class T>
void upload(void* dst, const std::vector<T>& v) {
  if (!v.empty()) BENCH_CUDA(cudaMemcpy(dst, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
}

// `fn` captured kGraphCalls times into one graph (then launched 3 times to warm up); sample() launches
// it once more and returns the per-call microseconds. For timing several variants in interleaved
// rounds (interleaved_medians), so that drift over a run (clocks, temperature) spreads evenly.
class GraphTimer {
 public:
  template <class Fn>
  GraphTimer(cudaStream_t s, Fn fn) : s_(s) {
    BENCH_CUDA(cudaStreamBeginCapture(s_, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < kGraphCalls; ++i) fn();
    BENCH_CUDA(cudaStreamEndCapture(s_, &g_));
    BENCH_CUDA(cudaGraphInstantiate(&ge_, g_, 0));
    BENCH_CUDA(cudaEventCreate(&a_));
    BENCH_CUDA(cudaEventCreate(&b_));
    for (int w = 0; w < 3; ++w) BENCH_CUDA(cudaGraphLaunch(ge_, s_));
    BENCH_CUDA(cudaStreamSynchronize(s_));
  }
  ~GraphTimer() {
    cudaEventDestroy(a_);
    cudaEventDestroy(b_);
    cudaGraphExecDestroy(ge_);
    cudaGraphDestroy(g_);
  }
  GraphTimer(const GraphTimer&) = delete;
  GraphTimer& operator=(const GraphTimer&) = delete;
  double sample() {
    BENCH_CUDA(cudaEventRecord(a_, s_));
    BENCH_CUDA(cudaGraphLaunch(ge_, s_));
    BENCH_CUDA(cudaEventRecord(b_, s_));
    BENCH_CUDA(cudaEventSynchronize(b_));
    float ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&ms, a_, b_));
    return 1e3 * ms / kGraphCalls;
  }

 private:
  cudaStream_t s_;
  cudaGraph_t g_ = nullptr;
  cudaGraphExec_t ge_ = nullptr;
  cudaEvent_t a_ = nullptr, b_ = nullptr;
};

// Per timer, the median of rounds x per_round samples, taken round by round (each round samples
// every timer per_round times in list order).
inline std::vector<double> interleaved_medians(const std::vector<std::unique_ptr<GraphTimer>>& timers, int rounds,
                                               int per_round) {
  std::vector<std::vector<double>> t(timers.size());
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < timers.size(); ++i)
      for (int k = 0; k < per_round; ++k) t[i].push_back(timers[i]->sample());
  std::vector<double> med;
  for (auto& v : t) {
    std::sort(v.begin(), v.end());
    med.push_back(v.empty() ? 0.0 : v[v.size() / 2]);
  }
  return med;
}

// Median per-call microseconds of `fn` captured `kGraphCalls` times into one graph, `reps` launches.
template <class Fn>
double time_graph(cudaStream_t s, Fn fn, int reps = 25) {
  std::vector<std::unique_ptr<GraphTimer>> one;
  one.push_back(std::make_unique<GraphTimer>(s, fn));
  return interleaved_medians(one, 1, reps)[0];
}

// Median seconds of `fn` on stream `s`, each repetition timed alone with events, after warm-up.
template <class Fn>
double median_seconds(cudaStream_t s, Fn fn, int warmup = 3, int reps = 10) {
  for (int i = 0; i < warmup; ++i) fn();
  BENCH_CUDA(cudaStreamSynchronize(s));
  cudaEvent_t a, b;
  BENCH_CUDA(cudaEventCreate(&a));
  BENCH_CUDA(cudaEventCreate(&b));
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(a, s);
    fn();
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms * 1e-3);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

inline double measure_read_bw(cudaStream_t s, int num_sms) {
  const size_t bytes = size_t{4} << 30;
  Buf buf(bytes), sink(16);
  BENCH_CUDA(cudaMemset(buf.p, 0x5a, bytes));
  return bytes / median_seconds(s, [&] {
    (void)fm::kernels::launch_stream_read(buf.p, bytes, static_cast<uint32_t*>(sink.p), num_sms, s);
  });
}

// An L2 flush: a streaming read of 256 MB (> 4x the 50-60 MB L2 of H100 / H200) on the stream,
// every SM reading (the layer suite's cold weights, the dispatch suite's --flushed rows).
struct L2Flush {
  static constexpr size_t kBytes = size_t{256} << 20;
  Buf buf{kBytes}, sink{16};
  int num_sms = 0;
  L2Flush() {
    BENCH_CUDA(cudaMemset(buf.p, 0x33, kBytes));
    int dev = 0;
    BENCH_CUDA(cudaGetDevice(&dev));
    BENCH_CUDA(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, dev));
  }
  void operator()(cudaStream_t s) const {
    (void)fm::kernels::launch_stream_read(buf.p, kBytes, static_cast<uint32_t*>(sink.p), num_sms, s);
  }
  // The flush, then ~256 KB of straight-line code on every SM (launch_code_sweep): the next
  // kernel's instructions come cold into each SM as well, as after a model's other kernels.
  void with_code_sweep(cudaStream_t s) const {
    (*this)(s);
    (void)fm::kernels::launch_code_sweep(static_cast<uint32_t*>(sink.p), num_sms, s);
  }
};

struct Row {
  std::string case_name, stage;
  int64_t tokens = 0;
  double us = 0, bytes = 0, gbps = 0, floor_us = 0, pct_floor = 0, tflops = 0;
  std::string peer;  // peer figure for context
  double us_hot = 0;  // second column where a suite reports hot-cache figures (rope); 0 = none
};

// A row of a memory-bound case: GB/s, and the floor and its share from the same-run read
// bandwidth `bw` (bytes/s) and the optional GEMM rate `peak` (FLOP/s; 0 = bytes only).
inline Row measured_row(std::string case_name, std::string stage, int64_t tokens, double us, double bytes, double bw,
                        double flops = 0, double peak = 0) {
  Row r;
  r.case_name = std::move(case_name);
  r.stage = std::move(stage);
  r.tokens = tokens;
  r.us = us;
  r.bytes = bytes;
  r.gbps = bytes / (us * 1e-6) / 1e9;
  r.tflops = flops / (us * 1e-6) / 1e12;
  r.floor_us = std::max(bytes / bw, peak > 0 ? flops / peak : 0.0) * 1e6;
  r.pct_floor = 100.0 * r.floor_us / us;
  return r;
}


// Fills `bytes` of device memory with a repeated 16 MiB block of N(0, sigma) values rounded by
// `to_bits` (made once per element type, from the first call's seed).
template <class Bits>
inline void fill_repeating(void* dst, size_t bytes, uint64_t seed, float sigma, Bits (*to_bits)(float)) {
  static std::vector<Bits> block;
  if (block.empty()) {
    block.resize((size_t{16} << 20) / sizeof(Bits));
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd(0.f, sigma);
    for (auto& x : block) x = to_bits(nd(rng));
  }
  const size_t block_bytes = block.size() * sizeof(Bits);
  for (size_t off = 0; off < bytes; off += block_bytes)
    BENCH_CUDA(cudaMemcpy(static_cast<char*>(dst) + off, block.data(), std::min(block_bytes, bytes - off),
                          cudaMemcpyHostToDevice));
}

// Random bf16 values, N(0, 0.02) (never zeros).
inline void fill_random_bf16(void* dst, size_t bytes, uint64_t seed) {
  fill_repeating<uint16_t>(dst, bytes, seed, 0.02f, fm::ref::float_to_bf16);
}

// FP8 e4m3 weights for timing: N(0, 16) values rounded to e4m3 (finite, |v| < 448; with the bench's
// scales of 1/448, weights of ~0.036). (Before session 48 the FP8 cases took fill_random_bf16's
// bytes, about 1 in 256 of them e4m3 NaN codes: every FP8 layer output was NaN.)
inline void fill_random_e4m3(void* dst, size_t bytes, uint64_t seed) {
  fill_repeating<uint8_t>(dst, bytes, seed, 16.f, fm::ref::float_to_e4m3);
}

// Variants against the default, for suites that time each case with switches forced (rows whose
// stage ends in " [label]"): per label, the geometric mean of the time ratio variant / default over
// the (case, tokens) points where both ran, how many points it was faster or slower by over 1 %, and
// the ratio's range. The default of a point is the unlabelled row of the same kind ("layer from
// precomputed top-k ..." or the other "layer ..." rows; per-stage rows are not compared). Empty when
// there is no labelled row.
inline std::string variant_summary(const std::vector<Row>& rows) {
  auto kind = [](const std::string& stage) -> int {
    if (stage.rfind("layer from precomputed", 0) == 0) return 2;
    return stage.rfind("layer ", 0) == 0 ? 1 : 0;
  };
  struct Acc {
    double log_sum = 0, lo = 1e300, hi = 0;
    int n = 0, faster = 0, slower = 0;
  };
  std::vector<std::pair<std::string, Acc>> acc;  // (in order of first appearance)
  for (const Row& r : rows) {
    const int k = kind(r.stage);
    const size_t open = r.stage.rfind(" [");
    if (k == 0 || open == std::string::npos || r.stage.back() != ']') continue;
    const Row* base = nullptr;
    for (const Row& b : rows)
      if (b.case_name == r.case_name && b.tokens == r.tokens && kind(b.stage) == k &&
          b.stage.find(" [") == std::string::npos) {
        base = &b;
        break;
      }
    if (base == nullptr || base->us <= 0) continue;
    const std::string label = r.stage.substr(open + 2, r.stage.size() - open - 3);
    auto it = std::find_if(acc.begin(), acc.end(), [&](const auto& a) { return a.first == label; });
    if (it == acc.end()) it = acc.insert(acc.end(), {label, Acc{}});
    const double ratio = r.us / base->us;
    Acc& a = it->second;
    a.log_sum += std::log(ratio);
    a.lo = std::min(a.lo, ratio);
    a.hi = std::max(a.hi, ratio);
    ++a.n;
    a.faster += ratio < 0.99;
    a.slower += ratio > 1.01;
  }
  std::string out;
  for (const auto& [label, a] : acc) {
    char line[512];
    std::snprintf(line, sizeof line,
                  "  [%s]: %.3f over %d points (faster by > 1 %% at %d, slower at %d; %.3f-%.3f)\n", label.c_str(),
                  std::exp(a.log_sum / a.n), a.n, a.faster, a.slower, a.lo, a.hi);
    out += line;
  }
  if (!out.empty()) out = "variants against the default, time ratio (< 1: faster), geometric mean:\n" + out;
  return out;
}

inline void print_rows(const std::vector<Row>& rows) {
  std::printf("%-14s %-26s %7s %10s %9s %10s %9s %8s  %s\n", "case", "stage", "tokens", "us", "TFLOP/s", "GB/s",
              "floor us", "% floor", "peer (shared/peer-figures.md)");
  double log_sum = 0.0;
  for (const Row& r : rows) {
    std::printf("%-14s %-26s %7lld %10.2f %9.1f %10.1f %9.2f %7.1f%%  %s\n", r.case_name.c_str(), r.stage.c_str(),
                static_cast<long long>(r.tokens), r.us, r.tflops, r.gbps, r.floor_us, r.pct_floor, r.peer.c_str());
    log_sum += std::log(std::max(r.pct_floor, 1e-3) / 100.0);
  }
  if (!rows.empty()) std::printf("geometric mean of floor/time: %.3f over %zu cases\n", std::exp(log_sum / rows.size()), rows.size());
  std::fputs(variant_summary(rows).c_str(), stdout);
}

// Suites in their own files; each appends rows and returns false on a failed check / criterion.
bool bench_coldstart(cudaStream_t s, std::vector<Row>* rows);
bool bench_rope(cudaStream_t s, double read_bw, const std::vector<int64_t>& tokens, std::vector<Row>* rows);

}  // namespace fusedmoe_bench
