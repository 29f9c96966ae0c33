// Helpers shared by the GPU tests: device buffers, copies, poisoning, seeds.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

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
  void poison(uint8_t byte = 0xFF) const { if (ptr_) cudaMemset(ptr_, byte, bytes_); }

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

template <class T>
std::vector<T> to_host(const void* p, size_t n) {
  std::vector<T> v(n);
  if (n) cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
  return v;
}

}  // namespace fusedmoe::gputest
