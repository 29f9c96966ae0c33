// GPU tests of the smoke GEMM (sm90_bf16_gemm_smoke): C = A · B^T against a float64 CPU reference
// computed from the same bf16 inputs. Fresh random inputs each run (the seed is printed so that a
// failure can be replayed with FUSEDMOE_TEST_SEED=<seed>).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#include "kernels/gemm/sm90_bf16_gemm_smoke.h"

namespace {

#define SMOKE_CUDA_OK(expr)                                                              \
  do {                                                                                   \
    cudaError_t smoke_err_ = (expr);                                                     \
    ASSERT_EQ(smoke_err_, cudaSuccess) << #expr << ": " << cudaGetErrorString(smoke_err_); \
  } while (0)

float bf16_to_float(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// Round-to-nearest-even float -> bf16 (inputs here are finite).
uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  u += 0x7FFFu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

uint64_t test_seed() {
  if (const char* s = std::getenv("FUSEDMOE_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ uint64_t(rd());
}

// ref[i*n + j] = sum_k a[i,k] * b[j,k] in float64, rows split over the host's cores.
std::vector<double> reference_gemm(const std::vector<float>& a, const std::vector<float>& b, int m, int n,
                                   int k) {
  std::vector<double> ref(size_t(m) * size_t(n));
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const int workers = int(std::min<unsigned>(hw, unsigned(std::max(1, m))));
  // Columns are processed in chunks of B rows small enough to stay in a core's L2 while every row of
  // A in the worker's range passes over them (B is re-read from memory once per chunk, not per row).
  const int j_chunk = std::max(1, int((512u * 1024u) / (sizeof(float) * size_t(std::max(1, k)))));
  auto rows = [&](int r_begin, int r_end) {
    for (int jb = 0; jb < n; jb += j_chunk) {
      const int je = std::min(n, jb + j_chunk);
      for (int i = r_begin; i < r_end; ++i) {
        const float* ai = a.data() + size_t(i) * size_t(k);
        for (int j = jb; j < je; ++j) {
          const float* bj = b.data() + size_t(j) * size_t(k);
          // four independent partial sums break the add dependency chain
          double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
          int kk = 0;
          for (; kk + 4 <= k; kk += 4) {
            s0 += double(ai[kk + 0]) * double(bj[kk + 0]);
            s1 += double(ai[kk + 1]) * double(bj[kk + 1]);
            s2 += double(ai[kk + 2]) * double(bj[kk + 2]);
            s3 += double(ai[kk + 3]) * double(bj[kk + 3]);
          }
          for (; kk < k; ++kk) s0 += double(ai[kk]) * double(bj[kk]);
          ref[size_t(i) * size_t(n) + size_t(j)] = (s0 + s1) + (s2 + s3);
        }
      }
    }
  };
  std::vector<std::thread> pool;
  const int chunk = (m + workers - 1) / workers;
  for (int w = 0; w < workers; ++w) {
    const int r0 = w * chunk, r1 = std::min(m, r0 + chunk);
    if (r0 < r1) pool.emplace_back(rows, r0, r1);
  }
  for (auto& t : pool) t.join();
  return ref;
}

struct GemmShape {
  int m, n, k;
};

std::string shape_name(const ::testing::TestParamInfo<GemmShape>& info) {
  return std::to_string(info.param.m) + "x" + std::to_string(info.param.n) + "x" + std::to_string(info.param.k);
}

class SmokeGemm : public ::testing::TestWithParam<GemmShape> {};

TEST_P(SmokeGemm, MatchesFloat64Reference) {
  const auto [m, n, k] = GetParam();
  const uint64_t seed = test_seed();
  std::printf("[ smoke    ] %s %dx%dx%d seed=%llu\n", fusedmoe::kernels::sm90_bf16_gemm_smoke_name(), m, n, k,
              static_cast<unsigned long long>(seed));
  RecordProperty("seed", std::to_string(seed));

  const size_t a_elems = size_t(m) * size_t(k), b_elems = size_t(n) * size_t(k), c_elems = size_t(m) * size_t(n);
  constexpr size_t kGuard = 1024;  // elements after C that the kernel must leave untouched

  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<uint16_t> a_bits(a_elems), b_bits(b_elems);
  std::vector<float> a_f(a_elems), b_f(b_elems);
  for (size_t i = 0; i < a_elems; ++i) {
    a_bits[i] = float_to_bf16(dist(rng));
    a_f[i] = bf16_to_float(a_bits[i]);
  }
  for (size_t i = 0; i < b_elems; ++i) {
    b_bits[i] = float_to_bf16(dist(rng));
    b_f[i] = bf16_to_float(b_bits[i]);
  }

  void *d_a = nullptr, *d_b = nullptr, *d_c = nullptr;
  SMOKE_CUDA_OK(cudaMalloc(&d_a, a_elems * 2));
  SMOKE_CUDA_OK(cudaMalloc(&d_b, b_elems * 2));
  SMOKE_CUDA_OK(cudaMalloc(&d_c, (c_elems + kGuard) * 2));
  SMOKE_CUDA_OK(cudaMemcpy(d_a, a_bits.data(), a_elems * 2, cudaMemcpyHostToDevice));
  SMOKE_CUDA_OK(cudaMemcpy(d_b, b_bits.data(), b_elems * 2, cudaMemcpyHostToDevice));
  SMOKE_CUDA_OK(cudaMemset(d_c, 0xFF, (c_elems + kGuard) * 2));  // 0xFFFF: bf16 NaN poison

  cudaStream_t stream;
  SMOKE_CUDA_OK(cudaStreamCreate(&stream));
  SMOKE_CUDA_OK(fusedmoe::kernels::sm90_bf16_gemm_smoke(d_a, d_b, d_c, m, n, k, stream));
  SMOKE_CUDA_OK(cudaStreamSynchronize(stream));

  std::vector<uint16_t> c_bits(c_elems + kGuard);
  SMOKE_CUDA_OK(cudaMemcpy(c_bits.data(), d_c, (c_elems + kGuard) * 2, cudaMemcpyDeviceToHost));

  // Timing, large shapes only (informational).
  if (double(m) * n * k >= 1e10) {
    cudaEvent_t t0, t1;
    SMOKE_CUDA_OK(cudaEventCreate(&t0));
    SMOKE_CUDA_OK(cudaEventCreate(&t1));
    constexpr int kIters = 20;
    SMOKE_CUDA_OK(fusedmoe::kernels::sm90_bf16_gemm_smoke(d_a, d_b, d_c, m, n, k, stream));  // warm-up
    SMOKE_CUDA_OK(cudaEventRecord(t0, stream));
    for (int i = 0; i < kIters; ++i)
      SMOKE_CUDA_OK(fusedmoe::kernels::sm90_bf16_gemm_smoke(d_a, d_b, d_c, m, n, k, stream));
    SMOKE_CUDA_OK(cudaEventRecord(t1, stream));
    SMOKE_CUDA_OK(cudaEventSynchronize(t1));
    float ms = 0.f;
    SMOKE_CUDA_OK(cudaEventElapsedTime(&ms, t0, t1));
    const double us = 1e3 * ms / kIters;
    std::printf("[ smoke    ] %dx%dx%d: %.1f us/iter, %.1f TFLOP/s\n", m, n, k, us, 2.0 * m * n * k / (us * 1e6));
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
  }
  cudaStreamDestroy(stream);
  cudaFree(d_a);
  cudaFree(d_b);
  cudaFree(d_c);

  const std::vector<double> ref = reference_gemm(a_f, b_f, m, n, k);

  double ref_sq = 0.0;
  for (double r : ref) ref_sq += r * r;
  const double ref_rms = std::sqrt(ref_sq / double(c_elems));

  // Per element: bf16 output rounding is at most 2^-8 relative; the slack covers fp32 accumulation.
  size_t non_finite = 0, bad = 0, first_bad = c_elems;
  double err_sq = 0.0, max_abs_err = 0.0;
  for (size_t i = 0; i < c_elems; ++i) {
    const double got = bf16_to_float(c_bits[i]);
    if (!std::isfinite(got)) {
      ++non_finite;
      if (first_bad == c_elems) first_bad = i;
      continue;
    }
    const double d = got - ref[i];
    err_sq += d * d;
    max_abs_err = std::max(max_abs_err, std::fabs(d));
    if (std::fabs(d) > std::fabs(ref[i]) / 128.0 + 1e-3 * ref_rms + 1e-6) {
      ++bad;
      if (first_bad == c_elems) first_bad = i;
    }
  }
  size_t guard_touched = 0;
  for (size_t i = c_elems; i < c_elems + kGuard; ++i) guard_touched += (c_bits[i] != 0xFFFFu);

  const double rel = ref_sq > 0 ? std::sqrt(err_sq) / std::sqrt(ref_sq) : std::sqrt(err_sq);
  std::printf("[ smoke    ] %dx%dx%d: rel_l2_err=%.3e max_abs_err=%.3e ref_rms=%.3e non_finite=%zu bad=%zu\n", m,
              n, k, rel, max_abs_err, ref_rms, non_finite, bad);
  RecordProperty("rel_l2_err", std::to_string(rel));

  EXPECT_EQ(non_finite, 0u) << "elements left NaN/Inf (not written?), first at row " << first_bad / n << " col "
                            << first_bad % n;
  EXPECT_EQ(bad, 0u) << "elements outside tolerance, first at row " << first_bad / n << " col " << first_bad % n
                     << ": got " << bf16_to_float(c_bits[first_bad < c_elems ? first_bad : 0]) << " want "
                     << ref[first_bad < c_elems ? first_bad : 0];
  EXPECT_EQ(guard_touched, 0u) << "kernel wrote past the end of C";
  EXPECT_LT(rel, 1e-2);
}

INSTANTIATE_TEST_SUITE_P(Shapes, SmokeGemm,
                         ::testing::Values(GemmShape{128, 128, 64}, GemmShape{256, 256, 512},
                                           GemmShape{1000, 520, 712},  // ragged M, N, K
                                           GemmShape{1, 8, 8}, GemmShape{64, 4096, 7168},
                                           GemmShape{4096, 4096, 4096}),
                         shape_name);

TEST(SmokeGemmArgs, RejectsKNotMultipleOf8) {
  void *d_a = nullptr, *d_b = nullptr, *d_c = nullptr;
  SMOKE_CUDA_OK(cudaMalloc(&d_a, 64 * 64 * 2));
  SMOKE_CUDA_OK(cudaMalloc(&d_b, 64 * 64 * 2));
  SMOKE_CUDA_OK(cudaMalloc(&d_c, 64 * 64 * 2));
  EXPECT_EQ(fusedmoe::kernels::sm90_bf16_gemm_smoke(d_a, d_b, d_c, 16, 16, 7, nullptr), cudaErrorInvalidValue);
  cudaFree(d_a);
  cudaFree(d_b);
  cudaFree(d_c);
}

TEST(SmokeGemmArgs, RejectsUnalignedPointers) {
  void *d_a = nullptr, *d_b = nullptr, *d_c = nullptr;
  SMOKE_CUDA_OK(cudaMalloc(&d_a, 64 * 64 * 2));
  SMOKE_CUDA_OK(cudaMalloc(&d_b, 64 * 64 * 2));
  SMOKE_CUDA_OK(cudaMalloc(&d_c, 64 * 64 * 2));
  auto off = [](void* p) { return static_cast<void*>(static_cast<char*>(p) + 2); };  // one bf16 off
  EXPECT_EQ(fusedmoe::kernels::sm90_bf16_gemm_smoke(off(d_a), d_b, d_c, 16, 16, 16, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(fusedmoe::kernels::sm90_bf16_gemm_smoke(d_a, off(d_b), d_c, 16, 16, 16, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(fusedmoe::kernels::sm90_bf16_gemm_smoke(d_a, d_b, off(d_c), 16, 16, 16, nullptr), cudaErrorInvalidValue);
  cudaFree(d_a);
  cudaFree(d_b);
  cudaFree(d_c);
}

}  // namespace
