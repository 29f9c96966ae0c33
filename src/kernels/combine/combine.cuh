// combine.cuh — device code of the weighted combine (contract in combine_launch.h).
//
// out[t, :] = round(sum over s in slot order of w[t, s] * expert_out[slot_row[t, s], :]):
// float64 accumulation by fma in ascending slot order (the shared expert last, weight
// shared_scale): each product of a float32 weight and a bf16/f16 value is exact in double, so
// the sum stays within 1 ulp of bf16/f16 of the float64 reference even where the terms cancel
// (float32 accumulation is not: cancellation exposes its rounding). The memory-bound kernel
// pays nothing for the fp64 FMAs. One rounding to float, then to bf16/f16. No atomics: the
// same bits every run.
// Few tokens: the row is also split in column chunks over blockIdx.y (one block per token would
// leave one SM streaming all of a token's k rows).
// A row team (vec.cuh) owns one token (or its chunk): lane loads 16-byte units lane + j * TS of kBatch slot
// rows at a time (kBatch x VPT <= 8 loads in flight: 8 slots at once with one unit per thread),
// then accumulates them in slot order.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include <cute/arch/copy_sm90_tma.hpp>
#include <cutlass/arch/barrier.h>

#include "kernels/common/pdl.cuh"
#include "kernels/common/token_count.cuh"
#include "kernels/quant/vec.cuh"

namespace fusedmoe::kernels::combine_detail {

struct CombineParams {
  const void* expert_out;
  const int32_t* slot_row;
  const float* weights;
  float shared_scale;
  int64_t num_tokens;  // bound when num_tokens_dev is set
  const int32_t* num_tokens_dev;
  int top_k;
  int slots;
  int hidden;
  int units;  // K / 8
  int chunk_units;  // units per column chunk: block (x, y) covers units [y * chunk_units, ...)
  void* out;
  int64_t out_stride;
  int ts;
  int teams;
  // staged kernel: the plan (slot rows, weights) and the device token count may be read before
  // griddepcontrol.wait (CombineArgs::plan_ready)
  int plan_ready;
};

// The staged combine's limits: slots per token (k <= 16 plus one shared expert) and threads.
constexpr int kStagedMaxSlots = 17;
constexpr int kStagedThreads = 128;

// 8 units per thread hold 64 float64 accumulators: at most 256 threads (255 registers each)
// or they spill; that bounds K at 8 * 8 * 256 = 16384.
__host__ __device__ constexpr int combine_max_block(int vpt) { return vpt >= 8 ? 256 : 512; }

template <class T, int VPT>
__global__ void __launch_bounds__(combine_max_block(VPT), 1) combine_kernel(CombineParams p) {
  pdl_enter();  // kernels/common/pdl.cuh: first, before any global access
  constexpr int kBatch = VPT >= 8 ? 1 : (VPT >= 4 ? 2 : (VPT >= 2 ? 4 : 8));  // slots loaded before accumulating
  const int u0 = int(blockIdx.y) * p.chunk_units;
  const int u_end = min(p.units, u0 + p.chunk_units);
  const int tid = threadIdx.x;
  const int team = tid / p.ts;
  const int lane = tid - team * p.ts;
  const uint4* __restrict__ src = static_cast<const uint4*>(p.expert_out);
  const int64_t step = static_cast<int64_t>(gridDim.x) * p.teams;
  const int64_t num_tokens = resolve_token_count(p.num_tokens, p.num_tokens_dev, nullptr);
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * p.teams + team; t < num_tokens; t += step) {
    double acc[VPT][8];
#pragma unroll
    for (int j = 0; j < VPT; ++j)
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[j][e] = 0.0;

    for (int s0 = 0; s0 < p.slots; s0 += kBatch) {
      int32_t r[kBatch];
      float w[kBatch];
#pragma unroll
      for (int q = 0; q < kBatch; ++q) {
        const int s = s0 + q;
        r[q] = s < p.slots ? __ldcg(p.slot_row + t * p.slots + s) : -1;
        w[q] = s < p.top_k ? (p.weights != nullptr ? __ldcg(p.weights + t * p.top_k + s) : 1.f) : p.shared_scale;
      }
      uint4 v[kBatch][VPT];
#pragma unroll
      for (int q = 0; q < kBatch; ++q)
#pragma unroll
        for (int j = 0; j < VPT; ++j) {
          const int u = u0 + lane + j * p.ts;
          v[q][j] = (r[q] >= 0 && u < u_end) ? __ldcg(src + static_cast<int64_t>(r[q]) * p.units + u)
                                               : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
      for (int q = 0; q < kBatch; ++q) {
        if (r[q] < 0) continue;  // -1: routed elsewhere, contributes nothing (not even 0 * NaN)
#pragma unroll
        for (int j = 0; j < VPT; ++j) {
          float f[8];
          vec::unpack8<T>(v[q][j], f);
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[j][e] = __fma_rn(static_cast<double>(w[q]), static_cast<double>(f[e]), acc[j][e]);
        }
      }
    }
    uint4* dst = reinterpret_cast<uint4*>(static_cast<T*>(p.out) + t * p.out_stride);
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
      const int u = u0 + lane + j * p.ts;
      if (u < u_end) {
        float f[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) f[e] = static_cast<float>(acc[j][e]);
        dst[u] = vec::pack8<T>(f);
      }
    }
  }
}

// The staged combine: one block per (token, column chunk). Thread 0 reads the token's slot rows
// and weights (before griddepcontrol.wait when the plan is complete at launch), then copies each
// valid slot row's chunk into shared memory with one bulk copy (cp.async.bulk, completing on one
// transaction barrier): a token's k rows are in flight at once with no registers held for them, so
// the bytes in flight per SM are bounded by shared memory (a few blocks of <= 32 KB) rather than by
// the float64 accumulators of the row-team kernel above. Then every thread accumulates its 16-byte
// units from shared memory in slot order with the same float64 fma chain: the same bits as
// combine_kernel.
template <class T>
__global__ void __launch_bounds__(kStagedThreads) combine_staged_kernel(CombineParams p) {
  extern __shared__ __align__(128) uint4 smem_rows[];  // (slot, chunk_units) 16-byte units
  __shared__ alignas(8) uint64_t full;
  __shared__ int32_t s_row[kStagedMaxSlots];
  __shared__ float s_w[kStagedMaxSlots];
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  const int tid = threadIdx.x;
  const int64_t t = blockIdx.x;
  const int u0 = int(blockIdx.y) * p.chunk_units;
  const int cu = min(p.units, u0 + p.chunk_units) - u0;  // units of this chunk
  if (tid == 0) Barrier::init(&full, 1);
  if (!p.plan_ready) pdl_enter();
  const int64_t num_tokens = resolve_token_count(p.num_tokens, p.num_tokens_dev, nullptr);
  if (t >= num_tokens) {  // (a device-side count below the launch bound; block-uniform)
    if (p.plan_ready) pdl_enter();
    return;
  }
  if (tid == 0) {
    cutlass::arch::fence_barrier_init();
    int32_t r[kStagedMaxSlots];
    float w[kStagedMaxSlots];
#pragma unroll
    for (int s = 0; s < kStagedMaxSlots; ++s) {
      r[s] = s < p.slots ? __ldcg(p.slot_row + t * p.slots + s) : -1;
      w[s] = s < p.top_k ? (p.weights != nullptr ? __ldcg(p.weights + t * p.top_k + s) : 1.f) : p.shared_scale;
    }
    uint32_t bytes = 0;
#pragma unroll
    for (int s = 0; s < kStagedMaxSlots; ++s) {
      s_row[s] = r[s];
      s_w[s] = w[s];
      bytes += r[s] >= 0 ? uint32_t(cu) * 16u : 0u;
    }
    if (p.plan_ready) pdl_enter();  // expert_out is the predecessor's output
    Barrier::arrive_and_expect_tx(&full, bytes);
    const uint4* src = static_cast<const uint4*>(p.expert_out);
#pragma unroll 1
    for (int s = 0; s < p.slots; ++s)
      if (r[s] >= 0)
        cute::SM90_BULK_COPY_G2S::copy(src + static_cast<int64_t>(r[s]) * p.units + u0, &full,
                                       smem_rows + s * p.chunk_units, cu * 16);
  } else if (p.plan_ready) {
    pdl_enter();
  }
  __syncthreads();  // the barrier's init, s_row and s_w
  Barrier::wait(&full, 0);
  uint4* dst = reinterpret_cast<uint4*>(static_cast<T*>(p.out) + t * p.out_stride) + u0;
#pragma unroll 1
  for (int u = tid; u < cu; u += kStagedThreads) {
    double acc[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[e] = 0.0;
#pragma unroll 1
    for (int s = 0; s < p.slots; ++s) {
      if (s_row[s] < 0) continue;  // routed elsewhere: contributes nothing (not even 0 * NaN)
      const double ws = static_cast<double>(s_w[s]);
      float f[8];
      vec::unpack8<T>(smem_rows[s * p.chunk_units + u], f);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] = __fma_rn(ws, static_cast<double>(f[e]), acc[e]);
    }
    float f[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) f[e] = static_cast<float>(acc[e]);
    dst[u] = vec::pack8<T>(f);
  }
}

}  // namespace fusedmoe::kernels::combine_detail
