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

// Grid-stride over the bit patterns of [1, FLT_MAX]; per candidate a block-local count, then one
// atomicAdd per block (and atomicMin of the first mismatch).
__global__ void recip_all_kernel(unsigned long long* counts, unsigned int* first) {
#if defined(__CUDA_ARCH__)  // the candidates are device-only functions
  constexpr uint32_t kLo = 0x3f800000u, kHi = 0x7f7fffffu;
  __shared__ unsigned long long s_count[4];
  __shared__ unsigned int s_first[4];
  if (threadIdx.x < 4) {
    s_count[threadIdx.x] = 0;
    s_first[threadIdx.x] = 0xffffffffu;
  }
  __syncthreads();
  unsigned int c[4] = {0, 0, 0, 0};
  unsigned int f[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu};
  for (uint64_t u = kLo + static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u <= kHi;
       u += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    const uint32_t bits = static_cast<uint32_t>(u);
    const float d = __uint_as_float(bits);
    const uint32_t want = __float_as_uint(__frcp_rn(d));
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(d));
    const float ftz1 = __fmaf_rn(__fmaf_rn(-d, y, 1.f), y, y);
    asm("rcp.approx.f32 %0, %1;" : "=f"(y) : "f"(d));  // not flushed: subnormal results supported
    y = __fmaf_rn(__fmaf_rn(-d, y, 1.f), y, y);
    const float two = __fmaf_rn(__fmaf_rn(-d, y, 1.f), y, y);
    const uint32_t got[4] = {__float_as_uint(hd::recip_ge1_device(d)), __float_as_uint(hd::recip_ge1_f64_device(d)),
                             __float_as_uint(ftz1), __float_as_uint(two)};
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (got[i] != want) {
        ++c[i];
        f[i] = min(f[i], bits);
      }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
    if (c[i] != 0) {
      atomicAdd(&s_count[i], static_cast<unsigned long long>(c[i]));
      atomicMin(&s_first[i], f[i]);
    }
  __syncthreads();
  if (threadIdx.x < 4) {
    atomicAdd(&counts[threadIdx.x], s_count[threadIdx.x]);
    atomicMin(&first[threadIdx.x], s_first[threadIdx.x]);
  }
#else
  (void)counts;
  (void)first;
#endif
}

}  // namespace

cudaError_t check_recip_ge1_all(unsigned long long* counts, unsigned int* first, cudaStream_t stream) {
  if (counts == nullptr || first == nullptr) return cudaErrorInvalidValue;
  cudaError_t e = cudaMemsetAsync(counts, 0, 4 * sizeof(unsigned long long), stream);
  if (e == cudaSuccess) e = cudaMemsetAsync(first, 0xff, 4 * sizeof(unsigned int), stream);
  if (e != cudaSuccess) return e;
  recip_all_kernel<<<132 * 8, 256, 0, stream>>>(counts, first);
  return cudaGetLastError();
}

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
