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

// Every float d in [1, FLT_MAX] (1.07e9 values): reciprocal candidates against __frcp_rn (the
// correctly rounded 1/d). counts[4] (device, zeroed here): mismatches of [0] hd::recip_ge1_device
// (the sigmoid's), [1] the double-precision version, [2] rcp.approx.ftz + one Newton step (flushes
// results below 2^-126), [3] rcp.approx + two Newton steps; first[4]: the bits of the first mismatching d of each (or 0).
cudaError_t check_recip_ge1_all(unsigned long long* counts, unsigned int* first, cudaStream_t stream);

}  // namespace fusedmoe::kernels
