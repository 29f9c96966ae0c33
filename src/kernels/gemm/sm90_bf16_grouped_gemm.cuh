// sm90_bf16_grouped_gemm.cuh — the BF16 expert GEMMs of a MoE layer on the contiguous layout
// (device kernel + host launch template; included by the sm90_bf16_grouped_gemm*.cu files only).
//
// One kernel template serves GEMM1 (+ activation) and GEMM2 in two tile families:
//
//   normal  : tokens in WGMMA's M. Tile 128 token rows x 128 weight rows x 64 K, 5 stages (32 KB
//             each), 3 warpgroups: 2 consumers (64 token rows each, WGMMA 64x128x16, 232 regs via
//             setmaxnreg) + 1 producer warpgroup (one elected thread issues TMA, 40 regs).
//   Swap-AB : C^T = W . X^T, weight rows in WGMMA's M. Tile 64 weight rows x T tokens x 64 K with
//             T in {8,16,32,64} (WGMMA 64xTx16), 1 consumer warpgroup + 1 producer warp (160
//             threads), 6-11 stages sized for 2 CTAs per SM (~100 KB smem each), so that many CTAs
//             each stream distinct weight tiles (decode: weight streaming at HBM bandwidth).
//             (Every stage is a full 64-wide K step: a WGMMA under a data-dependent condition
//             would make ptxas serialise the WGMMAs.)
//
// Both: TMA with 128B swizzle for activations (plain 2D boxes thanks to the contiguous layout) and
// for weights (a 5D view per case, see WeightView), K-major smem read directly by WGMMA
// descriptors, full/empty mbarrier ring, fp32 accumulation, epilogue (bias, activation in fp32,
// bf16 predicated stores) straight from the accumulator registers.
//
// Work decomposition: 1D grid over (token tile, chunk of consecutive weight tiles), grouped
// raster (8 token tiles x all weight chunks) for L2 reuse. Each CTA finds its expert from
// padded_offsets (one parallel pass over G entries, no binary-search round trips) and exits at
// once if its token tile is beyond padded_offsets[G] or beyond the expert's count. A CTA runs
// its weight tiles back to back through one smem ring, so the producer loads the next tile while
// the consumers run the epilogue of the previous one.
// Where weight tiles are chained (Swap-AB, short reductions), the balanced schedule instead splits
// the items (active token tile, weight tile) into one contiguous range per CTA of a one-wave grid:
// each CTA scans the counts for the active token tiles and runs up to kMaxSegments token tiles'
// weight tiles through the same ring (Params::flat).
//
// Gate/up pairing for gated activations (both values of an output column must meet in one thread):
//   normal : weight tile = 64 gate rows then 64 up rows (smem rows 0..63 / 64..127). In the 64x128
//            accumulator a thread holds columns c and c+64 (value index i and i+32).
//   Swap-AB: weight tile = 4 x [8 gate rows, 8 up rows]; a thread holds rows r and r+8 of its
//            warp's 16-row slice (value index i and i+2) = gate and up of one output column.
#pragma once

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>

#include <cuda.h>  // CUtensorMap & enums (types only: the encoder is fetched through the runtime)
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cute/tensor.hpp>
#include <cute/arch/cluster_sm90.hpp>
#include <cute/arch/copy_sm90.hpp>
#include <cute/arch/copy_sm90_desc.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/bfloat16.h>

#include "fusedmoe/activation.h"
#include "kernels/common/activation_math.cuh"
#include "kernels/common/launch.cuh"
#include "kernels/common/pdl.cuh"
#include "kernels/common/timer.cuh"
#include "kernels/gemm/grouped_schedule.cuh"
#include "kernels/gemm/sm90_bf16_grouped_gemm.h"
#include "kernels/gemm/sm90_bf16_grouped_gemm_internal.h"  // launch_swapab_dense (GroupedGemmArgs::dense)
#include "kernels/registry.h"

namespace fusedmoe::kernels::sm90_grouped {

template <int N>
struct MmaAtomFor;
template <> struct MmaAtomFor<8>   { using type = cute::SM90_64x8x16_F32BF16BF16_SS<cute::GMMA::Major::K, cute::GMMA::Major::K>; };
template <> struct MmaAtomFor<16>  { using type = cute::SM90_64x16x16_F32BF16BF16_SS<cute::GMMA::Major::K, cute::GMMA::Major::K>; };
template <> struct MmaAtomFor<32>  { using type = cute::SM90_64x32x16_F32BF16BF16_SS<cute::GMMA::Major::K, cute::GMMA::Major::K>; };
template <> struct MmaAtomFor<64>  { using type = cute::SM90_64x64x16_F32BF16BF16_SS<cute::GMMA::Major::K, cute::GMMA::Major::K>; };
template <> struct MmaAtomFor<128> { using type = cute::SM90_64x128x16_F32BF16BF16_SS<cute::GMMA::Major::K, cute::GMMA::Major::K>; };

// kBlocks_: CTAs per SM the instance is built for (1 normal, 2 Swap-AB; the dense Swap-AB instances of
// sm90_bf16_grouped_gemm_swapab_dense.cu take 3-4 with fewer stages: GroupedGemmArgs::dense).
// kPing_ (normal family, plain epilogue only): the two consumer warpgroups take the CTA's weight
// tiles in turn, each computing all 128 token rows of its tile, so that one warpgroup's epilogue
// runs under the other's main loop (see the consumers' ping-pong branch).
template <bool kSwapAB_, int kTokTile_, int kStages_, int kBlocks_ = (kSwapAB_ ? 2 : 1), bool kPing_ = false>
struct Config {
  using Element = cutlass::bfloat16_t;
  static constexpr bool kSwapAB = kSwapAB_;
  static constexpr bool kPing = kPing_;
  static_assert(!kPing || !kSwapAB, "ping-pong consumers: normal family only");
  static constexpr int kTokTile = kTokTile_;              // token rows per tile
  static constexpr int kWRows = kSwapAB ? 64 : 128;       // weight rows per tile
  static constexpr int kTileK = 64;                      // reduction per stage (one 128-byte swizzle row)
  static constexpr int kStages = kStages_;
  static constexpr int kConsumerWGs = kSwapAB ? 1 : 2;
  static constexpr int kConsumerThreads = 128 * kConsumerWGs;
  static constexpr int kConsumerWarps = kConsumerThreads / 32;
  static constexpr int kProducerThreads = kSwapAB ? 32 : 128;
  static constexpr int kThreads = kConsumerThreads + kProducerThreads;
  static constexpr int kMinBlocks = kBlocks_;
  static constexpr bool kDense = kSwapAB ? kBlocks_ != 2 : kBlocks_ != 1;  // (named with _c<blocks>)
  static constexpr int kMmaM = kSwapAB ? kWRows : kTokTile;
  static constexpr int kMmaN = kSwapAB ? kTokTile : kWRows;

  static_assert(kSwapAB ? (kTokTile == 8 || kTokTile == 16 || kTokTile == 32 || kTokTile == 64) : kTokTile == 128);
  static_assert(kMmaM == 64 * kConsumerWGs, "one 64-row WGMMA per consumer warpgroup");
  static_assert(kStages >= 3);
  static_assert((kTokTile * kTileK * 2) % 1024 == 0 && (kWRows * kTileK * 2) % 1024 == 0,
                "each stage must start on a 128B-swizzle pattern boundary");

  using SmemLayoutAtom = cute::GMMA::Layout_K_SW128_Atom<Element>;
  using SmemLayoutAct = decltype(cute::tile_to_shape(
      SmemLayoutAtom{}, cute::Shape<cute::Int<kTokTile>, cute::Int<kTileK>, cute::Int<kStages>>{}));
  using SmemLayoutW = decltype(cute::tile_to_shape(
      SmemLayoutAtom{}, cute::Shape<cute::Int<kWRows>, cute::Int<kTileK>, cute::Int<kStages>>{}));

  using MmaAtom = typename MmaAtomFor<kMmaN>::type;
  using TiledMma = decltype(cute::make_tiled_mma(
      MmaAtom{}, cute::Layout<cute::Shape<cute::Int<kConsumerWGs>, cute::_1, cute::_1>>{}));
  // ping-pong: one warpgroup's MMA over the whole 128-row tile (two 64-row WGMMAs per K step)
  using PingMma = decltype(cute::make_tiled_mma(MmaAtom{}, cute::Layout<cute::Shape<cute::_1, cute::_1, cute::_1>>{}));

  // The activation TMA box: Swap-AB loads a stage's token rows in 16-row boxes (tile 8: one box of
  // 8), the normal family in 64-row halves (one per consumer warpgroup), and only the boxes holding a
  // row of the expert (act_boxes): an expert's tile that is mostly padding streams no padding from
  // L2. The rows left unloaded keep older stage data; they only feed accumulator columns (Swap-AB)
  // or rows (normal) of tokens past the count, which the epilogue never stores. Measured on the
  // H200 (session 23): with 8-row boxes token tile 16 ran 0.8-2.5 % slower on dsv3-tp8 at 256 tokens
  // (two TMA issues per stage for the same bytes), so the tiles up to 16 keep one box.
  static constexpr int kActBoxRows = kSwapAB ? (kTokTile < 16 ? kTokTile : 16) : 64;
  static constexpr uint32_t kActBoxBytes = uint32_t(kActBoxRows * kTileK * sizeof(Element));
  static_assert(kTokTile % kActBoxRows == 0 && kActBoxRows % 8 == 0, "boxes start on swizzle-pattern rows");

  static constexpr uint32_t kProducerRegs = 40;
  static constexpr uint32_t kConsumerRegs = 232;

  // Staged epilogue (normal family, Params::staged_epilogue): each consumer warpgroup writes its
  // 64 x 128 bf16 outputs (64 x 64 when gated) to shared memory, then stores whole 16-byte chunks of
  // rows. Row stride 128 + 8 elements: the accumulator's bf16x2 writes hit 32 distinct banks.
  static constexpr int kStageRowElems = 128 + 8;
  // Swap-AB: the tile's kTokTile x 64 outputs (SwapStage below).
  // Ping-pong: each warpgroup stages its whole 128 x 128 tile (two buffers).
  static constexpr int kStageElems =
      kSwapAB ? kTokTile * (64 + 8) : kConsumerWGs * (kPing ? kTokTile : 64) * kStageRowElems;
};

using grouped_schedule::kMaxSegments;
using grouped_schedule::Segment;

template <class Cfg>
struct SharedStorage {
  alignas(1024) cute::ArrayEngine<typename Cfg::Element, cute::cosize_v<typename Cfg::SmemLayoutAct>> act;
  alignas(1024) cute::ArrayEngine<typename Cfg::Element, cute::cosize_v<typename Cfg::SmemLayoutW>> w;
  alignas(16) cute::ArrayEngine<typename Cfg::Element, Cfg::kStageElems> stage_out;  // staged epilogue
  alignas(8) uint64_t full[Cfg::kStages];
  alignas(8) uint64_t empty[Cfg::kStages];
  alignas(8) uint64_t turn[2];  // ping-pong (Cfg::kPing): warpgroup w may start its next main loop
  int gather_tok[Cfg::kTokTile];  // gathered A rows (Params::gather_x): token of each tile row, -1 past the count
  Segment seg[kMaxSegments];      // the CTA's (token tile, weight tiles) runs, in order
  int nseg;
  int scan[Cfg::kThreads / 32];   // balanced schedule: per-warp sums of active token tiles
  // dynamic balanced schedule (Params::queue): the producer's segments (a ring) and the table of
  // active token tiles before each expert (grouped_schedule.cuh)
  Segment seg_q[grouped_schedule::kDynQueue];
  int first_tile[8 * Cfg::kThreads + 1];
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

// Kernel arguments besides the two tensor maps.
struct Params {
  const int32_t* counts;
  const int32_t* offsets;
  const int32_t* padded_offsets;
  const float* bias;
  __nv_bfloat16* out;
  int num_groups;
  int m_tiles;        // token tiles in the grid (upper bound from max_rows)
  int w_tiles;        // weight tiles per expert
  int w_chunks;       // ceil(w_tiles / tiles_per_cta)
  int tiles_per_cta;
  int k_tiles;        // ceil(reduction / 64)
  // Split-K (Swap-AB, one weight tile per CTA): the reduction's K steps are split over the
  // k_splits CTAs of a thread-block cluster (consecutive blockIdx.x), k_tiles_per_split steps
  // each; the partial sums meet in distributed shared memory and cluster rank 0 adds them in rank
  // order and runs the epilogue. 1 = off.
  int k_splits;
  int k_tiles_per_split;
  // Balanced schedule (1; Swap-AB without split-K, chained weight tiles, G <= 8 * threads): the
  // work items (active token tile j, weight tile w), j-major, are split into gridDim.x contiguous
  // ranges of equal length (+-1); a CTA's range spans at most kMaxSegments token tiles (the host
  // sizes the grid so). Active token tiles come from the counts (a block-wide scan in every CTA),
  // so the grid is one wave whatever the routing and no CTA slot runs a tail alone. 0: the grouped
  // raster over (token tile bound, weight chunk), inactive CTAs exit.
  int flat;
  // With flat: the dynamic balanced schedule (grouped_schedule.cuh, "The dynamic balanced
  // schedule"): the work counter, zero when the grid starts (null: the static ranges).
  int* queue;
  // Zeroed by thread 0 of CTA 0 after griddepcontrol.wait (GroupedGemmArgs::zero_queue), or null.
  int* zero_queue;
  // weight TMA: n_sub boxes per K step (sub s: q = s >> 1, h = s & 1), each sub_rows smem rows;
  // coordinate d (1..3) = w * mw[d-1] + q * mq[d-1] + h * mh[d-1]; dim 0 = K, dim 4 = expert.
  int n_sub, sub_rows;
  uint32_t sub_bytes;
  int mw[3], mq[3], mh[3];
  int sub_col_w, sub_col_q, sub_col_limit;  // a sub-box is loaded iff w*sub_col_w + q*sub_col_q < limit
  int out_cols;       // columns of out: N (GEMM1) or K (GEMM2)
  int bias_stride;    // bias elements per expert
  int bias_row_mul;   // gated: gate bias row of column n = n * mul, up = n * mul + up_off
  int bias_up_off;
  int act_kind;       // ActivationKind, or -1: identity (GEMM2)
  float alpha, limit;
  int out_unpadded;   // 1: out row = offsets[e] + i (GEMM2); 0: padded_offsets[e] + i (GEMM1)
  int staged_epilogue;  // normal family: outputs staged in shared memory, written as 16-byte row chunks
  // Under PDL: trigger dependents at once and issue the weight loads of the first ring of stages
  // before griddepcontrol.wait (only the activation loads wait), so that weight streaming overlaps
  // the predecessor's tail; the expert lookup reads the plan before the wait. Safe only when some
  // kernel strictly between the plan's writer and this grid waits before it triggers (pdl_enter):
  // then, when this grid starts, that kernel has passed its wait, so the plan has completed. In the
  // layer the permute is that kernel for GEMM1 and for GEMM2 (plan -> permute -> GEMM1 -> GEMM2);
  // not with gathered rows (GEMM1 straight after the plan).
  int early_weights;
  // With early_weights: the weight stages issued before the wait (1..kStages; then dependents
  // launch at once). 0: only the plan lookup runs ahead of the wait and the dependents launch after
  // it, so that nothing streams while the predecessor (a short latency-bound permute or quantise)
  // runs: a ring of weight loads per CTA issued then delayed the permute of 1 token from ~2 to ~11
  // us (H200 timeline, session 12).
  int early_stages;
  uint64_t w_hint;  // the weight TMA's L2 hint (GroupedGemmArgs::weights_evict_first)
  int early_span;   // GroupedGemmArgs::early_weights_span
  int out_keep_l2;  // Swap-AB outputs stored with L2 evict_last (out_keep_l2_switch)
  // GEMM1 reading its A rows straight from x in token order (no permuted copy): row i of expert e
  // is x[row_token[offsets[e] + i]]; the producer threads gather them with cp.async (null: TMA of a).
  const __nv_bfloat16* gather_x;
  int64_t gather_stride;  // elements between rows of x
  const int32_t* row_token;
  // Swap-AB: the weights pre-tiled into the stage images the TMA boxes above would produce
  // (pack_grouped_gemm_weights): stage (e, w, kt) is the 8 KB at ((e * w_tiles + w) * k_tiles + kt)
  // * 8192, one bulk copy. Null: the boxes of tm_w.
  const uint8_t* w_packed;
  int red;                // reduction length (K of GEMM1)
  // Diagnostic timeline (set_grouped_gemm_trace; nullptr in production): per CTA kTraceSlots
  // values at trace + blockIdx.x * kTraceSlots, see gemm_stamp.
  unsigned long long* trace;
};

// The diagnostic timeline's slots per CTA (globaltimer ns): [0] entry, [1] expert known (after the
// lookup), [2] producer past the predecessor wait (first activation load), [3] consumer: first
// stage full, [4] consumer: last main loop done, [5] consumer: epilogue done; [6] SM id, [7]
// expert (-1: the CTA exited without work).
constexpr int kTraceSlots = 8;
__device__ __forceinline__ void gemm_stamp(unsigned long long* trace, int slot) {
  if (trace != nullptr) trace[blockIdx.x * kTraceSlots + slot] = globaltimer_ns();
}
// A stamp in a hot loop (the FP8 kernel's K loop and tile loop, session 45): `trace` (a kernel
// parameter) is tested on its own first, so that without a trace the stamp costs a compare and a
// branch. Written as `if (si == 0 && w == w_begin && kt == kt_begin && tid == 0) gemm_stamp(...)`,
// ptxas computed the conditions as predicates at every K stage and issued the stamp's instructions
// predicated off: 12-14 per stage (SASS of the FP8 Swap-AB kernels), ~7 % of a 64 x 32 GEMM2 tile's
// consumer instructions with K = 192. Tried and not kept: the first-stage stamp moved before the
// tile loop (the FP8 pair / H-quantising instances, and the BF16 kernels, then built their WGMMA
// descriptors in vector registers with R2UR moves, and the BF16 loops grew); this form in the BF16
// kernel's loop (ptxas still if-converted it there; those loops keep `if (...) gemm_stamp`).
template <class Cond>
__device__ __forceinline__ void gemm_stamp_if(unsigned long long* trace, int slot, Cond&& cond) {
  if (trace != nullptr) [[unlikely]] {
    if (cond()) trace[blockIdx.x * kTraceSlots + slot] = globaltimer_ns();
  }
}
__device__ __forceinline__ void gemm_trace_value(unsigned long long* trace, int slot, long long v) {
  if (trace != nullptr) trace[blockIdx.x * kTraceSlots + slot] = static_cast<unsigned long long>(v);
}

// cp.async of 16 bytes (zero-filled when src_bytes == 0) and the mbarrier arrival that fires when
// this thread's earlier cp.asyncs have landed (noinc: it counts as one of the barrier's arrivals).
__device__ __forceinline__ void cp_async_16(uint32_t smem_dst, const void* gsrc, uint32_t src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_dst), "l"(gsrc), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_arrive_noinc(uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(cute::cast_smem_ptr_to_uint(bar)) : "memory");
}

// Gathered A rows (both kernels' gather_x): this producer thread's cp.asyncs of one stage: chunk c
// (16 bytes) of rows r_first + (P / 8) m of the token tile, from row tok[r] of x at element kc,
// placed as TMA's 128-byte swizzle would place them (chunk c of row r at r * 128 + ((c ^ (r & 7))
// << 4) of the stage at act_base; a stage's row is 128 bytes: 64 bf16 or 128 e4m3). Rows with
// tok[r] < 0 (past the count) and chunks at or past `red` elements (past K) are zero-filled.
template <int kRowsPerThread, int P, class T>
__device__ __forceinline__ void gather_stage_rows(uint32_t act_base, const int* tok, const T* x, int64_t stride, int kc,
                                                  int red, int r_first, int c) {
  CUTE_UNROLL
  for (int m = 0; m < kRowsPerThread; ++m) {
    const int r = r_first + (P / 8) * m;
    const int t = tok[r];
    const bool valid = t >= 0 && kc < red;
    const T* src = x + (valid ? int64_t(t) * stride + kc : 0);
    cp_async_16(act_base + uint32_t(r * 128 + ((c ^ (r & 7)) << 4)), src, valid ? 16u : 0u);
  }
}

// sigmoid_f, activate_ct, ActKind, with_activation: kernels/common/activation_math.cuh

// Split-K over a thread-block cluster (Swap-AB, one weight tile per CTA; both the BF16 and FP8
// kernels): after the main loop, rank `split` of `splits` holds a partial sum in `accum` (kVals
// fp32 per consumer thread, kThreads consumer threads). Ranks 1.. leave theirs in their own idle
// weight ring `red` as float4 chunks [chunk][thread] (conflict-free); rank 0 reads them through
// distributed shared memory (mapa + ld.shared::cluster) and adds them in rank order, the same bits
// every run. The named barrier first: wgmma.wait_group covers only the executing warp, and the
// chunks span other warps' weight rows. The second cluster barrier keeps the other ranks' shared
// memory alive until rank 0 has read it. Every thread of every CTA of the cluster must call the
// two cluster barriers: the producer warp calls splitk_producer_barriers(). Returns true on rank 0
// (which then runs the epilogue).
template <int kThreads, class Accum>
__device__ __forceinline__ bool splitk_cluster_reduce(Accum& accum, float* red, int split, int splits, int tid) {
  constexpr int kVals = decltype(cute::size(accum))::value;
  static_assert(kVals % 4 == 0);
  constexpr int kChunks = kVals / 4;
  cutlass::arch::NamedBarrier::sync(kThreads, 1);
  if (split != 0) {
    CUTE_UNROLL
    for (int c = 0; c < kChunks; ++c)
      *reinterpret_cast<float4*>(red + (c * kThreads + tid) * 4) =
          make_float4(accum(4 * c), accum(4 * c + 1), accum(4 * c + 2), accum(4 * c + 3));
  }
  cute::cluster_sync();
  if (split == 0) {
    const uint32_t local = cute::cast_smem_ptr_to_uint(red);
    for (int r = 1; r < splits; ++r) {
      uint32_t remote;
      asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(r));
      CUTE_UNROLL
      for (int c = 0; c < kChunks; ++c) {
        float v0, v1, v2, v3;
        asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
                     : "=f"(v0), "=f"(v1), "=f"(v2), "=f"(v3)
                     : "r"(remote + uint32_t((c * kThreads + tid) * 16))
                     : "memory");
        accum(4 * c) += v0;
        accum(4 * c + 1) += v1;
        accum(4 * c + 2) += v2;
        accum(4 * c + 3) += v3;
      }
    }
  }
  cute::cluster_sync();
  return split == 0;
}

// The producer warp's share of splitk_cluster_reduce's two cluster barriers.
__device__ __forceinline__ void splitk_producer_barriers() {
  __syncwarp();
  cute::cluster_sync();
  cute::cluster_sync();
}

// Two floats as one bf16x2 word (round to nearest even; `lo` in the low half).
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// The Swap-AB epilogue's stores, shared by the BF16 and FP8 kernels: the consumer warpgroup puts
// its tile's bf16 outputs (token row t, tile column c < kCols: 64, or 32 when gated) into shared
// memory, then every thread stores whole 16-byte chunks of output rows. Straight from the fragment
// each value was a 2-byte store (STG.U16, T/2 per thread per tile); their registers stayed locked
// until the store queue took them, and the next tile's first instructions reusing those registers
// waited on it (ncu, qwen235-tp8-fp8c GEMM2 at 256 tokens, session 21: 19 % of the stall samples,
// the producer then waiting on empty stages). Row stride kCols + 8 elements: the puts (8 lanes on
// consecutive columns, 4 token rows) are free of bank conflicts, and so are the 16-byte reads of
// 64-column tiles; with 32 columns (gated, 80-byte rows) a quarter warp's reads span two rows that
// share 4 banks (2-way; no padding serves both the puts and these reads). The output's
// columns (out_cols) and row stride are multiples of 8 and `out` is 16-byte aligned (checked on the
// host), so a chunk is wholly in or out.
template <int kTok, int kCols>
struct SwapStage {
  static constexpr int kLd = kCols + 8;
  static constexpr int kBarrier = 5;  // named barrier of the consumer warpgroup (1-3: other epilogues)
  __nv_bfloat16* buf;
  // Before the first put of a tile: every thread has read the previous tile's chunks.
  __device__ __forceinline__ void open() const { cutlass::arch::NamedBarrier::sync(128, kBarrier); }
  __device__ __forceinline__ void put(int t, int c, float v) const { buf[t * kLd + c] = __float2bfloat16_rn(v); }
  // The consumer warpgroup's whole tile at once (the FP8 kernel's Swap-AB puts): stmatrix .trans of kMats 8x8
  // bf16 matrices per warp. The accumulator fragment of one warp and one 8-token column block j is
  // two 8x8 matrices (its 16 weight rows) whose thread t holds row t/4, tokens 2(t%4) and +1, the
  // layout stmatrix takes; transposed, each lands as 8 token rows of 8 consecutive columns. Matrix
  // m: tokens 8 (m / kPerJ) .., columns warp * 8 kPerJ + 8 (m % kPerJ) .. (kPerJ = kCols / 32: 2
  // plain, 1 gated, whose warp holds 8 output columns); packed[m]: this thread's two tokens as a
  // bf16x2 (low half the lower token). Replaces T/2 two-byte stores, their address arithmetic and
  // row tests per thread by T/16 .. T/32 instructions; rows past the count are written too (flush
  // stores only valid rows). kLd * 2 bytes and the column offsets keep every row address 16-byte
  // aligned.
  // The placement as functions (checked on the host against CuTe's partition of the WGMMA
  // accumulators and stmatrix's fragment layout: swap_stsm_layout_check(), a CPU test): matrix m's
  // stored row k (its k-th token) is buffer row matrix_row(m, k) from column matrix_col(m, warp); put_values'
  // register m packs the outputs of value indices packed_value(m, 0) (low half) and (m, 1).
  static constexpr int kPerJ = kCols / 32;
  __host__ __device__ static constexpr int matrix_row(int m, int k) { return 8 * (m / kPerJ) + k; }
  __host__ __device__ static constexpr int matrix_col(int m, int warp) { return warp * 8 * kPerJ + 8 * (m % kPerJ); }
  __host__ __device__ static constexpr int packed_value(int m, int h) { return kPerJ == 1 ? 4 * m + h : 4 * (m / 2) + 2 * (m % 2) + h; }
  template <int kMats>
  __device__ __forceinline__ void put_matrices(const uint32_t (&packed)[kMats], int warp, int lane) const {
    static_assert(kMats == kTok / 8 * kPerJ && (kLd * 2) % 16 == 0);
    auto row_addr = [&](int m) -> cute::uint128_t& {
      return *reinterpret_cast<cute::uint128_t*>(buf + matrix_row(m, lane & 7) * kLd + matrix_col(m, warp));
    };
    if constexpr (kMats == 1) {
      cute::SM90_U16x2_STSM_T::copy(packed[0], row_addr(0));  // (lanes 0-7 give the rows)
    } else if constexpr (kMats == 2) {
      cute::SM90_U16x4_STSM_T::copy(packed[0], packed[1], row_addr((lane >> 3) & 1));  // (lanes 0-15)
    } else {
      static_assert(kMats % 4 == 0);
      CUTE_UNROLL
      for (int g = 0; g < kMats; g += 4)
        cute::SM90_U16x8_STSM_T::copy(packed[g], packed[g + 1], packed[g + 2], packed[g + 3], row_addr(g + (lane >> 3)));
    }
  }
  // put_matrices of the tile's outputs: val(i) is the output of accumulator i (plain) or of gate i
  // and up i + 2 (gated, i = 4j + v0), i.e. of this thread's token 8j + 2(lane%4) + v0 (i = 4j +
  // 2v1 + v0 plain, weight row + 8 v1). Every i the per-value puts cover, rows past the count too.
  template <class F>
  __device__ __forceinline__ void put_values(F&& val, int warp, int lane) const {
    constexpr int kMats = kTok / 8 * kPerJ;
    uint32_t packed[kMats];
    CUTE_UNROLL
    for (int m = 0; m < kMats; ++m) packed[m] = pack_bf16x2(val(packed_value(m, 0)), val(packed_value(m, 1)));
    put_matrices(packed, warp, lane);
  }
  // Rows [0, rows_valid) of the tile to out rows row0.., columns col0.. (below out_cols). keep_l2:
  // the stores carry the L2 policy evict_last (Params::out_keep_l2: out_keep_l2_switch).
  __device__ __forceinline__ void flush(__nv_bfloat16* out, int64_t row0, int64_t ld, int col0, int out_cols,
                                        int rows_valid, int tid, bool keep_l2 = false) const {
    cutlass::arch::NamedBarrier::sync(128, kBarrier);
    constexpr int kChunks = kCols / 8;
    uint64_t policy = 0;
    if (keep_l2) asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    CUTE_UNROLL
    for (int c0 = 0; c0 < kTok * kChunks; c0 += 128) {
      const int c = c0 + tid;
      const int t = c / kChunks, col = col0 + (c % kChunks) * 8;
      if ((kTok * kChunks % 128 == 0 || c < kTok * kChunks) && t < rows_valid && col < out_cols) {
        uint4* dst = reinterpret_cast<uint4*>(out + (row0 + t) * ld + col);
        const uint4 v = *reinterpret_cast<const uint4*>(buf + t * kLd + (c % kChunks) * 8);
        if (keep_l2)
          asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;" ::"l"(dst), "r"(v.x), "r"(v.y),
                       "r"(v.z), "r"(v.w), "l"(policy)
                       : "memory");
        else
          *dst = v;
      }
    }
  }
};

// The normal family's epilogue, shared by the BF16 and FP8 kernels (the same 64 x 128 fp32
// accumulator fragment per consumer warpgroup: value (v0, v1, j) at index v0 + 2*v1 + 4*j, token row
// +8*v1, column 2*(lane%4)+v0+8*j). `accum` holds the pre-activation values (the FP8 kernel has
// applied its scales); adds the expert bias, applies the activation (gated: gate columns 0..63 of
// the tile, up columns 64..127), rounds to bf16 and writes weight tile w's columns of the tile's
// valid rows. Staged (p.staged_epilogue): through `stage_out` (2 x 64 rows of kLd bf16), then whole
// 16-byte row chunks; else bf16x2 stores straight from the fragment.
template <bool kGated, int kLd, class P, class Accum, class Coord>
__device__ __forceinline__ void normal_epilogue(const P& p, const Accum& accum, const Coord& tCcC, int tid, int w,
                                                const float* bias_e, int rows_valid, int64_t out_row0,
                                                __nv_bfloat16* stage_out) {
  using cute::get;
  __nv_bfloat16* out = p.out;
  const int64_t ld = p.out_cols;
  if (p.staged_epilogue) {
    // Staged: this warpgroup's 64 rows go to shared memory as bf16 (bias and activation
    // applied, as below), then every thread stores whole 16-byte chunks of rows, so a warp
    // writes 2 rows x 256 B (gated: 4 rows x 128 B) per instruction instead of 8 x 16 B.
    const int wg = tid / 128, t128 = tid % 128;
    __nv_bfloat16* st = stage_out + wg * 64 * kLd;
    const int tile_cols = kGated ? 64 : 128;
    const int n_base = w * tile_cols;
    cutlass::arch::NamedBarrier::sync(128, 1 + wg);  // the previous tile's chunks are all read
    with_activation<kGated>(p.act_kind, [&](auto kind) {
      constexpr int kK = decltype(kind)::value;
      CUTE_UNROLL
      // gated: i = 2*v1 + 4*j (j < 8) is the gate pair, i + 32 the up pair (columns + 64)
      for (int ii = 0; ii < (kGated ? 32 : 64); ii += 2) {
        const int r = get<0>(tCcC(ii)) - 64 * wg;  // row within this warpgroup
        const int c = get<1>(tCcC(ii));            // column within the tile
        const int n = n_base + c;
        float a0, a1;
        if constexpr (kGated) {
          float g0 = accum(ii), g1 = accum(ii + 1), u0 = accum(ii + 32), u1 = accum(ii + 33);
          if (bias_e && n < p.out_cols) {
            g0 += __ldg(bias_e + n * p.bias_row_mul);
            g1 += __ldg(bias_e + (n + 1) * p.bias_row_mul);
            u0 += __ldg(bias_e + n * p.bias_row_mul + p.bias_up_off);
            u1 += __ldg(bias_e + (n + 1) * p.bias_row_mul + p.bias_up_off);
          }
          a0 = activate_ct<kK>(g0, u0, p.alpha, p.limit);
          a1 = activate_ct<kK>(g1, u1, p.alpha, p.limit);
        } else {
          float v0 = accum(ii), v1 = accum(ii + 1);
          if (bias_e && n < p.out_cols) {
            v0 += __ldg(bias_e + n);
            v1 += __ldg(bias_e + n + 1);
          }
          a0 = activate_ct<kK>(v0, 0.f, p.alpha, p.limit);
          a1 = activate_ct<kK>(v1, 0.f, p.alpha, p.limit);
        }
        *reinterpret_cast<__nv_bfloat162*>(st + r * kLd + c) = __floats2bfloat162_rn(a0, a1);
      }
    });
    cutlass::arch::NamedBarrier::sync(128, 1 + wg);  // the warpgroup's tile is in shared memory
    constexpr int kChunksPerRow = (kGated ? 64 : 128) / 8;
    const int row_base = 64 * wg;
    CUTE_UNROLL
    for (int q = 0; q < 64 * kChunksPerRow / 128; ++q) {
      const int chunk = t128 + 128 * q;
      const int r = chunk / kChunksPerRow, c8 = chunk % kChunksPerRow;
      const int n = n_base + c8 * 8;
      if (row_base + r < rows_valid && n < p.out_cols)  // out_cols % 8 == 0: whole chunks
        *reinterpret_cast<uint4*>(out + (out_row0 + row_base + r) * ld + n) =
            *reinterpret_cast<const uint4*>(st + r * kLd + c8 * 8);
    }
  } else if constexpr (kGated) {
    const int n_base = w * 64;
    with_activation<kGated>(p.act_kind, [&](auto kind) {
      constexpr int kK = decltype(kind)::value;
      CUTE_UNROLL
      for (int j = 0; j < 8; ++j) {
        CUTE_UNROLL
        for (int v1 = 0; v1 < 2; ++v1) {
          const int i = 2 * v1 + 4 * j;  // gate at i, i+1; up at i+32, i+33 (columns + 64)
          const int r = get<0>(tCcC(i));
          const int n = n_base + get<1>(tCcC(i));
          if (r < rows_valid && n < p.out_cols) {  // N % 8 == 0 and n even: n + 1 < N too
            float g0 = accum(i), g1 = accum(i + 1), u0 = accum(i + 32), u1 = accum(i + 33);
            if (bias_e) {
              g0 += __ldg(bias_e + n * p.bias_row_mul);
              g1 += __ldg(bias_e + (n + 1) * p.bias_row_mul);
              u0 += __ldg(bias_e + n * p.bias_row_mul + p.bias_up_off);
              u1 += __ldg(bias_e + (n + 1) * p.bias_row_mul + p.bias_up_off);
            }
            *reinterpret_cast<__nv_bfloat162*>(out + (out_row0 + r) * ld + n) = __floats2bfloat162_rn(
                activate_ct<kK>(g0, u0, p.alpha, p.limit), activate_ct<kK>(g1, u1, p.alpha, p.limit));
          }
        }
      }
    });
  } else {
    const int n_base = w * 128;
    with_activation<kGated>(p.act_kind, [&](auto kind) {
      constexpr int kK = decltype(kind)::value;
      CUTE_UNROLL
      for (int i = 0; i < 64; i += 2) {
        const int r = get<0>(tCcC(i));
        const int n = n_base + get<1>(tCcC(i));
        if (r < rows_valid && n < p.out_cols) {
          float v0 = accum(i), v1 = accum(i + 1);
          if (bias_e) {
            v0 += __ldg(bias_e + n);
            v1 += __ldg(bias_e + n + 1);
          }
          *reinterpret_cast<__nv_bfloat162*>(out + (out_row0 + r) * ld + n) = __floats2bfloat162_rn(
              activate_ct<kK>(v0, 0.f, p.alpha, p.limit), activate_ct<kK>(v1, 0.f, p.alpha, p.limit));
        }
      }
    });
  }
}

// L2 hints: activations are re-read by every weight tile of the token tile; weights stream
// (evict_normal, or evict_first with GroupedGemmArgs::weights_evict_first).
constexpr uint64_t kHintAct = uint64_t(cute::TMA::CacheHintSm90::EVICT_LAST);
constexpr uint64_t kHintW = uint64_t(cute::TMA::CacheHintSm90::EVICT_NORMAL);
constexpr uint64_t kHintWFirst = uint64_t(cute::TMA::CacheHintSm90::EVICT_FIRST);
// Swap-AB epilogues storing their outputs (H, the expert rows) with the L2 policy evict_last, so
// that the weight stream of the same kernel does not push them out before their reader (GEMM2, the
// combine) runs: on in the BF16 kernel, off in the FP8 kernel (H100, session 49 call 8, two
// alternated rounds at 16 / 64 / 256 tokens: BF16 layers 0.997 on the geometric mean of 12 points,
// qwen235-tp8 at 64 / 256 tokens 1.2-1.4 % faster (its GEMM2 stage 88.2 -> 84.3 us at 256,
// presumably GEMM1's H still in L2), none slower by more than the rounds' spread; FP8 1.003 of 6,
// dsv3-tp8-fp8b at 64 / 256 tokens 1.4 / 0.9 % slower). FUSEDMOE_OUT_KEEP_L2=0 / 1 (read once)
// forces it off / on in both.
inline int out_keep_l2_switch(bool fp8) {
  static const int v = env_int("FUSEDMOE_OUT_KEEP_L2").value_or(-1);
  return v < 0 ? (fp8 ? 0 : 1) : (v != 0 ? 1 : 0);
}

// kBalanced: the balanced and dynamic schedules compiled in (Params::flat / Params::queue honoured);
// without it the kernel runs the grouped raster only, and is half the code: at 1-4 tokens a CTA
// fetches its instructions cold at every call, so the raster-only instance is what such launches
// run (launch_instance; session 19 measured the first full stage 2-4 us later after the schedules
// doubled the kernel).
template <class Cfg, bool kGated, bool kBalanced>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    sm90_bf16_grouped_gemm_kernel(const __grid_constant__ CUtensorMap tm_act,
                                  const __grid_constant__ CUtensorMap tm_w, const Params p) {
#if defined(CUTLASS_ARCH_MMA_SM90A_ENABLED)
  using namespace cute;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  constexpr int kStages = Cfg::kStages;

  extern __shared__ uint8_t smem_raw[];
  const uint32_t smem_base = cute::cast_smem_ptr_to_uint(smem_raw);
  auto& ss = *reinterpret_cast<SharedStorage<Cfg>*>(smem_raw + ((1024u - (smem_base & 1023u)) & 1023u));

  const int tid = int(threadIdx.x);
  const int warp = __shfl_sync(0xffffffff, tid / 32, 0);
  const int lane = tid % 32;

  if (tid == 0) {
    gemm_stamp(p.trace, 0);
    CUTE_UNROLL
    for (int s = 0; s < kStages; ++s) {
      // gathered A: the weight TMA's arrival + one cp.async arrival per producer thread
      Barrier::init(&ss.full[s], p.gather_x != nullptr ? 1 + Cfg::kProducerThreads : 1);
      Barrier::init(&ss.empty[s], Cfg::kPing ? Cfg::kConsumerWarps / 2 : Cfg::kConsumerWarps);  // (ping-pong: one warpgroup per stage)
    }
    if constexpr (Cfg::kPing) {
      Barrier::init(&ss.turn[0], 1);
      Barrier::init(&ss.turn[1], 1);
    }
    ss.nseg = 0;
    cutlass::arch::fence_barrier_init();
  }

  // ---- which work: (token tile, weight chunk) from the grouped raster, or the balanced ranges ----
  constexpr int kGroupM = 8;
  // (split-K exists in the Swap-AB family only: the normal family keeps its registers)
  const bool splitting = Cfg::kSwapAB && p.k_splits > 1;
  const int split = splitting ? int(blockIdx.x) % p.k_splits : 0;  // == rank in the cluster
  const int kt_begin = splitting ? split * p.k_tiles_per_split : 0;
  const int kt_end = splitting ? min(p.k_tiles, kt_begin + p.k_tiles_per_split) : p.k_tiles;
  __syncthreads();

  // kernels/common/pdl.cuh: the set-up above touched only shared memory. With early_weights the
  // wait moves below (the producer streams its first weight stages before it; the expert lookup
  // reads the plan, complete since two launches back, see Params::early_weights).
  const bool prefetch = p.early_weights && p.early_stages > 0;
  if (prefetch) pdl_launch_dependents();
  else if (!p.early_weights) pdl_enter();
  // (L2 loads of the plan: with early_weights they run before griddepcontrol.wait, see Params)
  {
    grouped_schedule::Work wk{p.counts, p.offsets, p.padded_offsets, p.num_groups,
                              p.out_unpadded != 0 || p.gather_x != nullptr, p.w_tiles, 0, 0, 0};
    const bool raster = !kBalanced || (p.queue == nullptr && !p.flat);
    if (raster) {
      const int pid = splitting ? int(blockIdx.x) / p.k_splits : int(blockIdx.x);
      const int per_group = kGroupM * p.w_chunks;
      const int group = pid / per_group;
      const int first_m = group * kGroupM;
      const int gm = min(p.m_tiles - first_m, kGroupM);
      const int in_group = pid - group * per_group;
      const int m_tile = first_m + in_group % gm;
      const int w_chunk = in_group / gm;
      wk.row0 = m_tile * Cfg::kTokTile;
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
    gemm_stamp(p.trace, 1);
    uint32_t smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    gemm_trace_value(p.trace, 6, smid);
    gemm_trace_value(p.trace, 7, nseg > 0 ? (dyn ? 0 : ss.seg[0].e) : -1);  // (dynamic: expert not recorded)
  }
  if (nseg == 0) return;  // beyond padded_offsets[G], in an expert's padding, or no items
  // segment s of this CTA: as stored (one thread), or every field warp-uniform (whole warps)
  auto segment_1 = [&](int s) { return ss.seg[s]; };
  auto segment = [&](int s) { return grouped_schedule::uniform_segment(ss.seg[s]); };
  using Element = typename Cfg::Element;
  Tensor sAct = make_tensor(make_smem_ptr(ss.act.begin()), typename Cfg::SmemLayoutAct{});  // (T,BK,PIPE)
  Tensor sW = make_tensor(make_smem_ptr(ss.w.begin()), typename Cfg::SmemLayoutW{});        // (W,BK,PIPE)

  if (warp >= Cfg::kConsumerWarps) {
    // ================= producer =================
    if constexpr (Cfg::kProducerThreads == 128) cutlass::arch::warpgroup_reg_dealloc<Cfg::kProducerRegs>();
    // Sub-boxes of weight tile w that hold any in-range row (the others stay unloaded: their rows
    // only feed output rows/columns the epilogue never stores), and the weight TMA of one stage.
    auto weight_subs = [&](int w, uint32_t* mask) {
      uint32_t m = 0;
      int n = 0;
      for (int s = 0; s < p.n_sub; ++s) {
        if (w * p.sub_col_w + (s >> 1) * p.sub_col_q < p.sub_col_limit) {
          m |= 1u << s;
          ++n;
        }
      }
      *mask = m;
      return n;
    };
    // the weight bytes a stage expects: the in-range sub-boxes, or the whole packed image
    auto w_bytes = [&](int valid_subs) {
      return p.w_packed != nullptr ? uint32_t(Cfg::kWRows * Cfg::kTileK * sizeof(Element))
                                   : uint32_t(valid_subs) * p.sub_bytes;
    };
    auto load_weights = [&](int stage, int e, int w, int k0, uint32_t sub_mask) {
      Element* w_dst = ss.w.begin() + stage * (Cfg::kWRows * Cfg::kTileK);
      if (p.w_packed != nullptr) {
        constexpr uint32_t kBytes = uint32_t(Cfg::kWRows * Cfg::kTileK * sizeof(Element));
        const uint8_t* src = p.w_packed + ((int64_t(e) * p.w_tiles + w) * p.k_tiles + k0 / Cfg::kTileK) * kBytes;
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
            ::"r"(cute::cast_smem_ptr_to_uint(w_dst)), "l"(src), "r"(kBytes),
            "r"(cute::cast_smem_ptr_to_uint(&ss.full[stage])), "l"(p.w_hint)
            : "memory");
        return;
      }
      for (int s = 0; s < p.n_sub; ++s) {
        if (!(sub_mask & (1u << s))) continue;
        const int q = s >> 1, h = s & 1;
        SM90_TMA_LOAD_5D::copy(&tm_w, &ss.full[stage], p.w_hint, w_dst + s * p.sub_rows * Cfg::kTileK, k0,
                               w * p.mw[0] + q * p.mq[0] + h * p.mh[0],
                               w * p.mw[1] + q * p.mq[1] + h * p.mh[1],
                               w * p.mw[2] + q * p.mq[2] + h * p.mh[2], e);
      }
    };
    if (p.gather_x != nullptr) {
      // Gathered A rows: every producer thread copies 16-byte chunks of the tile's rows from x with
      // cp.async, swizzled as TMA's 128-byte swizzle would place them (chunk c of row r at
      // r * 128 + ((c ^ (r & 7)) << 4) within the stage); rows past the count and K past the
      // reduction are zero-filled. Thread t owns chunk t % 8 of rows t / 8 + (P / 8) * m.
      constexpr int P = Cfg::kProducerThreads;
      constexpr int kRowsPerThread = Cfg::kTokTile * 8 / P;
      static_assert(Cfg::kTokTile * 8 % P == 0 && kRowsPerThread >= 1);
      const int ptid = tid - Cfg::kConsumerThreads;
      const int c = ptid & 7, r_first = ptid >> 3;
      // (tokens are re-read from shared memory per stage: the normal family's producer warpgroup
      // runs on 40 registers after setmaxnreg)
      if (ptid == 0) cute::prefetch_tma_descriptor(reinterpret_cast<const cute::TmaDescriptor*>(&tm_w));
      int stage = 0;
      uint32_t phase = 0;
      for (int si = 0; si < nseg; ++si) {
       const Segment sg = segment(si);
       const int rows_valid = min(Cfg::kTokTile, sg.count - sg.local0);
       const int64_t urow0 = int64_t(sg.off) + sg.local0;  // first unpadded row
       if (si > 0) cutlass::arch::NamedBarrier::sync(P, 3);  // every thread has issued from the last rows
       for (int i = ptid; i < Cfg::kTokTile; i += P)
         ss.gather_tok[i] = i < rows_valid ? __ldcg(p.row_token + urow0 + i) : -1;
       cutlass::arch::NamedBarrier::sync(P, 3);
       for (int w = sg.wb; w < sg.we; ++w) {
        uint32_t sub_mask = 0;
        const int valid_subs = weight_subs(w, &sub_mask);
        for (int kt = kt_begin; kt < kt_end; ++kt) {
          const int k0 = kt * Cfg::kTileK;
          Barrier::wait(&ss.empty[stage], phase ^ 1u);
          if (ptid == 0) {
            Barrier::arrive_and_expect_tx(&ss.full[stage], w_bytes(valid_subs));
            load_weights(stage, sg.e, w, k0, sub_mask);
          }
          const uint32_t act_base =
              cute::cast_smem_ptr_to_uint(ss.act.begin() + stage * (Cfg::kTokTile * Cfg::kTileK));
          gather_stage_rows<kRowsPerThread, P>(act_base, ss.gather_tok, p.gather_x, p.gather_stride, k0 + c * 8, p.red,
                                               r_first, c);
          cp_async_arrive_noinc(&ss.full[stage]);
          if (++stage == kStages) { stage = 0; phase ^= 1u; }
        }
       }
      }
      asm volatile("cp.async.wait_all;" ::: "memory");  // nothing in flight when this thread retires
    } else if (warp == Cfg::kConsumerWarps && cute::elect_one_sync()) {
      // The activation boxes of a segment (Cfg::kActBoxRows): those holding a row below the count.
      auto act_boxes = [](const Segment& sg) {
        if constexpr (Cfg::kTokTile == Cfg::kActBoxRows) return 1;  // (token tiles 8, 16: one box)
        else return (min(Cfg::kTokTile, sg.count - sg.local0) + Cfg::kActBoxRows - 1) / Cfg::kActBoxRows;
      };
      // stage bases by plain arithmetic: every stage (and box) starts on a 1024-byte swizzle-pattern
      // boundary (calling the swizzled layout as a function would XOR element offsets)
      auto load_act = [&](int stage, int k0, int row0, int boxes) {
        Element* act_dst = ss.act.begin() + stage * (Cfg::kTokTile * Cfg::kTileK);
        for (int b = 0; b < boxes; ++b)
          SM90_TMA_LOAD_2D::copy(&tm_act, &ss.full[stage], kHintAct, act_dst + b * (Cfg::kActBoxRows * Cfg::kTileK), k0,
                                 row0 + b * Cfg::kActBoxRows);
      };
      cute::prefetch_tma_descriptor(reinterpret_cast<const cute::TmaDescriptor*>(&tm_act));
      cute::prefetch_tma_descriptor(reinterpret_cast<const cute::TmaDescriptor*>(&tm_w));
      int stage = 0;
      uint32_t phase = 0;
      int skip = 0;  // leading (tile, K step) iterations already issued before the wait
      // dynamic schedule: the walk over this CTA's chunks (first: chunk blockIdx.x) and the queue
      grouped_schedule::Work wk{p.counts, p.offsets, p.padded_offsets, p.num_groups, p.out_unpadded != 0, p.w_tiles,
                                0, 0, 0};
      grouped_schedule::DynProducer dp{grouped_schedule::DynWalk{ss.first_tile, &wk}, dc};
      int qn = 0;  // segments handed to the consumers
      if (dyn) dp.begin<Cfg::kTokTile>();
      if (prefetch) {
        // the ring starts empty: its first stages take the weights of the first segment's tiles now
        // (a short reduction spans several tiles), with the whole stage's bytes expected; their
        // activation boxes follow once the predecessor is done
        const Segment s0 = dyn ? dp.cur : segment_1(0);
        if (dyn) ss.seg_q[0] = s0;  // (before the first full barrier's arrive)
        const int boxes0 = act_boxes(s0);
        const int steps = kt_end - kt_begin;
        skip = min(p.early_stages, p.early_span ? steps * (s0.we - s0.wb) : steps);
        for (int i = 0; i < skip; ++i) {
          const int w = s0.wb + i / steps;
          uint32_t sub_mask = 0;
          const int valid_subs = weight_subs(w, &sub_mask);
          Barrier::arrive_and_expect_tx(&ss.full[i],
                                        uint32_t(boxes0) * Cfg::kActBoxBytes + w_bytes(valid_subs));
          load_weights(i, s0.e, w, (kt_begin + i % steps) * Cfg::kTileK, sub_mask);
        }
        pdl_wait();
        gemm_stamp(p.trace, 2);
        for (int i = 0; i < skip; ++i)
          load_act(i, (kt_begin + i % steps) * Cfg::kTileK, s0.poff + s0.local0, boxes0);
      } else {
        gemm_stamp(p.trace, 2);
      }
      // Every stage of segment sg; with `queued`, its queue entry goes out with its first stage.
      auto issue = [&](const Segment& sg, bool queued) {
       const int row0 = sg.poff + sg.local0;  // padded row of the token tile
       const int boxes = act_boxes(sg);
       bool first = true;
       for (int w = sg.wb; w < sg.we; ++w) {
        uint32_t sub_mask = 0;
        const int valid_subs = weight_subs(w, &sub_mask);
        const uint32_t stage_bytes = uint32_t(boxes) * Cfg::kActBoxBytes + w_bytes(valid_subs);
        for (int kt = kt_begin; kt < kt_end; ++kt) {
          if (skip > 0) {
            --skip;
            first = false;
            if (++stage == kStages) { stage = 0; phase ^= 1u; }
            continue;
          }
          // K beyond the reduction length (ragged last step) is zero-filled by TMA in both operands.
          const int k0 = kt * Cfg::kTileK;
          Barrier::wait(&ss.empty[stage], phase ^ 1u);
          if (queued && first) ss.seg_q[qn % grouped_schedule::kDynQueue] = sg;
          first = false;
          Barrier::arrive_and_expect_tx(&ss.full[stage], stage_bytes);
          load_act(stage, k0, row0, boxes);
          load_weights(stage, sg.e, w, k0, sub_mask);
          if (++stage == kStages) { stage = 0; phase ^= 1u; }
        }
       }
       if (queued) ++qn;
      };
      if (!dyn) {
        for (int si = 0; si < nseg; ++si) issue(segment_1(si), false);
      } else {
        dp.run<Cfg::kTokTile>(p.queue, [&](const Segment& sg) { issue(sg, true); });
        // the end: an entry with e = -1 behind a plain arrival on the next stage
        Barrier::wait(&ss.empty[stage], phase ^ 1u);
        ss.seg_q[qn % grouped_schedule::kDynQueue] = Segment{-1, 0, 0, 0, 0, 0, 0, 0};
        Barrier::arrive(&ss.full[stage]);
      }
    }
    if constexpr (Cfg::kSwapAB) {
      if (p.k_splits > 1) splitk_producer_barriers();  // the consumers' split-K reduction
    }
  } else {
    // ================= consumers =================
    if constexpr (Cfg::kConsumerWGs == 2) cutlass::arch::warpgroup_reg_alloc<Cfg::kConsumerRegs>();
    if (prefetch) pdl_wait();  // (their outputs are written after the predecessor is done)
    if constexpr (Cfg::kPing) {
      // Ping-pong (normal family, plain epilogue): the CTA's tiles j = 0, 1, ... (its segments'
      // weight tiles in order) alternate between the warpgroups, j % 2 == wg, each computing all
      // 128 token rows. The producer fills the ring in tile order as before; tile j's K steps are
      // ring positions j * nk + kt, and only the owning warpgroup's 4 warps release them. While one
      // warpgroup runs its epilogue, the other's WGMMAs have the tensor cores (a short reduction,
      // e.g. GEMM2 with K = 192..384, spends about as long in the epilogue as in the main loop).
      // The main loops take turns (ss.turn): tile j's starts once tile j - 1's has passed all its
      // full-barrier waits. Without that a warpgroup coming back for tile j + 2 could wait on
      // position p while p - kStages (the other's) is not filled yet: the barrier would then be two
      // phases behind and its parity test pass at once (stale stage data; session 38's first run).
      static_assert(!kGated, "ping-pong instances: plain epilogue only (the launcher never runs them gated)");
      const int wg = warp / 4, t128 = tid % 128;  // (warp: warp-uniform to the compiler)
      typename Cfg::PingMma tiled_mma;
      auto thr_mma = tiled_mma.get_thread_slice(t128);
      Tensor tCsA = thr_mma.partition_A(sAct);  // (MMA,MMA_M=2,MMA_K,PIPE)
      Tensor tCsB = thr_mma.partition_B(sW);
      Tensor tCrA = thr_mma.make_fragment_A(tCsA);
      Tensor tCrB = thr_mma.make_fragment_B(tCsB);
      using TileMN = Shape<Int<Cfg::kTokTile>, Int<Cfg::kWRows>>;
      Tensor accum = partition_fragment_C(tiled_mma, TileMN{});
      Tensor tCcC = thr_mma.partition_C(make_identity_tensor(TileMN{}));  // (token row, column) of each value
      constexpr int kKBlocks = decltype(size<2>(tCrA))::value;
      static_assert(kKBlocks == Cfg::kTileK / 16);
      constexpr int kVals = decltype(size(accum))::value;
      static_assert(kVals == Cfg::kTokTile * Cfg::kWRows / 128);
      constexpr int kLd = Cfg::kStageRowElems;
      __nv_bfloat16* st = reinterpret_cast<__nv_bfloat16*>(ss.stage_out.begin()) + wg * Cfg::kTokTile * kLd;
      __nv_bfloat16* out = p.out;
      const int64_t ld = p.out_cols;
      const int nk = kt_end - kt_begin;
      int g = 0;  // ring position of tile j's first K step (every tile's, both warpgroups')
      int j = 0;  // the CTA's tile counter
      uint32_t turn_phase = 0;  // parity of this warpgroup's next wait on ss.turn[wg]
      for (int si = 0; si < nseg; ++si) {
        const Segment sg = segment(si);
        const float* bias_e = p.bias ? p.bias + int64_t(sg.e) * p.bias_stride : nullptr;
        const int rows_valid = min(Cfg::kTokTile, sg.count - sg.local0);
        const int64_t out_row0 = int64_t(p.out_unpadded ? sg.off : sg.poff) + sg.local0;
        for (int w = sg.wb; w < sg.we; ++w, ++j, g += nk) {
          if ((j & 1) != wg) continue;
          if (j > 0) {  // tile j - 1 (the other warpgroup's) has passed its waits
            Barrier::wait(&ss.turn[wg], turn_phase);
            turn_phase ^= 1u;
          }
          tiled_mma.accumulate_ = GMMA::ScaleOut::Zero;
          int prev_stage = -1;
          for (int kt = 0; kt < nk; ++kt) {
            const int stage = (g + kt) % kStages;
            const uint32_t phase = uint32_t((g + kt) / kStages) & 1u;
            Barrier::wait(&ss.full[stage], phase);
            if (j == 0 && kt == 0 && t128 == 0) gemm_stamp(p.trace, 3);
            if (p.gather_x != nullptr) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            warpgroup_fence_operand(accum);
            warpgroup_arrive();
            CUTE_UNROLL
            for (int kb = 0; kb < kKBlocks; ++kb) {
              cute::gemm(tiled_mma, tCrA(_, _, kb, stage), tCrB(_, _, kb, stage), accum);
              tiled_mma.accumulate_ = GMMA::ScaleOut::One;
            }
            warpgroup_commit_batch();
            warpgroup_wait<1>();
            warpgroup_fence_operand(accum);
            if (prev_stage >= 0 && lane == 0) cutlass::arch::ClusterBarrier::arrive(&ss.empty[prev_stage]);
            prev_stage = stage;
          }
          // (every position up to this tile's last is filled: the other warpgroup may go on)
          if (t128 == 0) cutlass::arch::ClusterBarrier::arrive(&ss.turn[wg ^ 1]);
          warpgroup_wait<0>();
          warpgroup_fence_operand(accum);
          if (lane == 0) cutlass::arch::ClusterBarrier::arrive(&ss.empty[prev_stage]);
          if (si == nseg - 1 && w == sg.we - 1 && t128 == 0) gemm_stamp(p.trace, 4);
          // epilogue: bias / activation in fp32, bf16 into this warpgroup's buffer, then each valid
          // row out by one asynchronous bulk copy (thread r: row r), so that the warpgroup goes on
          // to its next main loop while the copies drain (synchronous 16-byte stores held their
          // registers on the long scoreboard: ~30 % of the samples, session 38 call 3)
          static_assert(Cfg::kTokTile == 128, "one row per thread of the warpgroup");
          const int n_base = w * Cfg::kWRows;
          // this warpgroup's previous copies have read the buffer (every issuing thread), then all
          asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
          cutlass::arch::NamedBarrier::sync(128, 6 + wg);
          with_activation<false>(p.act_kind, [&](auto kind) {
            constexpr int kK = decltype(kind)::value;
            CUTE_UNROLL
            for (int ii = 0; ii < kVals; ii += 2) {
              const int r = get<0>(tCcC(ii)), c = get<1>(tCcC(ii));
              const int n = n_base + c;
              float v0 = accum(ii), v1 = accum(ii + 1);
              if (bias_e && n < p.out_cols) {
                v0 += __ldg(bias_e + n);
                v1 += __ldg(bias_e + n + 1);
              }
              *reinterpret_cast<__nv_bfloat162*>(st + r * kLd + c) = __floats2bfloat162_rn(
                  activate_ct<kK>(v0, 0.f, p.alpha, p.limit), activate_ct<kK>(v1, 0.f, p.alpha, p.limit));
            }
          });
          // (the generic-proxy writes, seen by the async proxy's reads of other threads' rows)
          asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
          cutlass::arch::NamedBarrier::sync(128, 6 + wg);  // the tile is in shared memory
          const int cols = min(Cfg::kWRows, p.out_cols - n_base);  // out_cols % 8 == 0: 16-byte multiples
          if (t128 < rows_valid && cols > 0) {
            // 16-byte aligned: out (checked by the launcher), ld % 8 == 0, n_base % 128 == 0; the
            // buffer's rows are 272 bytes apart
            asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                         ::"l"(out + (out_row0 + t128) * ld + n_base),
                         "r"(cute::cast_smem_ptr_to_uint(st + t128 * kLd)), "r"(uint32_t(cols) * 2u)
                         : "memory");
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
          }
        }
      }
      // the copies have finished (the buffer is freed with the CTA; the writes are complete)
      asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    } else {
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
    Tensor accum = partition_fragment_C(tiled_mma, TileMN{});
    Tensor tCcC = thr_mma.partition_C(make_identity_tensor(TileMN{}));  // (m, n) of each value
    constexpr int kKBlocks = decltype(size<2>(tCrA))::value;             // 16-wide K steps per stage
    static_assert(kKBlocks == Cfg::kTileK / 16);

    __nv_bfloat16* out = p.out;
    const int64_t ld = p.out_cols;

    int stage = 0;
    uint32_t phase = 0;
    for (int si = 0;; ++si) {
     Segment sg;
     if (dyn) {
       // the producer's next segment, written before its first stage's full barrier completed
       Barrier::wait(&ss.full[stage], phase);
       sg = grouped_schedule::uniform_segment(ss.seg_q[si % grouped_schedule::kDynQueue]);
       if (sg.e < 0) {
         if (tid == 0) gemm_stamp(p.trace, 4);
         break;
       }
     } else {
       if (si >= nseg) break;
       sg = segment(si);
     }
     const float* bias_e = p.bias ? p.bias + int64_t(sg.e) * p.bias_stride : nullptr;
     const int rows_valid = min(Cfg::kTokTile, sg.count - sg.local0);
     const int64_t out_row0 = int64_t(p.out_unpadded ? sg.off : sg.poff) + sg.local0;
     const int w_begin = sg.wb, w_end = sg.we;
     for (int w = w_begin; w < w_end; ++w) {
      tiled_mma.accumulate_ = GMMA::ScaleOut::Zero;
      int prev_stage = -1;
      for (int kt = kt_begin; kt < kt_end; ++kt) {
        Barrier::wait(&ss.full[stage], phase);
        if (si == 0 && w == w_begin && kt == kt_begin && tid == 0) gemm_stamp(p.trace, 3);
        // gathered A was written by cp.async (generic proxy); WGMMA reads it through the async proxy
        if (p.gather_x != nullptr) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        warpgroup_fence_operand(accum);
        warpgroup_arrive();
        CUTE_UNROLL
        for (int kb = 0; kb < kKBlocks; ++kb) {
          cute::gemm(tiled_mma, tCrA(_, _, kb, stage), tCrB(_, _, kb, stage), accum);
          tiled_mma.accumulate_ = GMMA::ScaleOut::One;
        }
        warpgroup_commit_batch();
        warpgroup_wait<1>();
        warpgroup_fence_operand(accum);
        if (prev_stage >= 0 && lane == 0) cutlass::arch::ClusterBarrier::arrive(&ss.empty[prev_stage]);
        prev_stage = stage;
        if (++stage == kStages) { stage = 0; phase ^= 1u; }
      }
      warpgroup_wait<0>();
      warpgroup_fence_operand(accum);
      if (!dyn && si == nseg - 1 && w == w_end - 1 && tid == 0) gemm_stamp(p.trace, 4);
      // the ring continues into the next weight tile: release the last slot too
      if (lane == 0) cutlass::arch::ClusterBarrier::arrive(&ss.empty[prev_stage]);

      // ---------------- epilogue ----------------
      if constexpr (!Cfg::kSwapAB) {
        // accum values (v0, v1, j) at index v0 + 2*v1 + 4*j: row (token) +8*v1, column 2*(lane%4)+v0+8*j
        static_assert(decltype(size(accum))::value == 64);
        normal_epilogue<kGated, Cfg::kStageRowElems>(p, accum, tCcC, tid, w, bias_e, rows_valid, out_row0,
                                                     reinterpret_cast<__nv_bfloat16*>(ss.stage_out.begin()));
      } else {
        // accum (64 weight rows x T tokens): index v0 + 2*v1 + 4*j: weight row warp*16 + lane/4 + 8*v1,
        // token 2*(lane%4) + v0 + 8*j
        constexpr int kVals = decltype(size(accum))::value;
        static_assert(kVals == Cfg::kTokTile / 2 && kVals % 4 == 0);
        if (p.k_splits > 1) {
          // split-K: the ranks' partial sums meet on rank 0 (the weight ring is idle: one tile per CTA)
          static_assert(kVals * 128 * 4 <= int(sizeof(ss.w)), "partials fit in the weight ring");
          if (!splitk_cluster_reduce<Cfg::kConsumerThreads>(accum, reinterpret_cast<float*>(ss.w.begin()), split,
                                                            p.k_splits, tid))
            continue;  // (one weight tile per CTA: leaves the tile loop)
        }
        // outputs staged in shared memory, stored as 16-byte row chunks (SwapStage)
        const SwapStage<Cfg::kTokTile, kGated ? 32 : 64> stage{reinterpret_cast<__nv_bfloat16*>(ss.stage_out.begin())};
        stage.open();
        // one value at a time (session 47: the stmatrix puts, SwapStage::put_values, which the FP8
        // kernel runs, measured level to 1.7 % slower here)
        if constexpr (kGated) {
          // rows r (v1 = 0) = gate, r + 8 (v1 = 1) = up of output column w*32 + warp*8 + lane/4
          const int r = get<0>(tCcC(0));
          const int c = (r >> 4) * 8 + (r & 7);
          const int n = w * 32 + c;
          if (n < p.out_cols) {
            float bg = 0.f, bu = 0.f;
            if (bias_e) {
              bg = __ldg(bias_e + n * p.bias_row_mul);
              bu = __ldg(bias_e + n * p.bias_row_mul + p.bias_up_off);
            }
            with_activation<kGated>(p.act_kind, [&](auto kind) {
              constexpr int kK = decltype(kind)::value;
              CUTE_UNROLL
              for (int j = 0; j < Cfg::kTokTile / 8; ++j) {
                CUTE_UNROLL
                for (int v0 = 0; v0 < 2; ++v0) {
                  const int i = v0 + 4 * j;
                  const int t = get<1>(tCcC(i));
                  if (t < rows_valid) stage.put(t, c, activate_ct<kK>(accum(i) + bg, accum(i + 2) + bu, p.alpha, p.limit));
                }
              }
            });
          }
          stage.flush(out, out_row0, ld, w * 32, p.out_cols, rows_valid, tid, p.out_keep_l2 != 0);
        } else {
          with_activation<kGated>(p.act_kind, [&](auto kind) {
            constexpr int kK = decltype(kind)::value;
            CUTE_UNROLL
            for (int v1 = 0; v1 < 2; ++v1) {
              const int c = get<0>(tCcC(2 * v1));
              const int n = w * 64 + c;
              if (n < p.out_cols) {
                const float b = bias_e ? __ldg(bias_e + n) : 0.f;
                CUTE_UNROLL
                for (int j = 0; j < Cfg::kTokTile / 8; ++j) {
                  CUTE_UNROLL
                  for (int v0 = 0; v0 < 2; ++v0) {
                    const int i = v0 + 2 * v1 + 4 * j;
                    const int t = get<1>(tCcC(i));
                    if (t < rows_valid) stage.put(t, c, activate_ct<kK>(accum(i) + b, 0.f, p.alpha, p.limit));
                  }
                }
              }
            }
          });
          stage.flush(out, out_row0, ld, w * 64, p.out_cols, rows_valid, tid, p.out_keep_l2 != 0);
        }
      }
    }
    }
    }  // (not ping-pong)
    if (tid == 0) gemm_stamp(p.trace, 5);
  }
#else
#if defined(__CUDA_ARCH__)
  __trap();
#endif
#endif
}

// ============================== host side ==============================

inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = []() -> PFN_cuTensorMapEncodeTiled_v12000 {
    void* pfn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &pfn, 12000, cudaEnableDefault, &q) !=
            cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      return nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(pfn);
  }();
  return fn;
}

inline bool encode_bf16_map(CUtensorMap* map, const void* base, int rank, const uint64_t* dims,
                            const uint64_t* strides_bytes, const uint32_t* box) {
  const auto fn = tensor_map_encoder();
  if (fn == nullptr) return false;
  const uint32_t elem_strides[5] = {1, 1, 1, 1, 1};
  return fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, cuuint32_t(rank), const_cast<void*>(base), dims, strides_bytes,
            box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The 5D view of the weights one launch reads, with the box and the per-tile coordinates.
//   dims/strides innermost first; dim 0 = reduction (contiguous), dim 4 = expert.
// `simple`: only views whose strides grow with the dimension (fallback if the driver refuses the
// preferred view, which interleaves gate/up 8-row groups with one box; also forced by tests).
struct WeightView {
  uint64_t dims[5];
  uint64_t strides[4];
  uint32_t box[5];
  int n_sub = 1;
  int mw[3] = {0, 0, 0}, mq[3] = {0, 0, 0}, mh[3] = {0, 0, 0};
  int sub_col_w = 0, sub_col_q = 0, sub_col_limit = INT_MAX;
};

template <class Cfg>
WeightView make_weight_view(const GroupedGemmArgs& a, bool gemm2, bool simple) {
  WeightView v;
  const uint64_t K = uint64_t(a.k), N = uint64_t(a.n), G = uint64_t(a.num_groups), B = 2;
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
    set({red, rows, 1, 1, G}, {red * B, se, se, se}, {64, uint32_t(Cfg::kWRows), 1, 1, 1});
    v.mw[0] = Cfg::kWRows;
    return v;
  }
  const uint64_t se = 2 * N * K * B;
  const uint64_t s_row = (il ? 2 * K : K) * B;   // between consecutive columns' gate rows
  const uint64_t s_gu = (il ? K : N * K) * B;    // gate row -> up row of one column
  if (!Cfg::kSwapAB) {
    if (!il || !simple) {  // [64 gate rows | 64 up rows] in one box
      set({K, N, 2, 1, G}, {s_row, s_gu, se, se}, {64, 64, 2, 1, 1});
      v.mw[0] = 64;
    } else {  // interleaved, monotonic strides: (K, {g,u}, N): two boxes of 64 rows
      set({K, 2, N, 1, G}, {K * B, 2 * K * B, se, se}, {64, 1, 64, 1, 1});
      v.n_sub = 2;
      v.mh[0] = 1;
      v.mw[1] = 64;
    }
    return v;
  }
  if (!simple) {  // (K, 8 columns, {g,u}, N/8 groups, G): one box = 4 x [8 gate rows, 8 up rows]
    set({K, 8, 2, N / 8, G}, {s_row, s_gu, 8 * s_row, se}, {64, 8, 2, 4, 1});
    v.mw[2] = 4;
    return v;
  }
  v.n_sub = 8;  // 8 boxes of 8 rows: sub s = 2*q + h -> group q, gate (h=0) / up (h=1)
  v.sub_col_w = 32;
  v.sub_col_q = 8;
  v.sub_col_limit = int(N);
  if (!il) {
    set({K, N, 2, 1, G}, {K * B, N * K * B, se, se}, {64, 8, 1, 1, 1});
    v.mw[0] = 32; v.mq[0] = 8; v.mh[1] = 1;
  } else {
    set({K, 2, N, 1, G}, {K * B, 2 * K * B, se, se}, {64, 1, 8, 1, 1});
    v.mh[0] = 1; v.mw[1] = 32; v.mq[1] = 8;
  }
  return v;
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// The weight view's box fields of Params (the producer's sub-boxes and their coordinates).
template <class Cfg>
void set_weight_view(const WeightView& v, Params* p) {
  p->n_sub = v.n_sub;
  p->sub_rows = Cfg::kWRows / v.n_sub;
  p->sub_bytes = uint32_t(p->sub_rows) * uint32_t(Cfg::kTileK) * 2u;
  for (int d = 0; d < 3; ++d) {
    p->mw[d] = v.mw[d];
    p->mq[d] = v.mq[d];
    p->mh[d] = v.mh[d];
  }
  p->sub_col_w = v.sub_col_w;
  p->sub_col_q = v.sub_col_q;
  p->sub_col_limit = v.sub_col_limit;
}

// Split-K of a Swap-AB launch (both the BF16 and FP8 kernels): `forced` > 0 asks for that many,
// < 0 for none; 0 = when the weight tiles alone would fill under half of the CTA slots (decode: a
// few experts x a few 64-row tiles, e.g. qwen235-tp8 GEMM1 at 1 token = 48 tiles on 264 slots),
// split each tile's reduction over a cluster of up to 8 CTAs, each streaming at least
// `min_steps` K steps, so that the whole GPU streams weights. Capped to 8 and to the K steps.
inline int choose_k_splits(int forced, int64_t tiles, int64_t slots, int k_tiles, int min_steps) {
  int splits = 1;
  if (forced > 0) {
    splits = forced;
  } else if (forced == 0 && tiles > 0 && 2 * tiles <= slots && k_tiles >= 2 * min_steps) {
    splits = int(std::min<int64_t>(8, std::min<int64_t>(slots / tiles, k_tiles / min_steps)));
  }
  return std::max(1, std::min(std::min(splits, 8), k_tiles));
}

// The heuristic's split count (choose_k_splits, not a forced one) lowered until the launch's
// clusters (one per weight tile of the token-tile bound) are all resident at once
// (resident_clusters; `kernel` is opted in to its shared memory here). A cluster of n CTAs must sit
// in one GPC, so on a chip whose GPCs leave few whole clusters free the CTAs past them waited for a
// second wave: H200, qwen235-tp8 GEMM1 at 1 token, 48 clusters of 5, entries spread over 17 us and
// the last CTA done 9.5 us after the median (session 18, call 4 timeline).
inline int fit_k_splits(int splits, int64_t clusters, const void* kernel, int threads, int smem,
                        std::atomic<uint64_t>* optin) {
  if (splits <= 1 || opt_in_dynamic_smem(kernel, smem, optin) != cudaSuccess) return splits;
  while (splits > 1) {
    const int fit = resident_clusters(kernel, threads, size_t(smem), splits);
    if (fit <= 0 || clusters <= fit) break;  // (unknown: as chosen)
    --splits;
  }
  return splits;
}
// Swap-AB launches of both kernels: choose_k_splits, then (unless forced) fit_k_splits.
inline int resident_k_splits(int forced, int64_t tiles, int64_t slots, int k_tiles, int min_steps, const void* kernel,
                             int threads, int smem, std::atomic<uint64_t>* optin) {
  const int splits = choose_k_splits(forced, tiles, slots, k_tiles, min_steps);
  return forced == 0 ? fit_k_splits(splits, tiles, kernel, threads, smem, optin) : splits;
}

// Records a launch's split count, its clusters and how many fit at once (sm90_bf16_grouped_gemm_launch.cu).
void note_splits(bool gemm2, int splits, int64_t clusters, int resident);
// The test hook's record of a launch (last_grouped_gemm_splits); with splits, the occupancy query
// after the kernel's shared-memory opt-in (its error returned).
inline cudaError_t record_splits(bool gemm2, int splits, int64_t grid, const void* kernel, int threads, int smem,
                                 std::atomic<uint64_t>* optin) {
  int resident = 0;
  if (splits > 1) {
    const cudaError_t e = opt_in_dynamic_smem(kernel, smem, optin);
    if (e != cudaSuccess) return e;
    resident = resident_clusters(kernel, threads, size_t(smem), splits);
  }
  note_splits(gemm2, splits, splits > 1 ? grid / splits : 0, resident);
  return cudaSuccess;
}

// Weight tiles per CTA. Forced (> 0) as given; with split-K one (the split reduction reuses the
// weight ring). Otherwise, for short reductions (e.g. GEMM2 with a small N): several weight tiles
// per CTA so that it streams a few ring lengths (amortising CTA start-up, the expert lookup and
// pipeline fill; the producer loads tile w+1 while the consumers run tile w's epilogue), keeping
// about two waves of CTA slots over the token-tile bound (an over-estimate of the active tiles).
// Both families, both GEMMs (BF16 and FP8): with one tile per CTA, GEMM2 of qwen235-tp8 at 8192
// tokens (K = 192, three K steps) ran 20448 CTAs at 8 % tensor-pipe activity (H200, ncu). Swap-AB
// (memory-bound decode) aims at about one wave with the most bytes in flight per CTA: qwen235-tp8
// GEMM2 at 1 token has 512 tiles of 3 K steps for 264 slots.
inline int choose_tiles_per_cta(int forced, int k_splits, int w_tiles, int k_tiles, int64_t m_tiles, int64_t slots,
                                int stages, bool swap_ab) {
  if (k_splits > 1) return 1;
  if (forced > 0) return forced < w_tiles ? forced : w_tiles;
  const int64_t target = swap_ab ? slots * 3 / 4 : 2 * slots;
  int tpc = 1;
  while (tpc * 2 <= w_tiles && k_tiles * tpc < 4 * stages && m_tiles * ((w_tiles + 2 * tpc - 1) / (2 * tpc)) >= target)
    tpc *= 2;
  // Swap-AB with between one and two waves of single tiles (the token-tile bound is exact at 1-2
  // tokens): two tiles per CTA, one wave, no tail of a half-empty second wave. H200, 1 token,
  // GEMM1 of gptoss-tp1 (360 tiles on 264 slots) ended 6.6 us sooner, of mixtral-tp2 (448) 6 us
  // (session 12, call 1 timeline).
  if (swap_ab && tpc == 1 && w_tiles >= 2 && m_tiles * w_tiles > slots && m_tiles * w_tiles <= 2 * slots) tpc = 2;
  return tpc;
}

// Shared argument checks of both GEMMs (family/tile checked by the caller).
inline cudaError_t check_args(const GroupedGemmArgs& a, bool gemm2) {
  if (a.num_groups < 1 || a.num_groups > 65536) return cudaErrorInvalidValue;
  if (a.n <= 0 || a.k <= 0 || a.n % 8 != 0 || a.k % 8 != 0) return cudaErrorInvalidValue;
  if (a.max_rows < 0 || a.max_rows > int64_t(INT_MAX) - 256) return cudaErrorInvalidValue;
  if (a.max_rows == 0) return cudaSuccess;
  const bool gather = a.gather_x != nullptr;
  if (gather) {  // GEMM1 reading x rows through the plan: no `a`
    if (gemm2 || !a.row_token || !a.offsets || !aligned16(a.gather_x)) return cudaErrorInvalidValue;
    const int64_t stride = a.gather_x_stride > 0 ? a.gather_x_stride : a.k;
    if (stride < a.k || stride % 8 != 0) return cudaErrorInvalidValue;
  } else if (!a.a || !aligned16(a.a)) {
    return cudaErrorInvalidValue;
  }
  if (!a.w || !a.out || !a.counts || !a.padded_offsets) return cudaErrorInvalidValue;
  if (gemm2 && !a.offsets) return cudaErrorInvalidValue;
  if (!aligned16(a.w) || !aligned16(a.out)) return cudaErrorInvalidValue;
  if (a.bias && (reinterpret_cast<uintptr_t>(a.bias) & 3u)) return cudaErrorInvalidValue;
  return cudaSuccess;
}

// The diagnostic timeline buffer of GEMM1 (gemm2 = false) or GEMM2 for a launch of `grid` CTAs
// (set_grouped_gemm_trace; sm90_bf16_grouped_gemm_launch.cu), nullptr when off or too small.
unsigned long long* grouped_gemm_trace(bool gemm2, int64_t grid);
// Records which schedule the launch runs (last_grouped_gemm_balanced; sm90_bf16_grouped_gemm_launch.cu):
// 2 dynamic balanced, 1 balanced, 0 raster, -1 not launched (set first, so that an early return leaves
// no stale value).
void note_balanced(int flat);

// Builds the tensor maps and parameters and launches one instance. `force_simple` is a test hook.
template <class Cfg>
cudaError_t launch_instance(const GroupedGemmArgs& a, bool gemm2, cudaStream_t stream, bool force_simple = false,
                            int* n_sub_used = nullptr) {
  note_balanced(-1);
  note_splits(gemm2, 0, 0, 0);
  cudaError_t err = check_args(a, gemm2);
  if (err != cudaSuccess || a.max_rows == 0) return err;

  const bool gated = !gemm2 && a.activation.gated();
  const int red = gemm2 ? a.n : a.k;        // reduction length
  const int out_cols = gemm2 ? a.k : a.n;
  const int cols_per_tile = gated ? Cfg::kWRows / 2 : Cfg::kWRows;

  alignas(64) CUtensorMap tm_act = {};  // unused (never read) with gathered A rows
  alignas(64) CUtensorMap tm_w;
  if (a.gather_x == nullptr) {
    const uint64_t dims[2] = {uint64_t(red), uint64_t(a.max_rows)};
    const uint64_t strides[1] = {uint64_t(red) * 2};
    const uint32_t box[2] = {64, uint32_t(Cfg::kActBoxRows)};
    if (!encode_bf16_map(&tm_act, a.a, 2, dims, strides, box)) return cudaErrorInvalidValue;
  }
  WeightView v = make_weight_view<Cfg>(a, gemm2, force_simple);
  if (!encode_bf16_map(&tm_w, a.w, 5, v.dims, v.strides, v.box)) {
    if (force_simple) return cudaErrorInvalidValue;
    v = make_weight_view<Cfg>(a, gemm2, /*simple=*/true);
    if (!encode_bf16_map(&tm_w, a.w, 5, v.dims, v.strides, v.box)) return cudaErrorInvalidValue;
  }
  if (n_sub_used) *n_sub_used = v.n_sub;

  Params p{};
  p.counts = a.counts;
  p.offsets = a.offsets;
  p.padded_offsets = a.padded_offsets;
  p.bias = a.bias;
  p.out = static_cast<__nv_bfloat16*>(a.out);
  p.num_groups = a.num_groups;
  const int64_t m_tiles = (a.max_rows + Cfg::kTokTile - 1) / Cfg::kTokTile;
  p.m_tiles = int(m_tiles);
  p.w_tiles = (out_cols + cols_per_tile - 1) / cols_per_tile;
  p.k_tiles = (red + Cfg::kTileK - 1) / Cfg::kTileK;

  const int sms = device_sm_count();
  const int64_t slots = int64_t(sms) * Cfg::kMinBlocks;  // resident CTAs in one wave

  constexpr int kSmem = smem_bytes<Cfg>();
  static_assert(smem_fits<Cfg>(), "shared memory over the per-CTA budget of the config's occupancy");
  static std::atomic<uint64_t> optin_done[4] = {};  // per instance: [gated + 2 * balanced]
  // (split-K launches run the raster: the occupancy query asks about the raster-only kernel)
  const void* kernel_fn = [&] {
    if constexpr (Cfg::kPing) return reinterpret_cast<const void*>(&sm90_bf16_grouped_gemm_kernel<Cfg, false, false>);
    else
      return gated ? reinterpret_cast<const void*>(&sm90_bf16_grouped_gemm_kernel<Cfg, true, false>)
                   : reinterpret_cast<const void*>(&sm90_bf16_grouped_gemm_kernel<Cfg, false, false>);
  }();
  const int splits = Cfg::kSwapAB ? resident_k_splits(a.k_splits, m_tiles * int64_t(p.w_tiles), slots, p.k_tiles, 8,
                                                     kernel_fn, Cfg::kThreads, kSmem, &optin_done[gated ? 1 : 0])
                                  : 1;
  p.k_tiles_per_split = (p.k_tiles + splits - 1) / splits;
  p.k_splits = (p.k_tiles + p.k_tiles_per_split - 1) / p.k_tiles_per_split;  // every split has K steps

  int tpc = choose_tiles_per_cta(a.weight_tiles_per_cta, p.k_splits, p.w_tiles, p.k_tiles, m_tiles, slots,
                                 Cfg::kStages, Cfg::kSwapAB);
  const bool chain_rule = tpc > 1;  // (chained by choose_tiles_per_cta, not by the one-wave rule)
  if (a.one_wave && a.weight_tiles_per_cta == 0 && p.k_splits == 1 && tpc == 1)
    tpc = one_wave_tiles_per_cta(a.rows_hint, a.num_groups, Cfg::kTokTile, p.w_tiles, p.k_tiles, slots,
                                 Cfg::kSwapAB ? 192 : 512);
  p.tiles_per_cta = tpc;
  p.w_chunks = (p.w_tiles + tpc - 1) / tpc;

  set_weight_view<Cfg>(v, &p);

  p.out_cols = out_cols;
  p.bias_stride = gemm2 ? a.k : a.activation.gemm1_rows(a.n);
  p.bias_row_mul = (gated && a.activation.interleaved) ? 2 : 1;
  p.bias_up_off = gated ? (a.activation.interleaved ? 1 : a.n) : 0;
  p.act_kind = gemm2 ? -1 : int(a.activation.kind);
  p.alpha = a.activation.alpha;
  p.limit = a.activation.limit;
  p.out_unpadded = gemm2 ? 1 : 0;
  p.staged_epilogue = (!Cfg::kSwapAB && a.staged_epilogue) ? 1 : 0;
  p.early_weights = (a.early_weights && a.gather_x == nullptr) ? 1 : 0;
  p.early_stages = a.early_weight_stages < 0 ? Cfg::kStages : std::min(a.early_weight_stages, Cfg::kStages);
  p.w_hint = a.weights_evict_first ? kHintWFirst : kHintW;
  p.out_keep_l2 = out_keep_l2_switch(/*fp8=*/false);
  p.early_span = a.early_weights_span ? 1 : 0;
  p.gather_x = static_cast<const __nv_bfloat16*>(a.gather_x);
  p.gather_stride = a.gather_x_stride > 0 ? a.gather_x_stride : a.k;
  p.row_token = a.row_token;
  p.red = red;
  // (packed images only where the reduction fills its last K step: a ragged step's image stores the
  // zeros the boxes fill without reading them, e.g. FP8 GEMM2 of qwen235-tp8, N = 192: a third more
  // bytes per weight tile, 2.7-4.9 % slower layers at 16-64 tokens, H200 session 35 call 6)
  p.w_packed = (Cfg::kSwapAB && red % Cfg::kTileK == 0) ? static_cast<const uint8_t*>(a.w_packed) : nullptr;

  int64_t grid = m_tiles * int64_t(p.w_chunks) * p.k_splits;
  const bool balanced_ok =
      Cfg::kSwapAB && p.k_splits == 1 && a.num_groups <= 8 * Cfg::kThreads && a.gather_x == nullptr;
  const grouped_schedule::LaunchSchedule sched = grouped_schedule::launch_schedule(
      balanced_ok, a.balanced, gemm2 && a.weight_tiles_per_cta == 0, tpc, a.num_groups, a.rows_hint,
      a.queue != nullptr, m_tiles * int64_t(p.w_tiles), p.w_tiles, slots, grid, p.k_tiles < 4 * Cfg::kStages);
  // GroupedGemmArgs::dense = 0: the same launch on the dense instance where dense_bf16_auto says so
  // for this launch as the 2-CTA instance would run it (forced shapes keep the 2-CTA instance)
  if constexpr (Cfg::kSwapAB && !Cfg::kDense && Cfg::kTokTile <= 32) {
    const bool forced_shape = a.weight_tiles_per_cta != 0 || a.k_splits != 0 || a.balanced > 0;
    const int64_t expected_ctas =
        expected_active_token_tiles(a.expected_rows > 0 ? a.expected_rows : a.rows_hint, a.num_groups, Cfg::kTokTile) *
        int64_t(p.w_chunks) * p.k_splits;
    if (a.dense == 0 && !forced_shape &&
        dense_bf16_auto(gemm2, Cfg::kTokTile, tpc, sched.kind != 0, a.n, a.num_groups, chain_rule, expected_ctas,
                        slots, int64_t(sms) * dense_swapab_ctas_per_sm(Cfg::kTokTile))) {
      GroupedGemmArgs d = a;
      d.dense = 1;
      return launch_swapab_dense(d, Cfg::kTokTile, gemm2, stream, force_simple, n_sub_used);
    }
  }
  p.flat = sched.kind != 0 ? 1 : 0;
  p.queue = sched.kind == 2 ? a.queue : nullptr;
  grid = sched.grid;
  p.zero_queue = a.zero_queue;
  if (grid <= 0 || grid > int64_t(INT_MAX)) return cudaErrorInvalidValue;
  note_balanced(sched.kind);
  p.trace = grouped_gemm_trace(gemm2, grid);

  if (const cudaError_t e = record_splits(gemm2, p.k_splits, grid, kernel_fn, Cfg::kThreads, kSmem, &optin_done[gated ? 1 : 0]);
      e != cudaSuccess)
    return e;
  auto launch = [&](auto kernel, int instance) -> cudaError_t {
    const cudaError_t e = opt_in_dynamic_smem(reinterpret_cast<const void*>(kernel), kSmem, &optin_done[instance]);
    if (e != cudaSuccess) return e;
    return launch_chain_clustered(kernel, dim3(unsigned(grid)), dim3(Cfg::kThreads), kSmem, stream,
                                  unsigned(p.k_splits), tm_act, tm_w, p);
  };
  // the raster runs the raster-only kernel (the normal family has no other)
  if (sched.kind != 0) {
    if constexpr (Cfg::kSwapAB) {
      return gated ? launch(&sm90_bf16_grouped_gemm_kernel<Cfg, true, true>, 3)
                   : launch(&sm90_bf16_grouped_gemm_kernel<Cfg, false, true>, 2);
    } else {
      return cudaErrorInvalidValue;  // (launch_schedule gives the normal family the raster)
    }
  }
  if constexpr (Cfg::kPing) {
    if (gated) return cudaErrorInvalidValue;  // (ping-pong instances have the plain epilogue only)
    return launch(&sm90_bf16_grouped_gemm_kernel<Cfg, false, false>, 0);
  } else {
    return gated ? launch(&sm90_bf16_grouped_gemm_kernel<Cfg, true, false>, 1)
                 : launch(&sm90_bf16_grouped_gemm_kernel<Cfg, false, false>, 0);
  }
}

// Packs one launch's weights into the Swap-AB stage images (Params::w_packed): block b is stage
// (e, w, kt), b = (e * w_tiles + w) * k_tiles + kt. It loads the stage's in-range sub-boxes with the
// kernel's own TMA (same view, same swizzle, sub-boxes past N left zero) and writes the 8 KB image.
template <class Cfg>
__global__ void __launch_bounds__(128) sm90_bf16_pack_weights_kernel(const __grid_constant__ CUtensorMap tm_w,
                                                                    const Params p, uint8_t* out) {
#if defined(CUTLASS_ARCH_MMA_SM90A_ENABLED)
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  using Element = typename Cfg::Element;
  constexpr int kBytes = Cfg::kWRows * Cfg::kTileK * int(sizeof(Element));
  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = cute::cast_smem_ptr_to_uint(smem_raw);
  uint8_t* img = smem_raw + ((1024u - (base & 1023u)) & 1023u);  // (the ring's 1024-byte alignment)
  __shared__ alignas(8) uint64_t bar;
  const int64_t b = blockIdx.x;
  const int kt = int(b % p.k_tiles);
  const int w = int((b / p.k_tiles) % p.w_tiles);
  const int e = int(b / (int64_t(p.k_tiles) * p.w_tiles));
  uint4* img4 = reinterpret_cast<uint4*>(img);
  for (int i = threadIdx.x; i < kBytes / 16; i += blockDim.x) img4[i] = make_uint4(0, 0, 0, 0);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the zeros before the copy engine's writes
  if (threadIdx.x == 0) {
    Barrier::init(&bar, 1);
    cutlass::arch::fence_barrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t valid = 0;
    for (int s = 0; s < p.n_sub; ++s) valid += (w * p.sub_col_w + (s >> 1) * p.sub_col_q < p.sub_col_limit) ? 1 : 0;
    Barrier::arrive_and_expect_tx(&bar, valid * p.sub_bytes);
    Element* dst = reinterpret_cast<Element*>(img);
    for (int s = 0; s < p.n_sub; ++s) {
      if (!(w * p.sub_col_w + (s >> 1) * p.sub_col_q < p.sub_col_limit)) continue;
      const int q = s >> 1, h = s & 1;
      cute::SM90_TMA_LOAD_5D::copy(&tm_w, reinterpret_cast<uint64_t*>(&bar), kHintW, dst + s * p.sub_rows * Cfg::kTileK,
                             kt * Cfg::kTileK, w * p.mw[0] + q * p.mq[0] + h * p.mh[0],
                             w * p.mw[1] + q * p.mq[1] + h * p.mh[1], w * p.mw[2] + q * p.mq[2] + h * p.mh[2], e);
    }
  }
  Barrier::wait(&bar, 0);
  uint4* o = reinterpret_cast<uint4*>(out + b * kBytes);
  for (int i = threadIdx.x; i < kBytes / 16; i += blockDim.x) o[i] = img4[i];
#else
#if defined(__CUDA_ARCH__)
  __trap();
#endif
#endif
}

// Bytes of the packed weights of a launch (Params::w_packed): G x weight tiles x K steps x 8 KB.
template <class Cfg>
int64_t packed_weight_bytes(const GroupedGemmArgs& a, bool gemm2) {
  const auto t = grouped_schedule::weight_tiles<Cfg>(a.n, a.k, !gemm2 && a.activation.gated(), gemm2);
  return int64_t(a.num_groups) * t.w_tiles * t.k_tiles * Cfg::kWRows * Cfg::kTileK * int64_t(sizeof(typename Cfg::Element));
}

template <class Cfg>
cudaError_t pack_weights(const GroupedGemmArgs& a, bool gemm2, void* out, cudaStream_t stream) {
  static_assert(Cfg::kSwapAB, "packed weights are the Swap-AB stage images");
  if (a.num_groups < 1 || a.n <= 0 || a.k <= 0 || a.n % 8 != 0 || a.k % 8 != 0 || !a.w || !out || !aligned16(a.w) ||
      !aligned16(out))
    return cudaErrorInvalidValue;
  alignas(64) CUtensorMap tm_w;
  WeightView v = make_weight_view<Cfg>(a, gemm2, false);
  if (!encode_bf16_map(&tm_w, a.w, 5, v.dims, v.strides, v.box)) {
    v = make_weight_view<Cfg>(a, gemm2, /*simple=*/true);
    if (!encode_bf16_map(&tm_w, a.w, 5, v.dims, v.strides, v.box)) return cudaErrorInvalidValue;
  }
  const auto t = grouped_schedule::weight_tiles<Cfg>(a.n, a.k, !gemm2 && a.activation.gated(), gemm2);
  Params p{};
  p.w_tiles = t.w_tiles;
  p.k_tiles = t.k_tiles;
  set_weight_view<Cfg>(v, &p);
  const int64_t blocks = int64_t(a.num_groups) * p.w_tiles * p.k_tiles;
  if (blocks > int64_t(INT_MAX)) return cudaErrorInvalidValue;
  constexpr int kSmem = Cfg::kWRows * Cfg::kTileK * 2 + 1024;
  sm90_bf16_pack_weights_kernel<Cfg><<<unsigned(blocks), 128, kSmem, stream>>>(tm_w, p, static_cast<uint8_t*>(out));
  return cudaGetLastError();
}

// The kernels of a config for the registry (kernels/registry.h): the gated one (GEMM1 with a
// gated activation) and the plain one (GEMM1 otherwise, GEMM2), raster-only; for Swap-AB also
// both with the balanced / dynamic schedules (`_balanced`). Called from the file that launches
// the config, so the addresses are those of the launched instances.
template <class Cfg>
void append_config_instances(KernelList* out) {
  const std::string tile = Cfg::kSwapAB ? "swapab_" + std::to_string(Cfg::kWRows) + "x" + std::to_string(Cfg::kTokTile)
                                        : std::to_string(Cfg::kTokTile) + "x" + std::to_string(Cfg::kWRows);
  const std::string name = "sm90_bf16_grouped_gemm_" + tile + "x" + std::to_string(Cfg::kTileK) + "_s" +
                           std::to_string(Cfg::kStages) + (Cfg::kDense ? "_c" + std::to_string(Cfg::kMinBlocks) : "") +
                           (Cfg::kPing ? "_pingpong" : "");
  if constexpr (!Cfg::kPing)
    out->push_back({"grouped_gemm", name + "_gated", reinterpret_cast<const void*>(&sm90_bf16_grouped_gemm_kernel<Cfg, true, false>)});
  out->push_back({"grouped_gemm", name, reinterpret_cast<const void*>(&sm90_bf16_grouped_gemm_kernel<Cfg, false, false>)});
  if constexpr (Cfg::kSwapAB) {  // the balanced / dynamic schedules' instances
    out->push_back({"grouped_gemm", name + "_balanced_gated",
                    reinterpret_cast<const void*>(&sm90_bf16_grouped_gemm_kernel<Cfg, true, true>)});
    out->push_back({"grouped_gemm", name + "_balanced", reinterpret_cast<const void*>(&sm90_bf16_grouped_gemm_kernel<Cfg, false, true>)});
  }
}

}  // namespace fusedmoe::kernels::sm90_grouped
