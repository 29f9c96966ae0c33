// The device conversions the quantisers use, exhaustively against the CPU reference:
//   * float -> e4m3 (cvt.rn.satfinite.e4m3x2.f32, as the kernels pack pairs) and float -> UE8M0
//     for all 2^32 float bit patterns;
//   * the f32 activation scale max(amax, 1e-10) / 448 and the reciprocal 1 / x for all 2^31
//     non-negative floats (the kernels compute both without a division instruction; a NaN amax
//     means the floor, see ref_scale);
//   * the UE8M0 scale 2^ceil(log2(amax / 448)) over 2^28 patterns spread over every exponent.
// The entry points live in kernels/quant/permute_quant_launch.h (a .cpp test cannot hold a kernel).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "fusedmoe/reference.h"
#include "gpu_test_util.h"
#include "kernels/quant/permute_quant_launch.h"

namespace fm = fusedmoe;
namespace fk = fusedmoe::kernels;
namespace ref = fusedmoe::ref;
using fm::gputest::DeviceBuffer;

namespace {

constexpr uint32_t kChunk = 1u << 28;

// Counts i in [0, n) with bad(i), on every host core; keeps the smallest bad index.
template <class F>
uint64_t parallel_count(uint64_t n, F&& bad, uint64_t* first_bad) {
  const unsigned nt = std::max(1u, std::min(64u, std::thread::hardware_concurrency()));
  std::atomic<uint64_t> total{0};
  std::atomic<uint64_t> first{~uint64_t{0}};
  std::vector<std::thread> th;
  for (unsigned w = 0; w < nt; ++w) {
    th.emplace_back([&, w] {
      const uint64_t b = n * w / nt, e = n * (w + 1) / nt;
      uint64_t cnt = 0, f = ~uint64_t{0};
      for (uint64_t i = b; i < e; ++i)
        if (bad(i)) {
          if (cnt == 0) f = i;
          ++cnt;
        }
      total += cnt;
      uint64_t cur = first.load();
      while (f < cur && !first.compare_exchange_weak(cur, f)) {
      }
    });
  }
  for (auto& t : th) t.join();
  *first_bad = first.load();
  return total.load();
}

struct Pinned {
  void* p = nullptr;
  explicit Pinned(size_t bytes) { if (cudaMallocHost(&p, bytes) != cudaSuccess) p = nullptr; }
  ~Pinned() { if (p) cudaFreeHost(p); }
  template <class T> T* as() const { return static_cast<T*>(p); }
};

// ref::fp8_scale_from_amax with every NaN amax taken as a quiet NaN. The reference floors the
// amax with std::fmax, which in glibc returns NaN for a *signaling* NaN argument (IEEE 754-2008
// maxNum), while CUDA's fmaxf returns the other argument for any NaN. The device never feeds a
// NaN amax (its fmaxf reductions drop NaNs), so only the quiet-NaN behaviour is specified here.
float ref_scale(float amax, fm::ScaleFormat f) {
  return ref::fp8_scale_from_amax(std::isnan(amax) ? std::numeric_limits<float>::quiet_NaN() : amax, f);
}

bool same_float(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

}  // namespace

TEST(Conversion, E4m3AndUe8m0AllFloatBitPatterns) {
  DeviceBuffer de4(kChunk), du8(kChunk);
  Pinned he4(kChunk), hu8(kChunk);
  ASSERT_NE(de4.get(), nullptr);
  ASSERT_NE(he4.p, nullptr);
  ASSERT_NE(hu8.p, nullptr);
  uint64_t bad_e4 = 0, bad_u8 = 0;
  for (uint64_t c = 0; c < (uint64_t{1} << 32) / kChunk; ++c) {
    const uint32_t start = static_cast<uint32_t>(c * kChunk);
    FM_CUDA_CHECK(fk::debug_convert_all_e4m3(de4.as<uint8_t>(), du8.as<uint8_t>(), start, kChunk, nullptr));
    FM_CUDA_CHECK(cudaMemcpy(he4.p, de4.get(), kChunk, cudaMemcpyDeviceToHost));
    FM_CUDA_CHECK(cudaMemcpy(hu8.p, du8.get(), kChunk, cudaMemcpyDeviceToHost));
    const uint8_t* e4 = he4.as<uint8_t>();
    const uint8_t* u8 = hu8.as<uint8_t>();
    uint64_t f1 = 0, f2 = 0;
    const uint64_t n1 = parallel_count(
        kChunk, [&](uint64_t i) { return e4[i] != ref::float_to_e4m3(std::bit_cast<float>(uint32_t(start + i))); }, &f1);
    const uint64_t n2 = parallel_count(
        kChunk, [&](uint64_t i) { return u8[i] != ref::float_to_ue8m0(std::bit_cast<float>(uint32_t(start + i))); }, &f2);
    if (n1)
      ADD_FAILURE() << n1 << " e4m3 mismatches in chunk " << c << "; first bits 0x" << std::hex << (start + f1)
                    << ": device 0x" << int(e4[f1]) << ", reference 0x"
                    << int(ref::float_to_e4m3(std::bit_cast<float>(uint32_t(start + f1))));
    if (n2)
      ADD_FAILURE() << n2 << " ue8m0 mismatches in chunk " << c << "; first bits 0x" << std::hex << (start + f2)
                    << ": device 0x" << int(u8[f2]) << ", reference 0x"
                    << int(ref::float_to_ue8m0(std::bit_cast<float>(uint32_t(start + f2))));
    bad_e4 += n1;
    bad_u8 += n2;
  }
  EXPECT_EQ(bad_e4, 0u);
  EXPECT_EQ(bad_u8, 0u);
}

TEST(Conversion, F32ScaleAndReciprocalAllNonNegativeFloats) {
  DeviceBuffer ds(size_t{kChunk} * 4), di(size_t{kChunk} * 4);
  Pinned hs(size_t{kChunk} * 4), hi(size_t{kChunk} * 4);
  ASSERT_NE(ds.get(), nullptr);
  ASSERT_NE(di.get(), nullptr);
  ASSERT_NE(hs.p, nullptr);
  ASSERT_NE(hi.p, nullptr);
  uint64_t bad_s = 0, bad_i = 0;
  for (uint64_t c = 0; c < (uint64_t{1} << 31) / kChunk; ++c) {
    const uint32_t start = static_cast<uint32_t>(c * kChunk);
    FM_CUDA_CHECK(fk::debug_fp8_scale_bits(ds.as<float>(), di.as<float>(), start, kChunk, fm::ScaleFormat::kFloat32,
                                           nullptr));
    FM_CUDA_CHECK(cudaMemcpy(hs.p, ds.get(), size_t{kChunk} * 4, cudaMemcpyDeviceToHost));
    FM_CUDA_CHECK(cudaMemcpy(hi.p, di.get(), size_t{kChunk} * 4, cudaMemcpyDeviceToHost));
    const float* s = hs.as<float>();
    const float* inv = hi.as<float>();
    uint64_t f1 = 0, f2 = 0;
    const uint64_t n1 = parallel_count(
        kChunk,
        [&](uint64_t i) { return !same_float(s[i], ref_scale(std::bit_cast<float>(uint32_t(start + i)), fm::ScaleFormat::kFloat32)); },
        &f1);
    const uint64_t n2 = parallel_count(
        kChunk,
        [&](uint64_t i) {
          const float a = std::bit_cast<float>(uint32_t(start + i));
          return !same_float(inv[i], 1.0f / a);
        },
        &f2);
    if (n1)
      ADD_FAILURE() << n1 << " scale mismatches in chunk " << c << "; first amax bits 0x" << std::hex << (start + f1)
                    << std::dec << ": device " << s[f1] << ", reference "
                    << ref_scale(std::bit_cast<float>(uint32_t(start + f1)), fm::ScaleFormat::kFloat32);
    if (n2)
      ADD_FAILURE() << n2 << " reciprocal mismatches in chunk " << c << "; first bits 0x" << std::hex << (start + f2)
                    << std::dec << ": device " << inv[f2] << ", reference "
                    << 1.0f / std::bit_cast<float>(uint32_t(start + f2));
    bad_s += n1;
    bad_i += n2;
  }
  EXPECT_EQ(bad_s, 0u);
  EXPECT_EQ(bad_i, 0u);

  // Negative and NaN inputs: a few spot checks (the reciprocal is sign-symmetric).
  const std::vector<float> probe = {-0.f, -1.f, -3.f, -1e-40f, -std::numeric_limits<float>::infinity(),
                                    std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN()};
  for (float v : probe) {
    const uint32_t b = std::bit_cast<uint32_t>(v);
    FM_CUDA_CHECK(fk::debug_fp8_scale_bits(ds.as<float>(), di.as<float>(), b, 1, fm::ScaleFormat::kFloat32, nullptr));
    float s = 0, inv = 0;
    FM_CUDA_CHECK(cudaMemcpy(&s, ds.get(), 4, cudaMemcpyDeviceToHost));
    FM_CUDA_CHECK(cudaMemcpy(&inv, di.get(), 4, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(same_float(s, ref_scale(v, fm::ScaleFormat::kFloat32))) << v;
    EXPECT_TRUE(same_float(inv, 1.0f / v)) << v;
  }
}

TEST(Conversion, Ue8m0ScaleOverEveryExponent) {
  // 16 slices of 2^24 consecutive patterns, one every 2^27: all exponents, dense mantissas.
  constexpr uint32_t kSlice = 1u << 24;
  DeviceBuffer ds(size_t{kSlice} * 4), di(size_t{kSlice} * 4);
  std::vector<float> hs(kSlice), hi(kSlice);
  uint64_t bad = 0;
  for (uint32_t c = 0; c < 16; ++c) {
    const uint32_t start = c << 27 | (c * 0x1234567u & ((1u << 27) - kSlice));
    FM_CUDA_CHECK(fk::debug_fp8_scale_bits(ds.as<float>(), di.as<float>(), start, kSlice, fm::ScaleFormat::kUE8M0, nullptr));
    FM_CUDA_CHECK(cudaMemcpy(hs.data(), ds.get(), size_t{kSlice} * 4, cudaMemcpyDeviceToHost));
    uint64_t f = 0;
    const uint64_t n = parallel_count(
        kSlice,
        [&](uint64_t i) { return !same_float(hs[i], ref_scale(std::bit_cast<float>(uint32_t(start + i)), fm::ScaleFormat::kUE8M0)); },
        &f);
    if (n)
      ADD_FAILURE() << n << " UE8M0 scale mismatches from bits 0x" << std::hex << start << "; first 0x" << (start + f)
                    << std::dec << ": device " << hs[f] << ", reference "
                    << ref::fp8_scale_from_amax(std::bit_cast<float>(uint32_t(start + f)), fm::ScaleFormat::kUE8M0);
    bad += n;
  }
  EXPECT_EQ(bad, 0u);
  // Edges: amax 0, the floor, exact powers of two times 448, infinity.
  for (float a : {0.f, 1e-10f, 448.f, 896.f, 447.99997f, 448.00003f, 3.4e38f, std::numeric_limits<float>::infinity()}) {
    FM_CUDA_CHECK(fk::debug_fp8_scale_bits(ds.as<float>(), nullptr, std::bit_cast<uint32_t>(a), 1,
                                           fm::ScaleFormat::kUE8M0, nullptr));
    float s = 0;
    FM_CUDA_CHECK(cudaMemcpy(&s, ds.get(), 4, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(same_float(s, ref::fp8_scale_from_amax(a, fm::ScaleFormat::kUE8M0))) << a;
  }
}
