// launch.cuh — host side of the launches in the layer's kernel chain (include from .cu files
// only): a plain launch, or (inside a ScopedOverlap, launch_mode.h) a launch with programmatic stream serialization (PDL, pdl.cuh), so that a kernel's
// launch and start-up overlap the tail of its predecessor on the stream. Captured into CUDA graphs
// as programmatic dependency edges. The kernels launched here call pdl_enter() first, which keeps
// them correct either way.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "kernels/common/launch_mode.h"

namespace fusedmoe::kernels {

// Opts `kernel` in to `bytes` of dynamic shared memory (beyond the 48 KB default) once per device:
// `done` is the caller's per-kernel bitmask of devices already set (a function-local static at the
// launch site). A host attribute call, not a stream operation: fine during graph capture, and
// after the first launch no host call at all.
inline cudaError_t opt_in_dynamic_smem(const void* kernel, int bytes, std::atomic<uint64_t>* done) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return e;
  const uint64_t bit = dev < 64 ? (uint64_t{1} << dev) : 0;
  if (bit != 0 && (done->load(std::memory_order_relaxed) & bit)) return cudaSuccess;
  e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e == cudaSuccess && bit != 0) done->fetch_or(bit, std::memory_order_relaxed);
  return e;
}

// cudaLaunchKernelEx with one launch attribute.
template <class... KArgs, class... Args>
cudaError_t launch_with_attribute(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                  const cudaLaunchAttribute& attr, Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attrs[1] = {attr};
  cfg.attrs = attrs;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, kernel, static_cast<KArgs>(args)...);
}

// kernel<<<grid, block, smem, stream>>>(args...), with the PDL attribute inside a ScopedOverlap.
// Returns the launch error (cudaGetLastError semantics for the <<<>>> path).
template <class... KArgs, class... Args>
cudaError_t launch_chain(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                         Args&&... args) {
  if (!overlap_launches()) {
    kernel<<<grid, block, smem, stream>>>(static_cast<KArgs>(args)...);
    return cudaGetLastError();
  }
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  return launch_with_attribute(kernel, grid, block, smem, stream, attr, static_cast<Args&&>(args)...);
}

}  // namespace fusedmoe::kernels
