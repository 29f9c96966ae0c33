// Device evaluation of the shared float32 math (kernels/common/hd_math.h), so that tests can check
// that the GPU computes exactly what the CPU reference computes with the same functions.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace fusedmoe::kernels {

enum class HdFunction : int {
  kExpf = 0,         // out = hd::expf(a)
  kLog1pf = 1,       // out = hd::log1pf(a)
  kSigmoid = 2,      // out = hd::sigmoid(a)
  kSqrtSoftplus = 3, // out = hd::sqrt_softplus(a)
  kDiv = 4,          // out = hd::div(a, b)
  kSqrt = 5,         // out = hd::sqrt(a)
  kDivisor = 6,      // out = hd::Divisor(b).divide(a)
  kDivisorNonnegative = 7,  // out = hd::Divisor(b').divide_nonnegative(a'), with
                            // a' = |a| (0 if not finite), b' = |b| (1 if 0 or not finite)
};

// out[i] = f(a[i], b[i]) for i < n, on the device (a, b, out device pointers; b may be null for
// the one-argument functions).
cudaError_t eval_hd_function(HdFunction f, const float* a, const float* b, float* out, int64_t n,
                             cudaStream_t stream);

}  // namespace fusedmoe::kernels
