// launch.cuh — host side of the launches in the layer's kernel chain (include from .cu files
// only): a plain launch, or (inside a ScopedOverlap, launch_mode.h) a launch with programmatic stream serialization (PDL, pdl.cuh), so that a kernel's
// launch and start-up overlap the tail of its predecessor on the stream. Captured into CUDA graphs
// as programmatic dependency edges. The kernels launched here call pdl_enter() first, which keeps
// them correct either way.
#pragma once
#include <cuda_runtime.h>

#include "kernels/common/launch_mode.h"

namespace fusedmoe::kernels {

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
