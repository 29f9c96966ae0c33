// fusedmoe bench --suite dispatch: route + plan (+ quantise) on the GPU, per stage and together.
//
// Method (shared/benchmark-protocol.md): fresh random inputs per case (seeded), the stage results
// checked against the CPU reference before timing (exact ids and rows), each measured case
// captured in a CUDA graph of `kGraphCalls` calls and replayed; median over repetitions of the
// per-call time. The floor is bytes / read bandwidth, the bandwidth measured in the same run by
// a streaming-read kernel over 4 GiB. Output: a table, CSV and JSON, and the command line.
// This file: the dispatch and layer suites and the command; bench_coldstart.cpp and
// bench_rope.cpp hold the coldstart and rope suites; bench_common.h the shared helpers.
#include "bench.h"
#include "bench_common.h"

#include <dlfcn.h>
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fusedmoe/fusedmoe.h"
#include "fusedmoe/reference.h"
#include "kernels/front/front_launch.h"
#include "kernels/gemm/sm90_bf16_gemm_smoke.h"
#include "kernels/gemm/sm90_bf16_grouped_gemm.h"
#include "kernels/quant/permute_quant_launch.h"
#include "kernels/util/stream_read.h"
#include "testing/layer_data.h"

namespace fm = fusedmoe;
using namespace fusedmoe_bench;

namespace {

// The alignment costs of vLLM's fused MoE on the H200 (shared/peer-figures.md): its
// moe_align_block_size step alone, not measured in this run.
std::string vllm_align_figure(int64_t t) {
  if (t <= 4) return "vLLM helpers 10-11 us (T 1-4)";
  if (t <= 256) return "vLLM align 15-23 us";
  if (t < 4096) return "vLLM align 15-36 us";
  return "vLLM align 36-360 us (4k-16k)";
}

struct Case {
  std::string name;
  fm::MoeProblem problem;
};

std::vector<Case> dispatch_cases() {
  std::vector<Case> v;
  fm::MoeProblem ds = fm::find_preset("dsv3-tp8")->problem;  // E256 k8 grouped+bias, fp8 1x128 groups
  v.push_back({"dsv3-routing", ds});
  fm::MoeProblem qw = fm::find_preset("qwen235-tp8")->problem;  // E128 k8 softmax, bf16
  v.push_back({"qwen3-routing", qw});
  fm::MoeProblem pre = qw;  // E128 k8 from precomputed ids (no router), bf16
  pre.router = fm::RouterConfig::precomputed(qw.router.top_k);
  v.push_back({"qwen3-precomputed", pre});
  return v;
}

// Timeline of the fused front kernel (diagnostic stamps, front.cuh kTraceSlots): `calls` single
// launches of `fn`, each synchronised; per stamp the median over calls of (stamp - first block's
// entry) in microseconds. Stamps: [0] last block entered, [1] last block done routing/quantising,
// [2] block 0 past the grid barrier, [3] group counts of all blocks read, [4] block 0's rows
// (and counts/offsets) written, [5] after the general fallback plan (when it ran), [6] end; then
// block 0's token 0 inside the routing: scores, groups kept, sorted, k rounds, slots stored.
// launches > 1: that many launches back to back per call, the stamps of the last one (its
// instructions and data warm from the one before). A diagnosis build (front.cuh
// FUSEDMOE_FRONT_FINE_TRACE) adds block 0's fine stamps: SM cycles from its entry.
template <class Fn>
std::string front_timeline(cudaStream_t s, Fn fn, int calls = 21, int launches = 1) {
  // Blocks (front.cuh kTraceBlocks): every block stamps its entry, the routing blocks also the
  // rest (one up to 16 tokens unless FUSEDMOE_FRONT_SPLIT, else several); blocks that recorded
  // nothing (0) are skipped.
  const int blocks = 32;
  constexpr int kSlots = 16;  // front.cuh kTraceSlots
  constexpr int kStamps = 12;
  constexpr int kFine = 16;  // front.cuh kFineStamps, after the blocks' slots
  constexpr size_t kWords = size_t{32} * kSlots + kFine;
  Buf tr(8 * kWords);  // front.cuh kTraceBlocks
  fm::kernels::set_front_trace(static_cast<unsigned long long*>(tr.p));
  std::vector<std::vector<double>> at(kStamps);
  std::vector<double> mhz;  // block 0's SM clock: clock64 cycles over globaltimer ns, entry to end
  std::vector<double> last_rows;  // the last routing block's rows written
  std::vector<unsigned long long> h(kWords);
  std::vector<std::vector<double>> fine(kFine);
  for (int c = 0; c < calls; ++c) {
    BENCH_CUDA(cudaMemsetAsync(tr.p, 0, 8 * kWords, s));
    for (int l = 0; l < launches; ++l) fn();
    BENCH_CUDA(cudaStreamSynchronize(s));
    BENCH_CUDA(cudaMemcpy(h.data(), tr.p, h.size() * 8, cudaMemcpyDeviceToHost));
    unsigned long long t0 = ~0ull, last_in = 0, last_done = 0;
    for (int b = 0; b < blocks; ++b) {
      if (h[b * kSlots + 0] == 0) continue;  // not a routing block of this launch
      t0 = std::min(t0, h[b * kSlots + 0]);
      last_in = std::max(last_in, h[b * kSlots + 0]);
      last_done = std::max(last_done, h[b * kSlots + 1]);
    }
    if (h[0] == 0 || h[6] == 0) continue;  // the fused kernel did not run
    auto us = [&](unsigned long long v) { return v >= t0 ? (v - t0) * 1e-3 : -1.0; };
    at[0].push_back(us(last_in));
    at[1].push_back(us(last_done));
    for (int k = 2; k < 7; ++k) at[k].push_back(us(h[k]));
    for (int k = 7; k < kStamps; ++k) at[k].push_back(us(h[k + 1]));
    unsigned long long lr = 0;
    for (int b = 0; b < blocks; ++b) lr = std::max(lr, h[b * kSlots + 4]);
    last_rows.push_back(us(lr));
    if (h[14] > h[13] && h[6] > h[0]) mhz.push_back(static_cast<double>(h[14] - h[13]) * 1e3 / static_cast<double>(h[6] - h[0]));
    const unsigned long long* fs = h.data() + size_t{32} * kSlots;
    if (fs[0] != 0)
      for (int k = 1; k < kFine; ++k)
        if (fs[k] >= fs[0]) fine[k].push_back(static_cast<double>(fs[k] - fs[0]));
  }
  fm::kernels::set_front_trace(nullptr);
  if (at[0].empty()) return "fused kernel did not run";
  char buf[512];
  std::vector<double> m(kStamps);
  for (int k = 0; k < kStamps; ++k) {
    std::sort(at[k].begin(), at[k].end());
    m[k] = at[k][at[k].size() / 2];
  }
  const int n = std::snprintf(buf, sizeof(buf),
                        "all in %.2f | routed %.2f | barrier %.2f | counts %.2f | rows %.2f | fallback %.2f | end %.2f us",
                        m[0], m[1], m[2], m[3], m[4], m[5], m[6]);
  int n2 = n;
  if (!mhz.empty()) {
    std::sort(mhz.begin(), mhz.end());
    std::sort(last_rows.begin(), last_rows.end());
    n2 += std::snprintf(buf + n, sizeof(buf) - n, " | last rows %.2f | SM clock %.0f MHz", last_rows[last_rows.size() / 2],
                        mhz[mhz.size() / 2]);
  }
  if (m[7] >= 0 && m[11] > 0)  // route_token's stamps (a build with FUSEDMOE_ROUTE_TRACE=1)
    n2 += std::snprintf(buf + n2, sizeof(buf) - n2, " || token 0: scores %.2f | groups %.2f | sorted %.2f | rounds %.2f | stored %.2f",
                        m[7], m[8], m[9], m[10], m[11]);
  std::string out = buf;
  bool any_fine = false;
  for (int k = 1; k < kFine; ++k) any_fine = any_fine || !fine[k].empty();
  if (any_fine) {  // median cycles from block 0's entry, per stamp (front.cuh fine_stamp)
    out += " || block 0 cycles:";
    for (int k = 1; k < kFine; ++k) {
      if (fine[k].empty()) continue;
      std::sort(fine[k].begin(), fine[k].end());
      out += " " + std::to_string(k) + ":" + std::to_string(static_cast<long long>(fine[k][fine[k].size() / 2]));
    }
  }
  return out;
}

// Exact check of the GPU routing and plan against the CPU reference (ids, rows).
bool check_case(const fm::MoeProblem& p, const fm::testing::LayerData& d, const fm::DispatchResult& r,
                std::string* why) {
  fm::ref::Routing rr;
  const fm::Status st = fm::ref::route(p, d.host_tensors(), &rr);
  if (!st.ok()) { *why = st.to_string(); return false; }
  const size_t tk = static_cast<size_t>(p.num_tokens) * p.top_k();
  std::vector<int32_t> ids(tk);
  BENCH_CUDA(cudaMemcpy(ids.data(), r.topk_ids, tk * 4, cudaMemcpyDeviceToHost));
  if (ids != rr.ids) { *why = "top-k ids differ from the reference"; return false; }
  const fm::ref::DispatchPlan plan =
      fm::ref::plan_dispatch(p, rr, p.num_local_experts >= 0 ? d.expert_map.data() : nullptr, 128);
  const size_t rows = static_cast<size_t>(plan.num_rows());
  std::vector<int32_t> row_token(rows);
  if (rows) BENCH_CUDA(cudaMemcpy(row_token.data(), r.row_token, rows * 4, cudaMemcpyDeviceToHost));
  if (row_token != plan.row_token) { *why = "row_token differs from the reference"; return false; }
  return true;
}

// ---- suite layer: the whole layer (forward) on BF16 weights ----

// A CUDA math library by soname: the loader path, the toolkit, then the device machine's torch
// wheels (the tool links none of them: it must start without them). Null when none loads.
void* dlopen_cuda_lib(const std::string& soname) {
  for (const std::string dir : {"", "/usr/local/cuda/lib64/", "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/",
                                "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cublas/lib/"})
    if (void* lib = dlopen((dir + soname).c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
  return nullptr;
}

// The dense BF16 GEMM rate of this GPU, measured now: cuBLAS 8192^3 when a cuBLAS library can be
// loaded (dlopen: the tool must start without it), else our WGMMA smoke GEMM at 8192^3.
double measure_bf16_gemm_rate(cudaStream_t s, std::string* how) {
  const int n = 8192;
  Buf a(size_t{2} * n * n), b(size_t{2} * n * n), c(size_t{2} * n * n);
  std::vector<uint16_t> h(size_t{1} << 20);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (auto& v : h) v = fm::ref::float_to_bf16(nd(rng));
  for (size_t off = 0; off < size_t{2} * n * n; off += h.size() * 2) {
    BENCH_CUDA(cudaMemcpy(static_cast<char*>(a.p) + off, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
    BENCH_CUDA(cudaMemcpy(static_cast<char*>(b.p) + off, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  }
  using CreateFn = int (*)(void**);
  using SetStreamFn = int (*)(void*, cudaStream_t);
  using DestroyFn = int (*)(void*);
  using GemmExFn = int (*)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                           const void*, void*, int, int, int, int);
  void* lib = dlopen_cuda_lib("libcublas.so.13");
  std::function<void()> fn;
  void* handle = nullptr;
  DestroyFn destroy = nullptr;
  if (lib) {
    auto create = reinterpret_cast<CreateFn>(dlsym(lib, "cublasCreate_v2"));
    auto set_stream = reinterpret_cast<SetStreamFn>(dlsym(lib, "cublasSetStream_v2"));
    destroy = reinterpret_cast<DestroyFn>(dlsym(lib, "cublasDestroy_v2"));
    auto gemm = reinterpret_cast<GemmExFn>(dlsym(lib, "cublasGemmEx"));
    if (create && set_stream && destroy && gemm && create(&handle) == 0) {
      set_stream(handle, s);
      static const float one = 1.f, zero = 0.f;
      // CUBLAS_OP_T = 1, CUBLAS_OP_N = 0, CUDA_R_16BF = 14, CUBLAS_COMPUTE_32F = 68, CUBLAS_GEMM_DEFAULT = -1
      fn = [=, &a, &b, &c] { gemm(handle, 1, 0, n, n, n, &one, a.p, 14, n, b.p, 14, n, &zero, c.p, 14, n, 68, -1); };
      *how = "cuBLAS 8192^3";
    }
  }
  if (!fn) {
    fn = [&] { (void)fm::kernels::sm90_bf16_gemm_smoke(a.p, b.p, c.p, n, n, n, s); };
    *how = "fusedmoe WGMMA smoke GEMM 8192^3 (cuBLAS not loadable)";
  }
  const double sec = median_seconds(s, fn);
  if (handle) destroy(handle);
  return 2.0 * n * n * n / sec;
}

std::vector<Case> layer_cases() {
  // The suite of shared/model-shapes.md, every case with BF16 weights (FP8 comes with issue #5).
  std::vector<Case> v;
  for (const char* name : {"dsv3-tp8", "dsv3-ep8", "dsv4f-tp4", "qwen235-tp8", "qwen235-tp4", "qwen30-tp1",
                           "mixtral-tp2", "gptoss-tp1"}) {
    fm::MoeProblem p = fm::find_preset(name)->problem;
    p.quant = fm::QuantScheme::bf16();
    v.push_back({name, p});
  }
  // FP8 W8A8 (issue #5): the row-scaled schemes built so far (normal tiles only).
  fm::MoeProblem q = fm::find_preset("qwen235-tp8")->problem;
  q.quant = fm::QuantScheme::fp8_per_channel();
  v.push_back({"qwen235-tp8-fp8c", q});
  q.quant = fm::QuantScheme::fp8_per_tensor(false);
  v.push_back({"qwen235-tp8-fp8t", q});
  // DeepSeek-style 128x128 block FP8, as the presets define them (reported as skipped while the
  // library refuses block scales, see `fusedmoe explain`)
  for (const char* name : {"dsv3-tp8", "dsv3-ep8", "dsv4f-tp4", "qwen235-tp4"})
    v.push_back({std::string(name) + "-fp8b", fm::find_preset(name)->problem});
  return v;
}

// The dense FP8 e4m3 GEMM rate of this GPU, measured now: cuBLASLt 8192^3 ("TN": A and B K-major,
// bf16 D, f32 accumulation with cuBLASLt's default promotion, no fast accumulation) when
// libcublasLt can be loaded (dlopen, as above). 0 when it cannot (the caller then uses twice the
// BF16 rate, the tensor cores' ratio) and says why in `how`.
double measure_fp8_gemm_rate(cudaStream_t s, std::string* how) {
  const int n = 8192;
  void* lib = dlopen_cuda_lib("libcublasLt.so.13");
  if (lib == nullptr) {
    *how = "cuBLASLt not loadable";
    return 0.0;
  }
  auto create = reinterpret_cast<decltype(&cublasLtCreate)>(dlsym(lib, "cublasLtCreate"));
  auto destroy = reinterpret_cast<decltype(&cublasLtDestroy)>(dlsym(lib, "cublasLtDestroy"));
  auto desc_create = reinterpret_cast<decltype(&cublasLtMatmulDescCreate)>(dlsym(lib, "cublasLtMatmulDescCreate"));
  auto desc_destroy = reinterpret_cast<decltype(&cublasLtMatmulDescDestroy)>(dlsym(lib, "cublasLtMatmulDescDestroy"));
  auto desc_set = reinterpret_cast<decltype(&cublasLtMatmulDescSetAttribute)>(dlsym(lib, "cublasLtMatmulDescSetAttribute"));
  auto layout_create = reinterpret_cast<decltype(&cublasLtMatrixLayoutCreate)>(dlsym(lib, "cublasLtMatrixLayoutCreate"));
  auto layout_destroy = reinterpret_cast<decltype(&cublasLtMatrixLayoutDestroy)>(dlsym(lib, "cublasLtMatrixLayoutDestroy"));
  auto matmul = reinterpret_cast<decltype(&cublasLtMatmul)>(dlsym(lib, "cublasLtMatmul"));
  if (!create || !destroy || !desc_create || !desc_destroy || !desc_set || !layout_create || !layout_destroy || !matmul) {
    *how = "cuBLASLt symbols missing";
    return 0.0;
  }
  Buf a(size_t(n) * n), b(size_t(n) * n), d(size_t{2} * n * n);
  const size_t ws_bytes = size_t{32} << 20;
  Buf ws(ws_bytes);
  BENCH_CUDA(cudaMemset(a.p, 0x38, size_t(n) * n));  // e4m3 1.0
  BENCH_CUDA(cudaMemset(b.p, 0x30, size_t(n) * n));  // e4m3 0.5
  cublasLtHandle_t h = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  double rate = 0.0;
  if (create(&h) == CUBLAS_STATUS_SUCCESS && desc_create(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
      layout_create(&la, CUDA_R_8F_E4M3, n, n, n) == CUBLAS_STATUS_SUCCESS &&
      layout_create(&lb, CUDA_R_8F_E4M3, n, n, n) == CUBLAS_STATUS_SUCCESS &&
      layout_create(&ld, CUDA_R_16BF, n, n, n) == CUBLAS_STATUS_SUCCESS) {
    const cublasOperation_t t = CUBLAS_OP_T, nn = CUBLAS_OP_N;
    desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t));
    desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof(nn));
    static const float one = 1.f, zero = 0.f;
    auto run = [&] {
      return matmul(h, desc, &one, a.p, la, b.p, lb, &zero, d.p, ld, d.p, ld, nullptr, ws.p, ws_bytes, s);
    };
    const cublasStatus_t st = run();
    if (st == CUBLAS_STATUS_SUCCESS && cudaStreamSynchronize(s) == cudaSuccess) {
      rate = 2.0 * n * n * n / median_seconds(s, [&] { (void)run(); });
      *how = "cuBLASLt e4m3 8192^3";
    } else {
      *how = "cuBLASLt e4m3 matmul failed (status " + std::to_string(int(st)) + ")";
      (void)cudaGetLastError();
    }
  } else {
    *how = "cuBLASLt set-up failed";
  }
  if (ld) layout_destroy(ld);
  if (lb) layout_destroy(lb);
  if (la) layout_destroy(la);
  if (desc) desc_destroy(desc);
  if (h) destroy(h);
  return rate;
}

// The FP8 cases' compute floor: the dense FP8 rate measured now (printed) when any case is FP8;
// else, or when cuBLASLt cannot run, twice the BF16 rate (the tensor cores' ratio).
double fp8_rate_if_needed(cudaStream_t s, const std::vector<Case>& cases, double bf16_rate) {
  bool any = false;
  for (const Case& c : cases) any = any || c.problem.quant.weight.format == fm::WeightFormat::kFP8E4M3;
  if (!any) return 2 * bf16_rate;
  std::string how;
  const double r = measure_fp8_gemm_rate(s, &how);
  if (r > 0) {
    std::printf("dense fp8 GEMM rate (%s, same run): %.0f TFLOP/s (the FP8 cases' compute floor)\n", how.c_str(), r / 1e12);
    return r;
  }
  std::printf("dense fp8 GEMM rate: not measured (%s); FP8 compute floor = 2 x the bf16 rate\n", how.c_str());
  return 2 * bf16_rate;
}

// A forced tile choice for the crossover suite; an empty label = the oracle's own choice.
struct TileVariant {
  std::string label;
  fm::ForwardOptions options;
};

// Timeline of the layer's two grouped GEMMs, BF16 or FP8 (kernels::set_grouped_gemm_trace): `calls` single
// runs of `fn` (flush + forward), each synchronised. Per GEMM, medians over calls of: active CTAs
// and the most on one SM; entry of the first and last active CTA, then per CTA (median over CTAs)
// expert known, first stage full, main loop done, epilogue done, all from the first CTA's entry
// of GEMM1 (us); the last CTA done; and the weight rate over [first entry, last done]. The last
// call's CTAs go to `csv` (when open) as rows. Empty when the GEMMs did not run traced (CUTLASS
// backend, or grids above the buffer).
template <class Fn>
std::string gemm_timeline(cudaStream_t s, Fn fn, const double gemm_bytes[2], std::FILE* csv, const std::string& tag,
                          int calls = 11) {
  constexpr int64_t kCtas = 65536;
  constexpr int kS = fm::kernels::kGroupedGemmTraceSlots;
  const size_t n = size_t{2} * kCtas * kS;
  Buf tr(n * 8), ftr(size_t{8} * (32 * 16 + 16)), ptr(size_t{8} * 3 * 1024);
  fm::kernels::set_grouped_gemm_trace(static_cast<unsigned long long*>(tr.p), kCtas);
  fm::kernels::set_front_trace(static_cast<unsigned long long*>(ftr.p));
  fm::kernels::set_permute_trace(static_cast<unsigned long long*>(ptr.p));
  std::vector<unsigned long long> h(n), fh(32 * 16), ph(3 * 1024);
  constexpr int kStats = 11;
  std::vector<double> st[2][kStats];
  // front entry, front end, permute entry, permute past wait, permute done; then the front's routing
  // blocks' last stamps of routing done, past the barrier, counts read, rows written (front.cuh's
  // trace slots 1-4)
  // (and the last routing block's entry: do the routing blocks enter together?)
  std::vector<double> pre[10];
  for (int c = 0; c < calls; ++c) {
    BENCH_CUDA(cudaMemsetAsync(tr.p, 0, n * 8, s));
    BENCH_CUDA(cudaMemsetAsync(ftr.p, 0, fh.size() * 8, s));
    BENCH_CUDA(cudaMemsetAsync(ptr.p, 0, ph.size() * 8, s));
    fn();
    BENCH_CUDA(cudaStreamSynchronize(s));
    BENCH_CUDA(cudaMemcpy(h.data(), tr.p, n * 8, cudaMemcpyDeviceToHost));
    BENCH_CUDA(cudaMemcpy(fh.data(), ftr.p, fh.size() * 8, cudaMemcpyDeviceToHost));
    BENCH_CUDA(cudaMemcpy(ph.data(), ptr.p, ph.size() * 8, cudaMemcpyDeviceToHost));
    unsigned long long t0 = ~0ull;
    for (int64_t b = 0; b < kCtas && h[b * kS] != 0; ++b) t0 = std::min(t0, h[b * kS]);
    if (t0 == ~0ull) continue;
    auto us = [&](unsigned long long v) { return v >= t0 ? (v - t0) * 1e-3 : -((t0 - v) * 1e-3); };
    {
      double fe = 1e30, fl = -1e30, pe = 1e30, pw = -1e30, pd = -1e30;
      for (int b = 0; b < 32; ++b)
        if (fh[b * 16] != 0) {
          fe = std::min(fe, us(fh[b * 16]));
          fl = std::max(fl, us(fh[b * 16]));
        }
      for (int b = 0; b < 1024 && ph[3 * b] != 0; ++b) {
        pe = std::min(pe, us(ph[3 * b]));
        pw = std::max(pw, us(ph[3 * b + 1]));
        pd = std::max(pd, us(ph[3 * b + 2]));
      }
      double ph4[4] = {-1e30, -1e30, -1e30, -1e30};
      for (int b = 0; b < 32; ++b)
        for (int k = 0; k < 4; ++k)
          if (fh[b * 16] != 0 && fh[b * 16 + 1 + k] != 0) ph4[k] = std::max(ph4[k], us(fh[b * 16 + 1 + k]));
      const double v[10] = {fe, fh[6] != 0 ? us(fh[6]) : 1e30, pe, pw, pd, ph4[0], ph4[1], ph4[2], ph4[3], fl};
      for (int k = 0; k < 10; ++k) pre[k].push_back(v[k]);
    }
    for (int g = 0; g < 2; ++g) {
      const unsigned long long* H = h.data() + size_t(g) * kCtas * kS;
      std::vector<double> known, full, loop, done;
      std::vector<int> per_sm(1024, 0);
      double first_in = 1e30, last_in = -1e30, last_done = -1e30, first_loop = 1e30;
      int active = 0;
      for (int64_t b = 0; b < kCtas && H[b * kS] != 0; ++b) {
        const unsigned long long* r = H + b * kS;
        const long long e = static_cast<long long>(r[7]);
        if (csv != nullptr && c == calls - 1)
          std::fprintf(csv, "%s,%d,%lld,%llu,%lld,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n", tag.c_str(), g + 1,
                       static_cast<long long>(b), r[6], e, us(r[0]), r[1] ? us(r[1]) : -1.0, r[2] ? us(r[2]) : -1.0,
                       r[3] ? us(r[3]) : -1.0, r[4] ? us(r[4]) : -1.0, r[5] ? us(r[5]) : -1.0);
        if (e < 0 || r[5] == 0) continue;
        ++active;
        per_sm[r[6] & 1023]++;
        first_in = std::min(first_in, us(r[0]));
        last_in = std::max(last_in, us(r[0]));
        known.push_back(us(r[1]) - us(r[0]));
        full.push_back(us(r[3]) - us(r[0]));
        loop.push_back(us(r[4]));
        first_loop = std::min(first_loop, us(r[4]));
        done.push_back(us(r[5]));
        last_done = std::max(last_done, us(r[5]));
      }
      if (active == 0) continue;
      auto med = [](std::vector<double>& v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
      const double vals[kStats] = {double(active), double(*std::max_element(per_sm.begin(), per_sm.end())), first_in,
                                   last_in, med(known), med(full), first_loop, med(loop), med(done), last_done,
                                   gemm_bytes[g] / ((last_done - first_in) * 1e-6) / 1e9};
      for (int k = 0; k < kStats; ++k) st[g][k].push_back(vals[k]);
    }
  }
  fm::kernels::set_grouped_gemm_trace(nullptr, 0);
  fm::kernels::set_front_trace(nullptr);
  fm::kernels::set_permute_trace(nullptr);
  std::string out;
  if (!pre[0].empty()) {
    double m[10];
    for (int k = 0; k < 10; ++k) {
      std::sort(pre[k].begin(), pre[k].end());
      m[k] = pre[k][pre[k].size() / 2];
    }
    auto f = [](double v) { return v > 1e29 || v < -1e29 ? std::string("-") : std::to_string(v).substr(0, std::to_string(v).find('.') + 3); };
    out += "    front: entry " + f(m[0]) + " (last routing block " + f(m[9]) + "), block 0 done " + f(m[1]) + " | permute: entry " + f(m[2]) + ", past wait " +
           f(m[3]) + ", done " + f(m[4]) + " us\n";
    out += "    front, last routing block: routed " + f(m[5]) + ", past the barrier " + f(m[6]) + ", counts read " + f(m[7]) +
           ", rows written " + f(m[8]) + " us\n";
  }
  for (int g = 0; g < 2; ++g) {
    if (st[g][0].empty()) continue;
    double m[kStats];
    for (int k = 0; k < kStats; ++k) {
      std::sort(st[g][k].begin(), st[g][k].end());
      m[k] = st[g][k][st[g][k].size() / 2];
    }
    char buf[400];
    std::snprintf(buf, sizeof(buf),
                  "    gemm%d: %4.0f CTAs (<= %.0f/SM) | entry %.2f..%.2f | per CTA: known +%.2f, first full +%.2f | "
                  "loop done %.2f..(med %.2f) | done med %.2f, last %.2f us | %.0f GB/s over the kernel\n",
                  g + 1, m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8], m[9], m[10]);
    out += buf;
  }
  return out;
}

// Routing of the layer, crossover and dispatch suites (--skew): uniform by default, as
// ../shared/benchmark-protocol.md asks, for every router: routers with a correction bias get a zero
// bias, so that every expert is equally likely. The test data's random bias (0.1 N(0,1), which the
// GPU tests keep) skews a grouped sigmoid top-k strongly (the top 8 of 128 candidates sit in the
// tail, where it shifts the ranking: at 256 tokens dsv3-tp8 touches ~170 of its 256 experts); until
// session 51 it was the bench's default, now it is `--skew bias`. zipf / onehot also zero the bias
// (the skew comes from the logits alone). --zero-bias is still accepted (the default now).
// --skew uniform|zipf|onehot|bias: the routing of ../shared/benchmark-protocol.md, from the seeded
// generator of fm::testing::make_layer_data (zipf: expert e's logit offset by -1.2 log(1 + e), a few
// experts take most tokens; onehot: one expert wins every token; bias: uniform logits with the
// random correction bias).
static bool g_random_bias = false;
static fm::testing::Skew g_skew = fm::testing::Skew::kUniform;
// --packed (layer suite): BF16 and FP8 cases also get their weights packed for the Swap-AB GEMMs
// (MoeTensors::w1_packed / w2_packed, pack_weights), which the default then uses; the variant
// "packed off" times the 2D weight boxes of the same call.
// --local-hint (layer suite): every case's MoeProblem::expected_local_slots = top_k (the oracle sizes
// its tiles for tokens routed to the local experts only; with --skew local that is the routing).
static bool g_local_hint = false;
static bool g_packed = false;
// --fused-act (layer suite): BF16 and FP8 128x128-block cases with gate and up as W1's halves also
// get MoeTensors::w1_gate_up_blocks (pack_gate_up_blocks); the variants force
// ForwardOptions::fused_activation on and off (the CUTLASS GEMM1 with the activation in its epilogue).
static bool g_fused_act = false;

// peak: the dense BF16 GEMM rate; fp8_peak: the dense FP8 rate (the FP8 cases' compute floor).
bool bench_layer(cudaStream_t s, double bw, double peak, double fp8_peak, const std::vector<int64_t>& tokens,
                 std::vector<Row>* rows, const std::vector<Case>& cases, const std::vector<TileVariant>& variants,
                 bool stages = false, bool precomputed = false, std::FILE* trace_csv = nullptr,
                 bool trace = false, bool cold_inputs = false) {
  bool ok = true;
  const L2Flush flush;  // cold weights every call
  auto flush_only = [&] { flush(s); };
  // Cold weights, warm inputs (shared/benchmark-protocol.md): the flush evicts everything, then
  // the layer's inputs (x and the router logits, or the precomputed ids and weights) are read
  // back into L2 by device-to-device copies, as the ops that just wrote them would leave them in
  // a real model (and as a peer rotating weight copies sees them). --cold-inputs: not re-read.
  // The time of flush + re-read alone is subtracted.
  std::vector<std::pair<const void*, size_t>> warm_bufs;
  const size_t warm_cap = size_t{64} << 20;
  Buf warm_sink(warm_cap);
  auto flush_l2 = [&] {
    flush_only();
    if (cold_inputs) return;
    for (const auto& b : warm_bufs)
      if (b.second > 0) (void)cudaMemcpyAsync(warm_sink.p, b.first, std::min(b.second, warm_cap), cudaMemcpyDeviceToDevice, s);
  };
  for (const Case& c : cases) {
    fm::MoeProblem p = c.problem;
    const int64_t tmax = *std::max_element(tokens.begin(), tokens.end());
    const int ge = p.weight_experts(), r1 = p.gemm1_rows();
    const bool fp8 = p.quant.weight.format == fm::WeightFormat::kFP8E4M3;
    const size_t wb = fp8 ? 1 : 2;
    const size_t w1_bytes = wb * ge * r1 * p.hidden, w2_bytes = wb * ge * p.hidden * p.intermediate;
    Buf w1(w1_bytes), w2(w2_bytes), b1(size_t{4} * ge * r1), b2(size_t{4} * ge * p.hidden);
    // FP8: random e4m3 weights (fill_random_e4m3), scales 1/448 per channel (or per expert),
    // static activation scales 6/448 and 4/448
    // (block scales: [G, rows/128, cols/128], f32 1/448 or the UE8M0 byte of 2^-9)
    const bool per_channel = p.quant.weight.granularity == fm::ScaleGranularity::kPerChannel;
    const bool block = p.quant.weight.granularity == fm::ScaleGranularity::kBlock;
    const bool ue8m0 = block && p.quant.weight.scale_format == fm::ScaleFormat::kUE8M0;
    auto blocks = [](int64_t v) { return size_t((v + 127) / 128); };
    const size_t n1 = block ? size_t(ge) * blocks(r1) * blocks(p.hidden) : per_channel ? size_t(ge) * r1 : size_t(ge);
    const size_t n2 = block ? size_t(ge) * blocks(p.hidden) * blocks(p.intermediate)
                            : per_channel ? size_t(ge) * p.hidden : size_t(ge);
    const std::vector<float> s1(n1, 1.f / 448.f), s2(n2, 1.f / 448.f), sact = {6.f / 448.f, 4.f / 448.f};
    Buf w1s(n1 * 4), w2s(n2 * 4), acts(16);
    if (ue8m0) {
      upload(w1s.p, std::vector<uint8_t>(n1, uint8_t(127 - 9)));
      upload(w2s.p, std::vector<uint8_t>(n2, uint8_t(127 - 9)));
    } else {
      upload(w1s.p, s1);
      upload(w2s.p, s2);
    }
    upload(acts.p, sact);
    if (fp8) {
      fill_random_e4m3(w1.p, w1_bytes, 1);
      fill_random_e4m3(w2.p, w2_bytes, 2);
    } else {
      fill_random_bf16(w1.p, w1_bytes, 1);
      fill_random_bf16(w2.p, w2_bytes, 2);
    }
    BENCH_CUDA(cudaMemset(b1.p, 0, size_t{4} * ge * r1));
    BENCH_CUDA(cudaMemset(b2.p, 0, size_t{4} * ge * p.hidden));
    size_t pw1 = 0, pw2 = 0;
    const bool packed = g_packed && fm::packed_weights_size(p, 1, &pw1).ok() &&
                        fm::packed_weights_size(p, 2, &pw2).ok();
    Buf w1p(packed ? pw1 : 16), w2p(packed ? pw2 : 16);
    if (packed && (!fm::pack_weights(p, 1, w1.p, w1p.p, s).ok() || !fm::pack_weights(p, 2, w2.p, w2p.p, s).ok())) {
      std::fprintf(stderr, "bench: pack_weights failed for %s\n", c.name.c_str());
      return false;
    }
    const bool fp8_blocks = p.quant.weight.format == fm::WeightFormat::kFP8E4M3 &&
                            p.quant.weight.granularity == fm::ScaleGranularity::kBlock;
    const bool gate_up_blocks = g_fused_act && (p.quant.weight.format == fm::WeightFormat::kBF16 || fp8_blocks) &&
                                p.activation.gated() && !p.activation.interleaved;
    Buf w1b(gate_up_blocks ? w1_bytes : 16);
    if (gate_up_blocks && !fm::pack_gate_up_blocks(p, w1.p, w1b.p, s).ok()) {
      std::fprintf(stderr, "bench: pack_gate_up_blocks failed for %s\n", c.name.c_str());
      return false;
    }
    for (int64_t t : tokens) {
      p.num_tokens = p.max_tokens = t;
      if (g_local_hint) p.expected_local_slots = static_cast<float>(p.router.top_k);
      fm::testing::LayerData d;
      std::string why;
      if (!fm::testing::make_layer_data(p, 99 + t, g_skew, &d, &why, false)) {
        std::fprintf(stderr, "bench: %s\n", why.c_str());
        return false;
      }
      if (!g_random_bias) std::fill(d.correction_bias.begin(), d.correction_bias.end(), 0.f);
      fm::ref::Routing rr;
      (void)fm::ref::route(p, d.host_tensors(), &rr);
      std::vector<char> touched(p.num_experts, 0);
      for (int id : rr.ids) if (id >= 0) touched[id] = 1;
      int64_t n_touched = 0;
      for (int e = 0; e < p.num_experts; ++e) n_touched += touched[e] && (p.num_local_experts < 0 || d.expert_map[e] >= 0);
      n_touched += p.num_shared_experts;
      // FLOPs of the rows this GPU computes: routed slots that land on a local expert + shared.
      int64_t local_rows = p.num_tokens * p.num_shared_experts;
      for (int id : rr.ids) local_rows += id >= 0 && (p.num_local_experts < 0 || d.expert_map[id] >= 0);
      const double flops = 2.0 * local_rows * (static_cast<double>(p.gemm1_rows()) * p.hidden +
                                               static_cast<double>(p.hidden) * p.intermediate);
      const double per_expert = static_cast<double>(w1_bytes + w2_bytes) / ge;
      const double bytes = n_touched * per_expert + 2.0 * t * p.hidden * 2;
      const size_t logit_bytes = p.router.logits_dtype == fm::DType::kBFloat16 ? d.logits_bf16.size() * 2 : d.logits_f32.size() * 4;
      Buf x(d.x.size() * 2), logits(logit_bytes), bias(d.correction_bias.size() * 4 + 16), map(d.expert_map.size() * 4),
          out(size_t{2} * t * p.hidden);
      upload(x.p, d.x);
      if (p.router.logits_dtype == fm::DType::kBFloat16) upload(logits.p, d.logits_bf16);
      else upload(logits.p, d.logits_f32);
      upload(bias.p, d.correction_bias);
      upload(map.p, d.expert_map);
      fm::MoeTensors io;
      io.x = x.p;
      io.router_logits = logits.p;
      io.correction_bias = p.router.use_correction_bias ? static_cast<const float*>(bias.p) : nullptr;
      io.expert_map = p.num_local_experts >= 0 ? static_cast<const int32_t*>(map.p) : nullptr;
      io.w1 = w1.p;
      io.w2 = w2.p;
      if (packed) {
        io.w1_packed = w1p.p;
        io.w2_packed = w2p.p;
      }
      if (gate_up_blocks) io.w1_gate_up_blocks = w1b.p;
      if (fp8) {
        io.w1_scale = w1s.p;
        io.w2_scale = w2s.p;
        io.act_scale = static_cast<const float*>(acts.p);
        io.act2_scale = static_cast<const float*>(acts.p) + 1;
      }
      io.b1 = static_cast<const float*>(b1.p);
      io.b2 = static_cast<const float*>(b2.p);
      io.out = out.p;
      warm_bufs = {{x.p, d.x.size() * 2}, {logits.p, logit_bytes}};
      const double flush_us = time_graph(s, flush_l2);
      size_t ws_bytes = 0;
      if (!fm::workspace_size(p, &ws_bytes).ok()) return false;
      Buf ws(ws_bytes);
      const bool block_fp8 = fp8 && p.quant.weight.granularity == fm::ScaleGranularity::kBlock;
      // Each variant's status first (one call), then the layer times of the runnable ones in
      // interleaved rounds: a variant timed after the others on a GPU that has been busy for
      // seconds ran 0.5-5 % slower than the same options timed first (session 43, prefill), so no
      // variant may owe its time to its place in the list.
      std::vector<const TileVariant*> runnable;
      for (const TileVariant& v : variants) {
        // (the token-order scale switch exists for FP8 128x128 blocks only: no duplicate rows elsewhere)
        if (v.options.scales_by_token != fm::Toggle::kAuto && !block_fp8) continue;
        fm::Status st = fm::forward(p, io, ws.p, ws_bytes, s, v.options);
        BENCH_CUDA(cudaStreamSynchronize(s));
        if (st.code() == fm::StatusCode::kUnsupported) {  // a scheme the library does not run (yet): say so
          std::printf("%-14s skipped T=%lld%s: %s\n", c.name.c_str(), static_cast<long long>(t),
                      v.label.empty() ? "" : (" [" + v.label + "]").c_str(), st.message().c_str());
          continue;
        }
        if (!st.ok()) {
          std::fprintf(stderr, "bench: %s T=%lld %s: %s\n", c.name.c_str(), static_cast<long long>(t), v.label.c_str(),
                       st.to_string().c_str());
          ok = false;
          continue;
        }
        // the default variant's output: finite, or the bench's data are off (say so, keep timing)
        if (runnable.empty()) {
          std::vector<uint16_t> y(size_t(t) * p.hidden);
          BENCH_CUDA(cudaMemcpy(y.data(), out.p, y.size() * 2, cudaMemcpyDeviceToHost));
          const uint16_t special = p.act_dtype == fm::DType::kFloat16 ? 0x7C00u : 0x7F80u;  // Inf / NaN exponent
          int64_t bad = 0;
          for (uint16_t b : y) bad += (b & special) == special;
          if (bad)
            std::printf("%-14s warning T=%lld%s: %lld of %lld outputs not finite (the bench's data)\n", c.name.c_str(),
                        static_cast<long long>(t), v.label.empty() ? "" : (" [" + v.label + "]").c_str(),
                        static_cast<long long>(bad), static_cast<long long>(y.size()));
        }
        runnable.push_back(&v);
      }
      std::vector<double> layer_us;
      {
        std::vector<std::unique_ptr<GraphTimer>> timers;
        for (const TileVariant* v : runnable)
          timers.push_back(std::make_unique<GraphTimer>(
              s, [&, v] { flush_l2(); (void)fm::forward(p, io, ws.p, ws_bytes, s, v->options); }));
        for (double m : interleaved_medians(timers, 5, 3)) layer_us.push_back(std::max(m - flush_us, 0.01));  // 15 samples each
      }
      for (size_t vi = 0; vi < runnable.size(); ++vi) {
      const TileVariant& v = *runnable[vi];
      const double us = layer_us[vi];
      // The tile choice, from the explanation ("tiles: swap-ab, token tile 8 (...)").
      const std::string ex = fm::explain(p, v.options);
      const size_t at = ex.find("\ntiles: ");
      std::string tiles = at == std::string::npos ? "?" : ex.substr(at + 8, ex.find(" (", at) - at - 8);
      // (explain() sees no tensors: with the blocks given, its auto rule's line says GEMM1 runs fused)
      if (gate_up_blocks && v.options.fused_activation == fm::Toggle::kAuto &&
          ex.find("\nfused_activation: auto, on when") != std::string::npos)
        tiles += " (activation fused by the auto rule)";
      // (FP8 compute floor: the dense FP8 rate measured in this run, see bench_main)
      rows->push_back(measured_row(c.name, std::string(fp8 ? "layer fp8 " : "layer bf16 ") + tiles + (v.label.empty() ? "" : " [" + v.label + "]"), t, us, bytes,
                                   bw, flops, fp8 ? fp8_peak : peak));
      if (trace) {
        const double gb[2] = {n_touched * double(w1_bytes) / ge, n_touched * double(w2_bytes) / ge};
        const std::string tag = c.name + "," + std::to_string(t) + "," + (v.label.empty() ? "default" : v.label);
        const std::string tl = gemm_timeline(s, [&] { flush_l2(); (void)fm::forward(p, io, ws.p, ws_bytes, s, v.options); },
                                             gb, trace_csv, tag);
        std::printf("  timeline %s T=%lld%s (us from GEMM1's first CTA, one cold call, median of 11):\n%s", c.name.c_str(),
                    static_cast<long long>(t), v.label.empty() ? "" : (" [" + v.label + "]").c_str(),
                    tl.empty() ? "    (no traced GEMM ran)\n" : tl.c_str());
      }
      if (precomputed) {
        // The same layer from precomputed top-k ids/weights (the reference routing of these
        // logits): what vLLM's figures in shared/peer-figures.md time (no router).
        fm::MoeProblem pp = p;
        pp.router = fm::RouterConfig::precomputed(p.router.top_k);
        Buf ids(rr.ids.size() * 4 + 16), wts(rr.weights.size() * 4 + 16);
        upload(ids.p, rr.ids);
        upload(wts.p, rr.weights);
        fm::MoeTensors pio = io;
        pio.topk_ids = static_cast<const int32_t*>(ids.p);
        pio.topk_weights = static_cast<const float*>(wts.p);
        size_t pws_bytes = 0;
        fm::Status pst = fm::workspace_size(pp, &pws_bytes);
        Buf pws(pst.ok() ? pws_bytes : 16);
        if (pst.ok()) pst = fm::forward(pp, pio, pws.p, pws_bytes, s, v.options);
        BENCH_CUDA(cudaStreamSynchronize(s));
        if (!pst.ok()) {
          std::fprintf(stderr, "bench: %s T=%lld precomputed: %s\n", c.name.c_str(), static_cast<long long>(t),
                       pst.to_string().c_str());
          ok = false;
        } else {
          const auto saved = warm_bufs;
          warm_bufs = {{x.p, d.x.size() * 2}, {ids.p, rr.ids.size() * 4}, {wts.p, rr.weights.size() * 4}};
          const double pflush_us = time_graph(s, flush_l2);
          const double pb = time_graph(s, [&] { flush_l2(); (void)fm::forward(pp, pio, pws.p, pws_bytes, s, v.options); }, 15);
          warm_bufs = saved;
          rows->push_back(measured_row(c.name, "layer from precomputed top-k (no router)" + (v.label.empty() ? std::string() : " [" + v.label + "]"), t, std::max(pb - pflush_us, 0.01),
                                       bytes, bw, flops, fp8 ? fp8_peak : peak));
        }
      }
      if (stages) {  // (every variant: each backend's or tile's stages side by side)
        // Per stage: the layer stopped after each stage (ForwardOptions::stop_after), timed like
        // the whole layer; a stage's time is the difference of consecutive prefixes (launch gaps
        // included). Bytes per stage: dispatch reads x and writes the permuted rows; GEMM1 the
        // touched W1 (+ rows in, intermediate out); GEMM2 the touched W2 (+ intermediate in,
        // expert rows out); combine the expert rows in and the output.
        const double rows_k = double(local_rows);
        const double w1_touched = n_touched * double(w1_bytes) / ge, w2_touched = n_touched * double(w2_bytes) / ge;
        // (FP8: the GEMMs read 1-byte rows; GEMM2's stage also holds the quantise pass over H:
        // bf16 read + e4m3 write, then the e4m3 read)
        const double qa = fp8 ? 1.0 : 2.0;
        const double stage_bytes[4] = {
            2.0 * t * p.hidden + qa * rows_k * p.hidden,
            w1_touched + qa * rows_k * p.hidden + 2.0 * rows_k * p.intermediate,
            w2_touched + (fp8 ? 4.0 : 2.0) * rows_k * p.intermediate + 2.0 * rows_k * p.hidden,
            2.0 * rows_k * p.hidden + 2.0 * t * p.hidden};
        const double stage_flops[4] = {0, 2.0 * rows_k * p.gemm1_rows() * p.hidden, 2.0 * rows_k * p.hidden * p.intermediate, 0};
        const char* names[4] = {"stage dispatch (route+plan+permute)", "stage gemm1", "stage gemm2", "stage combine"};
        const fm::Stage stops[3] = {fm::Stage::kDispatch, fm::Stage::kGemm1, fm::Stage::kGemm2};
        double prev = 0, bound_us = 0;
        for (int k = 0; k < 4; ++k) {
          double cum = us;
          if (k < 3) {
            fm::ForwardOptions so = v.options;
            so.stop_after = stops[k];
            const double b = time_graph(s, [&] { flush_l2(); (void)fm::forward(p, io, ws.p, ws_bytes, s, so); }, 15);
            cum = std::max(b - flush_us, 0.01);
          }
          rows->push_back(measured_row(c.name, names[k], t, std::max(cum - prev, 0.01), stage_bytes[k], bw, stage_flops[k],
                                       fp8 ? fp8_peak : peak));
          bound_us += rows->back().floor_us;
          prev = cum;
        }
        // The bound of this four-pass layout (permuted copy, GEMM1, GEMM2 writing the k expert
        // rows of each token, combine reading them back): its stages' floors summed, as a row whose
        // "% floor" is the most of the layer's floor any implementation of the layout can reach
        // (docs/design.md, "What the four-pass layout can reach at prefill").
        rows->push_back(measured_row(c.name, "bound of the 4-pass layout (stage floors summed)", t, bound_us, bytes, bw, flops,
                                     fp8 ? fp8_peak : peak));
      }
      }
      (void)tmax;
    }
  }
  return ok;
}

// Swap-AB vs normal tiles on the decode shapes of issue #4: every family/tile forced, tokens
// 1..2048; per case, the best Swap-AB tile vs the normal tile at each count and the crossover.
bool bench_crossover(cudaStream_t s, double bw, double peak, double fp8_peak, const std::vector<int64_t>& tokens,
                     std::vector<Row>* rows, const std::vector<Case>& cases) {
  std::vector<TileVariant> variants;
  auto forced = [](fm::TileFamily f, int tile) {
    fm::ForwardOptions o;
    o.tiles = f;
    o.tokens_tile = tile;
    return o;
  };
  variants.push_back({"normal 128", forced(fm::TileFamily::kNormal, 128)});
  for (int tile : {8, 16, 32, 64}) variants.push_back({"swap-ab " + std::to_string(tile), forced(fm::TileFamily::kSwapAB, tile)});
  const size_t first = rows->size();
  // (FP8 cases: the Swap-AB tiles stop at 32; a forced 64 is reported as skipped)
  const bool ok = bench_layer(s, bw, peak, fp8_peak, tokens, rows, cases, variants);
  std::printf("\nSwap-AB vs normal (best forced Swap-AB tile / normal 128; < 1 = Swap-AB faster):\n");
  for (const Case& c : cases) {
    const double k_over_e = static_cast<double>(c.problem.top_k()) / c.problem.num_experts;
    int64_t crossover = -1;
    for (int64_t t : tokens) {
      double normal = 0, best_swap = 1e30;
      std::string best_label;
      for (size_t i = first; i < rows->size(); ++i) {
        const Row& r = (*rows)[i];
        if (r.case_name != c.name || r.tokens != t) continue;
        if (r.stage.find("normal") != std::string::npos) normal = r.us;
        else if (r.us < best_swap) best_swap = r.us, best_label = r.stage;
      }
      if (normal <= 0 || best_swap >= 1e30) continue;
      std::printf("  %-12s T=%-6lld rows/expert %7.2f: normal %9.2f us, best swap-ab %9.2f us (%s): ratio %.3f\n",
                  c.name.c_str(), static_cast<long long>(t), t * k_over_e, normal, best_swap, best_label.c_str(),
                  best_swap / normal);
      if (crossover < 0 && best_swap > normal) crossover = t;
    }
    if (crossover < 0)
      std::printf("  %s: Swap-AB faster at every count measured\n", c.name.c_str());
    else
      std::printf("  %s: normal tiles first faster at T=%lld (%.2f rows per expert)\n", c.name.c_str(),
                  static_cast<long long>(crossover), crossover * k_over_e);
  }
  return ok;
}


// Reads rows {"case": .., "tokens": .., "us": ..} written by bench/peers/torch_grouped_mm.py (run
// in the same session on the same GPU) and fills the peer column with "peer_us / our_us".
void add_peer_column(const std::string& path, std::vector<Row>* rows) {
  std::ifstream f(path);
  if (!f) {
    std::fprintf(stderr, "bench: cannot read peer file %s\n", path.c_str());
    return;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  auto field = [&](size_t from, const std::string& key, size_t* at) -> std::string {
    const size_t k = text.find("\"" + key + "\"", from);
    if (k == std::string::npos) return {};
    size_t v = text.find(':', k) + 1;
    while (v < text.size() && (text[v] == ' ' || text[v] == '"')) ++v;
    size_t e = v;
    while (e < text.size() && text[e] != ',' && text[e] != '}' && text[e] != '"') ++e;
    *at = e;
    return text.substr(v, e - v);
  };
  size_t pos = text.find("\"rows\"");
  while (pos != std::string::npos) {
    size_t at = 0;
    const std::string name = field(pos, "case", &at);
    if (name.empty()) break;
    const int64_t tokens = std::atoll(field(at, "tokens", &at).c_str());
    const double us = std::atof(field(at, "us", &at).c_str());
    // the torch op the row timed ("op", this row's own: before the next row's "case")
    std::string op = "torch._grouped_mm";
    size_t op_at = 0;
    const std::string o = field(at, "op", &op_at);
    const size_t next_case = text.find("\"case\"", at);
    if (!o.empty() && (next_case == std::string::npos || op_at < next_case)) op = o, at = op_at;
    pos = at;
    for (Row& r : *rows)
      if (r.case_name == name && r.tokens == tokens && r.us > 0) {
        char buf[128];
        std::snprintf(buf, sizeof(buf), "x%.2f vs %s (%.1f us)", us / r.us, op.c_str(), us);
        r.peer = buf;
      }
  }
}

}  // namespace

// --cases (all when empty): the named suite cases, in the suite's order, then any other name that is a built-in
// preset (`fusedmoe presets`: its own weights and scheme, e.g. qwen3next-tp1 with its shared expert).
static std::vector<Case> selected(const std::vector<Case>& all, const std::vector<std::string>& only) {
  if (only.empty()) return all;
  std::vector<Case> v;
  for (const Case& c : all)
    if (std::find(only.begin(), only.end(), c.name) != only.end()) v.push_back(c);
  for (const std::string& name : only) {
    const bool in_suite = std::any_of(all.begin(), all.end(), [&](const Case& c) { return c.name == name; });
    if (in_suite) continue;
    if (fm::find_preset(name) != nullptr) v.push_back({name, fm::find_preset(name)->problem});
    else std::fprintf(stderr, "bench: no case or preset named '%s' (skipped; see `fusedmoe presets`)\n", name.c_str());
  }
  if (v.empty()) {  // nothing selected: an error, not an empty table (the caller exits with rc 2)
    std::string names;
    for (const Case& c : all) names += (names.empty() ? "" : ", ") + c.name;
    std::fprintf(stderr, "bench: --cases selects nothing in this suite; its cases: %s\n", names.c_str());
  }
  return v;
}

int cmd_bench(int argc, char** argv) {
  std::string suite = "dispatch", csv_path, json_path, peer_path;
  std::vector<int64_t> tokens = {1, 4, 16, 64, 256, 1024, 4096, 16384};
  bool tokens_given = false;
  std::vector<std::string> only;  // --cases: names of the cases to run (default: all)
  bool pdl = false;               // --pdl: layer suite, also each case with overlapped launches on / off
  bool evict = false;             // --evict: layer suite, also each case with the weights' L2 evict_first forced on / off
  bool staged = false;            // --staged: layer suite, also each case without the staged GEMM epilogue
  bool scales = false;            // --scales: layer suite, FP8 block cases also with row-order activation scales
  bool gather = false;            // --gather: layer suite, also each case with gathered GEMM1 rows forced on and off
  bool front = false;             // --front: layer suite, also each case with the fused front forced on and off
                                  // (with --gather also both forced on)
  bool splitk = false;            // --splitk: layer suite, also each case without split-K
  bool balanced = false;          // --balanced: layer suite, also the balanced GEMM2 schedule forced each way
  bool dense = false;             // --dense: the Swap-AB GEMMs' dense instances forced each way
  bool dense1 = false;            // --dense1: ... GEMM1's only
  bool pair = false;              // --pair: the FP8 Swap-AB pair instances forced each way
  bool pingpong = false;          // --pingpong: BF16 GEMM2 on the ping-pong normal tiles forced each way
  std::vector<int> tpcs1d;        // --tpc1d: ... GEMM1's weight tiles per CTA forced, on its dense instance
  std::vector<int> tiles2;        // --tile2: ... GEMM2's own Swap-AB token tile forced (it must divide GEMM1's)
  bool balanced1 = false;         // --balanced1: ... the FP8 GEMM1's balanced schedule forced each way
  bool cutlass_gemm2 = false;     // --cutlass-gemm2: layer suite, also GEMM1 gathered on normal tiles + GEMM2 on CUTLASS, forced each way
  bool cutlass = false;           // --cutlass: layer suite, also each case on each backend (grouped, CUTLASS)
  bool stages = false;            // --stages: layer suite, also per-stage times (prefix differences), for every variant
  bool precomputed = false;       // --precomputed: layer suite, also from precomputed top-k (no router)
  std::vector<int> ksplits, tpcs;  // --ksplits / --tpc: layer suite, also each case with these forced
  std::vector<int> tpcs1;         // --tpc1: ... with GEMM1's weight tiles per CTA forced (GEMM2 as the oracle says)
  std::vector<int> ksplits1;       // --ksplits1: ... with GEMM1's split-K forced (GEMM2 as the oracle says)
  std::vector<int> earlies;        // --early: layer suite, also each case with GEMM1's early weight stages forced
  std::vector<int> earlies2;       // --early2: the same for GEMM2's early weight stages
  bool hq = false;                // --hq: layer suite, the variant "fused h quant off" (H quantised apart)
  bool hs = false;                // --hs: layer suite, the variants "gemm2 quantises h on" / "off" (H quantised apart)
  bool trace = false;             // --trace: layer suite, the grouped GEMMs' per-CTA timeline
  bool front_b2b = false;         // --front-b2b: dispatch suite, also the timeline of a launch right after another
  std::string trace_path;         // --trace-csv F: ... and its CTAs as CSV
  bool cold_inputs = false;       // --cold-inputs: layer suite, x / logits / ids left cold too (not re-read after the flush)
  bool flushed = false;           // --flushed: dispatch suite, also timed after an L2 flush
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--suite" && i + 1 < argc) suite = argv[++i];
    else if (a == "--csv" && i + 1 < argc) csv_path = argv[++i];
    else if (a == "--json" && i + 1 < argc) json_path = argv[++i];
    else if (a == "--peer" && i + 1 < argc) peer_path = argv[++i];
    else if (a == "--pdl") pdl = true;
    else if (a == "--staged") staged = true;
    else if (a == "--evict") evict = true;
    else if (a == "--scales") scales = true;
    else if (a == "--gather") gather = true;
    else if (a == "--front") front = true;
    else if (a == "--splitk") splitk = true;
    else if (a == "--balanced") balanced = true;
    else if (a == "--balanced1") balanced1 = true;
    else if (a == "--dense") dense = true;
    else if (a == "--dense1") dense1 = true;
    else if (a == "--pair") pair = true;
    else if (a == "--pingpong") pingpong = true;
    else if (a == "--packed") g_packed = true;
    else if (a == "--local-hint") g_local_hint = true;
    else if (a == "--fused-act") g_fused_act = true;
    else if (a == "--hq") hq = true;
    else if (a == "--hs") hs = true;
    else if (a == "--cutlass") cutlass = true;
    else if (a == "--cutlass-gemm2") cutlass_gemm2 = true;
    else if (a == "--stages") stages = true;
    else if (a == "--precomputed") precomputed = true;
    else if (a == "--trace") trace = true;
    else if (a == "--front-b2b") front_b2b = true;
    else if (a == "--cold-inputs") cold_inputs = true;
    else if (a == "--flushed") flushed = true;
    else if (a == "--zero-bias") g_random_bias = false;
    else if (a == "--skew" && i + 1 < argc) {
      const std::string v = argv[++i];
      g_random_bias = v == "bias";
      if (g_random_bias) g_skew = fm::testing::Skew::kUniform;
      else if (!fm::testing::parse_skew(v, &g_skew)) {
        std::fprintf(stderr, "bench: --skew takes uniform, zipf, onehot, local or bias (got '%s')\n", v.c_str());
        return 2;
      }
    }
    else if (a == "--trace-csv" && i + 1 < argc) trace = true, trace_path = argv[++i];
    else if ((a == "--ksplits" || a == "--ksplits1" || a == "--tpc" || a == "--tpc1" || a == "--early" || a == "--early2" || a == "--tpc1d" || a == "--tile2") && i + 1 < argc) {
      std::stringstream ss(argv[++i]);
      for (std::string x; std::getline(ss, x, ',');)
        (a == "--tpc" ? tpcs : a == "--tpc1" ? tpcs1 : a == "--early" ? earlies : a == "--early2" ? earlies2 : a == "--tpc1d" ? tpcs1d : a == "--tile2" ? tiles2 : a == "--ksplits1" ? ksplits1 : ksplits)
            .push_back(std::atoi(x.c_str()));
    }
    else if (a == "--cases" && i + 1 < argc) {
      std::stringstream ss(argv[++i]);
      for (std::string x; std::getline(ss, x, ',');) only.push_back(x);
    }
    else if (a == "--tokens" && i + 1 < argc) {
      tokens.clear();
      tokens_given = true;
      std::stringstream ss(argv[++i]);
      for (std::string x; std::getline(ss, x, ',');) tokens.push_back(std::atoll(x.c_str()));
    } else {
      std::fprintf(stderr, "bench: unknown option '%s'\nusage: fusedmoe bench [--suite dispatch|layer|crossover|coldstart|rope] [--tokens 1,16,256] [--cases a,b] [--pdl] [--staged] [--scales] [--gather] [--front] [--splitk] [--balanced] [--balanced1] [--dense] [--dense1] [--pair] [--pingpong] [--fused-act] [--packed] [--hq] [--hs] [--ksplits 1,2] [--ksplits1 2,4] [--tpc 1,2] [--tpc1 2,3] [--tpc1d 2,3] [--tile2 8,16] [--early 0,4] [--early2 3,4] [--evict] [--cutlass] [--cutlass-gemm2] [--stages] [--precomputed] [--cold-inputs] [--skew uniform|zipf|onehot|local|bias] [--local-hint] [--trace] [--trace-csv F] [--front-b2b] [--csv F] [--json F] [--peer F]\n", a.c_str());
      return 2;
    }
  }
  if (suite != "dispatch" && suite != "layer" && suite != "coldstart" && suite != "rope" && suite != "crossover") {
    std::fprintf(stderr, "bench: unknown suite '%s' (have: dispatch, layer, crossover, coldstart, rope)\n", suite.c_str());
    return 2;
  }
  if (suite == "rope" && !tokens_given) tokens = {1, 8, 64, 512, 4096, 32768};
  if (suite == "crossover" && !tokens_given) tokens = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048};
  int dev = 0;
  fm::Status st = fm::current_device(&dev);
  if (st.ok()) st = fm::check_device_supported(dev);
  if (!st.ok()) {
    std::printf("bench needs a Hopper GPU: %s\n", st.to_string().c_str());
    return 1;
  }
  fm::DeviceInfo info;
  (void)fm::query_device(dev, &info);
  cudaStream_t s;
  BENCH_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const double bw = measure_read_bw(s, info.num_sms);
  std::printf("device: %s, %d SMs; streaming read (4 GiB, same run): %.0f GB/s\n", info.name.c_str(), info.num_sms,
              bw / 1e9);

  std::vector<Row> rows;
  bool all_ok = true;
  if (suite == "layer") {
    std::string how;
    const double tflops = measure_bf16_gemm_rate(s, &how);
    std::printf("dense bf16 GEMM rate (%s, same run): %.0f TFLOP/s\n", how.c_str(), tflops / 1e12);
    std::vector<TileVariant> variants = {TileVariant{}};
    // The first row of a case runs forward()'s defaults (each switch as the oracle resolves it,
    // explain() says why); the variants force one switch on and off.
    using fusedmoe::Toggle;
    auto add = [&](const char* label, Toggle fusedmoe::ForwardOptions::*field, Toggle value) {
      TileVariant v;
      v.label = label;
      v.options.*field = value;
      variants.push_back(v);
    };
    if (pdl) {  // programmatic dependent launch between the layer's kernels
      add("pdl on", &fusedmoe::ForwardOptions::overlap_launches, Toggle::kOn);
      add("pdl off", &fusedmoe::ForwardOptions::overlap_launches, Toggle::kOff);
    }
    if (gather) {  // GEMM1 gathering rows through the plan (no permuted copy), forced each way
      add("gather on", &fusedmoe::ForwardOptions::gather_rows, Toggle::kOn);
      add("gather off", &fusedmoe::ForwardOptions::gather_rows, Toggle::kOff);
    }
    if (front) {  // route + plan in the fused front kernel, forced each way
      add("front fused", &fusedmoe::ForwardOptions::fuse_front, Toggle::kOn);
      add("front separate", &fusedmoe::ForwardOptions::fuse_front, Toggle::kOff);
    }
    if (front && gather) {  // both: the fused front quantising x in token order, GEMM1 gathering it
      add("front fused + gather on", &fusedmoe::ForwardOptions::fuse_front, Toggle::kOn);
      variants.back().options.gather_rows = Toggle::kOn;
    }
    if (staged) add("staged off", &fusedmoe::ForwardOptions::staged_epilogue, Toggle::kOff);
    if (evict) {
      add("evict-first on", &fusedmoe::ForwardOptions::weights_evict_first, Toggle::kOn);
      add("evict-first off", &fusedmoe::ForwardOptions::weights_evict_first, Toggle::kOff);
    }
    // (FP8 block cases only; elsewhere the switch changes nothing)
    if (scales) add("scales by token off", &fusedmoe::ForwardOptions::scales_by_token, Toggle::kOff);
    if (splitk) add("split-k off", &fusedmoe::ForwardOptions::split_k, Toggle::kOff);
    if (cutlass_gemm2) {  // prefill: GEMM1 on normal tiles with gathered rows, GEMM2 on CUTLASS, forced on / off
      add("cutlass gemm2 on", &fusedmoe::ForwardOptions::cutlass_gemm2, Toggle::kOn);
      add("cutlass gemm2 off", &fusedmoe::ForwardOptions::cutlass_gemm2, Toggle::kOff);
    }
    if (pingpong) {  // BF16 GEMM2 on the ping-pong normal tiles (CUTLASS backend: instead of its GEMM2)
      add("pingpong on", &fusedmoe::ForwardOptions::pingpong_gemm2, Toggle::kOn);
      add("pingpong off", &fusedmoe::ForwardOptions::pingpong_gemm2, Toggle::kOff);
    }
    if (balanced) {  // BF16 Swap-AB GEMM2: the balanced one-wave schedule forced on / off
      add("balanced on", &fusedmoe::ForwardOptions::balanced_gemm2, Toggle::kOn);
      add("balanced off", &fusedmoe::ForwardOptions::balanced_gemm2, Toggle::kOff);
    }
    if (dense) {  // Swap-AB GEMMs on the dense instances (3-4 CTAs per SM) forced on / off
      add("dense on", &fusedmoe::ForwardOptions::dense_swapab, Toggle::kOn);
      add("dense off", &fusedmoe::ForwardOptions::dense_swapab, Toggle::kOff);
    }
    if (pair) {  // FP8 Swap-AB GEMMs on the pair instances (two weight tiles per stage) forced on / off
      add("pair on", &fusedmoe::ForwardOptions::fp8_pair_swapab, Toggle::kOn);
      add("pair off", &fusedmoe::ForwardOptions::fp8_pair_swapab, Toggle::kOff);
    }
    if (g_packed) add("packed off", &fusedmoe::ForwardOptions::packed_weights, Toggle::kOff);
    if (g_fused_act) {  // prefill, CUTLASS backend: GEMM1 with the activation in its epilogue, forced on / off
      add("fused act on", &fusedmoe::ForwardOptions::fused_activation, Toggle::kOn);
      add("fused act off", &fusedmoe::ForwardOptions::fused_activation, Toggle::kOff);
    }
    if (hq) add("fused h quant off", &fusedmoe::ForwardOptions::fused_h_quant, Toggle::kOff);  // (FP8 Swap-AB)
    if (hs) {  // FP8 Swap-AB GEMM2 quantising H itself forced on / off (off: the separate pass)
      add("gemm2 quantises h on", &fusedmoe::ForwardOptions::gemm2_quantises_h, Toggle::kOn);
      add("gemm2 quantises h off", &fusedmoe::ForwardOptions::gemm2_quantises_h, Toggle::kOff);
    }
    if (dense1) {  // GEMM1's dense instances forced on / off (GEMM2 as the rule says)
      add("gemm1 dense on", &fusedmoe::ForwardOptions::gemm1_dense_swapab, Toggle::kOn);
      add("gemm1 dense off", &fusedmoe::ForwardOptions::gemm1_dense_swapab, Toggle::kOff);
    }
    if (balanced1) {  // FP8 Swap-AB GEMM1: the balanced one-wave schedule (static ranges) forced on / off
      add("gemm1 balanced on", &fusedmoe::ForwardOptions::balanced_gemm1, Toggle::kOn);
      add("gemm1 balanced off", &fusedmoe::ForwardOptions::balanced_gemm1, Toggle::kOff);
    }
    if (cutlass) {  // each backend forced (a case a backend cannot run is listed as skipped)
      for (fusedmoe::Backend b : {fusedmoe::Backend::kGrouped, fusedmoe::Backend::kCutlassGrouped}) {
        TileVariant v;
        v.label = std::string("backend ") + fusedmoe::to_string(b);
        v.options.backend = b;
        variants.push_back(v);
      }
    }
    for (int k : ksplits) {  // Swap-AB split-K forced (ForwardOptions::k_splits; 1 = none)
      TileVariant v;
      v.label = "k-splits " + std::to_string(k);
      v.options.k_splits = k;
      variants.push_back(v);
    }
    for (int k : ksplits1) {  // GEMM1's split-K forced (ForwardOptions::gemm1_k_splits)
      TileVariant v;
      v.label = "gemm1 k-splits " + std::to_string(k);
      v.options.gemm1_k_splits = k;
      variants.push_back(v);
    }
    for (int k : tpcs) {  // Swap-AB weight tiles per CTA forced
      TileVariant v;
      v.label = "tiles/cta " + std::to_string(k);
      v.options.weight_tiles_per_cta = k;
      v.options.k_splits = 1;
      variants.push_back(v);
    }
    for (int k : tpcs1) {  // GEMM1's weight tiles per CTA forced (ForwardOptions::gemm1_weight_tiles_per_cta)
      TileVariant v;
      v.label = "gemm1 tiles/cta " + std::to_string(k);
      v.options.gemm1_weight_tiles_per_cta = k;
      variants.push_back(v);
    }
    for (int k : tpcs1d) {  // GEMM1's weight tiles per CTA forced on its dense instance
      TileVariant v;
      v.label = "gemm1 dense, tiles/cta " + std::to_string(k);
      v.options.gemm1_weight_tiles_per_cta = k;
      v.options.gemm1_dense_swapab = Toggle::kOn;
      variants.push_back(v);
    }
    for (int k : tiles2) {  // GEMM2's own Swap-AB token tile (ForwardOptions::gemm2_tokens_tile)
      TileVariant v;
      v.label = "gemm2 tile " + std::to_string(k);
      v.options.gemm2_tokens_tile = k;
      variants.push_back(v);
    }
    for (int k : earlies) {  // GEMM1's weight stages before the permute is done (ForwardOptions)
      TileVariant v;
      v.label = "early stages " + std::to_string(k);
      v.options.early_weight_stages = k;
      variants.push_back(v);
    }
    for (int k : earlies2) {  // GEMM2's weight stages before GEMM1 (or H's quantise) is done
      TileVariant v;
      v.label = "gemm2 early stages " + std::to_string(k);
      v.options.gemm2_early_weight_stages = k;
      variants.push_back(v);
    }
    const std::vector<Case> cases = selected(layer_cases(), only);
    if (cases.empty()) return 2;
    const double fp8_tflops = fp8_rate_if_needed(s, cases, tflops);
    std::FILE* tcsv = trace_path.empty() ? nullptr : std::fopen(trace_path.c_str(), "w");
    if (tcsv != nullptr) std::fprintf(tcsv, "case,tokens,variant,gemm,cta,sm,expert,entry,known,wait,first_full,loop_done,done\n");
    all_ok = bench_layer(s, bw, tflops, fp8_tflops, tokens, &rows, cases, variants, stages, precomputed, tcsv, trace, cold_inputs);
    if (tcsv != nullptr) std::fclose(tcsv);
  }
  if (suite == "crossover") {
    std::string how;
    const double tflops = measure_bf16_gemm_rate(s, &how);
    std::printf("dense bf16 GEMM rate (%s, same run): %.0f TFLOP/s\n", how.c_str(), tflops / 1e12);
    std::vector<Case> cases;
    for (const Case& c : layer_cases())
      if (only.empty() ? (c.name == "dsv3-tp8" || c.name == "qwen235-tp8")
                       : std::find(only.begin(), only.end(), c.name) != only.end())
        cases.push_back(c);
    all_ok = bench_crossover(s, bw, tflops, fp8_rate_if_needed(s, cases, tflops), tokens, &rows, cases);
  }
  if (suite == "coldstart") all_ok = bench_coldstart(s, &rows);
  if (suite == "rope") all_ok = bench_rope(s, bw, tokens, &rows);
  std::vector<std::string> timelines;
  std::unique_ptr<L2Flush> l2flush;  // dispatch --flushed
  if (suite == "dispatch" && flushed) l2flush = std::make_unique<L2Flush>();
  if (suite == "dispatch") {
    // The cost of one graph kernel node doing (almost) nothing: a 1-block kernel reading 16 B.
    Buf tiny(256), sink(16);
    const double us = time_graph(s, [&] {
      (void)fm::kernels::launch_stream_read(tiny.p, 16, static_cast<uint32_t*>(sink.p), 1, s);
    });
    std::printf("graph kernel node floor (1-block kernel reading 16 B, per call in graph replay): %.2f us\n", us);
  }
  const std::vector<Case> dcases = suite == "dispatch" ? selected(dispatch_cases(), only) : std::vector<Case>{};
  if (suite == "dispatch" && dcases.empty()) return 2;
  for (const Case& c : dcases) {
    for (int64_t t : tokens) {
      fm::MoeProblem p = c.problem;
      p.num_tokens = p.max_tokens = t;
      fm::testing::LayerData d;
      std::string why;
      if (!fm::testing::make_layer_data(p, 1234 + t, g_skew, &d, &why, false)) {
        std::fprintf(stderr, "bench: %s\n", why.c_str());
        return 1;
      }
      if (!g_random_bias) std::fill(d.correction_bias.begin(), d.correction_bias.end(), 0.f);
      // Device copies of the inputs the front half reads (weights are not touched by it).
      const size_t logit_bytes = p.router.logits_dtype == fm::DType::kBFloat16 ? d.logits_bf16.size() * 2 : d.logits_f32.size() * 4;
      const bool pre = p.router.kind == fm::RouterKind::kPrecomputed;
      Buf x(d.x.size() * 2), logits(logit_bytes + 16), bias(d.correction_bias.size() * 4 + 16), dummy(256);
      Buf ids(d.topk_ids.size() * 4 + 16), wts(d.topk_weights.size() * 4 + 16);
      upload(x.p, d.x);
      if (pre) {
        upload(ids.p, d.topk_ids);
        upload(wts.p, d.topk_weights);
      }
      if (p.router.logits_dtype == fm::DType::kBFloat16) upload(logits.p, d.logits_bf16);
      else upload(logits.p, d.logits_f32);
      upload(bias.p, d.correction_bias);
      fm::MoeTensors io;
      io.x = x.p;
      io.router_logits = logits.p;
      io.correction_bias = p.router.use_correction_bias ? static_cast<const float*>(bias.p) : nullptr;
      if (pre) {
        io.router_logits = nullptr;
        io.topk_ids = static_cast<const int32_t*>(ids.p);
        io.topk_weights = static_cast<const float*>(wts.p);
      }
      io.w1 = io.w2 = dummy.p;
      io.w1_scale = io.w2_scale = dummy.p;
      io.out = dummy.p;
      size_t ws_bytes = 0;
      if (!fm::workspace_size(p, &ws_bytes).ok()) return 1;
      Buf ws(ws_bytes);
      // Layouts: FP8 in token order (the gather layout the decode GEMMs read; fused front kernel
      // at <= 256 tokens) and contiguous (quantised rows copied into expert order); BF16 in token
      // order (GEMM1 reads x by row index: nothing to copy). At <= 256 tokens also the separate
      // kernels (fuse_front = false) for comparison.
      // From 1024 tokens also the contiguous layout with overlapped launches (DispatchOptions::
      // overlap_launches), and for BF16 the contiguous copy itself (what forward() runs before the
      // GEMMs).
      struct Variant {
        std::string stage;
        bool permute, fuse, pdl = false, by_token = false;
      };
      const bool fp8 = p.quant.act != fm::ActQuant::kNone;
      std::vector<Variant> variants;
      if (fp8) {
        if (t <= 256) variants.push_back({"route+plan+quant token-order", false, true});
        variants.push_back({"route+plan+quant contiguous", true, true});
        if (t >= 1024) variants.push_back({"route+plan+quant contiguous, pdl", true, true, true});
        // forward()'s FP8 block path: the 1x128 scales stay in token order (no gather)
        if (p.quant.act == fm::ActQuant::kGroup128)
          variants.push_back({"route+plan+quant contiguous, scales by token", true, true, false, true});
        if (t <= 256) variants.push_back({"route+plan+quant token-order unfused", false, false});
      } else {
        variants.push_back({"route+plan", false, true});
        if (t <= 256) variants.push_back({"route+plan unfused", false, false});
        if (t >= 1024) {
          variants.push_back({"route+plan+copy contiguous", true, true});
          variants.push_back({"route+plan+copy contiguous, pdl", true, true, true});
        }
      }
      for (const Variant& v : variants) {
        fm::DispatchResult r;
        fm::DispatchOptions o;
        o.permute = v.permute;
        o.fuse_front = v.fuse;
        o.overlap_launches = v.pdl;
        o.group_scales_by_token = v.by_token;
        st = fm::dispatch(p, io, ws.p, ws_bytes, s, o, &r);
        BENCH_CUDA(cudaStreamSynchronize(s));
        if (!st.ok()) {
          std::fprintf(stderr, "bench: dispatch failed: %s\n", st.to_string().c_str());
          return 1;
        }
        if (!check_case(p, d, r, &why)) {
          std::fprintf(stderr, "bench: %s T=%lld %s: CHECK FAILED: %s\n", c.name.c_str(), static_cast<long long>(t),
                       v.stage.c_str(), why.c_str());
          all_ok = false;
          continue;
        }
        const double us = time_graph(s, [&] { (void)fm::dispatch(p, io, ws.p, ws_bytes, s, o, &r); });
        // Bytes these kernels must move: logits (+bias) in, ids/weights out and back in, the
        // row maps out, and with FP8 one read of x and one write of the quantised rows + scales
        // (T rows in token order, T x slots rows in the contiguous layout).
        const double tk = static_cast<double>(t) * p.top_k();
        const double slots = static_cast<double>(t) * p.slots_per_token();
        double bytes = logit_bytes + d.correction_bias.size() * 4.0 + tk * 8 + tk * 4 + slots * 4 * 3;
        if (fp8) {
          const double out_rows = v.permute ? slots : static_cast<double>(t);
          const double scale_rows = v.by_token ? static_cast<double>(t) : out_rows;  // by token: each token's once
          bytes += static_cast<double>(t) * p.hidden * 2 + out_rows * p.hidden * 1 + scale_rows * (p.hidden / 128) * 4;
        } else if (v.permute) {
          bytes += static_cast<double>(t) * p.hidden * 2 + slots * p.hidden * 2;
        }
        Row row = measured_row(c.name, v.stage + " (" + std::to_string(r.launches) + " launches)", t, us, bytes, bw);
        row.peer = vllm_align_figure(t);
        rows.push_back(row);
        // --flushed: the same calls each after a prelude, the prelude's own time subtracted: a read of
        // 256 MB (L2 evicted; the SMs' instruction caches may stay warm, since only the flush kernel
        // runs in between: see docs/design.md, the fused front), then that read and a code sweep
        // (every SM's instruction caches evicted too)
        struct Prelude {
          const char* row;
          const char* timeline;
          bool sweep;
        };
        static constexpr Prelude kPreludes[] = {{"L2 flushed", "after an L2 flush", false},
                                                {"L2 flushed, code swept", "after an L2 flush and a code sweep", true}};
        auto prelude = [&](const Prelude& pr) {
          if (pr.sweep) l2flush->with_code_sweep(s);
          else (*l2flush)(s);
        };
        auto call = [&] { (void)fm::dispatch(p, io, ws.p, ws_bytes, s, o, &r); };
        if (flushed)
          for (const Prelude& pr : kPreludes) {
            const double alone = time_graph(s, [&] { prelude(pr); });
            const double with = time_graph(s, [&] { prelude(pr); call(); });
            rows.push_back(measured_row(c.name, v.stage + " (" + std::to_string(r.launches) + " launches, " + pr.row + ")",
                                        t, std::max(with - alone, 0.01), bytes, bw));
          }
        if (r.fused_front) {
          timelines.push_back(c.name + " T=" + std::to_string(t) + " " + v.stage + ": " + front_timeline(s, call));
          if (flushed)
            for (const Prelude& pr : kPreludes)
              timelines.push_back(c.name + " T=" + std::to_string(t) + " " + v.stage + " (" + pr.timeline + "): " +
                                  front_timeline(s, [&] { prelude(pr); call(); }));
          if (front_b2b)
            timelines.push_back(c.name + " T=" + std::to_string(t) + " " + v.stage + " (2nd of 2 back to back): " +
                                front_timeline(s, call, 21, 2));
        }
      }
    }
  }
  if (!peer_path.empty()) add_peer_column(peer_path, &rows);
  std::printf("\n");
  print_rows(rows);
  if (!timelines.empty()) {
    std::printf("\nfused front kernel timeline (globaltimer stamps, median of 21 single launches, from the first block's entry):\n");
    for (const std::string& l : timelines) std::printf("  %s\n", l.c_str());
  }
  if (suite == "coldstart")
    std::printf("\ncoldstart criterion: %s\n", all_ok ? "PASS" : "FAIL (see above)");
  else if (suite == "layer" || suite == "crossover")
    std::printf("\nforward() outputs are not checked here (the GPU tests check them against float64): %s\n",
                all_ok ? "every call succeeded" : "FAILURES (see above)");
  else
    std::printf("\nchecked against the CPU reference before timing: %s\n", all_ok ? "all cases exact" : "FAILURES (see above)");
  std::string cmd = "fusedmoe";
  for (int i = 1; i < argc; ++i) cmd += std::string(" ") + argv[i];
  if (g_random_bias)
    std::printf("routing: bias (--skew bias: uniform logits with the test data's random correction bias, which skews the bias routers' loads; the floor counts the experts this routing touches)\n");
  else
    std::printf("routing: %s (--skew; correction biases zero; the floor counts the experts this routing touches)\n", fm::testing::skew_name(g_skew));
  std::printf("command: %s\n", cmd.c_str());
  if (!csv_path.empty()) {
    std::ofstream f(csv_path);
    f << "case,stage,tokens,us,bytes,GBps,floor_us,pct_floor,read_GBps,us_hot\n";
    for (const Row& r : rows)
      f << r.case_name << ",\"" << r.stage << "\"," << r.tokens << "," << r.us << "," << r.bytes << "," << r.gbps << ","
        << r.floor_us << "," << r.pct_floor << "," << bw / 1e9 << "," << r.us_hot << "\n";
  }
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << "{\"device\": \"" << info.name << "\", \"read_GBps\": " << bw / 1e9 << ", \"command\": \"" << cmd
      << "\", \"rows\": [\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      f << "  {\"case\": \"" << r.case_name << "\", \"stage\": \"" << r.stage << "\", \"tokens\": " << r.tokens
        << ", \"us\": " << r.us << ", \"TFLOPs\": " << r.tflops << ", \"bytes\": " << r.bytes << ", \"GBps\": " << r.gbps << ", \"floor_us\": "
        << r.floor_us << ", \"pct_floor\": " << r.pct_floor;
      if (r.us_hot > 0) f << ", \"us_hot\": " << r.us_hot;
      f << "}" << (i + 1 < rows.size() ? ",\n" : "\n");
    }
    f << "]}\n";
  }
  cudaStreamDestroy(s);
  return all_ok ? 0 : 1;
}
