// launch.cuh — host side of the launches in the layer's kernel chain (include from .cu files
// only): a plain launch, or (inside a ScopedOverlap, launch_mode.h) a launch with programmatic stream serialization (PDL, pdl.cuh), so that a kernel's
// launch and start-up overlap the tail of its predecessor on the stream. Captured into CUDA graphs
// as programmatic dependency edges. The kernels launched here call pdl_enter() first, which keeps
// them correct either way.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <optional>

#include "kernels/common/launch_mode.h"

namespace fusedmoe::kernels {

// A tuning override from the environment: the integer value of `name`, or nothing when unset or
// empty. Callers read it once (a function-local static) and clamp or validate it themselves.
inline std::optional<int> env_int(const char* name) {
  const char* e = std::getenv(name);
  if (e == nullptr || *e == '\0') return std::nullopt;
  return std::atoi(e);
}

// Streaming multiprocessors of the current device, cached per device: launch shapes read it on
// every call, so after the first only cudaGetDevice remains.
inline int device_sm_count() {
  static std::atomic<int> cache[64] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 132;
  if (dev >= 0 && dev < 64) {
    const int c = cache[dev].load(std::memory_order_relaxed);
    if (c > 0) return c;
  }
  int n = 0;
  if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n <= 0) n = 132;
  if (dev >= 0 && dev < 64) cache[dev].store(n, std::memory_order_relaxed);
  return n;
}

// The occupancy calculator's answers for one kernel configuration (cluster_x 0: blocks per SM;
// n >= 1: clusters of n resident on the device), remembered per thread for the last 32 queries so
// that launches on the hot path do not recompute them. -1 when the calculator fails.
template <class Query>
int cached_occupancy(const void* kernel, int block, size_t smem, int cluster_x, Query&& query) {
  struct Entry {
    const void* fn;
    int dev, block;
    size_t smem;
    int cluster_x, value;
  };
  static thread_local Entry cache[32] = {};
  static thread_local unsigned next = 0;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return -1;
  for (const Entry& e : cache)
    if (e.fn == kernel && e.dev == dev && e.block == block && e.smem == smem && e.cluster_x == cluster_x) return e.value;
  int n = 0;
  if (query(&n) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  cache[next++ % 32] = Entry{kernel, dev, block, smem, cluster_x, n};
  return n;
}

// Blocks of `kernel` resident per SM at this block size and dynamic shared memory.
inline int resident_blocks_per_sm(const void* kernel, int block, size_t smem) {
  return cached_occupancy(kernel, block, smem, 0, [&](int* n) {
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(n, kernel, block, smem);
  });
}

// Thread-block clusters of `cluster_x` CTAs of `kernel` that can be resident at once on the device
// (cudaOccupancyMaxActiveClusters: it depends on the chip's GPC layout, which differs between
// boards of one product). The kernel must already be opted in to `smem` (opt_in_dynamic_smem).
inline int resident_clusters(const void* kernel, int block, size_t smem, int cluster_x) {
  return cached_occupancy(kernel, block, smem, cluster_x, [&](int* n) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(static_cast<unsigned>(cluster_x));
    cfg.blockDim = dim3(static_cast<unsigned>(block));
    cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute attr = {};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = static_cast<unsigned>(cluster_x);
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    return cudaOccupancyMaxActiveClusters(n, kernel, &cfg);
  });
}

// Sets a function attribute of `kernel` once per device: `done` is the caller's per-kernel bitmask
// of devices already set (a function-local static at the launch site). A host attribute call, not
// a stream operation: fine during graph capture, and after the first launch no host call at all.
// (Devices past 63 are set on every call.)
inline cudaError_t opt_in_func_attribute(const void* kernel, cudaFuncAttribute attr, int value,
                                         std::atomic<uint64_t>* done) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return e;
  const uint64_t bit = dev < 64 ? (uint64_t{1} << dev) : 0;
  if (bit != 0 && (done->load(std::memory_order_relaxed) & bit)) return cudaSuccess;
  e = cudaFuncSetAttribute(kernel, attr, value);
  if (e == cudaSuccess && bit != 0) done->fetch_or(bit, std::memory_order_relaxed);
  return e;
}

// Opts `kernel` in to `bytes` of dynamic shared memory (beyond the 48 KB default), once per device.
inline cudaError_t opt_in_dynamic_smem(const void* kernel, int bytes, std::atomic<uint64_t>* done) {
  return opt_in_func_attribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes, done);
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

// A cooperative launch (grid-wide barrier available in the kernel) on `stream`; no PDL attribute.
template <class Kernel, class... Args>
cudaError_t launch_cooperative(Kernel kernel, int grid, int block, size_t smem, cudaStream_t stream, Args... args) {
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeCooperative;
  attr.val.cooperative = 1;
  return launch_with_attribute(kernel, dim3(static_cast<unsigned>(grid)), dim3(static_cast<unsigned>(block)), smem,
                               stream, attr, args...);
}

// kernel<<<grid, block, smem, stream>>>(args...), with the PDL attribute inside a ScopedOverlap
// and, for cluster_x > 1, thread-block clusters of cluster_x consecutive blocks along x (grid.x a
// multiple of it). Returns the launch error (cudaGetLastError semantics for the <<<>>> path).
template <class... KArgs, class... Args>
cudaError_t launch_chain_clustered(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                   unsigned cluster_x, Args&&... args) {
  const bool overlap = overlap_launches();
  if (!overlap && cluster_x <= 1) {
    kernel<<<grid, block, smem, stream>>>(static_cast<KArgs>(args)...);
    return cudaGetLastError();
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attrs[2] = {};
  unsigned n = 0;
  if (cluster_x > 1) {
    attrs[n].id = cudaLaunchAttributeClusterDimension;
    attrs[n].val.clusterDim.x = cluster_x;
    attrs[n].val.clusterDim.y = 1;
    attrs[n].val.clusterDim.z = 1;
    ++n;
  }
  if (overlap) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  cfg.attrs = attrs;
  cfg.numAttrs = n;
  return cudaLaunchKernelEx(&cfg, kernel, static_cast<KArgs>(args)...);
}

// launch_chain without clusters.
template <class... KArgs, class... Args>
cudaError_t launch_chain(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                         Args&&... args) {
  return launch_chain_clustered(kernel, grid, block, smem, stream, 1u, static_cast<Args&&>(args)...);
}

}  // namespace fusedmoe::kernels
