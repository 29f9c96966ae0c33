// token_count.cuh — the token count a kernel works on: the host value (an upper bound that sizes
// the launch), or, when the caller passes a device pointer, the count read on the device at run
// time (one captured CUDA graph then serves every count up to the bound). A device count outside
// [0, bound] is clamped and reported as kErrorTokenCount in the error flag (first error wins).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/router/router_launch.h"  // the error codes (kErrorTokenCount)

namespace fusedmoe::kernels {

__device__ __forceinline__ int64_t resolve_token_count(int64_t bound, const int32_t* device_count,
                                                       int32_t* error_flag) {
  if (device_count == nullptr) return bound;
  const int64_t v = *device_count;  // written before this kernel started: plain load
  if (v >= 0 && v <= bound) return v;
  if (error_flag != nullptr && blockIdx.x == 0 && threadIdx.x == 0) {
    if (atomicCAS(error_flag, 0, kErrorTokenCount) == 0) {
      error_flag[1] = static_cast<int32_t>(v);
      error_flag[2] = -1;
      error_flag[3] = static_cast<int32_t>(bound > 0x7fffffff ? 0x7fffffff : bound);
    }
  }
  return v < 0 ? 0 : bound;
}

// The whole error flag int32[4], written by ONE thread of a kernel that owns it (no memset before
// the launch): zero, or kErrorTokenCount with the clamped device count. Only for kernels that
// report nothing else (their other threads resolve the count with a null flag).
// `other`: the error to write when the count is in range (zero by default: the whole flag cleared).
__device__ __forceinline__ void write_token_count_flag(int64_t bound, const int32_t* device_count, int32_t* flag,
                                                       int4 other = make_int4(0, 0, 0, 0)) {
  if (flag == nullptr) return;
  int32_t e0 = other.x, e1 = other.y, e2 = other.z, e3 = other.w;
  if (device_count != nullptr) {
    const int64_t v = *device_count;
    if (v < 0 || v > bound) {
      e0 = kErrorTokenCount;
      e1 = static_cast<int32_t>(v);
      e2 = -1;
      e3 = static_cast<int32_t>(bound > 0x7fffffff ? 0x7fffffff : bound);
    }
  }
  flag[1] = e1;
  flag[2] = e2;
  flag[3] = e3;
  flag[0] = e0;
}

}  // namespace fusedmoe::kernels
