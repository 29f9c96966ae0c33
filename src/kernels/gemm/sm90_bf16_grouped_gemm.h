// sm90_bf16_grouped_gemm.h — host entry points of the BF16 expert GEMMs of a MoE layer (sm_90a,
// TMA + WGMMA, warp-specialised), in two tile families. Plain C++ header: usable from .cpp files.
//
// Input rows arrive in the *contiguous layout*: already permuted into expert order, expert e's rows
// at padded_offsets[e] .. padded_offsets[e] + counts[e] - 1, padded_offsets[e] a multiple of the
// family's token tile (rows between counts[e] and the next padded offset are padding: garbage,
// NaN allowed; they never affect a valid output).
//
//   GEMM1 + activation:  H[r, n] = act(x[r,:] . W1[e, gate(n), :] + b1[e, gate(n)],
//                                      x[r,:] . W1[e, up(n), :]   + b1[e, up(n)])
//       x  = args.a   [max_rows, K] bf16     W1 = args.w [G, R1, K] bf16 (R1 = 2N gated, N otherwise)
//       H  = args.out [max_rows, N] bf16, padded layout (row = padded_offsets[e] + i)
//   GEMM2:               Y[offsets[e] + i, c] = H[padded_offsets[e] + i, :] . W2[e, c, :] + b2[e, c]
//       H  = args.a   [max_rows, N] bf16     W2 = args.w [G, K, N] bf16
//       Y  = args.out [R, K] bf16, unpadded grouped order (what the combine reads; no routing weight)
// (N = args.n = intermediate per expert, K = args.k = hidden, for both GEMMs.)
//
// Rows written: only valid rows (i < counts[e]). GEMM1 leaves H's padding rows untouched (GEMM2
// reads them and ignores what they produce); GEMM2 writes exactly rows offsets[e] .. offsets[e]+counts[e]-1.
// Everything is device-side: the host never reads counts/offsets (no synchronisation, graph
// capturable). The grid is sized from args.max_rows (a host-known upper bound of
// padded_offsets[G], e.g. R + min(G, R) * (tile - 1) with R = T * slots); blocks whose token tile
// lies beyond padded_offsets[G] or beyond its expert's count exit at once, so an expert without
// rows costs nothing.
//
// GEMM1 and GEMM2 of one layer must use padded offsets that are multiples of both launches'
// token tiles (simplest: the same family and tile for both; padding to 128 suits every tile).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "fusedmoe/activation.h"
#include "fusedmoe/moe.h"  // TileFamily

namespace fusedmoe::kernels {

struct GroupedGemmArgs {
  const void* a = nullptr;     // GEMM1: x [max_rows, K];   GEMM2: H [max_rows, N]   (bf16, 16-B aligned)
  const void* w = nullptr;     // GEMM1: W1 [G, R1, K];     GEMM2: W2 [G, K, N]       (bf16, 16-B aligned)
  // Optional, Swap-AB launches only: `w` packed by pack_grouped_gemm_weights (same problem, same
  // GEMM); each weight stage is then one contiguous 8 KB bulk copy instead of 2D boxes, where the
  // reduction is a multiple of the K step (64 bf16, 128 e4m3; else the boxes). `w` stays required
  // (the normal family reads it). Same results.
  const void* w_packed = nullptr;
  const float* bias = nullptr; // GEMM1: b1 [G, R1];        GEMM2: b2 [G, K]          (optional)
  void* out = nullptr;         // GEMM1: H [max_rows, N];   GEMM2: Y [R, K]           (bf16, 16-B aligned)
  const int32_t* counts = nullptr;          // [G] device
  const int32_t* offsets = nullptr;         // [G + 1] device (GEMM2 only; unpadded row starts)
  const int32_t* padded_offsets = nullptr;  // [G + 1] device, multiples of the token tile
  int num_groups = 0;          // G (<= 65536)
  int n = 0;                   // N: intermediate per expert (multiple of 8)
  int k = 0;                   // K: hidden (multiple of 8)
  Activation activation;       // GEMM1 only (kind, alpha, limit, interleaved)
  int64_t max_rows = 0;        // rows of `a` that exist; >= padded_offsets[G] (upper bound)
  TileFamily family = TileFamily::kNormal;  // kNormal (token tile 128) or kSwapAB
  int tokens_tile = 0;         // kNormal: 128 (0 = 128); kSwapAB: 8, 16, 32 or 64 (0 = 16)
                               // kAuto: taken from tokens_tile (<= 64 swap-AB, else normal)
  int weight_tiles_per_cta = 0;  // 0 = heuristic; >= 1 forces consecutive weight tiles per CTA
  // With the heuristic (weight_tiles_per_cta 0, no split-K), size the chained weight tiles so that
  // the expected active token tiles (from rows_hint, uniform routing) fill one wave of CTA slots
  // (one_wave_tiles_per_cta). The layer sets it for GEMM1 at decode (<= 256 tokens). The FP8
  // launcher applies it to long reductions only (sm90_fp8_grouped_gemm.h, one_wave_fp8_applies:
  // session 25 call 3 gave every FP8 GEMM1 this rule and it came out mixed, session 26 measured K
  // 7168 faster).
  bool one_wave = false;
  // Valid rows (T x slots) when the host knows them (an upper bound does), 0 = unknown. The
  // balanced schedule's rule reads them (grouped_schedule.cuh, use_balanced_schedule).
  int64_t rows_hint = 0;
  // The rows expected to reach these groups (expert parallelism: T x k x local / E, + T per shared
  // expert), 0 = rows_hint. The BF16 dense rule reads them (dense_bf16_auto).
  int64_t expected_rows = 0;
  // The balanced schedule (one-wave grid; static item ranges, or dynamic with `queue`): 0 = the rule,
  // > 0 = wherever it can run (Swap-AB without split-K or gathered rows, G <= 8 x the CTA's threads;
  // tests), < 0 = off.
  int balanced = 0;
  // Swap-AB: the "dense" instances, with 3 (token tile 32) or 4 (tiles 8, 16) CTAs per SM and fewer
  // stages each instead of 2, so that more consumer warpgroups share an SM (the decode GEMMs wait on
  // their one consumer warpgroup per CTA: H200, session 21). 0 = the launcher's rule (FP8:
  // dense_fp8_auto in sm90_fp8_grouped_gemm.h; BF16: off), > 0 = on, < 0 = off. Same values.
  int dense = 0;
  // FP8 Swap-AB: the "pair" instances (two 64-row weight tiles per stage, sm90_fp8_grouped_gemm.cuh
  // Config::kWTiles). 0 = the launcher's rule (pair_fp8_auto in sm90_fp8_grouped_gemm.h), > 0 = on
  // (without split-K), < 0 = off. Same values. (BF16: unused.)
  int pair = 0;
  // With the balanced schedule, a zeroed int in device memory makes it dynamic (CTAs take further
  // chunks of the items from this counter as they finish: grouped_schedule.cuh; BF16 and FP8). It
  // must be zero when the grid starts: the launch before this one (same stream, under PDL too)
  // zeroes it through zero_queue. Null: the static ranges.
  int* queue = nullptr;
  // Zeroed by this launch after griddepcontrol.wait (so after every earlier kernel of the stream is
  // done with it), for the next launch's `queue`. Null: nothing.
  int* zero_queue = nullptr;
  // Swap-AB only: split each weight tile's reduction over a cluster of k_splits CTAs whose partial
  // sums rank 0 adds in a fixed order (same bits every run; rounding differs from unsplit).
  // 0 = heuristic (when the tiles fill under half of the GPU's CTA slots: decode), 1 or negative =
  // off, n >= 2 = n forced (at most 8 and the number of 64-wide K steps). Forces one tile per CTA.
  int k_splits = 0;
  // Under PDL (launch_mode.h): stream the first ring of weight stages before waiting for the
  // predecessor. Only when counts/offsets were written two or more launches before this one (the
  // layer: GEMM1 after the permute, GEMM2); ignored with gather_x. Same values either way.
  bool early_weights = false;
  // With early_weights: weight stages issued before the wait (-1 = the whole ring). 0 keeps only
  // the plan lookup ahead of the wait and launches the dependents after it: nothing streams while
  // a latency-bound predecessor (the permute, H's quantise) runs, which such a flood slowed ~5x.
  int early_weight_stages = -1;
  // With early_weights: those stages continue into the next weight tiles of the CTA's first run
  // when a tile has fewer K steps (short reductions); false: the first tile's K steps at most.
  // The layer sets it for GEMM2 up to 64 tokens (ForwardOptions::gemm2_early_weight_stages).
  bool early_weights_span = false;
  // The weight TMA's L2 policy: evict_first instead of evict_normal (weights stream once at decode;
  // H, the expert outputs and the activations then keep their lines). Same values.
  bool weights_evict_first = false;
  // Normal family: stage each tile's outputs in shared memory and store whole 16-byte row chunks
  // (instead of 4-byte pairs straight from the accumulators). Same values; off until measured.
  bool staged_epilogue = false;
  // Normal family, plain epilogue (GEMM2, or GEMM1 without a gated activation), BF16: > 0 runs the
  // ping-pong instance (the two consumer warpgroups take the CTA's weight tiles in turn, each all
  // 128 token rows, so that one's epilogue runs under the other's main loop; 4 stages, staged
  // epilogue always). Same values. Other launches ignore it.
  int pingpong = 0;
  // GEMM1 only: read A rows from x in token order instead of `a` (no permuted copy): row i of
  // expert e is x[row_token[offsets[e] + i]] ([T, K] bf16, rows gather_x_stride elements apart,
  // 0 = K; 16-B aligned, stride a multiple of 8). Needs offsets and row_token from the plan;
  // max_rows stays the padded-rows bound. Same values as the copied layout; off until measured.
  const void* gather_x = nullptr;
  int64_t gather_x_stride = 0;
  const int32_t* row_token = nullptr;
};

struct TokensTileChoice {
  TileFamily family = TileFamily::kNormal;
  int tokens_tile = 128;
};

// Heuristic on the expected rows per expert e = T * k / E:
//   - e <= 16: Swap-AB, the token tile the smallest of {8, 16, 32} holding `headroom` times the
//     expected rows (an expert whose rows overflow the tile streams its weights again). The oracle
//     (tile_headroom) passes 2, and 8 for BF16 layers whose router adds a correction bias from 4
//     expected rows up (session 53, H100, uniform routing: 8 faster at 128-256 tokens by up to 1 %,
//     2 faster at 64 tokens; session 52 had made it 2 everywhere); sessions 23-51 gave 8 to those
//     BF16 layers at every count, measured on the bench's skewed data then
//     (the H200, session 23, bench --suite crossover, layer,
//     the kernels load only the activation boxes holding rows), dsv3-tp8 at 128 / 256 tokens
//     (e = 4 / 8) tile 32 458.6 / 523.0 us vs 482.8 (tile 8) / 558.8 (tile 16), dsv3-ep8 438.1 /
//     477.5 vs 536.5 / 534.1; at 64 tokens (e = 2) tile 16 356.4 vs 364.5; with the bias zeroed
//     (balanced) at 256 tokens tile 32 is level (735.9 vs 737.2 us; dsv3-ep8 716.6 vs 705.6). The
//     softmax cases keep 2 (balanced: qwen235-tp8 / qwen235-tp4 / qwen30-tp1 at 128 tokens tile 16
//     175.1 / 323.6 / 315.1 vs tile 32 191.3 / 327.4 / 319.7), as FP8 (dsv3-tp8-fp8b at 256 tile 16
//     405.0 vs 32 419.3: its consumers, not bytes, bound it). The band stops at 32 although tile 64
//     was fastest on the skewed dsv3-ep8 at 256 (457.4 vs 477.5 us): balanced, 64 lost (722.6 vs
//     705.6 at tile 16), and on qwen235-tp8 by 48 % (six stages instead of ten);
//   - 16 < e <= 32: Swap-AB with tile `wide_swap_tile` (64 for BF16 weights, 32 for FP8 with
//     per-channel / per-tensor scales), or the normal family when it is 0 (FP8 128x128 blocks);
//   - e > 32: the normal family (tile 128).
// The middle band, measured on the H200 (session 17, call 4, bench --suite crossover, whole layer,
// grouped backend): BF16 Swap-AB 64 vs normal 128 at e = 18-32: mixtral-tp2 128 tokens 391.8 vs
// 435.5 us, dsv3-tp8 512 684.1 vs 761.6, dsv3-ep8 512 601.9 vs 655.0, qwen235-tp8 / qwen235-tp4 /
// qwen30-tp1 512 270.3 / 421.9 / 400.5 vs 295.1 / 468.2 / 454.8; at e = 64 normal wins (mixtral-tp2
// 256: 439.4 vs 502.7). FP8: qwen235-tp8-fp8c 512 Swap-AB 32 231.2 vs normal 392.8 us; with 128x128
// blocks normal wins (dsv3-tp8-fp8b 512 567.9 vs 631.5, qwen235-tp4-fp8b 512 356.8 vs 441.1).
TokensTileChoice choose_tokens_tile(int64_t num_tokens, int top_k, int num_experts, int wide_swap_tile = 64,
                                    int headroom = 2);

// GroupedGemmArgs::one_wave: weight tiles per CTA such that the token tiles expected active (rows
// spread uniformly over the groups: each active with probability 1 - e^-mean, ceil(mean / tile)
// tiles each) times the weight chunks make one full wave of CTA slots (90-100 %), chaining at most
// `max_steps` K steps per CTA; 1 when no such count exists or when one wave already holds the
// tiles. A CTA then streams its next tile while the last one's epilogue runs, instead of a new CTA
// paying the pipeline fill. Under half a token tile of mean rows per group, an active group holds one
// token tile and the active groups are G (1 - e^-mean) (session 20 left these at one tile, as not
// predictable; session 24, call 1: qwen235-tp8 at 16 tokens, 81 active experts x 6 tiles on 264 slots,
// 2 tiles per CTA 116.5 vs 119.3 us with the router). Measured on the H200 (session 20, BF16 layer
// from precomputed ids, same run, against one tile per CTA; calls 3-4):
//   - faster: qwen235-tp8 3 tiles of 64 steps (2 x 128 CTAs) at 256 tokens 197.4 -> 191.1 us, at 64
//     tokens 172.9 -> 168.7; mixtral-tp2 at 256 tokens (normal tiles, 1 CTA per SM) 7 tiles of 64
//     steps 437.9 -> 425.4;
//   - slower, hence the caps: counts off one wave (qwen235-tp8 256: 2 tiles 226.5, 6 tiles 282.8);
//     Swap-AB chains of 384-896 steps (3-7 MB per CTA): qwen30-tp1 at 256 tokens 12 tiles 335.8 ->
//     377.9, qwen235-tp4 at 64 / 256 tokens 6 tiles 310.8 -> 324.9 / 344.3 -> 393.8, dsv3-tp8 at 256
//     8 tiles 540.6 -> 652.7 (qwen30-tp1 at 64 tokens, 12 tiles, was 5.7 us faster: not understood,
//     left out). So Swap-AB (2 CTAs per SM) chains at most 192 steps (1.5 MB), the normal family 512.
// The token tiles expected active when `rows` spread uniformly over `groups`: each group active with
// probability 1 - e^-mean, ceil(mean / tok_tile) tiles each. 0 when rows are unknown (<= 0).
inline int64_t expected_active_token_tiles(int64_t rows, int groups, int tok_tile) {
  if (rows <= 0 || groups <= 0 || tok_tile <= 0) return 0;
  const double mean = double(rows) / double(groups);
  const int64_t active = int64_t(std::ceil(double(groups) * (1.0 - std::exp(-mean))));
  return active * int64_t(std::ceil(mean / double(tok_tile)));
}
inline int one_wave_tiles_per_cta(int64_t rows, int groups, int tok_tile, int w_tiles, int k_tiles, int64_t slots,
                                  int max_steps) {
  if (rows <= 0 || groups <= 0 || tok_tile <= 0 || w_tiles <= 1 || k_tiles <= 0) return 1;
  const int64_t tiles = expected_active_token_tiles(rows, groups, tok_tile);
  if (tiles * w_tiles <= slots) return 1;
  for (int tpc = 2; tpc <= w_tiles && tpc * k_tiles <= max_steps; ++tpc) {
    const int64_t ctas = tiles * ((w_tiles + tpc - 1) / tpc);
    if (ctas <= slots) return 10 * ctas >= 9 * slots ? tpc : 1;
  }
  return 1;
}

// Upper bound of padded_offsets[G] for `rows` grouped rows over `groups` experts padded to `tile`.
// GroupedGemmArgs::dense = 0 in the BF16 launch (session 27): the dense Swap-AB instances (3-4 CTAs
// per SM) where the 2-CTA launch runs single weight tiles on the raster (split over a cluster or
// not), i.e. not where its tiles are chained (the wave or one-wave rules) or balanced, and for GEMM2
// only on token tiles 8-16. H200, session 27, calls 2-3 (dense forced on vs off, stage split in call
// 2): GEMM1 and GEMM2 faster where the long reductions run single tiles (gptoss-tp1 at 16-256 tokens
// 689 -> 640, 1409 -> 1316, 1615 -> 1500, 1641 -> 1548 us; dsv3-ep8 at 256 499 -> 478); slower on the
// balanced GEMM2 of short reductions (qwen235-tp4 GEMM2 at 64 100.7 -> 110.1), on chained tiles and
// on GEMM2 with token tile 32 (mixtral-tp2 GEMM2 at 64 / 256 113.1 -> 125.9 / 145.0 -> 185.4).
// GEMM2 on tile 32 also where its reduction is long (N >= 2048) over many experts (G >= 16): the
// one such decode case, dsv3-ep8 at 128 / 256 tokens (N 2048, 32 local experts), ran GEMM2 146.0 /
// 161.7 us dense against 162.4 / 185.0 (session 27, call 2, stages) and the layer 440.9 / 477.5
// against 457.5 / 498.3 (call 4); mixtral-tp2's tile-32 GEMM2 (N 7168 over 8 experts) and the short
// reductions on tile 32 (N 192-768: qwen235, qwen30, dsv3-tp8, dsv4f-tp4) were slower dense.
// At 1 token forcing dense was 0.3-1.6 us faster on six of eight cases, whose GEMM2 chains tiles
// (the rule keeps them).
// CTAs per SM of the BF16 dense Swap-AB instances (sm90_bf16_grouped_gemm_swapab_dense.cu).
constexpr int dense_swapab_ctas_per_sm(int tokens_tile) { return tokens_tile == 32 ? 3 : 4; }
// GEMM1 (session 31, calls 1-2: GEMM1's dense instances forced on / off, every BF16 case at 1-8
// tokens; `gemm1_expected_ctas` = the expected active token tiles x weight chunks x splits, from
// the expected local rows, 0 = unknown; `slots` / `dense_slots` = CTA slots of one wave of the
// 2-CTA / dense instance; `chained_by_rule`: tiles_per_cta came from choose_tiles_per_cta):
//  - chained by choose_tiles_per_cta (not the one-wave rule) with the expected CTAs in one wave of
//    the dense instance's slots (4 per SM, 3 on token tile 32): dense. qwen30-tp1 at 4 tokens (348
//    CTAs of 2 tiles, 1.3 waves of 264 slots) 82.6 -> 74.7 us, qwen235-tp4 at 3 tokens 70.5 -> 65.2,
//    dsv3-tp8 at 8 157.7 -> 150.6, qwen235-tp8 at 6 67.8 -> 63.8; none slower by over 0.3 us;
//  - single tiles: dense only past one wave of the 2-CTA slots (`slots`), where there are CTAs
//    enough for more than two per SM; below it the dense CTAs' shorter rings (5 stages instead of
//    8-11) hold fewer bytes in flight per SM: dsv3-ep8 at 2 / 4 tokens (2-3 local experts, 128-192
//    CTAs) 81.3 / 63.0 us off against 99.1 / 66.7 dense; elsewhere within +-2 us.
inline bool dense_bf16_auto(bool gemm2, int tokens_tile, int tiles_per_cta, bool balanced, int reduction = 0,
                            int groups = 0, bool chained_by_rule = false, int64_t gemm1_expected_ctas = 0,
                            int64_t slots = 0, int64_t dense_slots = 0) {
  if (balanced) return false;
  const bool known = !gemm2 && gemm1_expected_ctas > 0;
  if (tiles_per_cta != 1) return known && chained_by_rule && gemm1_expected_ctas <= dense_slots;
  if (known && gemm1_expected_ctas <= slots) return false;
  if (!gemm2 || tokens_tile <= 16) return true;
  return tokens_tile == 32 && reduction >= 2048 && groups >= 16;
}

inline int64_t grouped_gemm_max_padded_rows(int64_t rows, int groups, int tile) {
  const int64_t g = rows < groups ? rows : int64_t(groups);
  return rows + g * (tile - 1);
}

// Enqueue on `stream`; allocate nothing, never synchronise. cudaErrorInvalidValue for: N or K not
// a positive multiple of 8, G < 1, null or unaligned pointers, an unsupported family/tile, a grid
// beyond limits. max_rows == 0: nothing to do.
cudaError_t launch_grouped_gemm1(const GroupedGemmArgs& args, cudaStream_t stream);
cudaError_t launch_grouped_gemm2(const GroupedGemmArgs& args, cudaStream_t stream);

// The Swap-AB stage images of a launch's weights (GroupedGemmArgs::w_packed): its bytes (G x weight
// tiles x K steps x 8 KB; the same as `w` when N and K are multiples of 64 (GEMM1 gated: 32)), and
// the one-off packing kernel on `stream` (args: w, num_groups, n, k, activation of the launch).
int64_t packed_grouped_gemm_weight_bytes(const GroupedGemmArgs& args, bool gemm2);
cudaError_t pack_grouped_gemm_weights(const GroupedGemmArgs& args, bool gemm2, void* packed, cudaStream_t stream);

// Name of the compiled instance a launch with this family/tile runs (nullptr if none), e.g.
// "sm90_bf16_grouped_gemm1_128x128x64_s5", "sm90_bf16_grouped_gemm2_swapab_64x16x64_s10".
const char* grouped_gemm1_name(TileFamily family, int tokens_tile);
// pingpong (GroupedGemmArgs::pingpong): the normal tile's ping-pong GEMM2 (other tiles: nullptr).
const char* grouped_gemm2_name(TileFamily family, int tokens_tile, bool pingpong = false);
// Every compiled instance name (GEMM1 and GEMM2 of every family/tile); *count receives the number.
const char* const* grouped_gemm_instance_names(int* count);

}  // namespace fusedmoe::kernels

namespace fusedmoe::kernels {
// ---- test hooks (not for production callers) ----
// launch_grouped_gemm1 (gemm2 = false) / launch_grouped_gemm2 (gemm2 = true) with the option to
// force the simple weight TMA view (several boxes per K chunk, strides monotonic); reports the
// number of weight boxes per 64-wide K chunk the launch used (1 = the preferred single-box view).
cudaError_t launch_grouped_gemm_test(const GroupedGemmArgs& args, bool gemm2, bool force_simple_weight_view,
                                     int* weight_boxes_per_chunk, cudaStream_t stream);
// Diagnostic timeline of the grouped GEMMs, BF16 and FP8 (bench --trace): while set, each launch of up to
// `ctas` CTAs writes kGroupedGemmTraceSlots values per CTA to buffer (GEMM1) or buffer +
// ctas * kGroupedGemmTraceSlots (GEMM2): [0] entry, [1] expert known, [2] producer past the
// predecessor wait, [3] first stage full, [4] main loop done, [5] epilogue done (globaltimer ns;
// 0 where a CTA exited early), [6] SM id, [7] expert or -1 (no work). nullptr turns it off.
constexpr int kGroupedGemmTraceSlots = 8;
void set_grouped_gemm_trace(unsigned long long* buffer, int64_t ctas);
// Test hook: 2 when the last grouped GEMM launch (BF16 or FP8) of this host thread ran the dynamic
// balanced schedule (GroupedGemmArgs::queue), 1 when it ran the balanced
// schedule, 0 when the raster, -1 before any launch.
int last_grouped_gemm_balanced();
// Test hook: the split-K of the last Swap-AB grouped GEMM1 (gemm2 = false) or GEMM2 launch (BF16 or
// FP8) of this host thread: splits (1 = none), clusters launched, and how many clusters of that size
// can be resident at once (cudaOccupancyMaxActiveClusters; 0 without splitting, -1 unknown).
struct GroupedGemmSplits {
  int splits = 0;
  int64_t clusters = 0;
  int resident = 0;
};
GroupedGemmSplits last_grouped_gemm_splits(bool gemm2);
// Host check (swap_stage_check.cu; a CPU test, no GPU): the Swap-AB epilogue's stmatrix puts
// (SwapStage::put_values, the FP8 kernel's Swap-AB puts) place every output where the per-value puts do, for
// every token tile and both kernels' WGMMA atoms, gated and plain; "" when they do, else the first
// mismatch.
std::string swap_stsm_layout_check();
}  // namespace fusedmoe::kernels
