// Device self-test: the CuTe WGMMA + TMA smoke GEMM against a float64 CPU reference.
#include <cuda_runtime.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/check.h"
#include "fusedmoe/device.h"
#include "fusedmoe/reference.h"
#if defined(FUSEDMOE_WITH_CUDA)
#include "kernels/gemm/sm90_bf16_gemm_smoke.h"
#endif

namespace fusedmoe {

Status self_test(int m, int n, int k, SelfTestResult* r) {
  FM_REQUIRE(m > 0 && n > 0 && k > 0 && k % 8 == 0, kInvalidArgument,
             "self_test needs positive M, N and K with K a multiple of 8, got " << m << "x" << n << "x" << k);
  int dev = 0;
  FM_TRY(current_device(&dev));
  FM_TRY(check_device_supported(dev));
#if !defined(FUSEDMOE_WITH_CUDA)
  (void)r;
  return Status(StatusCode::kNoDevice, "built without CUDA kernels");
#else
  std::mt19937_64 rng(std::random_device{}());
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<uint16_t> a(static_cast<size_t>(m) * k), b(static_cast<size_t>(n) * k),
      c(static_cast<size_t>(m) * n, 0xFFFF);  // poisoned: NaN bits
  for (auto& v : a) v = ref::float_to_bf16(nd(rng));
  for (auto& v : b) v = ref::float_to_bf16(nd(rng));
  void *da = nullptr, *db = nullptr, *dc = nullptr;
  auto cleanup = [&] { cudaFree(da); cudaFree(db); cudaFree(dc); };
  auto cuda = [&](cudaError_t e, const char* what) -> Status {
    if (e == cudaSuccess) return Status::Ok();
    cleanup();
    return Status(StatusCode::kCudaError, std::string(what) + ": " + cudaGetErrorString(e));
  };
  FM_TRY(cuda(cudaMalloc(&da, a.size() * 2), "cudaMalloc"));
  FM_TRY(cuda(cudaMalloc(&db, b.size() * 2), "cudaMalloc"));
  FM_TRY(cuda(cudaMalloc(&dc, c.size() * 2), "cudaMalloc"));
  FM_TRY(cuda(cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice), "copy A"));
  FM_TRY(cuda(cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice), "copy B"));
  FM_TRY(cuda(cudaMemcpy(dc, c.data(), c.size() * 2, cudaMemcpyHostToDevice), "poison C"));
  FM_TRY(cuda(kernels::sm90_bf16_gemm_smoke(da, db, dc, m, n, k, nullptr), "smoke GEMM launch"));
  FM_TRY(cuda(cudaDeviceSynchronize(), "smoke GEMM run"));
  // Timing: median-free quick figure over a few warm repetitions.
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const int reps = 10;
  cudaEventRecord(e0);
  for (int i = 0; i < reps; ++i) (void)kernels::sm90_bf16_gemm_smoke(da, db, dc, m, n, k, nullptr);
  cudaEventRecord(e1);
  FM_TRY(cuda(cudaEventSynchronize(e1), "timing"));
  float ms = 0.f;
  cudaEventElapsedTime(&ms, e0, e1);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  FM_TRY(cuda(cudaMemcpy(c.data(), dc, c.size() * 2, cudaMemcpyDeviceToHost), "copy C"));
  cleanup();
  double num = 0.0, den = 0.0;
  std::vector<double> arow(k);
  for (int i = 0; i < m; ++i) {
    for (int x = 0; x < k; ++x) arow[x] = ref::bf16_to_float(a[static_cast<size_t>(i) * k + x]);
    for (int j = 0; j < n; ++j) {
      double acc = 0.0;
      const uint16_t* brow = b.data() + static_cast<size_t>(j) * k;
      for (int x = 0; x < k; ++x) acc += arow[x] * ref::bf16_to_float(brow[x]);
      const double got = ref::bf16_to_float(c[static_cast<size_t>(i) * n + j]);
      if (!std::isfinite(got)) {
        num = INFINITY;
      } else {
        num += (got - acc) * (got - acc);
      }
      den += acc * acc;
    }
  }
  r->kernel = kernels::sm90_bf16_gemm_smoke_name();
  r->m = m;
  r->n = n;
  r->k = k;
  r->rel_error = std::sqrt(num / (den > 0 ? den : 1.0));
  r->time_us = 1e3 * ms / reps;
  r->tflops = 2.0 * m * n * k / (r->time_us * 1e-6) / 1e12;
  return Status::Ok();
#endif
}

}  // namespace fusedmoe
