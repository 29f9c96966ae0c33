// Device side of router_math_check.h.
#include "kernels/router/router_math_check.h"

#include "kernels/common/hd_math.h"

namespace fusedmoe::kernels {
namespace {

__global__ void eval_hd_kernel(HdFunction f, const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float x = a[i];
    const float y = b != nullptr ? b[i] : 0.f;
    float r = 0.f;
    switch (f) {
      case HdFunction::kExpf: r = hd::expf(x); break;
      case HdFunction::kLog1pf: r = hd::log1pf(x); break;
      case HdFunction::kSigmoid: r = hd::sigmoid(x); break;
      case HdFunction::kSqrtSoftplus: r = hd::sqrt_softplus(x); break;
      case HdFunction::kDiv: r = hd::div(x, y); break;
      case HdFunction::kSqrt: r = hd::sqrt(x); break;
      case HdFunction::kDivisor: r = hd::Divisor(y).divide(x); break;
      case HdFunction::kDivisorNonnegative: {
        const float a2 = isfinite(x) ? fabsf(x) : 0.f;
        const float b2 = (isfinite(y) && y != 0.f) ? fabsf(y) : 1.f;
        r = hd::Divisor(b2).divide_nonnegative(a2);
        break;
      }
    }
    out[i] = r;
  }
}

}  // namespace

cudaError_t eval_hd_function(HdFunction f, const float* a, const float* b, float* out, int64_t n,
                             cudaStream_t stream) {
  if (n < 0 || (n > 0 && (a == nullptr || out == nullptr))) return cudaErrorInvalidValue;
  if ((f == HdFunction::kDiv || f == HdFunction::kDivisor || f == HdFunction::kDivisorNonnegative) && n > 0 &&
      b == nullptr)
    return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  const int64_t blocks = (n + 255) / 256 < 65536 ? (n + 255) / 256 : 65536;
  eval_hd_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(f, a, b, out, n);
  return cudaGetLastError();
}

}  // namespace fusedmoe::kernels
