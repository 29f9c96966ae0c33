// sm90_fp8_grouped_gemm.cuh — FP8 e4m3 W8A8 expert GEMMs of a MoE layer on the contiguous layout
// (device kernel + host launch template; included by sm90_fp8_grouped_gemm_launch.cu only).
// STATUS: both families, "row" and block scales, split-K and early weights pass their GPU tests on
// the H200 (session 5) and run in forward().
//
// A clone of the BF16 kernel (sm90_bf16_grouped_gemm.cuh: same warp specialisation,
// mbarrier ring, TMA views, padded-offset expert lookup, grouped raster, gate/up pairing) with the
// changes of docs/fp8_plan.md §2:
//   1. e4m3 operands: K tile 128 (one 128-byte swizzle row of 1-byte elements, so smem per stage is
//      the BF16 kernel's 32 KB), WGMMA m64n128k32 e4m3 x e4m3 -> f32 (K-major both: "TN").
//   2. Promotion every 128 K: each stage's 4 WGMMAs accumulate into a zero-initialised fragment P
//      (scale-d = 0 on the first), waited with wait<0>, then added in fp32 (FADD) to the tile's
//      accumulator. Hopper's FP8 tensor-core accumulation keeps only ~14 bits (DeepSeek-V3 report
//      §3.3.2); 128 K per partial sum is the interval DeepSeek-V3, DeepGEMM and CUTLASS's default
//      FP8 schedule (mma_promotion_interval = 4 k32 atoms) use. The stage is released as soon as P
//      is in registers; the other consumer warpgroup's WGMMAs overlap this one's FADDs.
//   3. Scales ("row" mode): activation scale per tensor or per token row, weight scale per expert
//      or per weight row, applied in fp32 in the epilogue: y = (sa * sw) * acc, then + bias, then
//      the activation (GEMM1), bf16 stores (normal family: the BF16 kernel's epilogue,
//      sm90_grouped::normal_epilogue, direct or staged). Per-tensor vs per-row is a runtime stride (0 or 1) on
//      each scale pointer: no extra instances, and never a branch inside the WGMMA loop.
// Tiles:
//   normal : 128 token rows x 128 weight rows x 128 K, 5 stages (32 KB each), 2 consumer warpgroups
//            (64 token rows each, setmaxnreg 232) + 1 producer warpgroup (one elected thread issues TMA).
//   Swap-AB: C^T = W . X^T, 64 weight rows x T tokens x 128 K (T in {8,16,32}, WGMMA m64nTk32),
//            1 consumer warpgroup + 1 producer warp, stages sized for 2 CTAs per SM (the BF16
//            Swap-AB kernel's bytes per stage); gated weight tiles are 4 x [8 gate rows, 8 up rows]
//            (one 5D TMA box) so that a thread holds gate and up of one output column. Decode.
#pragma once

#include <climits>
#include <cstdint>
#include <initializer_list>
#include <string>

#include <cutlass/float8.h>

// Shared with the BF16 kernels (nothing of theirs is instantiated here): activate_ct() and
// with_activation() (the activation kind resolved once per tile), the L2 cache hints,
// tensor_map_encoder(), aligned16(). Reusing them keeps the two GEMMs' activation math identical.
#include "kernels/gemm/sm90_bf16_grouped_gemm.cuh"
#include "kernels/gemm/sm90_fp8_grouped_gemm.h"
#include "kernels/quant/permute_quant.cuh"  // the quantiser's scale and e4m3 math (H quantised in GEMM1)
#include "kernels/registry.h"

namespace fusedmoe::kernels::sm90_fp8_grouped {

using sm90_grouped::activate_ct;
using sm90_grouped::with_activation;
using sm90_grouped::kHintAct;
using sm90_grouped::kHintW;
using sm90_grouped::kHintWFirst;

template <int N>
struct Fp8MmaAtomFor;
template <> struct Fp8MmaAtomFor<8>   { using type = cute::SM90_64x8x32_F32E4M3E4M3_SS_TN<>; };
template <> struct Fp8MmaAtomFor<16>  { using type = cute::SM90_64x16x32_F32E4M3E4M3_SS_TN<>; };
template <> struct Fp8MmaAtomFor<32>  { using type = cute::SM90_64x32x32_F32E4M3E4M3_SS_TN<>; };
template <> struct Fp8MmaAtomFor<64>  { using type = cute::SM90_64x64x32_F32E4M3E4M3_SS_TN<>; };
template <> struct Fp8MmaAtomFor<128> { using type = cute::SM90_64x128x32_F32E4M3E4M3_SS_TN<>; };

// kBlocks_: CTAs per SM the instance is built for (__launch_bounds__ and the stage count's shared
// memory): 1 normal, 2 Swap-AB; the Swap-AB "dense" instances (sm90_fp8_grouped_gemm_swapab_dense.cu)
// take 3-4 with fewer stages each, so that more consumer warpgroups share an SM.
// kWTiles_ (Swap-AB, 2-CTA; session 34, FUSEDMOE_FP8_PAIR): 64-row weight tiles per ring stage. With 2,
// a stage holds two consecutive weight tiles of the segment (the "pair" instances), the consumer
// warpgroup issues both tiles' WGMMAs in one batch into two accumulators and waits once, so the
// per-stage costs (full/empty barriers, the tensor core's latency, the block-scale loads) are paid
// once per 16 KB of weights instead of per 8 KB; each tile keeps its own epilogue.
// kTailPairs_ (pairs only; session 59): for reductions of 128 < K <= 192 (qwen235-tp8's GEMM2, K = 192),
// the ring alternates a 16 KB head stage (both tiles' K 0-127) with an 8 KB tail stage holding both
// tiles' K 128-191 in one packed image (pack_weights' tail pairs: row r = [tile w's 64 bytes | tile
// w+1's]); at the tail, tile w's sums come from A's K blocks 0-1 and tile w+1's from 2-3, against B's
// K blocks 0-1 (each tile's other two WGMMAs meet B's zero blocks 2-3: see the consumer). Every pair step is exactly two stages, so with an even ring the heads sit at even ring
// indices: weight sub-tile (8 KB) of ring stage s, tile h: 3 (s / 2) + h (head), 3 (s / 2) + 2 (tail).
// Packed weights only (the tail image), row scales only (block scales need K % 128 == 0).
template <bool kSwapAB_, int kTokTile_, int kStages_, int kBlocks_ = (kSwapAB_ ? 2 : 1), int kWTiles_ = 1,
          bool kTailPairs_ = false>
struct Config {
  using Element = cutlass::float_e4m3_t;
  static constexpr bool kSwapAB = kSwapAB_;
  static constexpr int kTokTile = kTokTile_;              // token rows per tile
  static constexpr int kWRows = kSwapAB ? 64 : 128;       // weight rows per tile
  static constexpr int kTileK = 128;                      // reduction per stage = promotion interval
  static constexpr int kStages = kStages_;
  static constexpr int kWTiles = kWTiles_;
  static_assert(kWTiles == 1 || (kWTiles == 2 && kSwapAB_ && kBlocks_ == 2), "weight-tile pairs: 2-CTA Swap-AB only");
  static constexpr bool kTailPairs = kTailPairs_;
  static_assert(!kTailPairs || (kWTiles == 2 && kStages_ % 2 == 0), "tail pairs: pair instances with an even ring");
  // 8 KB weight sub-tiles of the ring, and the sub-tile of ring stage s, tile h of the pair
  static constexpr int kWSubTiles = kTailPairs ? 3 * kStages_ / 2 : kStages_ * kWTiles;
  static constexpr __host__ __device__ int w_sub(int s, int h) {
    return kTailPairs ? 3 * (s >> 1) + ((s & 1) ? 2 : h) : s * kWTiles + h;
  }
  static constexpr int kConsumerWGs = kSwapAB ? 1 : 2;
  static constexpr int kConsumerThreads = 128 * kConsumerWGs;
  static constexpr int kConsumerWarps = kConsumerThreads / 32;
  static constexpr int kProducerThreads = kSwapAB ? 32 : 128;
  static constexpr int kThreads = kConsumerThreads + kProducerThreads;
  static constexpr int kMinBlocks = kBlocks_;
  static constexpr bool kDense = kSwapAB ? kBlocks_ != 2 : kBlocks_ != 1;  // (named with _c<blocks>)
  static constexpr int kMmaM = kSwapAB ? kWRows : kTokTile;
  static constexpr int kMmaN = kSwapAB ? kTokTile : kWRows;
  static constexpr int kMmaK = 32;                        // e4m3 WGMMA K per instruction
  static constexpr int kMmasPerStage = kTileK / kMmaK;    // 4: one promotion per stage

  static_assert(kSwapAB ? (kTokTile == 8 || kTokTile == 16 || kTokTile == 32 || kTokTile == 64) : kTokTile == 128);
  static_assert(kMmaM == 64 * kConsumerWGs, "one 64-row WGMMA per consumer warpgroup");
  static_assert(kStages >= 3, "at least 3 stages to hide TMA latency");
  static_assert(kMmasPerStage == 4, "promotion every 128 K = 4 WGMMAs of k32 (docs/fp8_plan.md §1)");
  static_assert((kTokTile * kTileK) % 1024 == 0 && (kWRows * kTileK) % 1024 == 0,
                "each stage must start on a 128B-swizzle pattern boundary (1024 B)");

  // 8 rows x 128 one-byte elements per swizzle atom
  using SmemLayoutAtom = cute::GMMA::Layout_K_SW128_Atom<Element>;
  using SmemLayoutAct = decltype(cute::tile_to_shape(
      SmemLayoutAtom{}, cute::Shape<cute::Int<kTokTile>, cute::Int<kTileK>, cute::Int<kStages>>{}));
  using SmemLayoutW = decltype(cute::tile_to_shape(
      SmemLayoutAtom{}, cute::Shape<cute::Int<kWRows>, cute::Int<kTileK>, cute::Int<kWSubTiles>>{}));

  using MmaAtom = typename Fp8MmaAtomFor<kMmaN>::type;
  using TiledMma = decltype(cute::make_tiled_mma(
      MmaAtom{}, cute::Layout<cute::Shape<cute::Int<kConsumerWGs>, cute::_1, cute::_1>>{}));

  // The activation TMA box (as the BF16 kernel's Config::kActBoxRows): 16-row boxes in Swap-AB
  // (tile 8: one box of 8), 64-row halves in the normal family, only those holding a row below the
  // expert's count.
  static constexpr int kActBoxRows = kSwapAB ? (kTokTile < 16 ? kTokTile : 16) : 64;
  static constexpr uint32_t kActBoxBytes = uint32_t(kActBoxRows * kTileK);  // 1 byte per element
  static_assert(kTokTile % kActBoxRows == 0 && kActBoxRows % 8 == 0, "boxes start on swizzle-pattern rows");

  static constexpr uint32_t kProducerRegs = 40;
  static constexpr uint32_t kConsumerRegs = 232;

  // Staged epilogue (normal family, Params::staged_epilogue): the BF16 kernel's
  // (sm90_grouped::normal_epilogue), 2 x 64 bf16 rows of 128 + 8.
  static constexpr int kStageRowElems = 128 + 8;
  // Swap-AB: the tile's kTokTile x 64 outputs (sm90_grouped::SwapStage).
  static constexpr int kStageElems = kSwapAB ? kTokTile * (64 + 8) : kConsumerWGs * 64 * kStageRowElems;
};

template <class Cfg>
struct SharedStorage {
  alignas(1024) cute::ArrayEngine<typename Cfg::Element, cute::cosize_v<typename Cfg::SmemLayoutAct>> act;
  alignas(1024) cute::ArrayEngine<typename Cfg::Element, cute::cosize_v<typename Cfg::SmemLayoutW>> w;
  alignas(16) __nv_bfloat16 stage_out[Cfg::kStageElems];  // staged epilogue (normal family; Swap-AB always)
  alignas(8) uint64_t full[Cfg::kStages];
  alignas(8) uint64_t empty[Cfg::kStages];
  grouped_schedule::Segment seg[grouped_schedule::kMaxSegments];  // the CTA's runs (grouped_schedule.cuh)
  int nseg;
  int scan[Cfg::kThreads / 32];  // balanced schedule: per-warp sums of active token tiles
  // token-order block scales: token * a_scale_stride per tile row (-1: padding), per segment (the
  // raster has one; the static balanced schedule up to kMaxSegments). Gathered rows (kGather, which
  // has no token-order scales of permuted rows): the producer's token of each tile row, -1 past the
  // count, in the first kTokTile entries.
  int tok_scale[grouped_schedule::kMaxSegments * Cfg::kTokTile];
  // Swap-AB epilogue "row" values of two weight tiles (w & 1), copied a tile ahead (cp.async):
  // plain [64 scales, 64 biases] by tile column, gated [32 gate scales, 32 up, 32 gate biases, 32 up]
  alignas(16) float tile_rows[2 * Cfg::kWTiles][128];  // (pairs: two tiles per slot pair, by w % 4)
  // dynamic balanced schedule (Params::queue): the producer's segments (a ring) and the table of
  // active token tiles before each expert (grouped_schedule.cuh)
  grouped_schedule::Segment seg_q[grouped_schedule::kDynQueue];
  int first_tile[8 * Cfg::kThreads + 1];
  // H quantised in GEMM1's epilogue (Params::hq_scheme): the reciprocal scale of each tile row and
  // whether this CTA arrived last at its (token tile, group)
  float hq_inv[Cfg::kSwapAB ? Cfg::kTokTile : 1];
  int hq_last;
};

template <class Cfg>
constexpr int smem_bytes() {
  return int(sizeof(SharedStorage<Cfg>)) + 1024;
}
// (kMinBlocks CTAs per SM: 228 KB of shared memory, 1 KB of it reserved per CTA; 227 KB at most per CTA)
template <class Cfg>
constexpr bool smem_fits() {
  return smem_bytes<Cfg>() <= 227 * 1024 && Cfg::kMinBlocks * (smem_bytes<Cfg>() + 1024) <= 228 * 1024;
}

// Kernel arguments besides the two tensor maps (the BF16 kernel's, plus the scales).
struct Params {
  const int32_t* counts;
  const int32_t* offsets;
  const int32_t* padded_offsets;
  const float* bias;
  const float* a_scale;
  const float* w_scale;
  __nv_bfloat16* out;
  int num_groups;
  int m_tiles;        // token tiles in the grid (upper bound from max_rows)
  int w_tiles;        // weight tiles per expert
  int w_chunks;       // ceil(w_tiles / tiles_per_cta)
  int tiles_per_cta;
  int k_tiles;        // ceil(reduction / 128)
  // weight TMA: n_sub boxes per K step (sub s: h = s & 1), each sub_rows smem rows;
  // coordinate d (1..3) = w * mw[d-1] + h * mh[d-1]; dim 0 = K, dim 4 = expert.
  int n_sub, sub_rows;
  uint32_t sub_bytes;
  int mw[3], mh[3];
  int out_cols;       // columns of out: N (GEMM1) or K (GEMM2)
  int bias_stride;    // bias elements per expert
  int bias_row_mul;   // gated: gate weight row of column n = n * mul, up = n * mul + up_off
  int bias_up_off;
  int a_scale_row_mul;  // sa(r) = a_scale[r * mul]: 0 per-tensor, 1 per-token
  int w_scale_e_stride; // sw(e, j) = w_scale[e * stride + j * mul]: per-tensor (1, 0),
  int w_scale_row_mul;  //   per-channel (rows per expert, 1)
  int act_kind;       // ActivationKind, or -1: identity (GEMM2)
  float alpha, limit;
  int out_unpadded;   // 1: out row = offsets[e] + i (GEMM2); 0: padded_offsets[e] + i (GEMM1)
  // Block scales (DeepSeek: 128x128 weight blocks, 1x128 activation groups; reduction and weight
  // rows multiples of 128): the scales are applied per K block at the promotion,
  //   acc += P * sa(r, kb) * sw(e, row block, kb),   sa(r, kb) = a_scale[kb * a_scale_stride + r],
  //   sw(e, rb, kb) = w_scale[(e * w_row_blocks + rb) * k_tiles + kb]  (f32, or UE8M0 bytes),
  // and the epilogue applies none (the "row" scale fields above are unused).
  int block_scales;
  int64_t a_scale_stride;
  const int32_t* a_scale_row_token;  // token-order activation block scales (Fp8GroupedGemmArgs)
  int w_row_blocks;
  int w_scale_ue8m0;
  // Split-K over a cluster and early weights under PDL: as the BF16 kernel's Params
  // (sm90_bf16_grouped_gemm.cuh; Swap-AB only for split-K).
  int k_splits;
  int k_tiles_per_split;
  int early_weights;
  // With early_weights: the weight stages issued before the wait (1..kStages; then dependents
  // launch at once). 0: only the plan lookup runs ahead of the wait and the dependents launch after
  // it, so that nothing streams while the predecessor (a short latency-bound permute or quantise)
  // runs: a ring of weight loads per CTA issued then delayed the permute of 1 token from ~2 to ~11
  // us (H200 timeline, session 12).
  int early_stages;
  uint64_t w_hint;      // the weight TMA's L2 hint (GroupedGemmArgs::weights_evict_first)
  int early_span;       // GroupedGemmArgs::early_weights_span
  int out_keep_l2;      // the BF16 kernel's Params::out_keep_l2
  int staged_epilogue;  // normal family: outputs through shared memory (sm90_grouped::normal_epilogue)
  int flat;             // the balanced schedule (BF16 kernel's Params::flat; with token-order scales: static only)
  int* queue;           // with flat: the dynamic form's work counter (BF16 kernel's Params::queue), or null
  int* zero_queue;      // zeroed by thread 0 of CTA 0 after griddepcontrol.wait, or null
  // Swap-AB: the weights packed into the stage images of the boxes above (the BF16 kernel's
  // Params::w_packed; pack_fp8_grouped_gemm_weights): tile (e, w), K step kt is the 8 KB at
  // ((e * w_tiles + w) * k_tiles + kt) * 8192, one bulk copy. Null: the boxes of tm_w.
  const uint8_t* w_packed;
  // Diagnostic timeline (set_grouped_gemm_trace; nullptr in production): the BF16 kernel's slots
  // (sm90_grouped::kTraceSlots, gemm_stamp).
  unsigned long long* trace;
  // H quantised in GEMM1's epilogue (Swap-AB GEMM1; Fp8GroupedGemmArgs::hq_*): 0 off, else
  // kHqStatic / kHqToken / kHqGroup. Each weight tile's bf16 outputs (as stored to `out`) give
  // their rows' partial absmax (hq_partials[row * w_tiles + w]); the CTA that arrives last at a
  // (token tile, group) counter quantises the group's rows of `out` into hq_out with the
  // quantiser's math (permute_quant.cuh) and writes their scales. Static: each tile quantises its
  // own outputs with *hq_static.
  int hq_scheme;
  int hq_ue8m0;
  int hq_groups;           // groups per row: per token 1, 1x128 ceil(out_cols / 128)
  int hq_tiles_per_group;  // weight tiles per group (the last may have fewer)
  uint8_t* hq_out;         // e4m3 [rows, out_cols]
  float* hq_scales;        // per token [row]; 1x128 [g * hq_scale_stride + row]
  int64_t hq_scale_stride;
  const float* hq_static;
  float* hq_partials;      // [rows, w_tiles]
  int* hq_counters;        // [(row0 / kTokTile) * hq_groups + g]: zero before the kernel, left zero
  // GEMM2 (Swap-AB) quantising H itself (the kernel's kHs instances, Fp8GroupedGemmArgs::hs_src; no
  // separate pass between the GEMMs) reuses the fields above, which only GEMM1 has otherwise (so
  // that the struct, and every other kernel's code, stays as it was): hq_out = GEMM1's bf16 H
  // [padded rows, N], hq_scale_stride = N, hq_scheme = kHqToken / kHqGroup, hq_ue8m0. At each segment the consumer
  // warpgroup reads its token tile's rows of H, takes the per-token or 1x128 absmax and scales with
  // the quantiser's math (permute_quant.cuh), and writes the e4m3 rows into the activation slots
  // 0 .. k_tiles - 1 as the TMA's 128-byte swizzle would (zeros past the valid rows and past N);
  // the main loop reads K block kt from slot kt (k_tiles <= kStages, checked on the host), the ring
  // carries weights only, and the scales come from shared memory (SharedStorage::first_tile, unused
  // without the dynamic schedule, which these instances never run).
  // Gathered A rows (Swap-AB GEMM1; Fp8GroupedGemmArgs' gather_x, as the BF16 kernel's Params): row i
  // of expert e's group is x[row_token[offsets[e] + i]] of the token-order e4m3 x, copied by the
  // producer warp with cp.async (null: TMA of the permuted rows); the activation scales are then in
  // token order too: per token / per tensor at a_scale[token * a_scale_row_mul], 1x128 groups at
  // a_scale[kb * a_scale_stride + token].
  const uint8_t* gather_x;
  int64_t gather_stride;  // bytes (= elements) between rows of x
  const int32_t* row_token;
  int red;                // the reduction length (K of GEMM1): K past it is zero-filled
  // pack_weights only: the reduction's last K step holds at most 64 (1 <= red % 128 <= 64), and
  // each even tile's image of that step holds the tails of tiles w and w+1 (Config::kTailPairs):
  // row r = [tile w's K 128 (k_tiles - 1) + 0..63 | tile w+1's], zeros for a missing tile w+1, in
  // the 128-byte swizzle; odd tiles keep their own image (read by no kernel)
  int tail_pairs;
};

constexpr int kHqStatic = 1, kHqToken = 2, kHqGroup = 3;

// H quantised in GEMM1's epilogue, after weight tile wt's outputs went to `out` through the
// SwapStage buffer `buf` (rows t < rows_valid, kCols columns from wt * kCols, row stride kLd; the
// buffer is read-only until the next tile's open()). The 128 consumer threads call it together.
template <int kTokTile, int kCols, int kLd>
__device__ __forceinline__ void quantise_h_tile(const Params& p, const __nv_bfloat16* buf, float* s_inv, int* s_last,
                                                int wt, int row0, int rows_valid, int tid) {
  using pq_detail::fp8_scale_from_amax;
  using pq_detail::quantize_unit;
  using pq_detail::rcp_rn;
  constexpr int kUnits = kCols / 16;  // 16-element units of a tile row (16 e4m3 bytes)
  const int ld = p.out_cols;
  const int col0 = wt * kCols;
  if (p.hq_scheme == kHqStatic) {
    const float inv = rcp_rn(__ldg(p.hq_static));
    for (int u = tid; u < rows_valid * kUnits; u += 128) {
      const int t = u / kUnits, c = col0 + (u % kUnits) * 16;
      if (c >= ld) continue;  // (N % 16 == 0: a unit is whole or absent)
      const __nv_bfloat16* src = buf + t * kLd + (u % kUnits) * 16;
      const uint4 raw[2] = {*reinterpret_cast<const uint4*>(src), *reinterpret_cast<const uint4*>(src + 8)};
      *reinterpret_cast<uint4*>(p.hq_out + int64_t(row0 + t) * ld + c) = quantize_unit<__nv_bfloat16>(raw, inv);
    }
    return;
  }
  // this tile's absmax of each row (the columns below out_cols)
  if (tid < rows_valid) {
    float m = 0.f;
    CUTE_UNROLL
    for (int u = 0; u < kUnits; ++u) {
      if (col0 + u * 16 >= ld) break;
      const __nv_bfloat16* src = buf + tid * kLd + u * 16;
      const uint4 raw[2] = {*reinterpret_cast<const uint4*>(src), *reinterpret_cast<const uint4*>(src + 8)};
      m = fmaxf(m, pq_detail::unit_amax<__nv_bfloat16>(raw));
    }
    p.hq_partials[int64_t(row0 + tid) * p.w_tiles + wt] = m;
  }
  const bool token = p.hq_scheme == kHqToken;
  const int g = token ? 0 : wt / p.hq_tiles_per_group;
  const int wt0 = token ? 0 : g * p.hq_tiles_per_group;
  const int wt1 = token ? p.w_tiles : min(p.w_tiles, wt0 + p.hq_tiles_per_group);
  // arrive: the tile's outputs and partials are out (bar.sync, then a release fence by the arriving
  // thread: cutlass::GenericBarrier's pattern); the last of the group's wt1 - wt0 tiles goes on
  cutlass::arch::NamedBarrier::sync(128, sm90_grouped::SwapStage<kTokTile, kCols>::kBarrier);
  if (tid == 0) {
    int* ctr = p.hq_counters + int64_t(row0 / kTokTile) * p.hq_groups + g;
    int old;
    asm volatile("fence.acq_rel.gpu;\n\tatom.relaxed.gpu.global.add.s32 %0, [%1], 1;" : "=r"(old) : "l"(ctr) : "memory");
    const int last = old == wt1 - wt0 - 1;
    if (last) {
      asm volatile("fence.acq_rel.gpu;" ::: "memory");  // (acquire: the other tiles' outputs)
      *ctr = 0;  // (every tile of this call has arrived: zero for the next call)
    }
    *s_last = last;
  }
  cutlass::arch::NamedBarrier::sync(128, sm90_grouped::SwapStage<kTokTile, kCols>::kBarrier);
  if (!*s_last) return;
  // the group's scale of each row from its tiles' partials, then its columns quantised from `out`
  if (tid < rows_valid) {
    const int64_t r = row0 + tid;
    float m = 0.f;
    for (int w = wt0; w < wt1; ++w) m = fmaxf(m, __ldcg(p.hq_partials + r * p.w_tiles + w));
    const float scale = fp8_scale_from_amax(m, p.hq_ue8m0 != 0);
    s_inv[tid] = rcp_rn(scale);
    p.hq_scales[token ? r : int64_t(g) * p.hq_scale_stride + r] = scale;
  }
  cutlass::arch::NamedBarrier::sync(128, sm90_grouped::SwapStage<kTokTile, kCols>::kBarrier);
  const int c0 = token ? 0 : g * 128;
  const int c1 = token ? ld : min(ld, c0 + 128);
  const int units = (c1 - c0) / 16;
  for (int u = tid; u < rows_valid * units; u += 128) {
    const int t = u / units, c = c0 + (u % units) * 16;
    const __nv_bfloat16* src = p.out + int64_t(row0 + t) * ld + c;
    const uint4 raw[2] = {__ldcg(reinterpret_cast<const uint4*>(src)), __ldcg(reinterpret_cast<const uint4*>(src + 8))};
    *reinterpret_cast<uint4*>(p.hq_out + int64_t(row0 + t) * ld + c) = quantize_unit<__nv_bfloat16>(raw, s_inv[t]);
  }
}

// GEMM2 quantising H itself (the kHs instances; Params' hq fields): the token tile's rows
// [row0, row0 + rows_valid) of bf16 H into the activation slots (K block kt in slot kt, kTokTile x
// 128 e4m3 each, 128-byte
// swizzle: 16-byte chunk c of row r at r * 128 + ((c ^ (r & 7)) << 4) from the slot's 1024-aligned
// base) and their scales into hs_s (scale of row r, group g at g * kTokTile + r; per token: g = 0),
// hs_inv the reciprocals. The 128 consumer threads call it together, after the PDL wait.
template <int kTokTile>
__device__ __forceinline__ void hs_fill(const Params& p, uint8_t* act, float* hs_s, float* hs_inv, int row0,
                                        int rows_valid, int tid) {
  using pq_detail::fp8_scale_from_amax;
  using pq_detail::quantize_unit;
  using pq_detail::rcp_rn;
  using pq_detail::unit_amax;
  const __nv_bfloat16* h = reinterpret_cast<const __nv_bfloat16*>(p.hq_out);  // [padded rows, N]
  const int ld = int(p.hq_scale_stride);  // N
  const int n_units = ld / 16;  // 16-element units of a row of H
  const bool group = p.hq_scheme == kHqGroup;
  const int groups = group ? p.k_tiles : 1;
  uint32_t* amax = reinterpret_cast<uint32_t*>(hs_s);
  constexpr int kBar = sm90_grouped::SwapStage<kTokTile, 64>::kBarrier;  // the consumer warpgroup's
  cutlass::arch::NamedBarrier::sync(128, kBar);  // the previous segment's reads of the slots are done
  for (int i = tid; i < kTokTile * groups; i += 128) amax[i] = 0u;
  cutlass::arch::NamedBarrier::sync(128, kBar);
  auto load_unit = [&](int r, int u, uint4 (&raw)[2]) {
    const uint4* src = reinterpret_cast<const uint4*>(h + int64_t(row0 + r) * ld + u * 16);
    raw[0] = src[0];  // (plain loads: the second pass below hits L1)
    raw[1] = src[1];
  };
  // absmax of each (row, group): non-negative, never NaN (unit_amax's fmaxf drops NaN), so the
  // order-free integer max of the bits is the quantiser's max
  const int total = rows_valid * n_units;
#pragma unroll 4
  for (int i = tid; i < total; i += 128) {
    const int r = i / n_units, u = i - r * n_units;
    uint4 raw[2];
    load_unit(r, u, raw);
    atomicMax(&amax[(group ? u >> 3 : 0) * kTokTile + r], __float_as_uint(unit_amax<__nv_bfloat16>(raw)));
  }
  cutlass::arch::NamedBarrier::sync(128, kBar);
  for (int i = tid; i < kTokTile * groups; i += 128) {
    const float s = fp8_scale_from_amax(__uint_as_float(amax[i]), p.hq_ue8m0 != 0);
    hs_s[i] = s;
    hs_inv[i] = rcp_rn(s);
  }
  cutlass::arch::NamedBarrier::sync(128, kBar);
  const int units_row = p.k_tiles * 8;  // 8 units per K block of 128
#pragma unroll 4
  for (int i = tid; i < kTokTile * units_row; i += 128) {
    const int r = i / units_row, u = i - r * units_row;
    uint4 q = make_uint4(0, 0, 0, 0);
    if (r < rows_valid && u < n_units) {
      uint4 raw[2];
      load_unit(r, u, raw);
      q = quantize_unit<__nv_bfloat16>(raw, hs_inv[(group ? u >> 3 : 0) * kTokTile + r]);
    }
    const int kt = u >> 3, c = u & 7;
    *reinterpret_cast<uint4*>(act + kt * (kTokTile * 128) + r * 128 + ((c ^ (r & 7)) << 4)) = q;
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // (read by the tensor core)
  cutlass::arch::NamedBarrier::sync(128, kBar);
}

// A UE8M0 scale byte as a float: 2^(b - 127) (b = 0: 2^-127, a float denormal).
__device__ __forceinline__ float ue8m0_to_float(uint32_t b) {
  return __uint_as_float(b == 0 ? 0x00400000u : b == 255 ? 0x7fffffffu : (b << 23));  // 0xFF: NaN
}

// kBalanced: the balanced / dynamic schedules compiled in (the BF16 kernel's switch: without it,
// the raster only, half the code, for the launches that run the raster).
// kDefer: the deferred promotion of the K loop (below). Off by default (session 32: 1-2 % faster
// layers at 16-64 tokens, up to 14 % slower at 256 where rings are short, see docs/design.md); the
// 2-CTA Swap-AB instances are also compiled with it (registered as "..._defer"), launched with
// FUSEDMOE_FP8_DEFER=1.
// kHs: GEMM2 quantising H itself (Params' hq fields; Swap-AB, plain, not deferred): its own
// instances, so that the others' code is what it was without it.
template <class Cfg, bool kGated, bool kBalanced, bool kDefer = false, bool kHs = false, bool kGather = false>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    sm90_fp8_grouped_gemm_kernel(const __grid_constant__ CUtensorMap tm_act,
                                 const __grid_constant__ CUtensorMap tm_w, const Params p) {
#if defined(CUTLASS_ARCH_MMA_SM90A_ENABLED)
  using namespace cute;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  constexpr int kStages = Cfg::kStages;
  static_assert(!kDefer || Cfg::kWTiles == 1, "the deferred promotion has no weight-tile pairs");
  static_assert(!kHs || (Cfg::kSwapAB && !kGated && !kDefer), "H quantised by the plain Swap-AB GEMM2 only");
  static_assert(!kGather || (Cfg::kSwapAB && !kHs && !kDefer && Cfg::kWTiles == 1), "gathered rows: 2-CTA Swap-AB GEMM1 only");
  static_assert(!kHs || (Cfg::kStages >= grouped_schedule::kFp8HsMaxKTiles &&
                         2 * Cfg::kStages * Cfg::kTokTile <= 8 * Cfg::kThreads + 1),
                "kHs: an activation slot per K block of H, and its scales in first_tile");

  extern __shared__ uint8_t smem_raw[];
  const uint32_t smem_base = cute::cast_smem_ptr_to_uint(smem_raw);
  auto& ss = *reinterpret_cast<SharedStorage<Cfg>*>(smem_raw + ((1024u - (smem_base & 1023u)) & 1023u));

  const int tid = int(threadIdx.x);
  const int warp = __shfl_sync(0xffffffff, tid / 32, 0);
  const int lane = tid % 32;

  if (tid == 0) {
    sm90_grouped::gemm_stamp(p.trace, 0);
    CUTE_UNROLL
    for (int s = 0; s < kStages; ++s) {
      // gathered A: the weight TMA's arrival + one cp.async arrival per producer thread
      Barrier::init(&ss.full[s], kGather ? 1 + Cfg::kProducerThreads : 1);
      Barrier::init(&ss.empty[s], Cfg::kConsumerWarps);
    }
    ss.nseg = 0;
    cutlass::arch::fence_barrier_init();
  }

  // ---- which (token tile, weight chunk): grouped raster, 8 token tiles x all weight chunks ----
  constexpr int kGroupM = 8;
  const bool splitting = Cfg::kSwapAB && p.k_splits > 1;
  const int split = splitting ? int(blockIdx.x) % p.k_splits : 0;  // == rank in the cluster
  const int pid = splitting ? int(blockIdx.x) / p.k_splits : int(blockIdx.x);
  const int kt_begin = splitting ? split * p.k_tiles_per_split : 0;
  const int kt_end = splitting ? min(p.k_tiles, kt_begin + p.k_tiles_per_split) : p.k_tiles;
  __syncthreads();

  // kernels/common/pdl.cuh: the set-up above touched only shared memory; early_weights: the wait
  // moves into the producer (after the first ring of weight loads) and the consumers
  const bool prefetch = p.early_weights && p.early_stages > 0;
  if (prefetch) pdl_launch_dependents();
  else if (!p.early_weights) pdl_enter();
  // (L2 loads of the plan: may run before the PDL wait, see the BF16 kernel's Params)
  {
    grouped_schedule::Work wk{p.counts, p.offsets, p.padded_offsets, p.num_groups,
                              p.out_unpadded != 0 || p.a_scale_row_token != nullptr || kGather, p.w_tiles, 0, 0, 0};
    const bool raster = !kBalanced || (p.queue == nullptr && !p.flat);
    if (raster) {
      const int per_group = kGroupM * p.w_chunks;
      const int group = pid / per_group;
      const int first_m = group * kGroupM;
      const int gm = min(p.m_tiles - first_m, kGroupM);
      const int in_group = pid - group * per_group;
      const int m_tile = first_m + in_group % gm;
      const int w_chunk = in_group / gm;
      wk.row0 = m_tile * Cfg::kTokTile;  // padded row of the tile's first token row
      wk.wb = w_chunk * p.tiles_per_cta;
      wk.we = min(p.w_tiles, wk.wb + p.tiles_per_cta);
      grouped_schedule::raster_segment<Cfg::kThreads>(wk, ss.seg, &ss.nseg, tid);
    } else if constexpr (kBalanced) {
      if (p.queue != nullptr)
        grouped_schedule::dynamic_table<Cfg::kThreads, Cfg::kTokTile>(wk, ss.first_tile, ss.scan, tid);
      else
        grouped_schedule::balanced_segments<Cfg::kThreads, Cfg::kTokTile>(wk, ss.seg, &ss.nseg, ss.scan, tid);
    }
  }
  __syncthreads();
  if (p.early_weights && !prefetch) pdl_enter();  // the plan was read ahead; the rest waits
  if (p.zero_queue != nullptr && blockIdx.x == 0 && tid == 0) {
    pdl_wait();  // (the previous call's GEMM2 has finished with it)
    *p.zero_queue = 0;
  }
  // dynamic schedule: the chunks of L items (grouped_schedule.cuh); CTA b starts with chunk b
  const bool dyn = kBalanced && p.queue != nullptr;
  const grouped_schedule::DynChunks dc = grouped_schedule::dynamic_chunks(dyn, dyn ? ss.first_tile[p.num_groups] : 0, p.w_tiles);
  // (both branches through the shuffle: a count read from shared memory alone is not warp-uniform
  // to the compiler, and a loop bound it cannot see as uniform moves the consumers' ring state off
  // the uniform datapath, R2UR before every WGMMA: 3-9 us at 1-4 tokens, session 17)
  const int nseg = __shfl_sync(0xffffffff, dyn ? (int64_t(blockIdx.x) < dc.chunks ? 1 : 0) : ss.nseg, 0);
  if (p.trace != nullptr && tid == 0) {
    sm90_grouped::gemm_stamp(p.trace, 1);
    uint32_t smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    sm90_grouped::gemm_trace_value(p.trace, 6, smid);
    sm90_grouped::gemm_trace_value(p.trace, 7, nseg > 0 ? (dyn ? 0 : ss.seg[0].e) : -1);  // (dynamic: not recorded)
  }
  if (nseg == 0) return;  // beyond padded_offsets[G], in an expert's padding, or no items
  // Token-order block scales (a_scale_row_token; the raster's one segment or the static balanced
  // schedule's segments, not the dynamic schedule: the host does not launch it so): where each
  // tile row's scales start, token * a_scale_stride (32-bit: checked on the host; -1 for padding
  // rows), from the grouped row offsets[e] + local0 + i. In shared memory, not registers: the
  // consumers read them once per segment. (row_token is the plan's, complete two launches back:
  // readable before the PDL wait, as padded_offsets above.)
  if (p.block_scales && p.a_scale_row_token != nullptr && !dyn) {  // block-uniform
    const int stride = int(p.a_scale_stride);
    for (int j = tid; j < nseg * Cfg::kTokTile; j += Cfg::kThreads) {
      const int si = j / Cfg::kTokTile, i = j - si * Cfg::kTokTile;
      const grouped_schedule::Segment s = ss.seg[si];
      const int rows_valid = min(Cfg::kTokTile, s.count - s.local0);
      ss.tok_scale[j] = i < rows_valid ? __ldcg(p.a_scale_row_token + int64_t(s.off) + s.local0 + i) * stride : -1;
    }
    __syncthreads();
  }

  using Element = typename Cfg::Element;
  Tensor sAct = make_tensor(make_smem_ptr(ss.act.begin()), typename Cfg::SmemLayoutAct{});  // (T,BK,PIPE)
  Tensor sW = make_tensor(make_smem_ptr(ss.w.begin()), typename Cfg::SmemLayoutW{});        // (W,BK,PIPE)

  if (warp >= Cfg::kConsumerWarps) {
    // ================= producer =================
    if constexpr (Cfg::kProducerThreads == 128) cutlass::arch::warpgroup_reg_dealloc<Cfg::kProducerRegs>();
    const uint32_t w_bytes = uint32_t(p.n_sub) * p.sub_bytes;
    auto load_weights = [&](int st, int e, int w, int k0, int half) {  // half: the tile's place in a pair stage
      Element* w_dst = ss.w.begin() + Cfg::w_sub(st, half) * (Cfg::kWRows * Cfg::kTileK);
      if (p.w_packed != nullptr) {  // (the image's bytes = w_bytes: every sub-box counts its full box)
        constexpr uint32_t kBytes = uint32_t(Cfg::kWRows * Cfg::kTileK);
        const uint8_t* src = p.w_packed + ((int64_t(e) * p.w_tiles + w) * p.k_tiles + k0 / Cfg::kTileK) * kBytes;
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], "
            "%4;" ::"r"(cute::cast_smem_ptr_to_uint(w_dst)),
            "l"(src), "r"(kBytes), "r"(cute::cast_smem_ptr_to_uint(&ss.full[st])), "l"(p.w_hint)
            : "memory");
        return;
      }
      for (int s = 0; s < p.n_sub; ++s) {
        const int h = s & 1;
        SM90_TMA_LOAD_5D::copy(&tm_w, &ss.full[st], p.w_hint, w_dst + s * p.sub_rows * Cfg::kTileK, k0,
                               w * p.mw[0] + h * p.mh[0], w * p.mw[1] + h * p.mh[1], w * p.mw[2] + h * p.mh[2], e);
      }
    };
    // Config::kTailPairs: the weights of pair step w's K step kt (w even: the raster's chunks start
    // on even tiles), their bytes expected on the stage's barrier: the head's tiles (`halves` of
    // them), or the tail stage's one packed image of both tiles' last 64 K (the 8 KB at tile w's
    // last K step, pack_weights' tail pairs), into sub-tile w_sub(st, *)
    constexpr uint32_t kImageBytes = uint32_t(Cfg::kWRows * Cfg::kTileK);
    auto step_weight_bytes = [&](int kt, int halves) {
      return (Cfg::kTailPairs && kt == p.k_tiles - 1) ? kImageBytes : uint32_t(halves) * w_bytes;
    };
    auto load_step_weights = [&](int st, int e, int w, int kt, int halves) {
      if (Cfg::kTailPairs && kt == p.k_tiles - 1) {
        load_weights(st, e, w, kt * Cfg::kTileK, 1);  // (odd st: w_sub(st, 1) is the tail sub-tile)
        return;
      }
      for (int h = 0; h < halves; ++h) load_weights(st, e, w + h, kt * Cfg::kTileK, h);
    };
    if constexpr (kGather) {
      // Gathered A rows (Swap-AB GEMM1; the host sets no early weights, no dynamic schedule): every
      // thread of the producer warp copies 16-byte chunks (16 e4m3) of the tile's rows from the
      // token-order x with cp.async, placed as TMA's 128-byte swizzle would place them (chunk c of
      // row r at r * 128 + ((c ^ (r & 7)) << 4) within the stage: the BF16 kernel's gather, whose
      // rows also have 128 bytes per stage); rows past the count and K past the reduction are
      // zero-filled (e4m3 0x00 = +0). Thread t owns chunk t % 8 of rows t / 8 + 4 m. Thread 0 also
      // issues the stage's weights; the full barrier takes its arrival and one cp.async arrival
      // per thread.
      constexpr int P = Cfg::kProducerThreads;
      constexpr int kRowsPerThread = Cfg::kTokTile * 8 / P;
      static_assert(P == 32 && Cfg::kTokTile * 8 % P == 0 && kRowsPerThread >= 1 && Cfg::kTileK == 128);
      const int ptid = tid - Cfg::kConsumerThreads;
      const int c = ptid & 7, r_first = ptid >> 3;
      if (ptid == 0) cute::prefetch_tma_descriptor(reinterpret_cast<const cute::TmaDescriptor*>(&tm_w));
      int stage = 0;
      uint32_t phase = 0;
      for (int si = 0; si < nseg; ++si) {
        const grouped_schedule::Segment sg = ss.seg[si];
        const int rows_valid = min(Cfg::kTokTile, sg.count - sg.local0);
        const int64_t urow0 = int64_t(sg.off) + sg.local0;  // first unpadded row
        __syncwarp();  // every lane has issued from the previous segment's rows
        for (int i = ptid; i < Cfg::kTokTile; i += P)
          ss.tok_scale[i] = i < rows_valid ? __ldcg(p.row_token + urow0 + i) : -1;
        __syncwarp();
        for (int w = sg.wb; w < sg.we; ++w) {  // (kWTiles == 1: one weight tile per stage)
          for (int kt = kt_begin; kt < kt_end; ++kt) {
            const int k0 = kt * Cfg::kTileK;
            Barrier::wait(&ss.empty[stage], phase ^ 1u);
            if (ptid == 0) {
              Barrier::arrive_and_expect_tx(&ss.full[stage], w_bytes);
              load_weights(stage, sg.e, w, k0, 0);
            }
            const uint32_t act_base =
                cute::cast_smem_ptr_to_uint(ss.act.begin() + stage * (Cfg::kTokTile * Cfg::kTileK));
            sm90_grouped::gather_stage_rows<kRowsPerThread, P>(act_base, ss.tok_scale, p.gather_x, p.gather_stride,
                                                               k0 + c * 16, p.red, r_first, c);
            sm90_grouped::cp_async_arrive_noinc(&ss.full[stage]);
            if (++stage == kStages) { stage = 0; phase ^= 1u; }
          }
        }
      }
      asm volatile("cp.async.wait_all;" ::: "memory");  // nothing in flight when this thread retires
    }
    if (!kGather && warp == Cfg::kConsumerWarps && cute::elect_one_sync()) {
      cute::prefetch_tma_descriptor(reinterpret_cast<const cute::TmaDescriptor*>(&tm_act));
      cute::prefetch_tma_descriptor(reinterpret_cast<const cute::TmaDescriptor*>(&tm_w));
      int stage = 0;
      uint32_t phase = 0;
      auto act_boxes = [](const grouped_schedule::Segment& sg) {
        if constexpr (Cfg::kTokTile == Cfg::kActBoxRows) return 1;  // (token tiles 8, 16: one box)
        else return (min(Cfg::kTokTile, sg.count - sg.local0) + Cfg::kActBoxRows - 1) / Cfg::kActBoxRows;
      };
      // stage bases by plain arithmetic: every stage starts on a 1024-byte swizzle boundary
      auto load_act = [&](int st, int k0, int row0, int boxes) {
        Element* dst = ss.act.begin() + st * (Cfg::kTokTile * Cfg::kTileK);
        for (int b = 0; b < boxes; ++b)
          SM90_TMA_LOAD_2D::copy(&tm_act, &ss.full[st], kHintAct, dst + b * (Cfg::kActBoxRows * Cfg::kTileK), k0,
                                 row0 + b * Cfg::kActBoxRows);
      };
      int skip = 0;  // leading (tile, K step) iterations issued before the PDL wait
      // dynamic schedule: the walk over this CTA's chunks (first: chunk blockIdx.x) and the queue
      grouped_schedule::Work wk{p.counts, p.offsets, p.padded_offsets, p.num_groups, p.out_unpadded != 0, p.w_tiles,
                                0, 0, 0};
      grouped_schedule::DynProducer dp{grouped_schedule::DynWalk{ss.first_tile, &wk}, dc};
      int qn = 0;  // segments handed to the consumers
      if (dyn) dp.begin<Cfg::kTokTile>();
      if (prefetch) {
        // the ring starts empty: its first stages take the weights of the first segment's tiles now
        // (a short reduction spans several tiles; the whole stage's bytes expected), their
        // activations once the predecessor is done
        const grouped_schedule::Segment s0 = dyn ? dp.cur : ss.seg[0];
        if (dyn) ss.seg_q[0] = s0;  // (before the first full barrier's arrive)
        const int boxes0 = kHs ? 0 : act_boxes(s0);  // (H quantised here: weights only)
        const int steps = kt_end - kt_begin;
        skip = min(p.early_stages, p.early_span ? steps * ((s0.we - s0.wb + Cfg::kWTiles - 1) / Cfg::kWTiles) : steps);
        for (int i = 0; i < skip; ++i) {
          const int w = s0.wb + (i / steps) * Cfg::kWTiles, k0 = (kt_begin + i % steps) * Cfg::kTileK;
          const int halves = min(Cfg::kWTiles, s0.we - w);
          const int kt = k0 / Cfg::kTileK;
          Barrier::arrive_and_expect_tx(&ss.full[i], uint32_t(boxes0) * Cfg::kActBoxBytes + step_weight_bytes(kt, halves));
          load_step_weights(i, s0.e, w, kt, halves);
        }
        pdl_wait();
        sm90_grouped::gemm_stamp(p.trace, 2);
        for (int i = 0; i < skip; ++i)  // (kHs: no boxes)
          load_act(i, (kt_begin + i % steps) * Cfg::kTileK, s0.poff + s0.local0, boxes0);
      } else {
        sm90_grouped::gemm_stamp(p.trace, 2);
      }
      // Every stage of segment sg; with `queued`, its queue entry goes out with its first stage.
      auto issue = [&](const grouped_schedule::Segment& sg, bool queued) {
       const int row0 = sg.poff + sg.local0;  // padded row of the token tile
       const int boxes = kHs ? 0 : act_boxes(sg);  // (H quantised here: weights only)
       bool first = true;
       for (int w = sg.wb; w < sg.we; w += Cfg::kWTiles) {
        const int halves = min(Cfg::kWTiles, sg.we - w);  // (a pair's second tile may be past the segment)
        for (int kt = kt_begin; kt < kt_end; ++kt) {
          const uint32_t stage_bytes = uint32_t(boxes) * Cfg::kActBoxBytes + step_weight_bytes(kt, halves);
          if (skip > 0) {
            --skip;
            first = false;
            if (++stage == kStages) { stage = 0; phase ^= 1u; }
            continue;
          }
          // K beyond the reduction length (ragged last step) is zero-filled by TMA in both
          // operands (e4m3 0x00 = +0), so it adds nothing to P.
          const int k0 = kt * Cfg::kTileK;
          Barrier::wait(&ss.empty[stage], phase ^ 1u);
          if (queued && first) ss.seg_q[qn % grouped_schedule::kDynQueue] = sg;
          first = false;
          Barrier::arrive_and_expect_tx(&ss.full[stage], stage_bytes);
          load_act(stage, k0, row0, boxes);  // (kHs: no boxes)
          load_step_weights(stage, sg.e, w, kt, halves);
          if (++stage == kStages) { stage = 0; phase ^= 1u; }
        }
       }
       if (queued) ++qn;
      };
      if (!dyn) {
        for (int si = 0; si < nseg; ++si) issue(ss.seg[si], false);  // (one thread)
      } else {
        dp.run<Cfg::kTokTile>(p.queue, [&](const grouped_schedule::Segment& sg) { issue(sg, true); });
        // the end: an entry with e = -1 behind a plain arrival on the next stage
        Barrier::wait(&ss.empty[stage], phase ^ 1u);
        ss.seg_q[qn % grouped_schedule::kDynQueue] = grouped_schedule::Segment{-1, 0, 0, 0, 0, 0, 0, 0};
        Barrier::arrive(&ss.full[stage]);
      }
    }
    if constexpr (Cfg::kSwapAB) {
      if (p.k_splits > 1) sm90_grouped::splitk_producer_barriers();  // the consumers' split-K reduction
    }
  } else {
    // ================= consumers =================
    // (the normal family: its 128-thread producer warpgroup gives registers back. A CTA with a
    // 32-thread producer and two of them per SM cannot grant 232 per consumer thread, and
    // setmaxnreg.inc then waits forever: session 33's ping-pong Swap-AB experiment hung so.)
    if constexpr (Cfg::kConsumerWGs == 2) cutlass::arch::warpgroup_reg_alloc<Cfg::kConsumerRegs>();
    if (prefetch) pdl_wait();  // (their outputs are written after the predecessor is done)
    typename Cfg::TiledMma tiled_mma;
    auto thr_mma = tiled_mma.get_thread_slice(tid);
    auto operands = [&]() {
      if constexpr (Cfg::kSwapAB) return cute::make_tuple(sW, sAct);
      else return cute::make_tuple(sAct, sW);
    }();
    Tensor tCsA = thr_mma.partition_A(get<0>(operands));  // (MMA,MMA_M,MMA_K,PIPE)
    Tensor tCsB = thr_mma.partition_B(get<1>(operands));
    Tensor tCrA = thr_mma.make_fragment_A(tCsA);
    Tensor tCrB = thr_mma.make_fragment_B(tCsB);
    using TileMN = Shape<Int<Cfg::kMmaM>, Int<Cfg::kMmaN>>;
    Tensor accum = partition_fragment_C(tiled_mma, TileMN{});  // promoted fp32 sum of the weight tile
    Tensor part = partition_fragment_C(tiled_mma, TileMN{});   // P: one stage (128 K) from the tensor core
    // the second P of the deferred promotion (Swap-AB; unused by the normal family)
    Tensor part2 = partition_fragment_C(tiled_mma, TileMN{});
    // weight-tile pairs (Config::kWTiles == 2): the second tile's sum and P
    Tensor accum_b = partition_fragment_C(tiled_mma, TileMN{});
    Tensor part_b = partition_fragment_C(tiled_mma, TileMN{});
    using Frag = decltype(part);
    Tensor tCcC = thr_mma.partition_C(make_identity_tensor(TileMN{}));  // (m, n) of each value
    constexpr int kKBlocks = decltype(size<2>(tCrA))::value;             // k32 WGMMAs per stage
    static_assert(kKBlocks == Cfg::kMmasPerStage);
    static_assert(decltype(size(accum))::value == Cfg::kMmaM * Cfg::kMmaN / Cfg::kConsumerThreads);

    __nv_bfloat16* out = p.out;
    const int64_t ld = p.out_cols;
    // Block scales: the token rows (normal) / token columns (Swap-AB) this thread's values belong
    // to, and the weight row blocks of its gate / up values (one each: N % 128 == 0, and a tile's
    // gate or up rows never straddle a 128-row block), see Params.
    constexpr int kTokVals = Cfg::kSwapAB ? Cfg::kTokTile / 4 : 2;  // distinct tokens per thread
    // token q of this thread: Swap-AB column 2*(lane%4) + (q&1) + 8*(q>>1) (computed, not held in
    // registers); normal: its two rows
    const int row_a = get<0>(tCcC(0)), row_b = get<0>(tCcC(2));
    auto tok_of = [&](int q) {
      if constexpr (Cfg::kSwapAB) return 2 * (lane & 3) + (q & 1) + 8 * (q >> 1);
      else return q == 0 ? row_a : row_b;
    };
    // the thread's token slot of value i, and whether value i is an up row (gated)
    auto tok_slot = [&](int i) { return Cfg::kSwapAB ? 2 * (i >> 2) + (i & 1) : (i >> 1) & 1; };
    auto is_up = [&](int i) {
      if constexpr (!kGated) return false;
      else if constexpr (Cfg::kSwapAB) return ((i >> 1) & 1) != 0;
      else return get<1>(tCcC(i)) >= 64;
    };
    int stage = 0;
    uint32_t phase = 0;
    for (int si = 0;; ++si) {
     grouped_schedule::Segment sg;
     if (dyn) {
       // the producer's next segment, written before its first stage's full barrier completed
       Barrier::wait(&ss.full[stage], phase);
       sg = grouped_schedule::uniform_segment(ss.seg_q[si % grouped_schedule::kDynQueue]);
       if (sg.e < 0) {
         if (tid == 0) sm90_grouped::gemm_stamp(p.trace, 4);
         break;
       }
     } else {
       if (si >= nseg) break;
       sg = grouped_schedule::uniform_segment(ss.seg[si]);
     }
     const int e = sg.e;
     const int row0 = sg.poff + sg.local0;  // padded row of the token tile
     const int rows_valid = min(Cfg::kTokTile, sg.count - sg.local0);
     const int64_t out_row0 = int64_t(p.out_unpadded ? sg.off : sg.poff) + sg.local0;
     const int w_begin = sg.wb, w_end = sg.we;
     const float* bias_e = p.bias ? p.bias + int64_t(e) * p.bias_stride : nullptr;
     const float* sw_e = p.w_scale + int64_t(e) * p.w_scale_e_stride;
     // the epilogue's "row" scales (block scales were applied in the main loop: 1)
     auto sw_at = [&](int j) { return p.block_scales ? 1.f : __ldg(sw_e + j * p.w_scale_row_mul); };
     // H quantised here (kHs; Params' hq fields): the token tile's e4m3 rows into the activation slots and
     // their scales into shared memory (SharedStorage::first_tile: no dynamic schedule then)
     constexpr bool hs = kHs;
     float* hs_s = reinterpret_cast<float*>(ss.first_tile);
     if constexpr (hs) {
       hs_fill<Cfg::kTokTile>(p, reinterpret_cast<uint8_t*>(ss.act.begin()), hs_s, hs_s + Cfg::kStages * Cfg::kTokTile,
                                row0, rows_valid, tid);
     }
     // (if constexpr: without kHs, hs_s is not odr-used and these lambdas are what they were)
     auto sa_at = [&](int r) {
       if constexpr (hs) return p.block_scales ? 1.f : hs_s[r];
       else return p.block_scales ? 1.f : __ldcg(p.a_scale + int64_t(row0 + r) * p.a_scale_row_mul);
     };
     // Normal: accum values (v0, v1, j) at index v0 + 2*v1 + 4*j: token row +8*v1, column
     // 2*(lane%4)+v0+8*j. A thread's two token rows are the same in every weight tile of the token
     // tile: their activation scales once per segment. (Swap-AB reads its tokens' scales below.)
     float sa_row[2] = {0.f, 0.f};
     if constexpr (!Cfg::kSwapAB) {
       CUTE_UNROLL
       for (int v1 = 0; v1 < 2; ++v1) {
         const int r = get<0>(tCcC(2 * v1));
         sa_row[v1] = r < rows_valid ? sa_at(r) : 0.f;
       }
     }
     // Swap-AB "row" scales of this thread's token columns, once per segment (the tokens are the
     // same in every weight tile; L2 loads, see kernels/common/pdl.cuh): value i's token is slot
     // tok_slot(i).
     // Per token column q: block scales in token order (a_scale_row_token) where its scales start,
     // token * a_scale_stride (-1: padding); with gathered rows (kGather) its token, whose scales the
     // token-order layout holds (past the count: a valid index, the value unused). Once per segment
     // (not a shared-memory read and a branch per K block).
     // (filled here with gathered rows, whose row scales below read it; else further down, where it
     // always was: computed here, its longer live range made the dense instances spill)
     int tok_off[kTokVals];
     if constexpr (kGather) {
       CUTE_UNROLL
       for (int q = 0; q < kTokVals; ++q)
         tok_off[q] = __ldcg(p.row_token + int64_t(sg.off) + sg.local0 + (tok_of(q) < rows_valid ? tok_of(q) : 0));
     }
     float sa_col[Cfg::kSwapAB ? kTokVals : 1];
     if constexpr (Cfg::kSwapAB) {
       CUTE_UNROLL
       for (int q = 0; q < kTokVals; ++q) {
         if constexpr (kGather)
           sa_col[q] = tok_of(q) < rows_valid ? (p.block_scales ? 1.f : __ldcg(p.a_scale + int64_t(tok_off[q]) * p.a_scale_row_mul)) : 0.f;
         else
           sa_col[q] = tok_of(q) < rows_valid ? sa_at(tok_of(q)) : 0.f;
       }
     }
     // Swap-AB: the epilogue "row" values of weight tile w (per-channel / per-tensor weight scales,
     // biases) go to shared memory a tile ahead by cp.async, one value per consumer thread (see
     // SharedStorage::tile_rows), read after the epilogue's first barrier. Loaded into registers a
     // tile ahead instead (session 18), their scoreboard was waited on at the next tile's first
     // instructions (ncu, qwen235-tp8-fp8c GEMM2 at 256 tokens, session 21: ~20 % of the stall
     // samples on one instruction of the K loop's head).
     auto copy_tile_rows = [&](int w) {
       if constexpr (Cfg::kSwapAB) {
         const int c = tid & 63, part = tid >> 6;  // plain: part 0 scales, 1 biases
         const float* src = nullptr;
         if constexpr (kGated) {
           // tid: [gate s | up s | gate b | up b] x 32 columns
           const int cc = tid & 31, which = tid >> 5;
           const int n = w * 32 + cc;
           if (n < p.out_cols) {
             const int row = n * p.bias_row_mul + ((which & 1) ? p.bias_up_off : 0);
             if (which < 2) src = p.block_scales ? nullptr : sw_e + row * p.w_scale_row_mul;
             else src = bias_e ? bias_e + row : nullptr;
           }
         } else {
           const int n = w * 64 + c;
           if (n < p.out_cols) src = part == 0 ? (p.block_scales ? nullptr : sw_e + n * p.w_scale_row_mul) : (bias_e ? bias_e + n : nullptr);
         }
         float* dst = &ss.tile_rows[w & (2 * Cfg::kWTiles - 1)][tid];
         if (src != nullptr) {
           asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(cute::cast_smem_ptr_to_uint(dst)), "l"(src) : "memory");
         } else {
           // block scales (applied in the main loop) or no bias: 1 for scales, 0 for biases
           const bool is_scale = kGated ? (tid >> 5) < 2 : (tid >> 6) == 0;
           *dst = is_scale ? 1.f : 0.f;
         }
       }
     };
     if constexpr (Cfg::kSwapAB) {
       copy_tile_rows(w_begin);
       if (Cfg::kWTiles == 2 && w_begin + 1 < w_end) copy_tile_rows(w_begin + 1);
       asm volatile("cp.async.commit_group;" ::: "memory");
     }
     if constexpr (!kGather) {
       CUTE_UNROLL
       for (int q = 0; q < kTokVals; ++q)
         tok_off[q] = p.block_scales && p.a_scale_row_token != nullptr ? ss.tok_scale[(dyn ? 0 : si) * Cfg::kTokTile + tok_of(q)] : -1;
     }
     // weight scale blocks of tile w's gate (or only) rows and up rows: their offsets in w_scale
     auto scale_rows = [&](int w, int64_t* g, int64_t* u) {
       int rb_g = 0, rb_u = 0;
       if constexpr (kGated) {
         const int n0 = w * (Cfg::kWRows / 2);  // first output column of the tile
         rb_g = (n0 * p.bias_row_mul) >> 7;
         rb_u = (n0 * p.bias_row_mul + p.bias_up_off) >> 7;
       } else {
         rb_g = rb_u = (w * Cfg::kWRows) >> 7;
       }
       *g = (int64_t(e) * p.w_row_blocks + rb_g) * p.k_tiles;
       *u = (int64_t(e) * p.w_row_blocks + rb_u) * p.k_tiles;
     };
     for (int w = w_begin; w < w_end; w += Cfg::kWTiles) {
      CUTE_UNROLL
      for (int i = 0; i < size(accum); ++i) accum(i) = 0.f;
      if constexpr (Cfg::kWTiles == 2) {
        CUTE_UNROLL
        for (int i = 0; i < size(accum_b); ++i) accum_b(i) = 0.f;
      }
      if constexpr (Cfg::kSwapAB) {
        // the next stage's row values (an empty group on the last stage: one group per stage)
        if (w + Cfg::kWTiles < w_end) copy_tile_rows(w + Cfg::kWTiles);
        if (Cfg::kWTiles == 2 && w + 3 < w_end) copy_tile_rows(w + 3);
        asm volatile("cp.async.commit_group;" ::: "memory");
      }
      int64_t swb_g = 0, swb_u = 0;
      if (p.block_scales) scale_rows(w, &swb_g, &swb_u);
      // pairs: the second tile's weight scale blocks (its own 128-row blocks; a missing second
      // tile reads the first's, its sums are never stored)
      int64_t swb_g2 = swb_g, swb_u2 = swb_u;
      if (Cfg::kWTiles == 2 && p.block_scales && w + 1 < w_end) scale_rows(w + 1, &swb_g2, &swb_u2);
      if constexpr (Cfg::kSwapAB && kDefer) {
        // block scales of K block kt (sa per token column of this thread, sw of the gate / up rows)
        auto load_scales = [&](int kt, float (&sa_k)[kTokVals], float& sw_g, float& sw_u) {
          CUTE_UNROLL
          for (int q = 0; q < kTokVals; ++q) {
            // token order: a token's scales are one 128-B line over ~32 K blocks, and the tile's
            // rows hit many tokens: plain loads (L1-cached; after the PDL wait, see pdl.cuh), not
            // L2-only __ldcg, so the next K blocks hit L1
            // (branch-free: a valid address either way, the value masked; row order: plain loads
            // too, the same values in every weight tile of the segment hit L1)
            if (p.a_scale_row_token != nullptr) {
              const int o = tok_off[q];
              const float v = p.a_scale[(o >= 0 ? o : 0) + kt];
              sa_k[q] = o >= 0 ? v : 0.f;
            } else {
              const int tq = tok_of(q);
              float v;
              if constexpr (hs) v = hs_s[kt * Cfg::kTokTile + tq];
              else v = p.a_scale[int64_t(kt) * p.a_scale_stride + row0 + (tq < rows_valid ? tq : 0)];  // (no kGather here)
              sa_k[q] = tq < rows_valid ? v : 0.f;
            }
          }
          if (p.w_scale_ue8m0) {
            const uint8_t* ws = static_cast<const uint8_t*>(static_cast<const void*>(p.w_scale));
            sw_g = ue8m0_to_float(__ldg(ws + swb_g + kt));
            sw_u = ue8m0_to_float(__ldg(ws + swb_u + kt));
          } else {
            sw_g = __ldg(p.w_scale + swb_g + kt);
            sw_u = __ldg(p.w_scale + swb_u + kt);
          }
        };
        // P (one stage's 4 WGMMAs, from zero) of the current stage, committed as one batch
        auto issue_stage = [&](Frag& P, int bslot) {
          warpgroup_fence_operand(P);
          warpgroup_arrive();
          tiled_mma.accumulate_ = GMMA::ScaleOut::Zero;  // P starts from zero every stage
          CUTE_UNROLL
          for (int kb = 0; kb < kKBlocks; ++kb) {
            cute::gemm(tiled_mma, tCrA(_, _, kb, stage), tCrB(_, _, kb, bslot), P);
            tiled_mma.accumulate_ = GMMA::ScaleOut::One;
          }
          warpgroup_commit_batch();
        };
        auto promote = [&](const Frag& P, const float (&sa_k)[kTokVals], float sw_g, float sw_u) {
          if (p.block_scales) {
            CUTE_UNROLL
            for (int i = 0; i < size(accum); ++i)  // promotion with this K block's scales
              accum(i) = fmaf(P(i), sa_k[tok_slot(i)] * (is_up(i) ? sw_u : sw_g), accum(i));
          } else {
            CUTE_UNROLL
            for (int i = 0; i < size(accum); ++i) accum(i) += P(i);  // promotion (FADD)
          }
        };
        // Deferred promotion (Swap-AB: one consumer warpgroup per CTA, small P): stage kt's
        // WGMMAs are issued into one P while the other P (stage kt-1) is still in the tensor core;
        // then wait<1> (kt-1 done), release its stage and promote it with the scales loaded an
        // iteration earlier. The tensor core's latency and the scale loads' are off the path of
        // each stage, as in the BF16 kernel's wait<1> loop.
        float sa_p[kTokVals], sw_gp = 1.f, sw_up = 1.f;  // the pending stage's scales
        CUTE_UNROLL
        for (int q = 0; q < kTokVals; ++q) sa_p[q] = 0.f;
        int pend = 0;  // the pending stage's ring index
        auto step = [&](Frag& cur, Frag& prev, int kt, bool has_prev) {
          float sa_k[kTokVals], sw_g = 1.f, sw_u = 1.f;
          if (p.block_scales) load_scales(kt, sa_k, sw_g, sw_u);
          Barrier::wait(&ss.full[stage], phase);
          if (si == 0 && w == w_begin && kt == kt_begin && tid == 0) sm90_grouped::gemm_stamp(p.trace, 3);
          issue_stage(cur, hs ? kt : stage);
          if (has_prev) {
            warpgroup_wait<1>();
            warpgroup_fence_operand(prev);
            if (lane == 0) cutlass::arch::ClusterBarrier::arrive(&ss.empty[pend]);
            promote(prev, sa_p, sw_gp, sw_up);
          }
          if (p.block_scales) {
            CUTE_UNROLL
            for (int q = 0; q < kTokVals; ++q) sa_p[q] = sa_k[q];
            sw_gp = sw_g;
            sw_up = sw_u;
          }
          pend = stage;
          if (++stage == kStages) { stage = 0; phase ^= 1u; }
        };
        // (straight-line pairs, so that at the loop's head only `part` is ever in flight: ptxas
        // checks the accumulators path by path and serialises every WGMMA otherwise, C7514)
        step(part, part2, kt_begin, false);
        int kt = kt_begin + 1;
        for (; kt + 1 < kt_end; kt += 2) {
          step(part2, part, kt, true);
          step(part, part2, kt + 1, true);
        }
        if (kt < kt_end) {  // an even number of stages: the last goes to part2
          step(part2, part, kt, true);
          warpgroup_wait<0>();
          warpgroup_fence_operand(part2);
          if (lane == 0) cutlass::arch::ClusterBarrier::arrive(&ss.empty[pend]);
          promote(part2, sa_p, sw_gp, sw_up);
        } else {
          warpgroup_wait<0>();
          warpgroup_fence_operand(part);
          if (lane == 0) cutlass::arch::ClusterBarrier::arrive(&ss.empty[pend]);
          promote(part, sa_p, sw_gp, sw_up);
        }
      } else {
      // (the loop as before session 32, verbatim: the kDefer = false kernels keep their SASS)
      for (int kt = kt_begin; kt < kt_end; ++kt) {
        // block scales of this K block, loaded before the stage's wait (their latency overlaps it)
        float sa_k[kTokVals], sw_g = 1.f, sw_u = 1.f;
        float sw_g2 = 1.f, sw_u2 = 1.f;  // (pairs: the second tile's)
        if (p.block_scales) {
          CUTE_UNROLL
          for (int q = 0; q < kTokVals; ++q) {
            // token order: a token's scales are one 128-B line over ~32 K blocks, and the tile's
            // rows hit many tokens: plain loads (L1-cached; after the PDL wait, see pdl.cuh), not
            // L2-only __ldcg, so the next K blocks hit L1
            // (branch-free: a valid address either way, the value masked; row order: plain loads
            // too, the same values in every weight tile of the segment hit L1)
            if (p.a_scale_row_token != nullptr) {
              const int o = tok_off[q];
              const float v = p.a_scale[(o >= 0 ? o : 0) + kt];
              sa_k[q] = o >= 0 ? v : 0.f;
            } else {
              const int tq = tok_of(q);
              float v;
              if constexpr (hs) v = hs_s[kt * Cfg::kTokTile + tq];
              else if constexpr (kGather) v = p.a_scale[int64_t(kt) * p.a_scale_stride + tok_off[q]];  // (its token)
              else v = p.a_scale[int64_t(kt) * p.a_scale_stride + row0 + (tq < rows_valid ? tq : 0)];
              sa_k[q] = tq < rows_valid ? v : 0.f;
            }
          }
          if (p.w_scale_ue8m0) {
            const uint8_t* ws = static_cast<const uint8_t*>(static_cast<const void*>(p.w_scale));
            sw_g = ue8m0_to_float(__ldg(ws + swb_g + kt));
            sw_u = ue8m0_to_float(__ldg(ws + swb_u + kt));
            if constexpr (Cfg::kWTiles == 2) {
              sw_g2 = ue8m0_to_float(__ldg(ws + swb_g2 + kt));
              sw_u2 = ue8m0_to_float(__ldg(ws + swb_u2 + kt));
            }
          } else {
            sw_g = __ldg(p.w_scale + swb_g + kt);
            sw_u = __ldg(p.w_scale + swb_u + kt);
            if constexpr (Cfg::kWTiles == 2) {
              sw_g2 = __ldg(p.w_scale + swb_g2 + kt);
              sw_u2 = __ldg(p.w_scale + swb_u2 + kt);
            }
          }
        }
        Barrier::wait(&ss.full[stage], phase);
        sm90_grouped::gemm_stamp_if(p.trace, 3, [&] { return si == 0 && w == w_begin && kt == kt_begin && tid == 0; });
        // gathered A was written by cp.async (generic proxy); WGMMA reads it through the async proxy
        if constexpr (kGather) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        warpgroup_fence_operand(part);
        if constexpr (Cfg::kWTiles == 2) warpgroup_fence_operand(part_b);
        warpgroup_arrive();
        tiled_mma.accumulate_ = GMMA::ScaleOut::Zero;  // P starts from zero every stage
        CUTE_UNROLL
        for (int kb = 0; kb < kKBlocks; ++kb) {
          cute::gemm(tiled_mma, tCrA(_, _, kb, Cfg::w_sub(stage, 0)), tCrB(_, _, kb, hs ? kt : stage), part);
          tiled_mma.accumulate_ = GMMA::ScaleOut::One;
        }
        if constexpr (Cfg::kWTiles == 2) {
          // the pair's second tile, in the same batch (a missing one reads stale shared memory
          // into sums that are never stored). Tail pairs (Config::kTailPairs), the tail stage (odd
          // ring index): both tiles read its one image, tile w at A's K blocks 0-1 and tile w+1 at
          // 2-3 (kx = 2 swaps the halves), against B's K blocks 0-1; B's blocks 2-3 are zeros (K
          // past the reduction: TMA's fill, or kHs' zeros past N), so the other two WGMMAs of each
          // tile add nothing, and the WGMMA sequence is the same in every stage (a branch between
          // two sequences made ptxas inject warpgroup arrives, C7519/C7520)
          const int kx = Cfg::kTailPairs ? (stage & 1) << 1 : 0;
          tiled_mma.accumulate_ = GMMA::ScaleOut::Zero;
          CUTE_UNROLL
          for (int kb = 0; kb < kKBlocks; ++kb) {
            cute::gemm(tiled_mma, tCrA(_, _, kb ^ kx, Cfg::w_sub(stage, 1)), tCrB(_, _, kb, hs ? kt : stage), part_b);
            tiled_mma.accumulate_ = GMMA::ScaleOut::One;
          }
        }
        warpgroup_commit_batch();
        warpgroup_wait<0>();  // P is read right below (overlap: the other consumer warpgroup)
        warpgroup_fence_operand(part);
        if constexpr (Cfg::kWTiles == 2) warpgroup_fence_operand(part_b);
        // P is in registers: the stage can be refilled while we promote
        if (lane == 0) cutlass::arch::ClusterBarrier::arrive(&ss.empty[stage]);
        if (p.block_scales) {
          CUTE_UNROLL
          for (int i = 0; i < size(accum); ++i)  // promotion with this K block's scales
            accum(i) = fmaf(part(i), sa_k[tok_slot(i)] * (is_up(i) ? sw_u : sw_g), accum(i));
          if constexpr (Cfg::kWTiles == 2) {
            CUTE_UNROLL
            for (int i = 0; i < size(accum_b); ++i)
              accum_b(i) = fmaf(part_b(i), sa_k[tok_slot(i)] * (is_up(i) ? sw_u2 : sw_g2), accum_b(i));
          }
        } else {
          CUTE_UNROLL
          for (int i = 0; i < size(accum); ++i) accum(i) += part(i);  // promotion (FADD)
          if constexpr (Cfg::kWTiles == 2) {
            CUTE_UNROLL
            for (int i = 0; i < size(accum_b); ++i) accum_b(i) += part_b(i);
          }
        }
        if (++stage == kStages) { stage = 0; phase ^= 1u; }
      }
      }
      sm90_grouped::gemm_stamp_if(p.trace, 4, [&] { return !dyn && si == nseg - 1 && w + Cfg::kWTiles >= w_end && tid == 0; });

      // ---------------- epilogue: y = (sa * sw) * acc [+ bias] -> act -> bf16 ----------------
      if constexpr (Cfg::kSwapAB) {
       // each tile of the stage (pairs: the second one's sums in accum_b, if the segment has it)
       CUTE_UNROLL
       for (int h = 0; h < Cfg::kWTiles; ++h) {
        if (h == 1 && w + 1 >= w_end) break;
        Frag& acc = h == 0 ? accum : accum_b;
        const int wt = w + h;
        // accum (64 weight rows x T tokens): index v0 + 2*v1 + 4*j: weight row warp*16 + lane/4 +
        // 8*v1, token 2*(lane%4) + v0 + 8*j
        constexpr int kVals = decltype(size(acc))::value;
        static_assert(kVals == Cfg::kTokTile / 2 && kVals % 4 == 0);
        if (p.k_splits > 1) {
          // split-K (sm90_grouped::splitk_cluster_reduce): the ranks' partial sums, already
          // block-scaled in block mode, meet on rank 0 (the weight ring is idle: one tile per CTA)
          static_assert(kVals * 128 * 4 <= int(sizeof(ss.w)), "partials fit in the weight ring");
          if (!sm90_grouped::splitk_cluster_reduce<Cfg::kConsumerThreads>(acc, reinterpret_cast<float*>(ss.w.begin()),
                                                                          split, p.k_splits, tid))
            continue;  // (one weight tile per CTA: leaves the tile loop)
        }
        // outputs staged in shared memory, stored as 16-byte row chunks (sm90_grouped::SwapStage)
        const sm90_grouped::SwapStage<Cfg::kTokTile, kGated ? 32 : 64> stage{ss.stage_out};
        asm volatile("cp.async.wait_group 1;" ::: "memory");  // this tile's row values (not the next's)
        stage.open();  // (also makes every thread's copies visible)
        const float* rows = ss.tile_rows[wt & (2 * Cfg::kWTiles - 1)];
        // the puts by stmatrix (SwapStage::put_values; session 47: measured faster than the per-value
        // puts the BF16 kernel keeps)
        with_activation<kGated>(p.act_kind, [&](auto kind) {
          constexpr int kK = decltype(kind)::value;
          if constexpr (kGated) {
            const int r = get<0>(tCcC(0));
            const int c = (r >> 4) * 8 + (r & 7);
            const float swg = rows[c], swu = rows[32 + c];  // (copied a tile ahead)
            const float bg = rows[64 + c], bu = rows[96 + c];
            stage.put_values(
                [&](int i) {
                  const float sa = sa_col[tok_slot(i)];
                  return activate_ct<kK>(acc(i) * (sa * swg) + bg, acc(i + 2) * (sa * swu) + bu, p.alpha, p.limit);
                },
                warp, lane);
          } else {
            float sw[2], b[2];
            CUTE_UNROLL
            for (int v1 = 0; v1 < 2; ++v1) {
              const int c = get<0>(tCcC(2 * v1));
              sw[v1] = rows[c];  // (copied a tile ahead)
              b[v1] = rows[64 + c];
            }
            stage.put_values(
                [&](int i) {
                  const int v1 = (i >> 1) & 1;
                  return activate_ct<kK>(acc(i) * (sa_col[tok_slot(i)] * sw[v1]) + b[v1], 0.f, p.alpha, p.limit);
                },
                warp, lane);
          }
        });
        stage.flush(out, out_row0, ld, wt * (kGated ? 32 : 64), p.out_cols, rows_valid, tid, p.out_keep_l2 != 0);
        if (!kHs && p.hq_scheme != 0)
          quantise_h_tile<Cfg::kTokTile, kGated ? 32 : 64, decltype(stage)::kLd>(p, ss.stage_out, ss.hq_inv, &ss.hq_last,
                                                                               wt, int(out_row0), rows_valid, tid);
       }
      } else {
        // the "row" scales (block scales were applied per K block), then the BF16 kernel's epilogue
        // (bias, activation, bf16, direct or staged stores)
        static_assert(decltype(size(accum))::value == 64);
        if (!p.block_scales) {
          const int tile_cols = kGated ? 64 : 128;
          CUTE_UNROLL
          for (int i = 0; i < 64; ++i) {
            const int c = get<1>(tCcC(i));
            const int n = w * tile_cols + (kGated ? (c & 63) : c);
            // weight row of value i: gate n*mul, up n*mul + up_off (gated), else n
            const int j = kGated ? n * p.bias_row_mul + (c >= 64 ? p.bias_up_off : 0) : n;
            accum(i) *= n < p.out_cols ? sa_row[(i >> 1) & 1] * sw_at(j) : 0.f;
          }
        }
        sm90_grouped::normal_epilogue<kGated, Cfg::kStageRowElems>(p, accum, tCcC, tid, w, bias_e, rows_valid, out_row0,
                                                                   ss.stage_out);
      }
     }
    }
    if constexpr (Cfg::kSwapAB) asm volatile("cp.async.wait_all;" ::: "memory");  // (split-K ranks skip epilogues)
    if (tid == 0) sm90_grouped::gemm_stamp(p.trace, 5);
  }
#else
#if defined(__CUDA_ARCH__)
  __trap();
#endif
#endif
}

// ============================== host side ==============================

// sm90_fp8_grouped_gemm_swapab_dense.cu: the dense Swap-AB instances (GroupedGemmArgs::dense)
cudaError_t launch_swapab_dense(const Fp8GroupedGemmArgs& a, int tile, bool gemm2, cudaStream_t stream);
// sm90_fp8_grouped_gemm_swapab_pair.cu: the weight-tile pair instances (Config::kWTiles == 2)
cudaError_t launch_swapab_pair(const Fp8GroupedGemmArgs& a, int tile, bool gemm2, cudaStream_t stream);
// Records whether a pair launch ran the tail-pair instances (last_fp8_pair_tails;
// sm90_fp8_grouped_gemm_launch.cu).
void note_tail_pairs(bool tails);

// FUSEDMOE_FP8_PAIR (read once; a tuning override of GroupedGemmArgs::pair's rule, unset by
// default): bit 0 GEMM1, bit 1 GEMM2 on the pair instances, the other GEMM off (0: both off).
inline int pair_env() {
  static const int env = env_int("FUSEDMOE_FP8_PAIR").value_or(-1);
  return env;
}

// FUSEDMOE_FP8_GEMM2_TPC=n (read once; a tuning override, unset by default): GEMM2's weight tiles
// per CTA where the caller leaves them to the rule (GroupedGemmArgs::weight_tiles_per_cta = 0);
// GEMM1 keeps its own rule (bench: the GEMM2 sweep without forcing GEMM1's chaining too).
inline int gemm2_tpc_env() {
  static const int env = env_int("FUSEDMOE_FP8_GEMM2_TPC").value_or(0);
  return env;
}

inline bool encode_u8_map(CUtensorMap* map, const void* base, int rank, const uint64_t* dims,
                          const uint64_t* strides_bytes, const uint32_t* box) {
  const auto fn = sm90_grouped::tensor_map_encoder();
  if (fn == nullptr) return false;
  const uint32_t elem_strides[5] = {1, 1, 1, 1, 1};
  return fn(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, cuuint32_t(rank), const_cast<void*>(base), dims, strides_bytes,
            box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The 5D view of the e4m3 weights (normal family): the BF16 kernel's make_weight_view with 1-byte
// elements and a 128-element (128-byte) K box. dims/strides innermost first; dim 0 = reduction,
// dim 4 = expert. `simple`: strides monotonic (fallback if the driver refuses the preferred view).
struct WeightView {
  uint64_t dims[5];
  uint64_t strides[4];
  uint32_t box[5];
  int n_sub = 1;
  int mw[3] = {0, 0, 0}, mh[3] = {0, 0, 0};
};

// Swap-AB, gated: only the preferred view (K, 8 columns, {g,u}, N/8 groups, G), one box = 4 x
// [8 gate rows, 8 up rows] at group 4w; `simple` does not apply (no fallback: a refused view is an
// error).
template <class Cfg>
WeightView make_weight_view(const GroupedGemmArgs& a, bool gemm2, bool simple) {
  WeightView v;
  const uint64_t K = uint64_t(a.k), N = uint64_t(a.n), G = uint64_t(a.num_groups), B = 1;
  const uint32_t kBox = uint32_t(Cfg::kTileK);
  const bool gated = !gemm2 && a.activation.gated();
  const bool il = gated && a.activation.interleaved;
  auto set = [&](std::initializer_list<uint64_t> d, std::initializer_list<uint64_t> s, std::initializer_list<uint32_t> b) {
    int i = 0;
    for (auto x : d) v.dims[i++] = x;
    i = 0;
    for (auto x : s) v.strides[i++] = x;
    i = 0;
    for (auto x : b) v.box[i++] = x;
  };
  if (!gated) {
    const uint64_t red = gemm2 ? N : K, rows = gemm2 ? K : N, se = rows * red * B;
    set({red, rows, 1, 1, G}, {red * B, se, se, se}, {kBox, uint32_t(Cfg::kWRows), 1, 1, 1});
    v.mw[0] = Cfg::kWRows;
    return v;
  }
  const uint64_t se = 2 * N * K * B;
  const uint64_t s_row = (il ? 2 * K : K) * B;   // between consecutive columns' gate rows
  const uint64_t s_gu = (il ? K : N * K) * B;    // gate row -> up row of one column
  if constexpr (Cfg::kSwapAB) {
    set({K, 8, 2, N / 8, G}, {s_row, s_gu, 8 * s_row, se}, {kBox, 8, 2, 4, 1});
    v.mw[2] = 4;
    return v;
  }
  if (!il || !simple) {  // [64 gate rows | 64 up rows] in one box
    set({K, N, 2, 1, G}, {s_row, s_gu, se, se}, {kBox, 64, 2, 1, 1});
    v.mw[0] = 64;
  } else {  // interleaved, monotonic strides: (K, {g,u}, N): two boxes of 64 rows
    set({K, 2, N, 1, G}, {K * B, 2 * K * B, se, se}, {kBox, 1, 64, 1, 1});
    v.n_sub = 2;
    v.mh[0] = 1;
    v.mw[1] = 64;
  }
  return v;
}

// The weight view's box fields of Params (the producer's sub-boxes and their coordinates).
template <class Cfg>
void set_weight_view(const WeightView& v, Params* p) {
  p->n_sub = v.n_sub;
  p->sub_rows = Cfg::kWRows / v.n_sub;
  p->sub_bytes = uint32_t(p->sub_rows) * uint32_t(Cfg::kTileK);
  for (int d = 0; d < 3; ++d) {
    p->mw[d] = v.mw[d];
    p->mh[d] = v.mh[d];
  }
}

// Whether the packed images of a reduction of `red` pair the tiles' last K steps (Params::tail_pairs):
// a last step of at most 64 (the tail-pair instances read these images; no other kernel reads packed
// weights of a ragged reduction)
constexpr bool tail_pairs_packed(int red) { return red % 128 != 0 && red % 128 <= 64; }

// Packs one launch's e4m3 weights into the Swap-AB stage images (Params::w_packed): the BF16
// sm90_bf16_pack_weights_kernel's scheme with this kernel's view (every sub-box loaded).
template <class Cfg>
__global__ void __launch_bounds__(128) sm90_fp8_pack_weights_kernel(const __grid_constant__ CUtensorMap tm_w,
                                                                   const Params p, uint8_t* out) {
#if defined(CUTLASS_ARCH_MMA_SM90A_ENABLED)
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  constexpr int kBytes = Cfg::kWRows * Cfg::kTileK;
  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = cute::cast_smem_ptr_to_uint(smem_raw);
  uint8_t* img = smem_raw + ((1024u - (base & 1023u)) & 1023u);  // (the ring's 1024-byte alignment)
  __shared__ alignas(8) uint64_t bar;
  const int64_t b = blockIdx.x;
  const int kt = int(b % p.k_tiles);
  const int w = int((b / p.k_tiles) % p.w_tiles);
  const int e = int(b / (int64_t(p.k_tiles) * p.w_tiles));
  // tail pairs (Params::tail_pairs): an even tile's last K step composes tiles w and w + 1
  const bool tail = p.tail_pairs != 0 && kt == p.k_tiles - 1 && (w & 1) == 0;
  const int tiles = tail ? min(2, p.w_tiles - w) : 1;
  uint4* img4 = reinterpret_cast<uint4*>(img);
  for (int i = threadIdx.x; i < 2 * kBytes / 16; i += blockDim.x) img4[i] = make_uint4(0, 0, 0, 0);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  if (threadIdx.x == 0) {
    Barrier::init(&bar, 1);
    cutlass::arch::fence_barrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    Barrier::arrive_and_expect_tx(&bar, uint32_t(tiles * p.n_sub) * p.sub_bytes);
    for (int t = 0; t < tiles; ++t) {
      for (int s = 0; s < p.n_sub; ++s) {
        const int h = s & 1, wt = w + t;
        cute::SM90_TMA_LOAD_5D::copy(&tm_w, &bar, sm90_grouped::kHintW, img + t * kBytes + s * p.sub_rows * Cfg::kTileK,
                                     kt * Cfg::kTileK, wt * p.mw[0] + h * p.mh[0], wt * p.mw[1] + h * p.mh[1],
                                     wt * p.mw[2] + h * p.mh[2], e);
      }
    }
  }
  Barrier::wait(&bar, 0);
  uint4* o = reinterpret_cast<uint4*>(out + b * kBytes);
  if (!tail) {
    for (int i = threadIdx.x; i < kBytes / 16; i += blockDim.x) o[i] = img4[i];
  } else {
    // 16-byte chunk q of row r holds logical chunk c = q ^ (r % 8) (the 128-byte swizzle); logical
    // chunks 0-3 come from tile w's chunks 0-3, 4-7 from tile w + 1's chunks 0-3 (its K 0..63 of the step)
    for (int i = threadIdx.x; i < kBytes / 16; i += blockDim.x) {
      const int r = i >> 3, q = i & 7, c = q ^ (r & 7);
      o[i] = img4[(c >> 2) * (kBytes / 16) + r * 8 + ((c & 3) ^ (r & 7))];
    }
  }
#else
#if defined(__CUDA_ARCH__)
  __trap();
#endif
#endif
}

template <class Cfg>
int64_t packed_weight_bytes(const GroupedGemmArgs& a, bool gemm2) {
  const auto t = grouped_schedule::weight_tiles<Cfg>(a.n, a.k, !gemm2 && a.activation.gated(), gemm2);
  return int64_t(a.num_groups) * t.w_tiles * t.k_tiles * Cfg::kWRows * Cfg::kTileK;
}

template <class Cfg>
cudaError_t pack_weights(const GroupedGemmArgs& a, bool gemm2, void* out, cudaStream_t stream) {
  static_assert(Cfg::kSwapAB, "packed weights are the Swap-AB stage images");
  if (a.num_groups < 1 || a.n <= 0 || a.k <= 0 || a.n % 16 != 0 || a.k % 16 != 0 || !a.w || !out ||
      (reinterpret_cast<uintptr_t>(a.w) & 15u) || (reinterpret_cast<uintptr_t>(out) & 15u))
    return cudaErrorInvalidValue;
  alignas(64) CUtensorMap tm_w;
  const WeightView v = make_weight_view<Cfg>(a, gemm2, /*simple=*/false);
  if (!encode_u8_map(&tm_w, a.w, 5, v.dims, v.strides, v.box)) return cudaErrorInvalidValue;
  const auto t = grouped_schedule::weight_tiles<Cfg>(a.n, a.k, !gemm2 && a.activation.gated(), gemm2);
  Params p{};
  p.w_tiles = t.w_tiles;
  p.k_tiles = t.k_tiles;
  set_weight_view<Cfg>(v, &p);
  p.tail_pairs = tail_pairs_packed(gemm2 ? a.n : a.k) ? 1 : 0;
  const int64_t blocks = int64_t(a.num_groups) * p.w_tiles * p.k_tiles;
  if (blocks > int64_t(INT_MAX)) return cudaErrorInvalidValue;
  constexpr int kSmem = 2 * Cfg::kWRows * Cfg::kTileK + 1024;
  sm90_fp8_pack_weights_kernel<Cfg><<<unsigned(blocks), 128, kSmem, stream>>>(tm_w, p, static_cast<uint8_t*>(out));
  return cudaGetLastError();
}

// Builds the tensor maps and parameters and launches one instance. Arguments already checked
// (check_fp8_grouped_gemm_args), max_rows > 0.
template <class Cfg>
cudaError_t launch_instance(const Fp8GroupedGemmArgs& a, bool gemm2, cudaStream_t stream) {
  sm90_grouped::note_balanced(-1);
  sm90_grouped::note_splits(gemm2, 0, 0, 0);
  const bool gated = !gemm2 && a.activation.gated();
  const int red = gemm2 ? a.n : a.k;        // reduction length
  const int out_cols = gemm2 ? a.k : a.n;
  const int w_rows = gemm2 ? a.k : a.activation.gemm1_rows(a.n);  // weight rows per expert
  const int cols_per_tile = gated ? Cfg::kWRows / 2 : Cfg::kWRows;

  alignas(64) CUtensorMap tm_act = {};  // (unused, never read, with gathered A rows)
  alignas(64) CUtensorMap tm_w;
  // (checked by check_fp8_grouped_gemm_args: Swap-AB GEMM1, row_token and offsets, no early weights)
  const bool gather = a.gather_x != nullptr;
  if (!gather) {
    const uint64_t dims[2] = {uint64_t(red), uint64_t(a.max_rows)};
    const uint64_t strides[1] = {uint64_t(red)};
    const uint32_t box[2] = {uint32_t(Cfg::kTileK), uint32_t(Cfg::kActBoxRows)};
    if (!encode_u8_map(&tm_act, a.a, 2, dims, strides, box)) return cudaErrorInvalidValue;
  }
  WeightView v = make_weight_view<Cfg>(a, gemm2, /*simple=*/false);
  if (!encode_u8_map(&tm_w, a.w, 5, v.dims, v.strides, v.box)) {
    if (Cfg::kSwapAB) return cudaErrorInvalidValue;
    v = make_weight_view<Cfg>(a, gemm2, /*simple=*/true);
    if (!encode_u8_map(&tm_w, a.w, 5, v.dims, v.strides, v.box)) return cudaErrorInvalidValue;
  }

  Params p{};
  p.counts = a.counts;
  p.offsets = a.offsets;
  p.padded_offsets = a.padded_offsets;
  p.bias = a.bias;
  p.a_scale = a.a_scale;
  p.w_scale = a.w_scale;
  p.out = static_cast<__nv_bfloat16*>(a.out);
  p.num_groups = a.num_groups;
  const int64_t m_tiles = (a.max_rows + Cfg::kTokTile - 1) / Cfg::kTokTile;
  p.m_tiles = int(m_tiles);
  p.w_tiles = (out_cols + cols_per_tile - 1) / cols_per_tile;
  p.k_tiles = (red + Cfg::kTileK - 1) / Cfg::kTileK;
  const int sms = device_sm_count();
  const int64_t slots = int64_t(sms) * Cfg::kMinBlocks;
  // split-K (Swap-AB) as the BF16 launch, with K blocks of 128 (>= 4 per split: the BF16 rule's 8
  // steps of 64)
  constexpr int kSmem = smem_bytes<Cfg>();
  static_assert(smem_fits<Cfg>(), "shared memory over the per-CTA budget of the config's occupancy");
  static std::atomic<uint64_t> optin_done[14] = {};  // per instance: [gated + 2 * balanced + 4 * defer], 8 + balanced: kHs,
                                                     // 10 + gated + 2 * balanced: kGather
  // (split-K launches run the raster: the occupancy query asks about the raster-only kernel)
  // (tail pairs: plain GEMM2 kernels only, not instantiated gated or balanced)
  const void* kernel_fn = [&]() -> const void* {
    if constexpr (Cfg::kTailPairs) return reinterpret_cast<const void*>(&sm90_fp8_grouped_gemm_kernel<Cfg, false, false>);
    else
      return gated ? reinterpret_cast<const void*>(&sm90_fp8_grouped_gemm_kernel<Cfg, true, false>)
                   : reinterpret_cast<const void*>(&sm90_fp8_grouped_gemm_kernel<Cfg, false, false>);
  }();
  const int splits = Cfg::kSwapAB ? sm90_grouped::resident_k_splits(a.k_splits, m_tiles * int64_t(p.w_tiles), slots,
                                                                    p.k_tiles, 4, kernel_fn, Cfg::kThreads, kSmem,
                                                                    &optin_done[gated ? 1 : 0])
                                  : 1;
  p.k_tiles_per_split = (p.k_tiles + splits - 1) / splits;
  p.k_splits = (p.k_tiles + p.k_tiles_per_split - 1) / p.k_tiles_per_split;  // every split has K blocks
  // weight tiles per CTA: the BF16 launch's rule (sm90_grouped::choose_tiles_per_cta), both families
  const int forced_tpc = (gemm2 && a.weight_tiles_per_cta == 0 && gemm2_tpc_env() > 0) ? gemm2_tpc_env() : a.weight_tiles_per_cta;
  int tpc = sm90_grouped::choose_tiles_per_cta(forced_tpc, p.k_splits, p.w_tiles, p.k_tiles, m_tiles,
                                               slots, Cfg::kStages * Cfg::kWTiles, Cfg::kSwapAB);
  // GroupedGemmArgs::one_wave (GEMM1 at decode) for long reductions only: one_wave_fp8_applies
  bool one_wave_chain = false;
  if (a.one_wave && a.weight_tiles_per_cta == 0 && p.k_splits == 1 && tpc == 1 &&
      one_wave_fp8_applies(Cfg::kSwapAB, p.k_tiles)) {
    tpc = one_wave_tiles_per_cta(a.rows_hint, a.num_groups, Cfg::kTokTile, p.w_tiles, p.k_tiles, slots,
                                 kOneWaveFp8MaxSteps);
    one_wave_chain = tpc > 1;
  }
  // tail pairs: every CTA's chunk starts on an even weight tile (the packed tail images pair tiles
  // 2j and 2j + 1; the launch forces no odd count)
  if constexpr (Cfg::kTailPairs) tpc += tpc & 1;
  p.tiles_per_cta = tpc;
  p.w_chunks = (p.w_tiles + tpc - 1) / tpc;

  set_weight_view<Cfg>(v, &p);

  p.out_cols = out_cols;
  p.bias_stride = w_rows;
  p.bias_row_mul = (gated && a.activation.interleaved) ? 2 : 1;
  p.bias_up_off = gated ? (a.activation.interleaved ? 1 : a.n) : 0;
  p.a_scale_row_mul = a.a_scale_per_token ? 1 : 0;
  p.w_scale_e_stride = a.w_scale_per_channel ? w_rows : 1;
  p.w_scale_row_mul = a.w_scale_per_channel ? 1 : 0;
  p.block_scales = a.block_scales ? 1 : 0;
  p.a_scale_stride = a.a_scale_stride;
  p.a_scale_row_token = a.block_scales ? a.a_scale_row_token : nullptr;
  p.w_row_blocks = (w_rows + 127) / 128;
  p.w_scale_ue8m0 = a.w_scale_ue8m0 ? 1 : 0;
  if (a.block_scales) {  // (the row-scale fields are not read; keep their pointers in range)
    p.a_scale_row_mul = 0;
    p.w_scale_e_stride = 0;
    p.w_scale_row_mul = 0;
  }
  p.act_kind = gemm2 ? -1 : int(a.activation.kind);
  p.alpha = a.activation.alpha;
  p.limit = a.activation.limit;
  p.out_unpadded = gemm2 ? 1 : 0;

  p.early_weights = a.early_weights ? 1 : 0;
  p.early_stages = a.early_weight_stages < 0 ? Cfg::kStages : std::min(a.early_weight_stages, Cfg::kStages);
  p.w_hint = a.weights_evict_first ? kHintWFirst : kHintW;
  p.out_keep_l2 = sm90_grouped::out_keep_l2_switch(/*fp8=*/true);
  // (packed images only where the reduction fills its last K step: a ragged step's image stores the
  // zeros the boxes fill without reading them, e.g. FP8 GEMM2 of qwen235-tp8, N = 192: a third more
  // bytes per weight tile, 2.7-4.9 % slower layers at 16-64 tokens, H200 session 35 call 6)
  // (the tail-pair instances read the ragged reduction's images that pair the tiles' tails, which
  // their launch requires: launch_swapab_pair)
  p.w_packed = (Cfg::kSwapAB && (red % Cfg::kTileK == 0 || Cfg::kTailPairs)) ? static_cast<const uint8_t*>(a.w_packed)
                                                                             : nullptr;
  if constexpr (Cfg::kTailPairs) {
    if (p.w_packed == nullptr || p.k_tiles != 2 || !tail_pairs_packed(red) || p.k_splits != 1 || a.block_scales || gather ||
        gated)
      return cudaErrorInvalidValue;
  }
  p.early_span = a.early_weights_span ? 1 : 0;
  p.staged_epilogue = (!Cfg::kSwapAB && a.staged_epilogue) ? 1 : 0;
  p.red = red;
  if (gather) {
    p.gather_x = static_cast<const uint8_t*>(a.gather_x);
    p.gather_stride = a.gather_x_stride > 0 ? a.gather_x_stride : red;
    p.row_token = a.row_token;
  }
  if (Cfg::kSwapAB && !gemm2 && a.hq_act != ActQuant::kNone) {  // (checked: Swap-AB GEMM1 only)
    p.hq_scheme = a.hq_act == ActQuant::kPerTensorStatic ? kHqStatic : a.hq_act == ActQuant::kPerToken ? kHqToken : kHqGroup;
    p.hq_ue8m0 = a.hq_ue8m0 ? 1 : 0;
    p.hq_groups = p.hq_scheme == kHqGroup ? (out_cols + 127) / 128 : 1;
    p.hq_tiles_per_group = 128 / cols_per_tile;
    p.hq_out = static_cast<uint8_t*>(a.hq_out);
    p.hq_scales = a.hq_scales;
    p.hq_scale_stride = a.hq_scale_stride;
    p.hq_static = a.hq_static;
    p.hq_partials = a.hq_partials;
    p.hq_counters = a.hq_counters;
  }
  const bool hs = a.hs_src != nullptr;  // GEMM2 quantising H itself (checked: Swap-AB GEMM2, per token / 1x128)
  if (hs) {  // (the kHs instances read these GEMM1-only fields so: see Params)
    if (!Cfg::kSwapAB || !gemm2 || p.k_tiles > Cfg::kStages) return cudaErrorInvalidValue;
    p.hq_out = static_cast<uint8_t*>(const_cast<void*>(a.hs_src));
    p.hq_scheme = a.hs_act == ActQuant::kPerToken ? kHqToken : kHqGroup;
    p.hq_ue8m0 = a.hs_ue8m0 ? 1 : 0;
    p.hq_scale_stride = red;
  }
  int64_t grid = m_tiles * int64_t(p.w_chunks) * p.k_splits;
  // the balanced schedule (grouped_schedule.cuh): forced, or the rule for GEMM2
  // (tail pairs: the raster, whose chunks start on even tiles)
  const bool balanced_ok = Cfg::kSwapAB && !Cfg::kTailPairs && p.k_splits == 1 && a.num_groups <= 8 * Cfg::kThreads;
  // (token-order block scales: the static ranges only, whose segments are known at the CTA's start)
  const bool use_queue = a.queue != nullptr && a.a_scale_row_token == nullptr && a.hs_src == nullptr && !gather;
  const grouped_schedule::LaunchSchedule sched = grouped_schedule::launch_schedule(
      balanced_ok, a.balanced, gemm2 && a.weight_tiles_per_cta == 0, tpc, a.num_groups, a.rows_hint,
      use_queue, m_tiles * int64_t(p.w_tiles), p.w_tiles, slots, grid, p.k_tiles < 4 * Cfg::kStages * Cfg::kWTiles);
  if constexpr (Cfg::kSwapAB && !Cfg::kDense && Cfg::kWTiles == 1) {
    // (gathered rows: this 2-CTA instance only, below; no pair or dense instance has them)
    const bool forced_shape = a.weight_tiles_per_cta != 0 || a.k_splits != 0 || a.balanced > 0 || gather;
    // GroupedGemmArgs::pair (before the dense rule): the launch on the pair instance, forced, by the
    // FUSEDMOE_FP8_PAIR override, or by the measured rule (pair_fp8_auto) where neither the shape
    // nor the dense instances are forced
    const int env = pair_env();
    const bool pair = a.pair > 0 || (a.pair == 0 && (env >= 0 ? (env & (gemm2 ? 2 : 1)) != 0
                                                               : !forced_shape && a.dense <= 0 &&
                                                                     pair_fp8_auto(gemm2, a.block_scales, Cfg::kTokTile, p.k_tiles, p.w_tiles)));
    if (pair && p.k_splits == 1 && !gather) {
      Fp8GroupedGemmArgs d = a;
      d.k_splits = 1;
      return launch_swapab_pair(d, Cfg::kTokTile, gemm2, stream);
    }
    // GroupedGemmArgs::dense: the same launch on the dense instance (3-4 CTAs per SM), forced or by
    // the measured rule (dense_fp8_auto) for this launch as the 2-CTA instance would run it
    if ((a.dense > 0 && !gather) ||
        (a.dense == 0 && !forced_shape &&
         dense_fp8_auto(gemm2, a.block_scales, Cfg::kTokTile, one_wave_chain, sched.kind != 0))) {
      Fp8GroupedGemmArgs d = a;
      d.dense = 1;
      return launch_swapab_dense(d, Cfg::kTokTile, gemm2, stream);
    }
  }
  p.flat = sched.kind != 0 ? 1 : 0;
  p.queue = sched.kind == 2 ? a.queue : nullptr;
  grid = sched.grid;
  p.zero_queue = a.zero_queue;
  if (grid <= 0 || grid > int64_t(INT_MAX)) return cudaErrorInvalidValue;
  p.trace = sm90_grouped::grouped_gemm_trace(gemm2, grid);
  sm90_grouped::note_balanced(sched.kind);
  if (const cudaError_t e = sm90_grouped::record_splits(gemm2, p.k_splits, grid, kernel_fn, Cfg::kThreads, kSmem,
                                                        &optin_done[gated ? 1 : 0]);
      e != cudaSuccess)
    return e;

  // the kDefer kernels (2-CTA Swap-AB instances) with FUSEDMOE_FP8_DEFER=1
  static const int defer_env = env_int("FUSEDMOE_FP8_DEFER").value_or(0);
  const bool defer = Cfg::kSwapAB && !Cfg::kDense && Cfg::kWTiles == 1 && defer_env == 1 && !hs && !gather;
  auto launch = [&](auto kernel, int instance) -> cudaError_t {
    if (defer) instance += 4;
    const cudaError_t err = opt_in_dynamic_smem(reinterpret_cast<const void*>(kernel), kSmem, &optin_done[instance]);
    if (err != cudaSuccess) return err;
    return launch_chain_clustered(kernel, dim3(unsigned(grid)), dim3(Cfg::kThreads), kSmem, stream,
                                  unsigned(p.k_splits), tm_act, tm_w, p);
  };
  if constexpr (Cfg::kTailPairs) {  // (the raster, plain; checked above)
    return hs ? launch(&sm90_fp8_grouped_gemm_kernel<Cfg, false, false, false, true>, 8)
              : launch(&sm90_fp8_grouped_gemm_kernel<Cfg, false, false>, 0);
  } else {
  // H quantised by GEMM2: its own instances (plain, not deferred)
  if (hs) {
    if constexpr (Cfg::kSwapAB) {
      return sched.kind != 0 ? launch(&sm90_fp8_grouped_gemm_kernel<Cfg, false, true, false, true>, 9)
                             : launch(&sm90_fp8_grouped_gemm_kernel<Cfg, false, false, false, true>, 8);
    } else {
      return cudaErrorInvalidValue;
    }
  }
  // gathered rows: their own instances (2-CTA Swap-AB GEMM1)
  if (gather) {
    if constexpr (Cfg::kSwapAB && !Cfg::kDense && Cfg::kWTiles == 1) {
      if (sched.kind != 0)
        return gated ? launch(&sm90_fp8_grouped_gemm_kernel<Cfg, true, true, false, false, true>, 13)
                     : launch(&sm90_fp8_grouped_gemm_kernel<Cfg, false, true, false, false, true>, 12);
      return gated ? launch(&sm90_fp8_grouped_gemm_kernel<Cfg, true, false, false, false, true>, 11)
                   : launch(&sm90_fp8_grouped_gemm_kernel<Cfg, false, false, false, false, true>, 10);
    } else {
      return cudaErrorInvalidValue;
    }
  }
  // the raster runs the raster-only kernel (the normal family has no other)
  if (sched.kind != 0) {
    if constexpr (Cfg::kSwapAB) {
      if constexpr (!Cfg::kDense && Cfg::kWTiles == 1) {
        if (defer)
          return gated ? launch(&sm90_fp8_grouped_gemm_kernel<Cfg, true, true, true>, 3)
                       : launch(&sm90_fp8_grouped_gemm_kernel<Cfg, false, true, true>, 2);
      }
      return gated ? launch(&sm90_fp8_grouped_gemm_kernel<Cfg, true, true>, 3)
                   : launch(&sm90_fp8_grouped_gemm_kernel<Cfg, false, true>, 2);
    } else {
      return cudaErrorInvalidValue;  // (launch_schedule gives the normal family the raster)
    }
  }
  if constexpr (Cfg::kSwapAB && !Cfg::kDense && Cfg::kWTiles == 1) {
    if (defer)
      return gated ? launch(&sm90_fp8_grouped_gemm_kernel<Cfg, true, false, true>, 1)
                   : launch(&sm90_fp8_grouped_gemm_kernel<Cfg, false, false, true>, 0);
  }
  return gated ? launch(&sm90_fp8_grouped_gemm_kernel<Cfg, true, false>, 1)
               : launch(&sm90_fp8_grouped_gemm_kernel<Cfg, false, false>, 0);
  }  // (not kTailPairs)
}

// The config's name without the gated suffix, e.g. "sm90_fp8e4m3_grouped_gemm_128x128x128_s5_row".
template <class Cfg>
std::string config_name() {
  const std::string tile = Cfg::kSwapAB ? "swapab_" + std::to_string(Cfg::kWRows * Cfg::kWTiles) + "x" + std::to_string(Cfg::kTokTile)
                                        : std::to_string(Cfg::kTokTile) + "x" + std::to_string(Cfg::kWRows);
  return "sm90_fp8e4m3_grouped_gemm_" + tile + "x" + std::to_string(Cfg::kTileK) + "_s" + std::to_string(Cfg::kStages) +
         (Cfg::kDense ? "_c" + std::to_string(Cfg::kMinBlocks) : std::string()) + (Cfg::kTailPairs ? "_tails" : "") +
         "_row";
}

// The kernels of a config for the registry (family "grouped_gemm_fp8"): gated (GEMM1 with a
// gated activation) and plain (GEMM2, non-gated GEMM1), raster-only; for Swap-AB also both with the
// balanced / dynamic schedules (`_balanced`). Called from the file that launches them.
template <class Cfg>
void append_config_instances(KernelList* out) {
  const std::string name = config_name<Cfg>();
  out->push_back({"grouped_gemm_fp8", name + "_gated",
                  reinterpret_cast<const void*>(&sm90_fp8_grouped_gemm_kernel<Cfg, true, false>)});
  out->push_back({"grouped_gemm_fp8", name, reinterpret_cast<const void*>(&sm90_fp8_grouped_gemm_kernel<Cfg, false, false>)});
  if constexpr (Cfg::kSwapAB) {
    out->push_back({"grouped_gemm_fp8", name + "_balanced_gated",
                    reinterpret_cast<const void*>(&sm90_fp8_grouped_gemm_kernel<Cfg, true, true>)});
    out->push_back({"grouped_gemm_fp8", name + "_balanced",
                    reinterpret_cast<const void*>(&sm90_fp8_grouped_gemm_kernel<Cfg, false, true>)});
  }
  if constexpr (Cfg::kSwapAB) {  // H quantised by GEMM2 (the kernel's kHs)
    out->push_back({"grouped_gemm_fp8", name + "_hs",
                    reinterpret_cast<const void*>(&sm90_fp8_grouped_gemm_kernel<Cfg, false, false, false, true>)});
    out->push_back({"grouped_gemm_fp8", name + "_balanced_hs",
                    reinterpret_cast<const void*>(&sm90_fp8_grouped_gemm_kernel<Cfg, false, true, false, true>)});
  }
  if constexpr (Cfg::kSwapAB && !Cfg::kDense && Cfg::kWTiles == 1) {  // gathered rows (the kernel's kGather)
    out->push_back({"grouped_gemm_fp8", name + "_gather_gated",
                    reinterpret_cast<const void*>(&sm90_fp8_grouped_gemm_kernel<Cfg, true, false, false, false, true>)});
    out->push_back({"grouped_gemm_fp8", name + "_gather",
                    reinterpret_cast<const void*>(&sm90_fp8_grouped_gemm_kernel<Cfg, false, false, false, false, true>)});
    out->push_back({"grouped_gemm_fp8", name + "_balanced_gather_gated",
                    reinterpret_cast<const void*>(&sm90_fp8_grouped_gemm_kernel<Cfg, true, true, false, false, true>)});
    out->push_back({"grouped_gemm_fp8", name + "_balanced_gather",
                    reinterpret_cast<const void*>(&sm90_fp8_grouped_gemm_kernel<Cfg, false, true, false, false, true>)});
  }
  if constexpr (Cfg::kSwapAB && !Cfg::kDense && Cfg::kWTiles == 1) {  // FUSEDMOE_FP8_DEFER=1 (see the kernel's kDefer)
    out->push_back({"grouped_gemm_fp8", name + "_defer_gated",
                    reinterpret_cast<const void*>(&sm90_fp8_grouped_gemm_kernel<Cfg, true, false, true>)});
    out->push_back({"grouped_gemm_fp8", name + "_defer",
                    reinterpret_cast<const void*>(&sm90_fp8_grouped_gemm_kernel<Cfg, false, false, true>)});
    out->push_back({"grouped_gemm_fp8", name + "_balanced_defer_gated",
                    reinterpret_cast<const void*>(&sm90_fp8_grouped_gemm_kernel<Cfg, true, true, true>)});
    out->push_back({"grouped_gemm_fp8", name + "_balanced_defer",
                    reinterpret_cast<const void*>(&sm90_fp8_grouped_gemm_kernel<Cfg, false, true, true>)});
  }
}

}  // namespace fusedmoe::kernels::sm90_fp8_grouped
