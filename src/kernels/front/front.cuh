// front.cuh — the fused front half for small token counts (decode): route + optional FP8
// quantisation of x in token order + dispatch plan, in ONE cooperative launch (contract in
// front_launch.h).
//
// Blocks [0, route_blocks) route 16 tokens each: warp w of block b routes token 16b + w with the
// router's own per-token body (router.cuh: route_token, so ids/weights are bit-identical to the
// router kernel). When x is quantised (FP8 in token order, the gather layout, with the
// permute/quantise kernel's exact scalar helpers), the blocks after them do it: one SM streams
// only ~15-60 GB/s of rows, so the host gives them ~16 KB of x each.
//
// The plan uses that top-k never picks an expert twice for a token, so a group's rows in (token,
// slot) order are its tokens in ascending order:
//   * each routing warp's entry lanes set their token's bit in the block's 16-bit field of their
//     group (shared memory, two groups per word); block barriers around that;
//   * one routing block (<= 16 tokens): every warp with a token scans the G counts (popcounts)
//     itself and each entry lane computes its row (offset of its group + tokens of the group
//     below it): no more barriers;
//   * several (cooperative launch): each exports its masks to scratch, one grid barrier (the
//     driver provides it, nothing to zero beforehand), then every routing block with tokens reads
//     all blocks' masks (warp reductions over the blocks give each group's total and its tokens
//     in earlier blocks), one block barrier, and its warps compute their own rows as above.
//   * block 0's last warp also writes counts, offsets and padded offsets;
//   * if a token reaches a group twice (an expert map sending two experts to one local slot),
//     block 0 runs the general single-block plan body of plan.cuh instead.
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

inline constexpr int kRouteWarps = 16;  // tokens per routing block: every warp routes one
inline constexpr int kMaxThreads = 512; // 8 routing + 8 quantising warps
inline constexpr size_t kFrontMaxSmem = 96 * 1024;  // dynamic shared memory bound (checked on the host)
inline constexpr int64_t kQuantBytesPerBlock = 16 * 1024;  // of x per block when rows are spread

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
  // Launch shape: blocks [0, route_blocks) route 8 tokens each (ceil(bound / 8)); the blocks
  // after them only quantise. quant_warps: quantising warps of the grid (8 per routing block, 16
  // per quantising-only block).
  int route_blocks;
  int quant_warps;
  uint32_t* block_masks;        // a multi-block launch: block_masks_bytes(G) of scratch
  // Diagnostic timeline (nullptr in production): globaltimer stamps, kTraceSlots per block
  // (front_launch.h: set_front_trace).
  unsigned long long* trace;
};

// Timeline stamps of the diagnostic trace (routing blocks): per block [0] entry, [1] routing and
// quantisation done; [2] past the grid barrier, [3] group counts of all blocks read, [4] rows
// written; block 0 [5] after the fallback plan, [6] end.
inline constexpr int kTraceSlots = 8;
__device__ __forceinline__ void trace_stamp(unsigned long long* trace, int slot) {
  if (trace == nullptr || threadIdx.x != 0 || blockIdx.x >= 32) return;  // routing blocks only
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  trace[blockIdx.x * kTraceSlots + slot] = t;
}

// ---- the plan of the fused front (see the header comment) ----------------------------------
// Group g's field of a block: bit w set when the block's token 16b + w reaches g. Two groups per
// 32-bit word (bits 16 (g % 2) .. of word g / 2), in shared memory (s_mask) and, for the other
// blocks, exported to global scratch as word j of block b at [j * 16 + b] (blocks fastest: a warp
// reads one word of all blocks at once; with blocks as rows, 32 blocks of 8 tokens reading the
// same 8 KB line by line cost 2-5 us on the H200), then each block's duplicate flag at
// [W * 16 + b].
inline constexpr int kMaxGroups = 1088;  // G bound of the fused path (E <= 1024 + a shared expert)
inline constexpr int kMaxMaskWords = kMaxGroups / 2;
__host__ __device__ inline int mask_words(int groups) { return (groups + 1) / 2; }
inline constexpr int kMaxRouteBlocks = 16;  // 256 tokens / 16
__host__ __device__ inline size_t block_masks_bytes(int groups) {
  return static_cast<size_t>(mask_words(groups) + 1) * kMaxRouteBlocks * 4;
}
// Token ids of the block's tokens, in shared memory for the plan (8 tokens x k <= kMaxTopK;
// prepare_router refuses larger k).
inline constexpr int kSharedIds = kRouteWarps * kMaxTopK;
inline constexpr int kMaskWordsPerWarp = (kMaxMaskWords + kMaxThreads / 32 - 1) / (kMaxThreads / 32);

// Phase B of a multi-block launch (after the grid barrier; every thread of a block that owns
// tokens calls it): for each group, its tokens in all blocks (cnt) and in the blocks before this
// one (bef), into s_cb[g] = bef << 16 | cnt, and per mask word the tokens of its two groups into
// s_ws[j]. Warp w takes words w, w + 16, ...; lane l reads block l's word (nb <= 16 blocks own
// tokens); warp reductions over the blocks give both numbers for the word's two groups at once
// (a 16-bit pair per register). Returns true, in every thread, when some block saw a token reach a group
// twice. Ends with a block barrier.
__device__ __forceinline__ bool gather_block_counts(const uint32_t* g_masks, int G, int nb, uint32_t* s_cb,
                                                    uint32_t* s_ws) {
  constexpr unsigned kAll = 0xffffffffu;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const int W = mask_words(G);
  const int me = blockIdx.x;
  const bool reads = lane < nb;
  uint32_t v[kMaskWordsPerWarp];
#pragma unroll
  for (int i = 0; i < kMaskWordsPerWarp; ++i) {
    const int j = warp + i * nwarps;
    v[i] = (reads && j < W) ? __ldcg(g_masks + j * kMaxRouteBlocks + lane) : 0u;
  }
  const uint32_t dup_word = reads ? __ldcg(g_masks + W * kMaxRouteBlocks + lane) : 0u;
  const bool dup = __any_sync(kAll, dup_word != 0u);
#pragma unroll
  for (int i = 0; i < kMaskWordsPerWarp; ++i) {
    const int j = warp + i * nwarps;
    if (j >= W) break;  // warp-uniform
    const uint32_t x = v[i];
    // Groups 2j and 2j + 1 as a 16-bit pair (sums over 16 blocks stay <= 256). Totals and the
    // sums over the blocks before this one by warp reductions (REDUX: one instruction each, no
    // shuffle chain).
    const uint32_t own = __popc(x & 0xffffu) | (__popc(x >> 16) << 16);
    const uint32_t t = __reduce_add_sync(kAll, own);
    const uint32_t e = __reduce_add_sync(kAll, lane < me ? own : 0u);
    if (lane == 0) {
      const int g = 2 * j;
      s_cb[g] = (e << 16) | (t & 0xffffu);  // a group past G has no bits: zero counts
      s_cb[g + 1] = (e & 0xffff0000u) | (t >> 16);
      s_ws[j] = (t & 0xffffu) + (t >> 16);
    }
  }
  __syncthreads();
  return dup;
}

// The group counts phase C reads: one block (its own masks: popcounts) or several (s_cb, s_ws).
struct OneBlockCounts {
  const uint32_t* mask;
  __device__ __forceinline__ uint32_t word(int j) const { return __popc(mask[j]); }
  __device__ __forceinline__ uint32_t cnt(int q) const { return __popc((mask[q >> 1] >> (16 * (q & 1))) & 0xffffu); }
  __device__ __forceinline__ uint32_t bef(int) const { return 0u; }
  // Tokens of the groups of g's word below g.
  __device__ __forceinline__ uint32_t in_word_below(int g) const {
    return (g & 1) ? __popc(mask[g >> 1] & 0xffffu) : 0u;
  }
};
struct GridCounts {
  const uint32_t* cb;
  const uint32_t* ws;
  __device__ __forceinline__ uint32_t word(int j) const { return ws[j]; }
  __device__ __forceinline__ uint32_t cnt(int q) const { return cb[q] & 0xffffu; }
  __device__ __forceinline__ uint32_t bef(int q) const { return cb[q] >> 16; }
  __device__ __forceinline__ uint32_t in_word_below(int g) const {
    return (g & 1) ? (cb[g - 1] & 0xffffu) : 0u;
  }
};

// Phase C: one warp, every lane calls (warp-uniform). The warp scans the group counts itself
// (lane l: mask words [l * wpl, (l + 1) * wpl), two groups each; one warp scan), so no block
// barrier is needed; an entry lane (g < G: its group, w: its token's bit in the block, entry:
// its global entry index) gets its row = the scan base of g's lane + the tokens of the words
// before g's in that lane's range and of the groups before g in its word + the group's tokens in
// earlier blocks + the block's tokens of g below it, and stores slot_row / row_token / row_slot.
// Compact loops on purpose: this code runs once per launch, and fetching it costs more than
// executing it.
template <class C>
__device__ __forceinline__ void warp_plan_rows(const plan_detail::PlanParams& p, const C& c, const uint32_t* s_mask,
                                               bool has_entry, int g, int w, int32_t entry, int32_t token, int slot) {
  constexpr unsigned kAll = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const int G = p.num_groups;
  const int W = mask_words(G);
  const int wpl = (W + 31) / 32;
  const int j0 = lane * wpl, j1 = min(W, j0 + wpl);
  uint32_t sum = 0;
#pragma unroll 1
  for (int j = j0; j < j1; ++j) sum += c.word(j);
  uint32_t inc = sum;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const uint32_t o = __shfl_up_sync(kAll, inc, d);
    if (lane >= d) inc += o;
  }
  const bool mapped = has_entry && g < G;
  const int jg = g >> 1;
  const int owner = mapped ? jg / wpl : 0;
  const uint32_t base = __shfl_sync(kAll, inc - sum, owner);
  if (!has_entry) return;
  if (!mapped) {
    p.slot_row[entry] = -1;
    return;
  }
  uint32_t r = base + c.in_word_below(g) + c.bef(g) + __popc((s_mask[jg] >> (16 * (g & 1))) & ((1u << w) - 1u));
#pragma unroll 1
  for (int j = owner * wpl; j < jg; ++j) r += c.word(j);
  p.slot_row[entry] = static_cast<int32_t>(r);
  p.row_token[r] = token;
  p.row_slot[r] = slot;
}

// Block 0's counts, offsets and padded offsets, by one warp (its own scans of the counts).
template <class C>
__device__ __forceinline__ void warp_plan_offsets(const plan_detail::PlanParams& p, const C& c) {
  constexpr unsigned kAll = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const int G = p.num_groups;
  const int gpl = (G + 31) / 32;
  const int g0 = lane * gpl, g1 = min(G, g0 + gpl);
  uint32_t sum = 0, psum = 0;
#pragma unroll 1
  for (int q = g0; q < g1; ++q) {
    const uint32_t n = c.cnt(q);
    sum += n;
    psum += plan_detail::round_up_tile(n, p.tile_m);
  }
  uint32_t inc = sum, pinc = psum;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const uint32_t o = __shfl_up_sync(kAll, inc, d), po = __shfl_up_sync(kAll, pinc, d);
    if (lane >= d) {
      inc += o;
      pinc += po;
    }
  }
  uint32_t run = inc - sum, prun = pinc - psum;
#pragma unroll 1
  for (int q = g0; q < g1; ++q) {
    const uint32_t n = c.cnt(q);
    p.counts[q] = static_cast<int32_t>(n);
    p.offsets[q] = static_cast<int32_t>(run);
    p.padded_offsets[q] = static_cast<int32_t>(prun);
    run += n;
    prun += plan_detail::round_up_tile(n, p.tile_m);
  }
  if (lane == 31) {
    p.offsets[G] = static_cast<int32_t>(inc);
    p.padded_offsets[G] = static_cast<int32_t>(pinc);
  }
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

// Static and 128-group schemes: the quantising warps of the whole grid share the rows as (token,
// chunk) items, a chunk being 32 units of 16 elements (4 groups of 128): warp qw of nq takes items
// qw, qw + nq, ... and issues the loads of kChunkBatch items before converting any. One SM
// streams only ~60 GB/s of such loads, so the rows are spread over as many blocks as the host
// gives (FrontParams::quant_blocks). Bytes and scales are bit-identical to quantize_row_warp /
// the permute/quantise kernel.
inline constexpr int kChunkBatch = 4;
template <class TIn>
__device__ __forceinline__ void quantize_chunks_warp(const FrontParams& f, int64_t ntok, int qw, int nq, int lane) {
  using namespace pq_detail;
  const int nchunks = (f.units + 31) / 32;
  const int64_t items = ntok * nchunks;
  float t_scale = 1.f, t_inv = 1.f;
  if (f.quant_scheme == kStatic) {
    t_scale = __ldg(f.static_scale);
    t_inv = rcp_rn(t_scale);
  }
  for (int64_t i0 = qw; i0 < items; i0 += static_cast<int64_t>(nq) * kChunkBatch) {
    uint4 raw[kChunkBatch][2];
#pragma unroll
    for (int b = 0; b < kChunkBatch; ++b) {
      const int64_t item = i0 + static_cast<int64_t>(b) * nq;
      const int64_t t = item / nchunks;
      const int u = static_cast<int>(item - t * nchunks) * 32 + lane;
      const bool in = item < items && u < f.units;
      const uint4* xrow = reinterpret_cast<const uint4*>(static_cast<const TIn*>(f.x) + t * f.x_stride);
#pragma unroll
      for (int l = 0; l < 2; ++l) raw[b][l] = in ? __ldg(xrow + 2 * u + l) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int b = 0; b < kChunkBatch; ++b) {
      const int64_t item = i0 + static_cast<int64_t>(b) * nq;  // warp-uniform
      if (item >= items) break;
      const int64_t token = item / nchunks;
      const int u = static_cast<int>(item - token * nchunks) * 32 + lane;
      const bool in = u < f.units;
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

// Quantising warp `qw` of `nq` in the grid: the rows (per-token scheme) or the chunks of x.
__device__ __forceinline__ void quantize_part(const FrontParams& f, int64_t num_tokens, int qw, int nq, int lane) {
  if (f.quant_scheme == pq_detail::kToken) {  // a row-wide amax: one warp per row
    for (int64_t t = qw; t < num_tokens; t += nq) {
      if (f.x_f16) quantize_row_warp<__half>(f, t, lane);
      else quantize_row_warp<__nv_bfloat16>(f, t, lane);
    }
  } else if (f.x_f16) {
    quantize_chunks_warp<__half>(f, num_tokens, qw, nq, lane);
  } else {
    quantize_chunks_warp<__nv_bfloat16>(f, num_tokens, qw, nq, lane);
  }
}

template <typename T, int VEC, int NV, router_detail::RowMode M>
__global__ void __launch_bounds__(kMaxThreads, 1) front_small_kernel(const FrontParams f) {
  pdl_enter();  // kernels/common/pdl.cuh: first, before any global access
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ int32_t s_ids[kSharedIds];
  __shared__ uint32_t s_mask[kMaxMaskWords];
  __shared__ uint32_t s_cb[kMaxGroups];
  __shared__ uint32_t s_ws[kMaxMaskWords];
  __shared__ int s_dup;
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int warp = static_cast<int>(threadIdx.x >> 5);
  const int G = f.plan.num_groups;
  const int W = mask_words(G);
  const bool routes = static_cast<int>(blockIdx.x) < f.route_blocks;
  const int64_t num_tokens = resolve_token_count(f.r.num_tokens, f.r.num_tokens_dev, nullptr);  // flag: block 0, last
  const int64_t token = static_cast<int64_t>(blockIdx.x) * kRouteWarps + warp;
  trace_stamp(f.trace, 0);
  // The entry of a routing warp's lane: slot `lane` of the warp's token (lane < slots).
  bool has_entry = false;
  int g = G, slot = 0;
  if (routes) {
    for (int q = threadIdx.x; q < W; q += blockDim.x) s_mask[q] = 0u;  // ordered before the bits by the barrier below
    if (threadIdx.x == 0) s_dup = 0;
    if (token < num_tokens) {
      int32_t* ids = s_ids + warp * f.r.k;
      uint32_t* wsm = reinterpret_cast<uint32_t*>(smem_raw) + static_cast<int64_t>(warp) * (f.r.num_experts + f.r.n_group);
      route_token<T, VEC, NV, M, true>(f.r, token, lane, wsm, router_detail::valid_slots<VEC, NV>(lane, f.r.num_experts),
                                       ids);
    }
    __syncthreads();
    if (token < num_tokens) {
      const int32_t* ids = s_ids + warp * f.r.k;
      const plan_detail::PlanParams& p = f.plan;
      if (lane < p.slots) {
        has_entry = true;
        slot = lane;
        if (lane >= p.top_k) {
          g = p.num_local;  // the shared expert: every token
        } else {
          const int32_t id = ids[lane];
          if (id >= 0 && id < p.num_experts) {
            const int32_t m = p.expert_map != nullptr ? __ldg(p.expert_map + id) : id;
            if (m >= 0 && m < p.num_local) g = m;
          }
        }
        if (g < G) {
          const uint32_t bit = 1u << (16 * (g & 1) + warp);
          if (atomicOr(s_mask + (g >> 1), bit) & bit) s_dup = 1;
        }
      }
    }
  } else if (f.quant_scheme != pq_detail::kNone) {
    // The quantising-only blocks: 16 warps each share x's rows.
    const int qb = static_cast<int>(blockIdx.x) - f.route_blocks;
    quantize_part(f, num_tokens, qb * (kMaxThreads / 32) + warp, f.quant_warps, lane);
    if (qb == 0 && f.q_scales != nullptr) {
      if (f.quant_scheme == pq_detail::kStatic) {
        if (threadIdx.x == 0) f.q_scales[0] = __ldg(f.static_scale);
      } else {
        // Zero the scale slots of rows [bound, rows_pad4) (the TMA padding), as the quantiser.
        const int pad = static_cast<int>(f.rows_pad4 - f.r.num_tokens);
        const int kb = f.quant_scheme == pq_detail::kGroup ? (f.hidden + 127) / 128 : 1;
        for (int i = threadIdx.x; i < kb * pad; i += blockDim.x)
          f.q_scales[static_cast<int64_t>(i / pad) * f.rows_pad4 + f.r.num_tokens + i % pad] = 0.f;
      }
    }
  }

  const int w = warp;
  const int64_t entry = token * f.plan.slots + slot;
  // Block 0's last warp also writes counts and offsets (the warp least likely to own a token).
  const bool writer = blockIdx.x == 0 && warp == kRouteWarps - 1;
  const bool ranks = routes && token < num_tokens;  // warp-uniform
  bool dup;
  if (f.route_blocks == 1) {
    // One routing block: no grid barrier (blocks after it only quantise, and are done).
    if (!routes) return;
    __syncthreads();
    trace_stamp(f.trace, 1);
    trace_stamp(f.trace, 2);
    dup = s_dup != 0;
    trace_stamp(f.trace, 3);
    if (!dup) {
      const OneBlockCounts c{s_mask};
      if (ranks) warp_plan_rows(f.plan, c, s_mask, has_entry, g, w, static_cast<int32_t>(entry), static_cast<int32_t>(token), slot);
      if (writer) warp_plan_offsets(f.plan, c);
    }
  } else {
    // Every block with tokens exports its masks; the grid barrier (which orders memory: no fence
    // of ours) makes them visible to the plan.
    if (routes) {
      __syncthreads();
      trace_stamp(f.trace, 1);
      if (threadIdx.x <= W)
        f.block_masks[threadIdx.x * kMaxRouteBlocks + blockIdx.x] = threadIdx.x < W ? s_mask[threadIdx.x] : static_cast<uint32_t>(s_dup);
    }
    cooperative_groups::this_grid().sync();
    trace_stamp(f.trace, 2);
    const int nb = static_cast<int>((num_tokens + kRouteWarps - 1) / kRouteWarps);
    if (static_cast<int>(blockIdx.x) >= max(nb, 1)) return;  // no tokens here (block 0 stays: it writes counts)
    dup = gather_block_counts(f.block_masks, G, nb, s_cb, s_ws);
    trace_stamp(f.trace, 3);
    if (!dup) {
      const GridCounts c{s_cb, s_ws};
      if (ranks) warp_plan_rows(f.plan, c, s_mask, has_entry, g, w, static_cast<int32_t>(entry), static_cast<int32_t>(token), slot);
      if (writer) warp_plan_offsets(f.plan, c);
    }
  }
  trace_stamp(f.trace, 4);
  if (blockIdx.x != 0) return;
  // A token reached a group twice (an expert map folding experts): block 0 runs the general plan
  // (the ids are in global memory; every routing warp wrote them before the barrier).
  if (dup) {
    __syncthreads();
    plan_detail::plan_rank_scatter_body<true>(f.plan, 0, 0, static_cast<int32_t>(num_tokens * f.plan.slots),
                                              f.plan_entries_per_warp);
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
