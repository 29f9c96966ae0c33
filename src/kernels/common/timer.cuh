// timer.cuh — the GPU's global nanosecond timer, for the kernels' diagnostic timelines (the fused
// front's, the grouped GEMMs' and the permute's trace stamps; all off in production).
#pragma once

namespace fusedmoe::kernels {

__device__ __forceinline__ unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

}  // namespace fusedmoe::kernels
