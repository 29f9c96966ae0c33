// front_instances.cuh — instances of front_small_kernel<T, VEC, NV, RowMode, one block>, one row mode per
// translation unit (front_mode_*.cu) so that they compile in parallel (as the router's).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>

#include "kernels/common/launch.cuh"
#include "kernels/front/front.cuh"
#include "kernels/registry.h"

namespace fusedmoe::kernels::front_detail {

using router_detail::RowMode;

struct FrontLaunch {
  int grid = 1;
  int block = 256;
  size_t smem = 0;
  bool one_block = false;    // one routing block (route_blocks == 1): the kOneBlock instance, a plain launch
  bool cooperative = false;  // several routing blocks: a grid barrier in the kernel
  int cluster = 0;           // > 1: try clusters of this many blocks (the routing blocks form the first),
                             // else the cooperative launch
};

cudaError_t launch_front_softmax(const FrontParams& f, bool bf16, int vec, const FrontLaunch& l, cudaStream_t s);
cudaError_t launch_front_sigmoid(const FrontParams& f, bool bf16, int vec, const FrontLaunch& l, cudaStream_t s);
cudaError_t launch_front_sqrt_softplus(const FrontParams& f, bool bf16, int vec, const FrontLaunch& l, cudaStream_t s);
cudaError_t launch_front_logits(const FrontParams& f, bool bf16, int vec, const FrontLaunch& l, cudaStream_t s);

// The instances of each row mode, listed from the file that launches them (kernels/registry.h).
void append_front_softmax_instances(KernelList* out);
void append_front_sigmoid_instances(KernelList* out);
void append_front_sqrt_softplus_instances(KernelList* out);
void append_front_logits_instances(KernelList* out);

#if defined(FUSEDMOE_FRONT_INSTANCES)
template <typename T, int VEC, int NV, RowMode M>
cudaError_t launch_front_nv(const FrontParams& f, int nv, const FrontLaunch& l, cudaStream_t s) {
  if constexpr (NV * VEC < 32) {
    if (nv > NV) return launch_front_nv<T, VEC, NV * 2, M>(f, nv, l, s);
  }
  // static + dynamic shared memory may pass 48 KB: opt in once per instance
  static std::atomic<uint64_t> done[2] = {};  // [one_block]
  if (l.one_block) {
    if (f.route_blocks != 1 || l.cooperative || l.cluster > 1) return cudaErrorInvalidValue;
    auto one = front_small_kernel<T, VEC, NV, M, true>;
    const cudaError_t e = opt_in_dynamic_smem(reinterpret_cast<const void*>(one), static_cast<int>(kFrontMaxSmem), &done[1]);
    if (e != cudaSuccess) return e;
    one<<<l.grid, l.block, l.smem, s>>>(f);
    return cudaGetLastError();
  }
  if (f.route_blocks <= 1 || (f.precomputed && M != RowMode::kLogitsRow)) return cudaErrorInvalidValue;  // (the kOneBlock instance's)
  auto fn = front_small_kernel<T, VEC, NV, M, false>;
  {
    const cudaError_t e = opt_in_dynamic_smem(reinterpret_cast<const void*>(fn), static_cast<int>(kFrontMaxSmem), &done[0]);
    if (e != cudaSuccess) return e;
  }
  if (l.cluster > 1) {
    // The routing blocks as one cluster, if such a cluster fits a GPC at this block size and
    // shared memory (the occupancy calculator, host-side; cached per instance and cluster size).
    // Else the cooperative launch below.
    static std::atomic<int> max_clusters[kMaxClusterBlocks + 1];  // 0: unknown; else clusters + 1
    if (l.cluster > kMaxClusterBlocks) return cudaErrorInvalidValue;
    std::atomic<int>& known = max_clusters[l.cluster];
    if (l.cluster > kPortableClusterBlocks) {  // a non-portable size: opted in once per instance and device
      static std::atomic<uint64_t> non_portable{0};
      if (opt_in_func_attribute(reinterpret_cast<const void*>(fn), cudaFuncAttributeNonPortableClusterSizeAllowed, 1,
                                &non_portable) != cudaSuccess)
        (void)cudaGetLastError();  // then the occupancy query below finds no such cluster
    }
    cudaLaunchAttribute attr = {};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = static_cast<unsigned>(l.cluster);
    attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
    int clusters = known.load(std::memory_order_relaxed) - 1;
    if (clusters < 0) {
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(static_cast<unsigned>(l.cluster));
      cfg.blockDim = dim3(static_cast<unsigned>(l.block));
      cfg.dynamicSmemBytes = l.smem;
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
      if (cudaOccupancyMaxActiveClusters(&clusters, fn, &cfg) != cudaSuccess) {
        (void)cudaGetLastError();
        clusters = 0;
      }
      known.store(clusters + 1, std::memory_order_relaxed);
    }
    if (clusters >= 1) {
      // The grid a whole number of clusters, all resident at once; the quantising warps
      // renumbered for it (every block after the routing cluster quantises its share, or the
      // routing blocks' warps 8-15 when only one cluster fits).
      FrontParams fc = f;
      int grid = (l.grid + l.cluster - 1) / l.cluster * l.cluster;
      grid = std::max(l.cluster, std::min(grid, clusters * l.cluster));
      fc.cluster_blocks = l.cluster;
      fc.quant_warps = (grid - fc.route_blocks) * (l.block / 32);
      if (fc.quant_scheme != pq_detail::kNone && grid == fc.route_blocks) {  // no other block: the routing blocks quantise
        fc.routing_blocks_quantise = true;
        fc.quant_warps = fc.route_blocks * kRouteWarps;
      }
      const cudaError_t e = launch_with_attribute(fn, dim3(static_cast<unsigned>(grid)), dim3(static_cast<unsigned>(l.block)),
                                                  l.smem, s, attr, fc);
      if (e == cudaSuccess) return e;
      (void)cudaGetLastError();  // refused (e.g. the cluster no longer fits): the cooperative launch below
    }
  }
  if (!l.cooperative) return cudaErrorInvalidValue;  // (several routing blocks need the grid barrier)
  // A cooperative grid must be resident at once: blocks per SM of this instance at this block
  // size and shared memory (after the opt-in above), from the occupancy calculator (a host-side
  // computation, cached per thread; not a stream operation: fine during capture). On a small MIG
  // slice, under an MPS thread limit or with green contexts it may not fit: then nothing is
  // launched and the caller runs the separate kernels.
  const int per_sm = resident_blocks_per_sm(reinterpret_cast<const void*>(fn), l.block, l.smem);
  if (per_sm < 0) return cudaErrorInvalidValue;
  if (static_cast<int64_t>(per_sm) * vec::sm_count() < l.grid) return cudaErrorCooperativeLaunchTooLarge;
  return launch_cooperative(fn, l.grid, l.block, l.smem, s, f);
}

template <typename T, RowMode M>
cudaError_t launch_front_vec(const FrontParams& f, int vec, const FrontLaunch& l, cudaStream_t s) {
  const int nv = (f.r.num_experts + 32 * vec - 1) / (32 * vec);
  switch (vec) {
    case 1: return launch_front_nv<T, 1, 1, M>(f, nv, l, s);
    case 2: return launch_front_nv<T, 2, 1, M>(f, nv, l, s);
    case 4: return launch_front_nv<T, 4, 1, M>(f, nv, l, s);
    case 8:
      if constexpr (sizeof(T) == 2) return launch_front_nv<T, 8, 1, M>(f, nv, l, s);
      break;
    default: break;
  }
  return cudaErrorInvalidValue;
}

template <RowMode M>
cudaError_t launch_front_mode(const FrontParams& f, bool bf16, int vec, const FrontLaunch& l, cudaStream_t s) {
  return bf16 ? launch_front_vec<uint16_t, M>(f, vec, l, s) : launch_front_vec<float, M>(f, vec, l, s);
}

// The listing mirrors the launch recursion above (NV = 1, 2, 4, ... while NV * VEC <= 32; VEC 1, 2,
// 4, + 8 for bf16); `fusedmoe info` on a GPU reports module functions missing from it.
template <typename T, int VEC, int NV, RowMode M>
void append_front_nv(KernelList* out) {
  constexpr const char* kMode = M == RowMode::kSoftmaxRow ? "softmax" : M == RowMode::kSigmoidRow ? "sigmoid"
                              : M == RowMode::kSqrtSoftplusRow ? "sqrt_softplus" : "logits";
  const std::string name = std::string("front_small<") + (sizeof(T) == 2 ? "bf16" : "f32") + ",vec" +
                           std::to_string(VEC) + ",nv" + std::to_string(NV) + "," + kMode;
  out->push_back({"front", name + ",one block>", reinterpret_cast<const void*>(&front_small_kernel<T, VEC, NV, M, true>)});
  out->push_back({"front", name + ",blocks>", reinterpret_cast<const void*>(&front_small_kernel<T, VEC, NV, M, false>)});
  if constexpr (NV * VEC < 32) append_front_nv<T, VEC, NV * 2, M>(out);
}

template <RowMode M>
void append_front_mode(KernelList* out) {
  append_front_nv<float, 1, 1, M>(out);
  append_front_nv<float, 2, 1, M>(out);
  append_front_nv<float, 4, 1, M>(out);
  append_front_nv<uint16_t, 1, 1, M>(out);
  append_front_nv<uint16_t, 2, 1, M>(out);
  append_front_nv<uint16_t, 4, 1, M>(out);
  append_front_nv<uint16_t, 8, 1, M>(out);
}
#endif

}  // namespace fusedmoe::kernels::front_detail
