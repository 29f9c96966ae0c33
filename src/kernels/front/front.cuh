// front.cuh — the fused front half for small token counts (decode): route + optional FP8
// quantisation of x in token order + dispatch plan, in ONE cooperative launch (contract in
// front_launch.h).
//
// Block = 8 routing warps + 8 more (quantising when x is quantised; all 16 plan); block b owns tokens
// 8b .. 8b + 7. Routing warp w routes token 8b + w with the router's own per-token body
// (router.cuh: route_token, so ids/weights are bit-identical to the router kernel); quantising
// warp 8 + w quantises the same token's row with the permute/quantise kernel's exact scalar
// helpers (permute_quant.cuh), in token order (the gather layout). Then a grid-wide barrier
// (cooperative launch: the driver provides the barrier, nothing to zero beforehand), and block 0
// plans over all T * slots entries:
//   * bitmask plan: a token reaches a group at most once (top-k picks distinct experts), so a
//     group's rows in (token, slot) order are its tokens in ascending order. mask[g] holds one
//     bit per token (T <= 256: 8 words); count = popcount, rank of token t = popcount of the
//     bits below t. Four barriers, no serial per-warp loops.
//   * if a token reaches a group twice (an expert map sending two experts to one local slot),
//     the general single-block plan body of plan.cuh runs instead.
// Block 0 also writes the whole error flag (zero, or a device token count out of range), so no
// memset precedes the launch.
#pragma once
#include <cuda_runtime.h>

#include <cooperative_groups.h>

#include <cstdint>

#include "kernels/common/pdl.cuh"
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
  int mask_words;               // ceil(bound / 32) (bitmask plan)
  // Diagnostic timeline (nullptr in production): globaltimer stamps, kTraceSlots per block
  // (front_launch.h: set_front_trace).
  unsigned long long* trace;
};

// Timeline stamps of the diagnostic trace: per block [0] entry, [1] block's routing/quantisation
// done; block 0 only [2] past the grid barrier, [3] plan keys and masks, [4] counts and offsets,
// [5] rows written, [6] end.
inline constexpr int kTraceSlots = 8;
__device__ __forceinline__ void trace_stamp(unsigned long long* trace, int slot) {
  if (trace == nullptr || threadIdx.x != 0) return;
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  trace[blockIdx.x * kTraceSlots + slot] = t;
}

// Row stride (in words) of a group's bit mask: odd, so that threads holding different groups hit
// different banks (with 8 words, g * 8 would fold 128 groups onto 4 banks).
__host__ __device__ inline int mask_stride(int words) { return words | 1; }

// Dynamic shared memory of the bitmask plan: uint32 mask[G][stride], uint16 below[G][stride]
// (tokens of the group in the words before), uint16 keys[n], int32 off[G], the scan scratch, and
// uint32 rows[n] (token << 5 | slot of each grouped row, staged for coalesced stores).
__host__ __device__ inline size_t bitmask_plan_smem_bytes(int groups, int words, int entries) {
  const size_t cells = static_cast<size_t>(groups) * mask_stride(words);
  return plan_detail::align_up(cells * 4, 16) + plan_detail::align_up(cells * 2, 16) +
         plan_detail::align_up(static_cast<size_t>(entries) * 2, 16) + plan_detail::align_up(static_cast<size_t>(groups) * 4, 16) +
         plan_detail::align_up(33 * 8, 16) + plan_detail::align_up(static_cast<size_t>(entries) * 4, 16);
}

// Token ids a one-block launch keeps in shared memory for its plan (8 tokens x k <= kMaxTopK;
// prepare_router refuses larger k).
inline constexpr int kSharedIds = kRouteWarps * kMaxTopK;

// Block 0's plan over n entries (see the header comment). Returns false (having written nothing
// to global memory) when a token reaches a group twice. s_ids: the ids in shared memory (a
// one-block launch: the routing warps wrote them there too), else nullptr (read from L2).
__device__ __forceinline__ bool bitmask_plan(const plan_detail::PlanParams& p, int32_t n, int words,
                                             const int32_t* s_ids, unsigned long long* trace) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ int s_dup;
  const int G = p.num_groups;
  const int ms = mask_stride(words);
  const size_t cells = size_t(G) * ms;
  uint32_t* mask = reinterpret_cast<uint32_t*>(smem_raw);
  uint16_t* below = reinterpret_cast<uint16_t*>(smem_raw + plan_detail::align_up(cells * 4, 16));
  uint16_t* keys = reinterpret_cast<uint16_t*>(reinterpret_cast<unsigned char*>(below) + plan_detail::align_up(cells * 2, 16));
  int32_t* off = reinterpret_cast<int32_t*>(reinterpret_cast<unsigned char*>(keys) + plan_detail::align_up(size_t(n) * 2, 16));
  unsigned long long* scan =
      reinterpret_cast<unsigned long long*>(reinterpret_cast<unsigned char*>(off) + plan_detail::align_up(size_t(G) * 4, 16));
  uint32_t* stage = reinterpret_cast<uint32_t*>(reinterpret_cast<unsigned char*>(scan) + plan_detail::align_up(33 * 8, 16));
  const int tid = threadIdx.x;
  for (int i = tid; i < G * ms; i += blockDim.x) mask[i] = 0u;
  if (tid == 0) s_dup = 0;
  __syncthreads();
  // Keys: the ids are read in batches of 8 independent L2 loads per thread (one dependent load
  // per entry would serialise 8+ round trips at 256 tokens), then mapped to groups.
  constexpr int kBatch = 8;
  constexpr int32_t kSharedSlot = 0x7fffffff;
  for (int base = tid; base < n; base += blockDim.x * kBatch) {
    int32_t id[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int i = base + j * static_cast<int>(blockDim.x);
      id[j] = -1;
      if (i < n) {
        const int t = i / p.slots, sl = i - t * p.slots;
        const int64_t at = static_cast<int64_t>(t) * p.top_k + sl;
        id[j] = sl >= p.top_k ? kSharedSlot : s_ids != nullptr ? s_ids[at] : __ldcg(p.topk_ids + at);
      }
    }
    int32_t g[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      g[j] = G;
      if (id[j] == kSharedSlot) g[j] = p.num_local;
      else if (id[j] >= 0 && id[j] < p.num_experts) g[j] = p.expert_map != nullptr ? __ldg(p.expert_map + id[j]) : id[j];
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int i = base + j * static_cast<int>(blockDim.x);
      if (i >= n) break;
      const int gg = (id[j] != kSharedSlot && (g[j] < 0 || g[j] >= p.num_local)) ? G : g[j];
      keys[i] = static_cast<uint16_t>(gg);
      if (gg < G) {
        const int t = i / p.slots;
        const uint32_t bit = 1u << (t & 31);
        if (atomicOr(mask + gg * ms + (t >> 5), bit) & bit) s_dup = 1;
      }
    }
  }
  __syncthreads();
  trace_stamp(trace, 3);
  if (s_dup) return false;
  // Counts, offsets, padded offsets: contiguous groups per thread, one block scan.
  const int ipt = (G + blockDim.x - 1) / blockDim.x;
  const int g0 = tid * ipt, g1 = min(G, g0 + ipt);
  // Count of a group; also records, per word, the group's tokens in the words before it.
  auto group_count = [&](int g) {
    uint32_t c = 0;
    for (int w = 0; w < words; ++w) {
      below[g * ms + w] = static_cast<uint16_t>(c);
      c += __popc(mask[g * ms + w]);
    }
    return c;
  };
  unsigned long long mine = 0;
  for (int g = g0; g < g1; ++g) {
    const uint32_t c = group_count(g);
    mine += c;
    mine += static_cast<unsigned long long>(plan_detail::round_up_tile(c, p.tile_m)) << 32;
  }
  unsigned long long total = 0;
  const unsigned long long excl = plan_detail::block_exclusive_scan<unsigned long long>(mine, scan, &total);
  uint32_t run = static_cast<uint32_t>(excl), prun = static_cast<uint32_t>(excl >> 32);
  for (int g = g0; g < g1; ++g) {
    const uint32_t c = below[g * ms + words - 1] + __popc(mask[g * ms + words - 1]);
    p.counts[g] = static_cast<int32_t>(c);
    p.offsets[g] = static_cast<int32_t>(run);
    p.padded_offsets[g] = static_cast<int32_t>(prun);
    off[g] = static_cast<int32_t>(run);
    run += c;
    prun += static_cast<uint32_t>(plan_detail::round_up_tile(c, p.tile_m));
  }
  if (tid == 0) {
    p.offsets[G] = static_cast<int32_t>(total);
    p.padded_offsets[G] = static_cast<int32_t>(total >> 32);
  }
  __syncthreads();
  trace_stamp(trace, 4);
  // Rows: rank of token t in its group = bits of the group's mask below t. slot_row is written
  // in entry order; row_token / row_slot are scattered in shared memory first and then stored in
  // row order (scattered 4-byte global stores from one SM cost about a cycle each).
#pragma unroll 4
  for (int i = tid; i < n; i += blockDim.x) {
    const int g = keys[i];
    const int t = i / p.slots;
    if (g >= G) {
      p.slot_row[i] = -1;
      continue;
    }
    const int cell = g * ms + (t >> 5);
    const int rank = below[cell] + __popc(mask[cell] & ((1u << (t & 31)) - 1u));
    const int row = off[g] + rank;
    p.slot_row[i] = row;
    stage[row] = (static_cast<uint32_t>(t) << 5) | static_cast<uint32_t>(i - t * p.slots);
  }
  __syncthreads();
  const int rows = static_cast<int>(static_cast<uint32_t>(total));
  for (int r = tid; r < rows; r += blockDim.x) {
    const uint32_t v = stage[r];
    p.row_token[r] = static_cast<int32_t>(v >> 5);
    p.row_slot[r] = static_cast<int32_t>(v & 31u);
  }
  return true;
}

// Per-token scheme: quantise token t's row (one warp: the row-wide amax first, then the units).
// Bit-identical to permute_quant_kernel in token order.
template <class TIn>
__device__ __forceinline__ void quantize_row_warp(const FrontParams& f, int64_t t, int lane) {
  using namespace pq_detail;
  const uint4* xrow = reinterpret_cast<const uint4*>(static_cast<const TIn*>(f.x) + t * f.x_stride);
  uint4* orow = reinterpret_cast<uint4*>(f.q_out + t * static_cast<int64_t>(f.hidden));
  float m = 0.f;
  for (int u = lane; u < f.units; u += 32) {
    const uint4 raw[2] = {__ldg(xrow + 2 * u), __ldg(xrow + 2 * u + 1)};
    m = fmaxf(m, unit_amax<TIn>(raw));
  }
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  const float t_scale = fp8_scale_from_amax(m, f.ue8m0);
  const float t_inv = rcp_rn(t_scale);
  if (lane == 0 && f.q_scales != nullptr) f.q_scales[t] = t_scale;
  for (int u = lane; u < f.units; u += 32) {
    const uint4 raw[2] = {__ldg(xrow + 2 * u), __ldg(xrow + 2 * u + 1)};
    orow[u] = quantize_unit<TIn>(raw, t_inv);
  }
}

// Static and 128-group schemes: the block's 8 quantising warps share its rows as (token, chunk)
// items, a chunk being 32 units of 16 elements (4 groups of 128), and each warp issues the loads
// of kChunkBatch items before converting any, so a row costs about one memory round trip instead
// of one per chunk (and one token's row is spread over all 8 warps). Bytes and scales are
// bit-identical to quantize_row_warp / the permute/quantise kernel.
inline constexpr int kChunkBatch = 4;
template <class TIn>
__device__ __forceinline__ void quantize_chunks_warp(const FrontParams& f, int64_t tok0, int ntok, int qw, int lane) {
  using namespace pq_detail;
  const int nchunks = (f.units + 31) / 32;
  const int items = ntok * nchunks;
  float t_scale = 1.f, t_inv = 1.f;
  if (f.quant_scheme == kStatic) {
    t_scale = __ldg(f.static_scale);
    t_inv = rcp_rn(t_scale);
  }
  for (int i0 = qw; i0 < items; i0 += kRouteWarps * kChunkBatch) {
    uint4 raw[kChunkBatch][2];
#pragma unroll
    for (int b = 0; b < kChunkBatch; ++b) {
      const int item = i0 + b * kRouteWarps;
      const int t = item / nchunks;
      const int u = (item - t * nchunks) * 32 + lane;
      const bool in = item < items && u < f.units;
      const uint4* xrow = reinterpret_cast<const uint4*>(static_cast<const TIn*>(f.x) + (tok0 + t) * f.x_stride);
#pragma unroll
      for (int l = 0; l < 2; ++l) raw[b][l] = in ? __ldg(xrow + 2 * u + l) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int b = 0; b < kChunkBatch; ++b) {
      const int item = i0 + b * kRouteWarps;  // warp-uniform
      if (item >= items) break;
      const int t = item / nchunks;
      const int u = (item - t * nchunks) * 32 + lane;
      const bool in = u < f.units;
      const int64_t token = tok0 + t;
      float scale = t_scale, inv = t_inv;
      if (f.quant_scheme == kGroup) {
        float m = unit_amax<TIn>(raw[b]);
#pragma unroll
        for (int o = 1; o < 8; o <<= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        scale = fp8_scale_from_amax(m, f.ue8m0);
        inv = rcp_rn(scale);
        if (in && (u & 7) == 0 && f.q_scales != nullptr) f.q_scales[static_cast<int64_t>(u >> 3) * f.rows_pad4 + token] = scale;
      }
      if (!in) continue;
      reinterpret_cast<uint4*>(f.q_out + token * static_cast<int64_t>(f.hidden))[u] = quantize_unit<TIn>(raw[b], inv);
    }
  }
}

template <typename T, int VEC, int NV, router_detail::RowMode M>
__global__ void __launch_bounds__(kMaxThreads, 1) front_small_kernel(const FrontParams f) {
  pdl_enter();  // kernels/common/pdl.cuh: first, before any global access
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ int32_t s_ids[kSharedIds];
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int warp = static_cast<int>(threadIdx.x >> 5);
  const bool one_block = gridDim.x == 1;
  const int64_t num_tokens = resolve_token_count(f.r.num_tokens, f.r.num_tokens_dev, nullptr);  // flag: block 0, last
  const int64_t token = static_cast<int64_t>(blockIdx.x) * kRouteWarps + (warp % kRouteWarps);
  trace_stamp(f.trace, 0);

  if (warp < kRouteWarps) {
    if (token < num_tokens) {
      uint32_t* wsm = reinterpret_cast<uint32_t*>(smem_raw) + static_cast<int64_t>(warp) * (f.r.num_experts + f.r.n_group);
      route_token<T, VEC, NV, M, true>(f.r, token, lane, wsm, router_detail::valid_slots<VEC, NV>(lane, f.r.num_experts),
                                 one_block ? s_ids + warp * f.r.k : nullptr);
    }
  } else if (f.quant_scheme != pq_detail::kNone) {
    if (f.quant_scheme == pq_detail::kToken) {  // a row-wide amax: one warp per row
      if (token < num_tokens) {
        if (f.x_f16) quantize_row_warp<__half>(f, token, lane);
        else quantize_row_warp<__nv_bfloat16>(f, token, lane);
      }
    } else {
      const int64_t tok0 = static_cast<int64_t>(blockIdx.x) * kRouteWarps;
      const int64_t left = num_tokens - tok0;
      const int ntok = left <= 0 ? 0 : (left < kRouteWarps ? static_cast<int>(left) : kRouteWarps);
      if (f.x_f16) quantize_chunks_warp<__half>(f, tok0, ntok, warp - kRouteWarps, lane);
      else quantize_chunks_warp<__nv_bfloat16>(f, tok0, ntok, warp - kRouteWarps, lane);
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

  if (f.trace != nullptr) {  // uniform: the diagnostic waits for the whole block
    __syncthreads();
    trace_stamp(f.trace, 1);
  }
  // Every id is written: block 0 plans, the other blocks are done.
  if (gridDim.x > 1) {
    __threadfence();
    cooperative_groups::this_grid().sync();
  } else {
    __syncthreads();
  }
  trace_stamp(f.trace, 2);
  if (blockIdx.x != 0) return;
  const int32_t entries = static_cast<int32_t>(num_tokens * f.plan.slots);
  if (!bitmask_plan(f.plan, entries, f.mask_words, one_block ? s_ids : nullptr, f.trace)) {
    __syncthreads();
    plan_detail::plan_rank_scatter_body<true>(f.plan, 0, 0, entries, f.plan_entries_per_warp);
  }
  trace_stamp(f.trace, 5);
  // The whole error flag: zero, or the device token count that was clamped.
  if (threadIdx.x == 0 && f.r.error_flag != nullptr) {
    int32_t e0 = 0, e1 = 0, e2 = 0, e3 = 0;
    if (f.r.num_tokens_dev != nullptr) {
      const int64_t v = *f.r.num_tokens_dev;
      if (v < 0 || v > f.r.num_tokens) {
        e0 = kErrorTokenCount;
        e1 = static_cast<int32_t>(v);
        e2 = -1;
        e3 = static_cast<int32_t>(f.r.num_tokens);
      }
    }
    f.r.error_flag[1] = e1;
    f.r.error_flag[2] = e2;
    f.r.error_flag[3] = e3;
    f.r.error_flag[0] = e0;
  }
  trace_stamp(f.trace, 6);
}

}  // namespace fusedmoe::kernels::front_detail
