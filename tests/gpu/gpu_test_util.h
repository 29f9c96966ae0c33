// Helpers shared by the GPU tests: device buffers, copies, poisoning, seeds.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <random>
#include <vector>

#include "kernels/gemm/sm90_bf16_grouped_gemm.h"  // grouped_gemm_max_padded_rows

#define FM_CUDA_CHECK(expr)                                                              \
  do {                                                                                   \
    cudaError_t fm_e_ = (expr);                                                          \
    ASSERT_EQ(fm_e_, cudaSuccess) << #expr << ": " << cudaGetErrorString(fm_e_);         \
  } while (0)

namespace fusedmoe::gputest {

// Fresh seed each run unless FUSEDMOE_TEST_SEED is set (to replay a failure); print it.
inline uint64_t test_seed() {
  if (const char* s = std::getenv("FUSEDMOE_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  return (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
}

// Owning device allocation (tests only: the library never allocates on its hot path).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) { resize(bytes); }
  ~DeviceBuffer() { if (ptr_) cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      if (ptr_) cudaFree(ptr_);
      ptr_ = o.ptr_;
      bytes_ = o.bytes_;
      o.ptr_ = nullptr;
      o.bytes_ = 0;
    }
    return *this;
  }
  void resize(size_t bytes) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    bytes_ = bytes;
    if (bytes && cudaMalloc(&ptr_, bytes) != cudaSuccess) { ptr_ = nullptr; bytes_ = 0; }
  }
  void* get() const { return ptr_; }
  template <class T> T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }
  // Fill every byte with `byte` (0xFF: NaN for float/bf16, -1 for ints).
  // Synchronous: the legacy-stream memset is not ordered before work on non-blocking streams.
  void poison(uint8_t byte = 0xFF) const {
    if (!ptr_) return;
    EXPECT_EQ(cudaMemset(ptr_, byte, bytes_), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

template <class T>
DeviceBuffer to_device(const std::vector<T>& v) {
  DeviceBuffer b(v.size() * sizeof(T) + (v.empty() ? 16 : 0));
  if (!v.empty()) cudaMemcpy(b.get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
  return b;
}

// Upload into an existing buffer, resizing it (at least 16 bytes, so an empty vector still
// yields a valid pointer).
template <class T>
void upload(DeviceBuffer& b, const std::vector<T>& v) {
  b.resize(v.size() * sizeof(T) + (v.empty() ? 16 : 0));
  if (!v.empty()) cudaMemcpy(b.get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
}

template <class T>
std::vector<T> to_host(const void* p, size_t n) {
  std::vector<T> v(n);
  if (n) cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
  return v;
}

// ---- informational timings (tests print them; the benchmarks are in tools/bench.cpp) ----
// Median microseconds of `launch(stream)` over `reps` single launches on the default stream.
template <class F>
float median_us(F&& launch, int reps = 20) {
  for (int i = 0; i < 5; ++i) launch(nullptr);
  cudaDeviceSynchronize();
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    cudaEventRecord(a);
    launch(nullptr);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms * 1000.f);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// GPU time per launch without host submission gaps: `per_graph` launches captured in one CUDA
// graph, the graph replayed `reps` times, the median replay divided by per_graph (-1 on failure).
template <class F>
float graph_us(F&& launch, int per_graph = 20, int reps = 10) {
  cudaStream_t s = nullptr;
  cudaGraph_t g = nullptr;
  cudaGraphExec_t e = nullptr;
  float result = -1.f;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return result;
  bool ok = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess;
  if (ok) {
    for (int i = 0; i < per_graph; ++i) launch(s);
    ok = cudaStreamEndCapture(s, &g) == cudaSuccess;
  }
  ok = ok && cudaGraphInstantiate(&e, g, 0) == cudaSuccess;
  if (ok) {
    cudaGraphLaunch(e, s);  // warm-up
    cudaStreamSynchronize(s);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    std::vector<float> t;
    for (int i = 0; i < reps; ++i) {
      cudaEventRecord(a, s);
      cudaGraphLaunch(e, s);
      cudaEventRecord(b, s);
      cudaEventSynchronize(b);
      float ms = 0;
      cudaEventElapsedTime(&ms, a, b);
      t.push_back(ms * 1000.f / per_graph);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(t.begin(), t.end());
    result = t[t.size() / 2];
  }
  if (e) cudaGraphExecDestroy(e);
  if (g) cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  cudaGetLastError();
  return result;
}

// The contiguous (expert-grouped) layout of one grouped-GEMM call: expert e's rows at
// padded[e] .. padded[e] + counts[e] - 1, padded offsets multiples of `pad`.
struct GroupedLayout {
  std::vector<int32_t> counts, offsets, padded;
  int64_t rows = 0;      // R
  int64_t max_rows = 0;  // host bound on padded[G] (kernels::grouped_gemm_max_padded_rows)
};

inline GroupedLayout make_grouped_layout(const std::vector<int>& counts, int pad) {
  GroupedLayout l;
  const int g = int(counts.size());
  l.counts.assign(counts.begin(), counts.end());
  l.offsets.assign(size_t(g) + 1, 0);
  l.padded.assign(size_t(g) + 1, 0);
  for (int e = 0; e < g; ++e) {
    l.offsets[size_t(e) + 1] = l.offsets[size_t(e)] + counts[size_t(e)];
    l.padded[size_t(e) + 1] = l.padded[size_t(e)] + (counts[size_t(e)] + pad - 1) / pad * pad;
  }
  l.rows = l.offsets.back();
  l.max_rows = fusedmoe::kernels::grouped_gemm_max_padded_rows(l.rows, g, pad);
  return l;
}

}  // namespace fusedmoe::gputest
