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
// A row team (vec.cuh) owns one token (or its chunk). Its lanes first put the token's slot rows and
// weights in shared memory (one load round trip for all slots; under PDL before griddepcontrol.wait
// when the plan is complete at launch, CombineParams::plan_ready), then each lane loads 16-byte units
// lane + j * TS of kBatch slot rows at a time (12-16 loads in flight for VPT <= 2: every slot of
// k = 8 plus a shared expert at once; 8 for VPT 4-8, where the float64 accumulators take the
// registers) and accumulates them in slot order.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

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
  int plan_ready;  // CombineArgs::plan_ready: slot rows, weights and the device count read before the PDL wait
  const float* bias;           // CombineArgs::bias (the kBias instances)
  const int32_t* group_offsets;
  int num_groups;              // <= kMaxBiasGroups
  int bias_vec4;               // bias 16-byte aligned: float4 loads (else scalar)
};

// Groups the bias instances stage offsets for in shared memory (1024 experts + a shared one fit).
constexpr int kMaxBiasGroups = 1088;

// The group of grouped row r: the g with offsets[g] <= r < offsets[g + 1] (offsets ascending,
// offsets[0] = 0), by binary search over the G + 1 offsets (in shared memory); -1 when r lies past
// offsets[G].
__device__ __forceinline__ int group_of_row(const int32_t* offsets, int groups, int32_t r) {
  int lo = 0, hi = groups;  // the answer is in [lo, hi) while offsets[lo] <= r
  if (r >= offsets[groups]) return -1;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (offsets[mid] <= r) lo = mid;
    else hi = mid;
  }
  return lo;
}

// Slots per token (top-k <= 16, one shared expert) and teams per block (256 threads / 8-lane teams).
constexpr int kMaxSlots = 17;
constexpr int kMaxTeams = 32;

// 8 units per thread hold 64 float64 accumulators: at most 256 threads (255 registers each)
// or they spill; that bounds K at 8 * 8 * 256 = 16384.
// (The bias instances: 256 threads for any VPT, which leaves their bias rows registers without
// spilling; pick_team_shape's teams never exceed 256 threads below 8 units per thread anyway.)
__host__ __device__ constexpr int combine_max_block(int vpt, bool bias = false) { return vpt >= 8 || bias ? 256 : 512; }

// kBatch: slots whose rows are loaded before accumulating (combine_launch.cu: launch_typed).
// kBias: each slot adds its group's bias row, weighted like its expert row (CombineParams::bias).
// Its block first stages the group offsets in shared memory (the slots' groups by binary search
// there, not through chains of dependent L2 loads); the bias rows are added after the expert rows,
// kBias4 slots' rows loaded at a time (float4 where aligned). Session 56 (H100, gptoss-tp1 on the
// CUTLASS backend at 16384 tokens): the combine stage 570 -> 305 us against the L2 search and
// scalar bias loads interleaved with the rows.
template <class T, int VPT, int kBatch, bool kBias = false>
__global__ void __launch_bounds__(combine_max_block(VPT, kBias), 1) combine_kernel(CombineParams p) {
  __shared__ int32_t s_row[kMaxTeams][kMaxSlots];
  __shared__ float s_w[kMaxTeams][kMaxSlots];
  __shared__ int32_t s_g[kBias ? kMaxTeams : 1][kBias ? kMaxSlots : 1];
  __shared__ int32_t s_off[kBias ? kMaxBiasGroups + 1 : 1];
  // kernels/common/pdl.cuh: first, before any global access, unless the plan may be read early
  if (!p.plan_ready) pdl_enter();
  if constexpr (kBias) {
    for (int i = threadIdx.x; i <= p.num_groups; i += blockDim.x) s_off[i] = __ldcg(p.group_offsets + i);
    __syncthreads();
  }
  const int u0 = int(blockIdx.y) * p.chunk_units;
  const int u_end = min(p.units, u0 + p.chunk_units);
  const int tid = threadIdx.x;
  const int team = tid / p.ts;
  const int lane = tid - team * p.ts;
  const uint4* __restrict__ src = static_cast<const uint4*>(p.expert_out);
  const int64_t step = static_cast<int64_t>(gridDim.x) * p.teams;
  const int64_t num_tokens = resolve_token_count(p.num_tokens, p.num_tokens_dev, nullptr);
  // token t's slot rows and weights into the team's shared row (t past the count: nothing)
  auto load_plan = [&](int64_t t) {
    if (t >= num_tokens) return;
    for (int s = lane; s < p.slots; s += p.ts) {
      const int32_t r = __ldcg(p.slot_row + t * p.slots + s);
      s_row[team][s] = r;
      s_w[team][s] = s < p.top_k ? (p.weights != nullptr ? __ldcg(p.weights + t * p.top_k + s) : 1.f) : p.shared_scale;
      if constexpr (kBias) s_g[team][s] = r >= 0 ? group_of_row(s_off, p.num_groups, r) : -1;
    }
  };
  // (block-uniform trip count: every team passes the barriers)
  int64_t base = static_cast<int64_t>(blockIdx.x) * p.teams;
  load_plan(base + team);
  if (p.plan_ready) pdl_enter();  // expert_out is the predecessor's output
  __syncthreads();
  for (; base < num_tokens; base += step) {
    const int64_t t = base + team;
    if (t < num_tokens) {
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
          r[q] = s < p.slots ? s_row[team][s] : -1;
          w[q] = s < p.slots ? s_w[team][s] : 0.f;
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
      if constexpr (kBias) {
        // each slot's group bias row (f32, 8 values per unit), weighted like its row (a row past the
        // offsets, g < 0, adds none); the products are exact in float64 like the rows'
        constexpr int kBias4 = VPT >= 4 ? 1 : 4 / VPT;
        for (int s0 = 0; s0 < p.slots; s0 += kBias4) {
          int g[kBias4];
          float w[kBias4];
#pragma unroll
          for (int q = 0; q < kBias4; ++q) {
            const int s = s0 + q;
            g[q] = s < p.slots ? s_g[team][s] : -1;
            w[q] = s < p.slots ? s_w[team][s] : 0.f;
          }
          float4 b[kBias4][VPT][2];
#pragma unroll
          for (int q = 0; q < kBias4; ++q)
#pragma unroll
            for (int j = 0; j < VPT; ++j) {
              const int u = u0 + lane + j * p.ts;
              b[q][j][0] = b[q][j][1] = make_float4(0.f, 0.f, 0.f, 0.f);
              if (g[q] >= 0 && u < u_end) {
                const float* src_b = p.bias + static_cast<int64_t>(g[q]) * p.hidden + 8 * u;
                if (p.bias_vec4) {
                  b[q][j][0] = __ldg(reinterpret_cast<const float4*>(src_b));
                  b[q][j][1] = __ldg(reinterpret_cast<const float4*>(src_b) + 1);
                } else {  // (validate() asks only 4-byte alignment of the bias)
                  b[q][j][0] = make_float4(__ldg(src_b), __ldg(src_b + 1), __ldg(src_b + 2), __ldg(src_b + 3));
                  b[q][j][1] = make_float4(__ldg(src_b + 4), __ldg(src_b + 5), __ldg(src_b + 6), __ldg(src_b + 7));
                }
              }
            }
#pragma unroll
          for (int q = 0; q < kBias4; ++q) {
            if (g[q] < 0) continue;
            const double wq = static_cast<double>(w[q]);
#pragma unroll
            for (int j = 0; j < VPT; ++j) {
              const float f[8] = {b[q][j][0].x, b[q][j][0].y, b[q][j][0].z, b[q][j][0].w,
                                  b[q][j][1].x, b[q][j][1].y, b[q][j][1].z, b[q][j][1].w};
#pragma unroll
              for (int e = 0; e < 8; ++e) acc[j][e] = __fma_rn(wq, static_cast<double>(f[e]), acc[j][e]);
            }
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
    __syncthreads();  // every lane is done with the shared row
    load_plan(base + step + team);
    __syncthreads();
  }
}

}  // namespace fusedmoe::kernels::combine_detail
