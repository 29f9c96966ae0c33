// front.cuh — the fused front half for small token counts (decode): route + optional FP8
// quantisation of x in token order + dispatch plan, in ONE launch (contract in front_launch.h).
//
// Block = 8 routing warps (+ 8 quantising warps when x is quantised); block b owns tokens
// 8b .. 8b + 7. Routing warp w routes token 8b + w with the router's own per-token body
// (router.cuh: route_token, so ids/weights are bit-identical to the router kernel); quantising
// warp 8 + w quantises the same token's row with the permute/quantise kernel's exact scalar
// helpers (permute_quant.cuh), in token order (the gather layout). Then every block takes a ticket
// (threadfence + atomicAdd); the last block to arrive sees every id and runs the single-block
// plan body (plan.cuh) over all T * slots entries: the plan is the same as the plan kernel's.
// The ticket is zeroed by the host's memset of the error-flag region before the launch.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/token_count.cuh"
#include "kernels/dispatch/plan.cuh"
#include "kernels/quant/permute_quant.cuh"
#include "kernels/router/router.cuh"

namespace fusedmoe::kernels::front_detail {

inline constexpr int kRouteWarps = 8;   // tokens per block
inline constexpr int kMaxThreads = 512; // 8 routing + 8 quantising warps
inline constexpr size_t kFrontMaxSmem = 96 * 1024;  // dynamic shared memory bound (checked on the host)

struct FrontParams {
  router_detail::Params r;      // r.num_tokens: the bound; r.num_tokens_dev: optional device count
  plan_detail::PlanParams plan;
  int plan_entries_per_warp;    // ceil(bound entries / warps of the block)
  // Token-order quantisation (quant_scheme != kNone): q_out[t, K] e4m3, q_scales per scheme.
  int quant_scheme;             // pq_detail::Scheme (kNone, kStatic, kToken, kGroup)
  bool ue8m0;
  bool x_f16;                   // x is f16 (else bf16)
  const void* x;
  int64_t x_stride;             // elements
  int hidden;                   // K (multiple of 16)
  int units;                    // K / 16
  const float* static_scale;
  uint8_t* q_out;
  float* q_scales;
  int64_t rows_pad4;            // scale row stride: bound rounded up to 4
  unsigned int* ticket;         // zeroed before the launch
};

// Quantise token t's row (one warp). Bit-identical to permute_quant_kernel in token order.
template <class TIn>
__device__ __forceinline__ void quantize_row_warp(const FrontParams& f, int64_t t, int lane) {
  using namespace pq_detail;
  const uint4* xrow = reinterpret_cast<const uint4*>(static_cast<const TIn*>(f.x) + t * f.x_stride);
  uint4* orow = reinterpret_cast<uint4*>(f.q_out + t * static_cast<int64_t>(f.hidden));
  float t_scale = 1.f, t_inv = 1.f;
  if (f.quant_scheme == kStatic) {
    t_scale = __ldg(f.static_scale);
    t_inv = rcp_rn(t_scale);
  } else if (f.quant_scheme == kToken) {
    float m = 0.f;
    for (int u = lane; u < f.units; u += 32) {
      float v[8];
#pragma unroll
      for (int l = 0; l < 2; ++l) {
        vec::unpack8<TIn>(__ldg(xrow + 2 * u + l), v);
#pragma unroll
        for (int e = 0; e < 8; ++e) m = fmaxf(m, fabsf(v[e]));
      }
    }
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    t_scale = fp8_scale_from_amax(m, f.ue8m0);
    t_inv = rcp_rn(t_scale);
    if (lane == 0 && f.q_scales != nullptr) f.q_scales[t] = t_scale;
  }
  // Units u0 + lane of 32-unit steps: the 8 lanes of a 128-group are lanes 8m .. 8m + 7.
  for (int u0 = 0; u0 < f.units; u0 += 32) {
    const int u = u0 + lane;
    const bool in = u < f.units;
    uint4 raw[2];
#pragma unroll
    for (int l = 0; l < 2; ++l) raw[l] = in ? __ldg(xrow + 2 * u + l) : make_uint4(0, 0, 0, 0);
    float scale = t_scale, inv = t_inv;
    if (f.quant_scheme == kGroup) {
      float m = 0.f;
#pragma unroll
      for (int l = 0; l < 2; ++l) {
        float v[8];
        vec::unpack8<TIn>(raw[l], v);
#pragma unroll
        for (int e = 0; e < 8; ++e) m = fmaxf(m, fabsf(v[e]));
      }
#pragma unroll
      for (int o = 1; o < 8; o <<= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
      scale = fp8_scale_from_amax(m, f.ue8m0);
      inv = rcp_rn(scale);
      if (in && (u & 7) == 0 && f.q_scales != nullptr) f.q_scales[static_cast<int64_t>(u >> 3) * f.rows_pad4 + t] = scale;
    }
    if (!in) continue;
    uint32_t packed[4];
#pragma unroll
    for (int l = 0; l < 2; ++l) {
      float v[8];
      vec::unpack8<TIn>(raw[l], v);
#pragma unroll
      for (int e = 0; e < 8; ++e) v[e] = __fmul_rn(v[e], inv);
      packed[2 * l] = cvt_e4m3x2(v[0], v[1]) | (cvt_e4m3x2(v[2], v[3]) << 16);
      packed[2 * l + 1] = cvt_e4m3x2(v[4], v[5]) | (cvt_e4m3x2(v[6], v[7]) << 16);
    }
    orow[u] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
  }
}

template <typename T, int VEC, int NV, router_detail::RowMode M>
__global__ void __launch_bounds__(kMaxThreads, 1) front_small_kernel(const FrontParams f) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ bool s_last;
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int warp = static_cast<int>(threadIdx.x >> 5);
  const int64_t num_tokens = resolve_token_count(f.r.num_tokens, f.r.num_tokens_dev, f.r.error_flag);
  const int64_t token = static_cast<int64_t>(blockIdx.x) * kRouteWarps + (warp % kRouteWarps);

  if (warp < kRouteWarps) {
    if (token < num_tokens) {
      uint32_t* wsm = reinterpret_cast<uint32_t*>(smem_raw) + static_cast<int64_t>(warp) * (f.r.num_experts + f.r.n_group);
      route_token<T, VEC, NV, M>(f.r, token, lane, wsm, router_detail::valid_slots<VEC, NV>(lane, f.r.num_experts));
    }
  } else if (f.quant_scheme != pq_detail::kNone) {
    if (token < num_tokens) {
      if (f.x_f16) quantize_row_warp<__half>(f, token, lane);
      else quantize_row_warp<__nv_bfloat16>(f, token, lane);
    }
    if (blockIdx.x == 0 && f.q_scales != nullptr) {
      const int qt = threadIdx.x - kRouteWarps * 32;
      const int qn = blockDim.x - kRouteWarps * 32;
      if (f.quant_scheme == pq_detail::kStatic) {
        if (qt == 0) f.q_scales[0] = __ldg(f.static_scale);
      } else {
        // Zero the scale slots of rows [bound, rows_pad4) (the TMA padding), as the quantiser.
        const int pad = static_cast<int>(f.rows_pad4 - f.r.num_tokens);
        const int kb = f.quant_scheme == pq_detail::kGroup ? (f.hidden + 127) / 128 : 1;
        for (int i = qt; i < kb * pad; i += qn)
          f.q_scales[static_cast<int64_t>(i / pad) * f.rows_pad4 + f.r.num_tokens + i % pad] = 0.f;
      }
    }
  }

  // Last block to finish plans over every token's ids.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) s_last = atomicAdd(f.ticket, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!s_last) return;
  __threadfence();
  const int32_t entries = static_cast<int32_t>(num_tokens * f.plan.slots);
  plan_detail::plan_rank_scatter_body<true>(f.plan, 0, 0, entries, f.plan_entries_per_warp);
}

}  // namespace fusedmoe::kernels::front_detail
