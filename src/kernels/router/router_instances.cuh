// router_instances.cuh — the instances of router_topk_kernel<T, VEC, NV, RowMode> and their
// launch, one row mode per translation unit (router_mode_*.cu) so that they compile in parallel.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/registry.h"
#include "kernels/router/router.cuh"
#include "kernels/common/launch.cuh"

namespace fusedmoe::kernels::router_detail {

inline constexpr int64_t kMaxGrid = 0x7fffffff;

cudaError_t launch_topk_softmax(const Params& p, bool bf16, int vec, size_t smem, cudaStream_t stream);
cudaError_t launch_topk_sigmoid(const Params& p, bool bf16, int vec, size_t smem, cudaStream_t stream);
cudaError_t launch_topk_sqrt_softplus(const Params& p, bool bf16, int vec, size_t smem, cudaStream_t stream);
cudaError_t launch_topk_logits(const Params& p, bool bf16, int vec, size_t smem, cudaStream_t stream);

// The instances of each row mode, listed from the file that launches them (kernels/registry.h).
void append_topk_softmax_instances(KernelList* out);
void append_topk_sigmoid_instances(KernelList* out);
void append_topk_sqrt_softplus_instances(KernelList* out);
void append_topk_logits_instances(KernelList* out);

#if defined(FUSEDMOE_ROUTER_INSTANCES)
// NV: the smallest power of two >= ceil(E / (32 * VEC)).
template <typename T, int VEC, int NV, RowMode M>
cudaError_t launch_topk_nv(const Params& p, int nv, size_t smem, cudaStream_t stream) {
  if constexpr (NV * VEC < 32) {
    if (nv > NV) return launch_topk_nv<T, VEC, NV * 2, M>(p, nv, smem, stream);
  }
  // One wave of resident blocks, each warp looping over tokens (grid-stride): no block churn and
  // no partial last wave (dsv3 routing at 16384 tokens had 4096 blocks of 4 tokens, 4.4 waves).
  const auto kernel = router_topk_kernel<T, VEC, NV, M>;
  smem += sizeof(uint32_t) * static_cast<size_t>(kWarpsPerBlock) * static_cast<size_t>(heads_words(VEC * NV));
  const int per_sm = resident_blocks_per_sm(reinterpret_cast<const void*>(kernel), kThreads, smem);
  const int64_t resident = static_cast<int64_t>(device_sm_count()) * (per_sm > 0 ? per_sm : 4);
  const int64_t blocks = std::min<int64_t>({(p.num_tokens + kWarpsPerBlock - 1) / kWarpsPerBlock, resident, kMaxGrid});
  return launch_chain(kernel, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), smem, stream, p);
}

template <typename T, RowMode M>
cudaError_t launch_topk_vec(const Params& p, int vec, size_t smem, cudaStream_t stream) {
  const int nv = (p.num_experts + 32 * vec - 1) / (32 * vec);
  switch (vec) {
    case 1: return launch_topk_nv<T, 1, 1, M>(p, nv, smem, stream);
    case 2: return launch_topk_nv<T, 2, 1, M>(p, nv, smem, stream);
    case 4: return launch_topk_nv<T, 4, 1, M>(p, nv, smem, stream);
    case 8:
      if constexpr (sizeof(T) == 2) return launch_topk_nv<T, 8, 1, M>(p, nv, smem, stream);
      break;
    default: break;
  }
  return cudaErrorInvalidValue;
}

template <RowMode M>
cudaError_t launch_topk_mode(const Params& p, bool bf16, int vec, size_t smem, cudaStream_t stream) {
  return bf16 ? launch_topk_vec<uint16_t, M>(p, vec, smem, stream) : launch_topk_vec<float, M>(p, vec, smem, stream);
}

// The listing mirrors the launch recursion above: NV = 1, 2, 4, ... while NV * VEC <= 32, for
// VEC 1, 2, 4 (+ 8 for bf16). Keep the two in step (`fusedmoe info` on a GPU reports module
// functions missing from the list).
constexpr const char* row_mode_name(RowMode m) {
  return m == RowMode::kSoftmaxRow ? "softmax" : m == RowMode::kSigmoidRow ? "sigmoid"
       : m == RowMode::kSqrtSoftplusRow ? "sqrt_softplus" : "logits";
}

template <typename T, int VEC, int NV, RowMode M>
void append_topk_nv(KernelList* out) {
  out->push_back({"router",
                  std::string("router_topk<") + (sizeof(T) == 2 ? "bf16" : "f32") + ",vec" + std::to_string(VEC) +
                      ",nv" + std::to_string(NV) + "," + row_mode_name(M) + ">",
                  reinterpret_cast<const void*>(&router_topk_kernel<T, VEC, NV, M>)});
  if constexpr (NV * VEC < 32) append_topk_nv<T, VEC, NV * 2, M>(out);
}

template <RowMode M>
void append_topk_mode(KernelList* out) {
  append_topk_nv<float, 1, 1, M>(out);
  append_topk_nv<float, 2, 1, M>(out);
  append_topk_nv<float, 4, 1, M>(out);
  append_topk_nv<uint16_t, 1, 1, M>(out);
  append_topk_nv<uint16_t, 2, 1, M>(out);
  append_topk_nv<uint16_t, 4, 1, M>(out);
  append_topk_nv<uint16_t, 8, 1, M>(out);
}
#endif

}  // namespace fusedmoe::kernels::router_detail
