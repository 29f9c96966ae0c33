// fusedmoe/moe.h — the entry points: validate, size the workspace, run the layer.
//
//   MoeProblem p = ...;  p.max_tokens = 4096;
//   size_t bytes;  check(fusedmoe::workspace_size(p, &bytes));   // once, at start-up
//   void* ws;  cudaMalloc(&ws, bytes);                            // caller owns all memory
//   p.num_tokens = t;                                             // any t <= max_tokens
//   check(fusedmoe::forward(p, tensors, ws, bytes, stream));      // async, graph-capturable
//
// forward() allocates nothing, never synchronises the host, and compiles nothing: every kernel
// is built ahead of time for sm_90a and token counts are runtime arguments.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "fusedmoe/problem.h"
#include "fusedmoe/status.h"

namespace fusedmoe {

enum class Backend : uint8_t {
  kAuto,           // the oracle picks
  kGrouped,        // permute into expert-contiguous rows -> sm90 TMA/WGMMA grouped GEMM1+act ->
                   // grouped GEMM2 -> combine (normal or Swap-AB tiles)
  kFused,          // single-pass fused kernels (gather + GEMM + epilogue): not built yet
  kCutlassGrouped, // permute -> CUTLASS sm90 persistent grouped GEMM1 -> activation kernel -> CUTLASS
                   // grouped GEMM2 -> combine: BF16 weights, or FP8 128x128 blocks (CUTLASS's
                   // blockwise-scaled GEMM; H quantised between the GEMMs); bf16 activations;
                   // expert biases b1 in the activation, b2 added by the combine. Auto picks it
                   // at prefill (T*k/E >= 32 expected rows per expert, 64 with expert biases,
                   // T >= 512 BF16 / 1024 FP8; explain says why)
};

enum class TileFamily : uint8_t {
  kAuto,
  kNormal,  // tokens in WGMMA's M (64/128)
  kSwapAB,  // expert rows in M = 64, tokens as N in {8, 16, 32, 64}
};

// The layer's stages in order (ForwardOptions::stop_after).
enum class Stage : uint8_t { kAll, kDispatch, kGemm1, kGemm2 };

// A switch the oracle sets per problem (kAuto, with its reason in explain()) unless forced.
enum class Toggle : uint8_t { kAuto, kOff, kOn };

struct ForwardOptions {
  Backend backend = Backend::kAuto;  // an explicit choice always wins or fails with the reason
  TileFamily tiles = TileFamily::kAuto;
  int tokens_tile = 0;  // with tiles forced: kNormal 128; kSwapAB 8, 16, 32 or 64 (0 = default)
  // GEMM2's own Swap-AB token tile (grouped backend; 0 = GEMM1's): a tile that divides GEMM1's
  // (8, 16, 32 or 64; FP8 8, 16 or 32). The plan pads each expert's rows to GEMM1's tile, so GEMM2's
  // smaller tiles cover the same rows (a tile wholly in an expert's padding does nothing). Same
  // values. For tuning: built in session 54, not yet run on a GPU; on normal tiles not applicable
  // (explain says so); any other value is refused (kInvalidArgument).
  int gemm2_tokens_tile = 0;
  // Programmatic dependent launch between the layer's kernels: each kernel may be scheduled while
  // its predecessor finishes (its launch and set-up overlap the predecessor's tail) and waits on
  // the device for the predecessor's results. Same results either way; captured into CUDA graphs
  // as programmatic edges. Under it the GEMMs stream their first weight stages before waiting for
  // their predecessor. Auto: on up to 256 tokens (H200: 1-5 us faster at 1-64 tokens, 0-2 % at
  // 256; within the +-5 % run-to-run noise at 4096-16384; bench --pdl).
  Toggle overlap_launches = Toggle::kAuto;
  // Normal-tile GEMMs write their outputs through shared memory as whole 16-byte row chunks
  // (kernels/gemm/sm90_bf16_grouped_gemm.h: staged_epilogue). Same values. Auto: on (H200:
  // 7-15 % faster layers at 2048-8192 tokens on qwen235-tp8 / dsv3-tp8; bench --staged).
  Toggle staged_epilogue = Toggle::kAuto;
  // GEMM1 gathers its rows from x through the dispatch plan (cp.async in the GEMM's producer)
  // instead of a permuted copy of x: one launch and one pass over T*k rows fewer. Same values; not
  // with weight-on-input routers. BF16: auto on at decode where measured faster (explain() says
  // why). FP8 weights (session 45): x is quantised in token order (T rows) and GEMM1 gathers its
  // e4m3 rows, on the Swap-AB tiles only (normal tiles keep the permuted rows). Auto on for
  // row-scaled FP8 (per-tensor / per-channel weights, per-token or static per-tensor x) from a
  // logits router or from precomputed ids up to 128 tokens, the fused front quantising x (H100,
  // session 54: qwen235-tp8 FP8 4-16 % faster at 1-16 tokens, 1-5 % at 32-128; sessions 56-57,
  // precomputed ids: 7-26 % at 1-16, 6-9 % at 17-128); off for block scales
  // (measured slower, session 47) and at 256 tokens; kOn runs it wherever it applies (bench --gather).
  Toggle gather_rows = Toggle::kAuto;
  // Grouped backend (BF16 and FP8 GEMMs): the expert weights load with the L2 policy evict_first
  // instead of evict_normal, so that they do not push out H, the expert outputs and the activations.
  // Same values. Auto: on up to 256 tokens where each expert's weights stream once (the auto token
  // tile holds the tile rule's headroom times the expected rows per expert, T * slots / E; forced
  // tiles are not considered), except FP8 layers whose touched expert weights (min(local experts,
  // T * slots) + shared experts, times one expert's bytes) are <= 40 MB. H200, session 24 calls 2-4, on vs off:
  // BF16 1.1-22 % faster at 1-16 tokens on every suite case (dsv4f-tp4 at 1 token 40.1 vs 49.3 us,
  // qwen235-tp8 at 16 111.5 vs 117.6), 1.3-5 % at 64 on 6 of 8 (level on dsv3-tp8, dsv4f-tp4),
  // mixtral-tp2 413.1 vs 422.1 at 256; FP8 1.5-16 % faster at 4-64 tokens, but 4-8 % slower at 1-2
  // tokens with 19-38 MB touched (qwen235-tp8, dsv4f-tp4, qwen235-tp4 at 1; qwen235-tp8 at 2;
  // level on dsv3's 44 MB); 2.4-2.7 % slower on BF16 dsv3-tp8 at 256 with the bench's skewed loads
  // of then (they overflow the tile, so an expert's weights are read again by its next token tile
  // and should stay in L2; 1.8 % faster on dsv3-ep8 there). With the tile rule's headroom of 2 for
  // every router (session 52) auto turns it on there too (tile 16 for 8 expected rows); that
  // combination under uniform routing is not yet measured. bench --evict.
  Toggle weights_evict_first = Toggle::kAuto;
  // Route + plan in one fused kernel at small token counts (logits routers and precomputed ids up
  // to 256 tokens; DispatchOptions::fuse_front; forward() quantises FP8 x on the
  // permute after it, the token-order quantisation in the front serves dispatch() without
  // permute). Same results. Auto: on, except with quantised activations up to 16 tokens: the
  // separate kernels put the quantiser between the plan and GEMM1, which lets GEMM1 stream its
  // first weight stages early (H200, session 15: dsv3-tp8-fp8b with the router 41.7 vs 50.7 us at
  // 1 token; bench --front). At 17-64 tokens the fused front measured faster (session 36: up to
  // 4.4 %). Row-scaled FP8 where GEMM1 gathers its rows (gather_rows' auto above): on from 1 token,
  // the front quantising x in token order (one kernel before GEMM1).
  Toggle fuse_front = Toggle::kAuto;
  // Swap-AB GEMMs split each weight tile's reduction over a thread-block cluster (up to 8 CTAs)
  // when their tiles would fill under half of the GPU's CTA slots (decode on few experts). The
  // partial sums are added in a fixed order: the same bits every run, rounding may differ from
  // the unsplit sum. Auto: that heuristic; kOff never splits; kOn = auto (bench --splitk).
  Toggle split_k = Toggle::kAuto;
  // Swap-AB GEMM2 on a one-wave grid instead of the raster over the row bound; the (active token
  // tile, weight tile) items are found on the device from the counts. Same results. BF16 takes the
  // work dynamically (each CTA a first chunk, then further chunks from a counter in the workspace):
  // auto from a quarter as many rows (T x slots) as local experts up to 256 tokens, where rows exceed
  // the experts or the weight tiles are chained (H200, session 17: 1.2-20 us faster at 16-256 tokens
  // on every BF16 case but gptoss-tp1 at 64 tokens, slower at 1 token). FP8 takes equal static
  // ranges: auto only for row-scaled FP8 with gathered rows, rows in (3/4 of the experts, experts]
  // (session 54: qwen235-tp8 at 16 tokens 2 % faster, at 6-8 slower); else forced only (session
  // 37: the raster 1-9 % faster at 8 of 17 points where the earlier rule took them, rows in
  // (experts / 4, experts], slower at 3 by 0.8-3.3 %). bench --balanced.
  Toggle balanced_gemm2 = Toggle::kAuto;
  // FP8 Swap-AB GEMM1 on the same one-wave grid with equal static ranges of the active (token tile,
  // weight tile) items (token-order block scales included): each CTA runs a chain of tiles found on
  // the device, instead of one weight tile per CTA over many waves. Same results. bench --balanced1.
  Toggle balanced_gemm1 = Toggle::kAuto;
  // Swap-AB GEMMs on the "dense" kernel instances: 3 (token tile 32) or 4 (tiles 8, 16) CTAs per SM
  // with fewer pipeline stages each, instead of 2, so that more consumer warpgroups share an SM.
  // Same results. Auto: where measured faster, decided per launch (H200, session 27): FP8 GEMM1 with
  // block scales (or row scales from token tile 16) unless the one-wave chain runs, FP8 GEMM2 on the
  // raster with block scales (or row scales on token tiles 8-16); BF16 where single weight tiles run
  // on the raster (GEMM2: token tiles 8-16; GEMM1: past one wave of 2-CTA slots), and (session 31)
  // BF16 GEMM1 where its chained tiles fit one wave of dense slots (1-6 tokens). E.g. qwen235-tp4-fp8b
  // at 256 tokens 265 -> 232 us, dsv3-tp8-fp8b at 64 235 -> 211, gptoss-tp1 at 64 1409 -> 1316,
  // qwen30-tp1 at 4 tokens 82.6 -> 74.7. bench --dense.
  Toggle dense_swapab = Toggle::kAuto;
  // GEMM1 only: its dense instances forced on / off (auto = as dense_swapab: forced the same way, or
  // the launchers' rules). GEMM2 keeps dense_swapab. For tuning (bench --dense1, --tpc1d).
  Toggle gemm1_dense_swapab = Toggle::kAuto;
  // FP8 Swap-AB GEMMs on the "pair" instances: two 64-row weight tiles per pipeline stage, both
  // tiles' WGMMAs in one batch (2 CTAs per SM, 4-6 stages of 16 KB of weights), so that a stage's
  // barrier, tensor-core wait and block-scale loads serve twice the weights. Same results. Auto: where
  // measured faster (H200, session 34): token tile 16 with long reductions over >= 32 weight tiles per
  // expert, GEMM1 from 48 K blocks of 128 and GEMM2 from 8 (dsv3-ep8-fp8b at 256 tokens 330.9 ->
  // 295.5 us; it replaces the dense instances there), and row-scaled GEMM2 on token tile 32
  // (qwen235-tp8-fp8c at 256 tokens 135.6 -> 132.6). bench --pair.
  Toggle fp8_pair_swapab = Toggle::kAuto;
  // The packed weights of MoeTensors::w1_packed / w2_packed in the Swap-AB GEMMs (BF16 and FP8).
  // Same results. Auto: used when given, for each GEMM whose reduction (K for GEMM1, N for GEMM2)
  // is a multiple of 64 (BF16) or 128 (FP8): a ragged last K step's packed image would read the
  // zeros the 2D boxes fill for free (FP8 qwen235-tp8 GEMM2, N = 192: 2.7-4.9 % slower layers at
  // 16-64 tokens, H200 session 35). kOff: ignored (the 2D weight boxes of w1 / w2). bench --packed.
  Toggle packed_weights = Toggle::kAuto;
  // FP8 layers on Swap-AB tiles with static per-tensor, per-token or 1x128 activation scales: H
  // re-quantised in GEMM1's epilogue instead of a separate pass between the GEMMs, the same bits
  // (static: each weight tile quantises its own outputs; per token / 1x128: the last weight tile of
  // each token tile and scale group to finish quantises the group). Auto: on with static scales
  // only (H200, session 36: 2.5-9.8 % faster there; per token / 1x128 slower at 27 of 30 decode
  // points, by up to 19 %; kOn forces them).
  // bench --hq.
  Toggle fused_h_quant = Toggle::kAuto;
  // FP8 layers on Swap-AB tiles with per-token or 1x128 activation scales (and H re-quantised
  // apart, fused_h_quant off): GEMM2 quantises H itself, each CTA its token tile's bf16 rows, with
  // the quantiser's math (the same bits), instead of a separate pass and launch between the GEMMs.
  // Applies where H has at most 4 K blocks of 128 (N <= 512). Auto: on up to 256 tokens, 512 with
  // 1x128 scales (H200, session 40: 0.5-11.8 % faster at 14 of 16 decode points of the four FP8
  // cases it applies to, level at the other two; at 512 tokens 4-5 % faster with 1x128 scales, per
  // token 0.5-0.7 % slower). bench --hs adds the variants with it forced on and off.
  Toggle gemm2_quantises_h = Toggle::kAuto;
  // Tuning overrides of the Swap-AB expert GEMMs (BF16 and FP8 grouped backend; 0 = the
  // heuristic, the same results either way up to the split-K rounding above): k_splits n >= 1
  // splits each weight tile's reduction over a cluster of n CTAs (1 = none; at most 8, capped to the
  // 64-wide K steps); weight_tiles_per_cta n >= 1 runs n consecutive weight tiles per CTA (ignored
  // when splitting). For tuning tables and bench sweeps (bench --ksplits, --tpc). The heuristic's
  // split count is lowered until its clusters all fit on the device at once
  // (cudaOccupancyMaxActiveClusters); a forced one is taken as given.
  int k_splits = 0;
  // GEMM1 only: n >= 1 splits GEMM1's weight tiles as k_splits would (0 = as k_splits). Measured
  // 8-27 % slower at every decode point on the H200 (session 17; bench --ksplits1): for tuning only.
  int gemm1_k_splits = 0;
  int weight_tiles_per_cta = 0;
  // GEMM1 only: n >= 1 runs n consecutive weight tiles per GEMM1 CTA (0 = as weight_tiles_per_cta).
  // For tuning (bench --tpc1).
  int gemm1_weight_tiles_per_cta = 0;
  // Tuning override under overlap_launches (grouped backend, permuted rows): how many weight stages
  // GEMM1 streams before the permute has finished (its first weight tile's K steps at most), and the
  // FP8 GEMM2 before H's quantise has unless gemm2_early_weight_stages is set (-1 = the default:
  // the whole ring, so
  // that weights stream while the permute runs; 0 = none, which leaves the latency-bound permute
  // the memory system to itself: H200, 1 token, it then took ~2 instead of ~11 us, but the layer
  // was not faster). bench --early compares.
  int early_weight_stages = -1;
  // Tuning override under overlap_launches (grouped backend): how many weight stages GEMM2 streams
  // before GEMM1 (BF16) or H's quantise (FP8) has finished; they may span several weight tiles of
  // the CTA's first run (short reductions: qwen235-tp8's GEMM2 has 3 K steps of 64 per tile). -1 =
  // the default forward() applies: up to 64 tokens the whole ring across tiles (BF16; FP8 as
  // early_weight_stages), above it the first tile's K steps. 0 = none. H200, session 24 call 2, the ring vs the first tile:
  // FP8 0.6-2.0 % faster at 16-64 tokens, BF16 within +-0.9 %; at 256 tokens 0.1-1.2 % slower on 5
  // of 6 cases. bench --early2 compares (3 on qwen235-tp8, 4 on dsv3 = the first tile).
  int gemm2_early_weight_stages = -1;
  // FP8 with 128x128 weight blocks: x's 1x128 activation scales stay in token order (each token's
  // written once by the permute) and GEMM1 reads each row's through the plan's row_token, instead
  // of a row-order copy (DispatchOptions::group_scales_by_token). Same values. Auto: on (bench
  // --scales compares).
  Toggle scales_by_token = Toggle::kAuto;
  // Prefill on the CUTLASS backend (BF16 weights and activations): GEMM1 runs on the grouped
  // backend's normal tiles instead, gathering x's rows through the plan (no permuted copy of x) with
  // the activation in its epilogue (no pre-activation rows and no activation pass), and only GEMM2
  // runs on CUTLASS (it reads GEMM1's intermediate in place). Applies where the oracle chose the
  // CUTLASS backend for BF16 x and weights without weights on the input. Auto: off (bench
  // --cutlass-gemm2 compares).
  Toggle cutlass_gemm2 = Toggle::kAuto;
  // BF16 GEMM2 on normal tiles with ping-pong consumers (kernels/gemm/sm90_bf16_grouped_gemm.h:
  // GroupedGemmArgs::pingpong): the two consumer warpgroups of a CTA take its weight tiles in turn,
  // so that one's epilogue (a 128 x 128 tile of outputs) runs under the other's main loop. On the
  // grouped backend it replaces the normal-tile GEMM2; where the CUTLASS backend runs the layer,
  // CUTLASS's GEMM2 (GEMM1 and the activation stay on CUTLASS; the dispatch then pads each expert's
  // rows to 128). Same values as the normal tiles. Not with cutlass_gemm2 (GEMM2 is CUTLASS's
  // there). Auto: off, measured slower (session 38: 7 BF16 cases at 2048 / 16384 tokens, layers
  // 1.004-1.19x the time with CUTLASS's GEMM2; bench --pingpong compares).
  Toggle pingpong_gemm2 = Toggle::kAuto;
  // Prefill on the CUTLASS backend with BF16 x and weights: GEMM1's epilogue adds b1 and applies the
  // activation to its fp32 accumulators and writes H (kernels/gemm/cutlass_gated_epilogue.cuh),
  // instead of pre-activation rows in bf16 and a separate activation pass over them (8 * rows * N
  // bytes less traffic). H differs from the two-pass result only by the pre-activation's bf16
  // rounding, which it skips. Gated activations with gate and up as W1's two halves read
  // MoeTensors::w1_gate_up_blocks (pack_gate_up_blocks(); forward() fails with kInvalidArgument when
  // it is forced on without them); interleaved gate / up and activations without a gate read w1 as
  // it is. Not with cutlass_gemm2 (GEMM1 is not CUTLASS's there). Auto: on when
  // MoeTensors::w1_gate_up_blocks is given (or gate / up are interleaved), 2N is a multiple of 256
  // and CUTLASS's GEMM1 would run its cooperative 128x256 tile (the fused kernel's); interleaved
  // gate / up also over >= 16 such tiles with a partial last one below 128 expected rows per
  // expert (H100, session 56: gptoss-tp1 at 2048 tokens 3.3 % faster, level at 4096, 4.4 %
  // slower at 16384); off otherwise. H200, session 43: GEMM1 +
  // activation 1-10 % faster at 12 of 12 such prefill points (mixtral-tp2 at 16384 tokens 6571 ->
  // 6155 us, layer 75.0 -> 77.2 % of the floor); on qwen235-tp8 (2N = 384) the layer was slower at
  // 4096 and 16384 tokens; bench --fused-act compares. FP8 e4m3 with 128x128 blocks (session 46):
  // forced on, CUTLASS's blockwise GEMM1 does the same (W1 from MoeTensors::w1_gate_up_blocks in
  // e4m3 for split halves, one weight scale per 4 rows re-laid from w1_scale per call) and H is then
  // quantised as before; auto off (built and tested, not yet measured). Other FP8 schemes: off.
  Toggle fused_activation = Toggle::kAuto;
  // Benchmarking aid: stop after this stage (kDispatch: route + plan + permute; kGemm1; kGemm2;
  // kAll: the whole layer). The output is left unwritten when it stops early; timing prefixes
  // gives per-stage times (fusedmoe bench --suite layer --stages).
  Stage stop_after = Stage::kAll;
};

// The switches above as forward() resolves them for a problem, with the reasons.
struct ResolvedOptions {
  bool overlap_launches = false, staged_epilogue = false, gather_rows = false, split_k = false,
       scales_by_token = false, fuse_front = true, balanced_gemm2 = false, balanced_gemm1 = false,
       cutlass_gemm2 = false,  // requested; forward() applies it where the CUTLASS backend runs the layer
       pingpong_gemm2 = false,  // BF16 weights and activations; not with cutlass_gemm2
       weights_evict_first = false,
       fused_h_quant = false,  // where GEMM1 runs Swap-AB tiles (kernels::fp8_gemm1_quantises_h)
       gemm2_quantises_h = false,  // where GEMM2 runs Swap-AB tiles and H is not quantised in GEMM1
       fused_activation = false;   // BF16 x and weights, not with cutlass_gemm2; forward() applies it
                                   // where the CUTLASS backend runs the layer
  int dense_swapab = 0;  // the Swap-AB GEMMs' GroupedGemmArgs::dense: 0 the launchers' rule, 1 on, -1 off
  int gemm1_dense_swapab = 0;  // GEMM1's (ForwardOptions::gemm1_dense_swapab; auto: dense_swapab's)
  int fp8_pair_swapab = 0;     // the FP8 Swap-AB GEMMs' GroupedGemmArgs::pair: 0 the launchers' rule, 1 on, -1 off
  std::string why;
};
ResolvedOptions resolve_options(const MoeProblem& p, const ForwardOptions& options);

const char* to_string(Backend b);
const char* to_string(TileFamily t);
const char* to_string(Toggle t);

// Checks the descriptor alone (no pointers): shapes, counts, format combinations.
Status validate(const MoeProblem& p);
// Checks the descriptor and the tensors: required pointers present, 16-byte alignment, strides.
Status validate(const MoeProblem& p, const MoeTensors& t);

// Workspace needed for any call with num_tokens <= p.max_tokens.
Status workspace_size(const MoeProblem& p, size_t* bytes);

// Runs route -> dispatch -> GEMM1+activation -> GEMM2 -> combine on `stream`.
Status forward(const MoeProblem& p, const MoeTensors& t, void* workspace, size_t workspace_bytes,
               Stream stream, const ForwardOptions& options = {});

// MoeTensors::w1_packed (gemm 1) / w2_packed (gemm 2), BF16 or FP8 e4m3 weights: the bytes of
// the packed copy (the weights' own size when N and K are multiples of 64 (BF16) or 128 (FP8):
// each expert's rows padded to 64-row weight tiles (GEMM1 gated: 32 columns of gate and up), its
// reduction to 128 bytes), and the packing of w (MoeTensors::w1 / w2 of this problem) into
// `packed` on `stream`: a one-off at load time (it launches one kernel; no allocation). FP8 scales
// are not packed (w1_scale / w2_scale as before). FP8 reductions whose last 128-byte step holds at
// most 64 (e.g. GEMM2 of N = 192) pair the tiles' tails: that step's image of each even tile holds
// its own and the next tile's last K side by side (the same bytes; GEMM2's pair instances stream it
// as one 8 KB stage). Errors: other weight formats, gemm not 1 or 2, null or misaligned pointers.
Status packed_weights_size(const MoeProblem& p, int gemm, size_t* bytes);
Status pack_weights(const MoeProblem& p, int gemm, const void* w, void* packed, Stream stream);

// MoeTensors::w1_gate_up_blocks: for BF16 weights, or FP8 e4m3 weights with 128x128 blocks, with a
// gated activation that is not interleaved, W1's rows of each expert reordered into alternating
// blocks of 8 gate and 8 up rows (out row 16b + q = gate row 8b + q for q < 8, up row 8b + q - 8
// otherwise), written to `out` on `stream`: a one-off at load time (one kernel; no allocation).
// `out` holds w1's bytes (weight_experts() x 2N x K elements: bf16 or e4m3), 16-byte aligned, and
// must not overlap w1; FP8 scales stay w1_scale as they are. Errors: other weight formats or
// activations, null, misaligned or overlapping pointers.
Status pack_gate_up_blocks(const MoeProblem& p, const void* w1, void* out, Stream stream);

// The plan forward() would run for p, and why (backend, kernels, tiles), as text.
std::string explain(const MoeProblem& p, const ForwardOptions& options = {});

// ---- the layer's front and back halves, for engines with their own expert GEMMs ----
// dispatch(): route -> dispatch plan -> activation permutation / quantisation, on `stream`,
// into the workspace (sized by workspace_size()). No allocation, no host synchronisation:
// CUDA-graph capturable (a graph bakes in num_tokens: capture one per token count, or per
// maximum with the counts of that call).
struct DispatchOptions {
  bool permute = true;  // contiguous layout: rows copied into padded expert order; false: token order
  int tile_m = 128;     // each expert's rows padded to a multiple of this (1..128) in padded_offsets
  // Small token counts: route + plan (+ token-order quantisation) in one fused kernel when the
  // router reads logits rows or takes precomputed ids (bound <= 256). Same ids,
  // weights and plan; false forces the separate kernels. (forward() sets it per problem:
  // ForwardOptions::fuse_front.) Like every kernel of the library it lets a dependent launch
  // (programmatic dependent launch) start early: such a kernel must wait (griddepcontrol.wait /
  // cudaGridDependencySynchronize) before it reads these outputs. Error reports: with several bad
  // precomputed ids the fused kernel reports the first in (token, slot) order, the separate
  // kernels any one of them.
  bool fuse_front = true;
  // Programmatic dependent launch between the dispatch kernels (as ForwardOptions::overlap_launches:
  // each launch starts while its predecessor finishes and waits on the device for its results).
  // Same results; bench --suite dispatch prints both from 1024 tokens.
  bool overlap_launches = false;
  // 1x128 activation groups (ActQuant::kGroup128), contiguous layout, no weight on the input: keep
  // the scales in token order, each token's once (DispatchResult::act_scales_by_token; act_scales
  // is then null), for a GEMM that reads row r's scales as those of token row_token[r]. forward()'s
  // FP8 GEMM1 does: no gather of the scales into row order (at 16384 tokens of DeepSeek-V3, 21 us
  // and a launch). Ignored (row-order act_scales as usual) for any other scheme or layout.
  bool group_scales_by_token = false;
};

// Device pointers into the workspace. G = weight_experts() groups, R = rows (<= T * slots).
struct DispatchResult {
  const int32_t* topk_ids = nullptr;        // [T, k] global ids (-1: invalid id, routed nowhere)
  const float* topk_weights = nullptr;      // [T, k]
  const int32_t* counts = nullptr;          // [G]
  const int32_t* offsets = nullptr;         // [G + 1]
  const int32_t* padded_offsets = nullptr;  // [G + 1]
  const int32_t* row_token = nullptr;       // [R] token of each grouped row
  const int32_t* row_slot = nullptr;        // [R] slot (shared expert: k)
  const int32_t* slot_row = nullptr;        // [T, slots] grouped row of (token, slot) or -1
  const void* act = nullptr;                // [act_rows, K]: e4m3 when quantised, else act_dtype
                                            // (token order, unquantised, unweighted, dense x: x itself,
                                            // exactly T rows; keep x unchanged until the GEMM has read it)
  int64_t act_rows = 0;                     // T (token order) or max padded rows (permuted)
  const float* act_scales = nullptr;        // per quant scheme (see quant.h), null for kNone
  // DispatchOptions::group_scales_by_token (when it applied): token t's 1x128 scales at
  // act_scales_by_token[t * act_scales_token_stride + kb], stride ceil(K/128) rounded up to 4
  const float* act_scales_by_token = nullptr;
  int act_scales_token_stride = 0;
  int num_groups = 0;
  const int32_t* num_tokens_device = nullptr;  // MoeTensors::num_tokens_device (used by combine())
  bool fused_front = false;                 // the fused front kernel ran (see DispatchOptions)
  int launches = 0;                         // kernel + memset launches enqueued
};

// Of `t` it reads and validates the front's inputs only: x, the router's inputs, expert_map,
// num_tokens_device and, for static per-tensor FP8, act_scale; out, the weights and their scales may
// be null (an engine with its own expert GEMMs has none of ours). It does not write
// out_topk_ids / out_topk_weights (forward() does): the result's topk_ids / topk_weights hold them.
Status dispatch(const MoeProblem& p, const MoeTensors& t, void* workspace, size_t workspace_bytes, Stream stream,
                const DispatchOptions& options, DispatchResult* result);

// combine(): out[t] = sum over slots (slot order, shared expert last) of weight * expert_out[row],
// float64 accumulation in slot order, rounded to float and then to act_dtype: deterministic, within
// 1 ulp of act_dtype of the float64 sum. expert_out is [R, K] in act_dtype, rows in grouped order.
// With router.weight_on_input the routed weights were applied to the input and are not applied here.
Status combine(const MoeProblem& p, const DispatchResult& d, const void* expert_out, void* out,
               int64_t out_row_stride, Stream stream);

// Input errors found on the device by the last dispatch() on this workspace (an id outside
// [0, E) in precomputed or hashed routing: that slot was routed nowhere; a device-side token
// count outside [0, problem.num_tokens]: it was clamped). Synchronises `stream`. With
// problem.num_tokens == 0 nothing ran and nothing is read: Ok, without a device call.
Status check_device_errors(const MoeProblem& p, const void* workspace, Stream stream);

}  // namespace fusedmoe
