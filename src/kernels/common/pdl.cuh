// pdl.cuh — programmatic dependent launch (PDL), device side. Every kernel of the layer's chain
// calls pdl_wait() before its first global memory access (read or write) and pdl_launch_dependents()
// right after: a kernel launched with the programmatic-serialization attribute (launch.h,
// ScopedOverlap) may then be scheduled while its predecessor still runs, doing its own start-up
// (barrier init, descriptor prefetch, block placement) in the predecessor's tail; griddepcontrol.wait
// returns once the predecessor grid has completed and its memory is visible. Launched without the
// attribute, both instructions are no-ops.
//
// Data written by an earlier kernel of the chain (the plan, permuted rows, activation scales, H,
// expert outputs) is read with coherent loads (__ldcg or plain), never __ldg: the compiler treats
// ld.global.nc as reading memory that is constant for the whole kernel and may hoist it above
// griddepcontrol.wait (measured: FP8 GEMMs under PDL read poisoned per-token scales). __ldg is for
// the caller's inputs (x, weights, scales, biases), complete before the layer's first kernel.
#pragma once

namespace fusedmoe::kernels {

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Both, at the top of a kernel of the chain.
__device__ __forceinline__ void pdl_enter() {
  pdl_wait();
  pdl_launch_dependents();
}

}  // namespace fusedmoe::kernels
