// sm90_fp8_grouped_gemm.h — host entry points of the FP8 e4m3 W8A8 expert GEMMs (sm_90a, TMA +
// WGMMA e4m3, warp-specialised), issue #5, docs/fp8_plan.md steps 2-3. Plain C++ header.
//
// STATUS: both tile families (normal: 128 token rows x 128 weight rows x 128 K; Swap-AB: 64 weight
// rows x 8/16/32 tokens) with "row" scales (per-tensor / per-channel weight scales, per-tensor /
// per-token activation scales, applied in fp32 in the epilogue) and with block scales (below) are
// validated on the H200 and run by forward(). No FP8 output yet (GEMM1 writes bf16 H; forward()
// quantises it in a separate pass).
//
// Layouts are those of the BF16 kernels (sm90_bf16_grouped_gemm.h: contiguous expert order,
// padded_offsets multiples of 128, padding rows are garbage and never affect a valid output) with
// one byte per element for `a` and `w`:
//   GEMM1 + activation: H[r, n] = act(sa(r) sw(e, gate(n)) x_q[r,:] . W1_q[e, gate(n), :] + b1[e, gate(n)],
//                                     sa(r) sw(e, up(n))   x_q[r,:] . W1_q[e, up(n), :]   + b1[e, up(n)])
//       a = x_q [max_rows, K] e4m3,   w = W1_q [G, R1, K] e4m3,   out = H [max_rows, N] bf16 (padded rows)
//   GEMM2:              Y[offsets[e] + i, c] = sa(p) sw(e, c) H_q[p, :] . W2_q[e, c, :] + b2[e, c],
//                       p = padded_offsets[e] + i
//       a = H_q [max_rows, N] e4m3,   w = W2_q [G, K, N] e4m3,    out = Y [R, K] bf16 (unpadded rows)
// with the scales
//   sa(r)    = a_scale[0]              (a_scale_per_token = false: per-tensor)
//            = a_scale[r]              (true: one f32 per row of `a`, padded row index, [max_rows])
//   sw(e, j) = w_scale[e]              (w_scale_per_channel = false: one f32 per expert [G])
//            = w_scale[e * R + j]      (true: one f32 per weight row, [G, R], R = R1 or K)
// The accumulation is fp32 with the FP8 tensor-core partial sums promoted to a separate fp32
// accumulator every 128 K (one stage = 4 WGMMAs of k32), as DeepSeek-V3 / CUTLASS's default FP8
// schedule do: Hopper's FP8 WGMMA keeps only ~14 bits of its accumulator (docs/fp8_plan.md §1).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/gemm/sm90_bf16_grouped_gemm.h"  // GroupedGemmArgs, grouped_gemm_max_padded_rows

namespace fusedmoe::kernels {

// The BF16 argument block (a, w: e4m3 bytes; out: bf16) plus the scales. family must be kNormal
// (or kAuto with tokens_tile 0 / 128); tokens_tile 0 or 128.
struct Fp8GroupedGemmArgs : GroupedGemmArgs {
  const float* a_scale = nullptr;   // activation scale(s), see above (device, 4-B aligned, non-null)
  const float* w_scale = nullptr;   // weight scale(s), see above (device, 4-B aligned, non-null)
  bool a_scale_per_token = false;
  bool w_scale_per_channel = false;
  // Block scales instead (DeepSeek): 128x128 weight blocks and 1x128
  // activation groups, applied per 128-wide K block in fp32 at each promotion (so the sum never
  // mixes blocks at reduced precision); needs N and K multiples of 128. Then
  //   sa(r, kb)     = a_scale[kb * a_scale_stride + r]        (r: row of `a`; a_scale_stride >= max_rows)
  //   sw(e, rb, kb) = w_scale[(e * R/128 + rb) * (red/128) + kb]  (f32, or UE8M0 bytes with w_scale_ue8m0)
  // with R the weight rows per expert (2N gated GEMM1, N plain GEMM1, K GEMM2) and red the reduction;
  // a_scale_per_token / w_scale_per_channel are ignored.
  bool block_scales = false;
  int64_t a_scale_stride = 0;
  bool w_scale_ue8m0 = false;
  // GEMM1 with block scales, activation scales in token order (DispatchOptions::
  // group_scales_by_token): row r of `a` (padded row padded_offsets[e] + i, grouped row
  // offsets[e] + i) takes token t = a_scale_row_token[offsets[e] + i]'s scales,
  //   sa(r, kb) = a_scale[t * a_scale_stride + kb]   (a_scale_stride >= ceil(K/128); needs offsets).
  const int32_t* a_scale_row_token = nullptr;
  // GEMM1 on the Swap-AB family only: H quantised in the epilogue for an FP8 GEMM2 (the tile's
  // bf16 outputs still go to `out`), with the quantiser's math and layout (permute_quant_launch.h,
  // token layout, rows = out's padded rows): hq_act kPerTensorStatic (*hq_static), kPerToken
  // (hq_scales[row]) or kGroup128 (hq_scales[g * hq_scale_stride + row], n % 128 == 0); kNone: off.
  // Per token / 1x128: each tile's row absmax goes to hq_partials ([max_rows, weight tiles] floats,
  // fp8_hq_partials_floats) and the last of a group's tiles to arrive at its counter (hq_counters,
  // fp8_hq_counter_words ints, ZERO before the launch; left zero) quantises the group. Only rows
  // below each expert's count are written (padding rows of hq_out keep their bytes).
  ActQuant hq_act = ActQuant::kNone;
  bool hq_ue8m0 = false;
  void* hq_out = nullptr;
  float* hq_scales = nullptr;
  int64_t hq_scale_stride = 0;
  const float* hq_static = nullptr;
  float* hq_partials = nullptr;
  int* hq_counters = nullptr;
  // GEMM2 on the Swap-AB family only: H quantised by GEMM2 itself instead of a separate pass (no
  // launch and no e4m3 copy of H between the GEMMs). hs_src: GEMM1's bf16 H [padded rows, n]
  // (16-byte aligned); each CTA quantises its token tile's rows with the quantiser's math, per token
  // (hs_act kPerToken: row scales, a_scale_per_token, no block scales) or in 1x128 groups (kGroup128:
  // block_scales), UE8M0 scales with hs_ue8m0. Needs ceil(n / 128) <= 4 (the activation slots of
  // the instance with the fewest stages; fp8_gemm2_quantises_h). `a` and `a_scale` are then unused.
  const void* hs_src = nullptr;
  ActQuant hs_act = ActQuant::kNone;
  bool hs_ue8m0 = false;
  // (GroupedGemmArgs::balanced / rows_hint: the balanced schedule; with a_scale_row_token the static
  // ranges only: a queue is then ignored and the forced schedule runs static)
  //
  // Gathered rows (GroupedGemmArgs::gather_x, row_token, gather_x_stride; session 45, not yet run on
  // a GPU): GEMM1 on the Swap-AB family reads its rows from the token-order e4m3 x [T, K] (16-byte
  // aligned rows, stride a multiple of 16) through the plan instead of `a`, and the activation
  // scales are in token order too: sa(t) = a_scale[t * mul] (per token / per tensor), and block
  // scales sa(t, kb) = a_scale[kb * a_scale_stride + t] (a_scale_stride >= T: the quantiser's token
  // layout). Not with a_scale_row_token, early weights or the dynamic queue (a queue is ignored).
};

// GroupedGemmArgs::one_wave in the FP8 launch: Swap-AB GEMM1 chains weight tiles so that the
// expected active token tiles fill one wave (one_wave_tiles_per_cta, up to kOneWaveFp8MaxSteps K
// blocks of 128 per CTA) only where the reduction is long (>= kOneWaveFp8MinKTiles blocks: K >=
// 6144). Measured on the H200 (session 26, calls 1-2, GEMM1's chain forced, whole layer with the
// router): K 7168 (56 blocks) faster, dsv3-tp8-fp8b 8 tiles per CTA at 128 / 256 tokens 331.7 ->
// 313.0 / 412.2 -> 390.0 us (GEMM1 177.0 -> 160.3 / 231.2 -> 204.2), dsv3-ep8-fp8b 309.8 -> 278.7
// / 340.5 -> 318.0; K 4096 (32 blocks) slower or level (qwen235-tp4-fp8b at 256 tokens 6 tiles per
// CTA 266 -> 282 us, session 25 call 3; qwen235-tp8-fp8c 3 tiles 135.0 -> 137.7; dsv4f-tp4-fp8b
// 4-8 tiles at 128 tokens +2-3 %). The one-wave GEMM1 leaves GEMM2's early weights no free CTA
// slots (session 25, call 3: qwen235-tp8-fp8c GEMM2 53.0 -> 62.1 us); a long GEMM1 gains more
// than that costs. The layer passes the expected local rows (expert parallelism: T x k x local / E).
constexpr int kOneWaveFp8MinKTiles = 48;
constexpr int kOneWaveFp8MaxSteps = 448;
inline bool one_wave_fp8_applies(bool swap_ab, int k_tiles) { return swap_ab && k_tiles >= kOneWaveFp8MinKTiles; }

// GroupedGemmArgs::dense = 0 in the FP8 launch: the dense Swap-AB instances (3-4 CTAs per SM) where
// they measured faster. H200, session 27, call 1 (bench/results/2026-12-02_h200_session27: both
// GEMMs dense vs the 2-CTA instances, same binary, whole layer with the router, 1-256 tokens; stage
// split at 16-256):
//  - GEMM1 with block scales: faster at every point but where the one-wave chain runs (dsv3-tp8-fp8b
//    at 128 / 256 tokens 156.3 -> 168.8 / 199.8 -> 208.5 us; elsewhere e.g. dsv3-tp8-fp8b at 64
//    130.3 -> 115.1, qwen235-tp4-fp8b at 256 151.0 -> 126.0). Row scales (qwen235-tp8-fp8c): slower
//    with token tile 8 (16 / 64 tokens 34.0 -> 34.7 / 50.7 -> 53.6), faster with 16-32 (56.0 -> 53.6
//    at 128, 60.7 -> 58.0 at 256).
//  - GEMM2: faster on the raster with block scales (dsv3-tp8-fp8b at 256, tile 16, 152.3 -> 123.1;
//    qwen235-tp4-fp8b at 256, tile 32, 95.0 -> 86.6) and with row scales on token tiles 8-16
//    (qwen235-tp8-fp8c at 128 46.9 -> 42.4); slower with row scales on tile 32 (qwen235-tp8-fp8c at
//    256 54.6 -> 60.5) and on the balanced schedule (16 tokens, every case: e.g. 53.2 -> 58.0).
//  Block scales give the consumer warpgroup more work per stage (a scale load and an FMA per value
//  at each promotion), so more of them per SM pay off more often.
// `one_wave_chain`: the launch chains weight tiles by the one-wave rule (one_wave_fp8_applies);
// `balanced`: it runs a balanced schedule. Forced tiles per CTA or split counts keep the 2-CTA
// instances (their measurements were taken there).
inline bool dense_fp8_auto(bool gemm2, bool block_scales, int tokens_tile, bool one_wave_chain, bool balanced) {
  if (gemm2) return !balanced && (block_scales || tokens_tile <= 16);
  return !one_wave_chain && (block_scales || tokens_tile >= 16);
}

// GroupedGemmArgs::pair's rule (2-CTA Swap-AB launches without split-K and without a forced shape,
// checked before the dense rule): the pair instances (two weight tiles per stage) where measured
// faster, H200 session 34 (bench/results/2026-12-03_h200_session34, six FP8 cases at 16 / 64 / 256
// tokens, calls 2-3):
// - token tile 16, long reductions over many weight tiles per expert (w_tiles >= 32; GEMM1 from 48
//   K blocks of 128, GEMM2 from 8): dsv3-ep8-fp8b at 256 tokens 330.9 -> 295.5 us (GEMM1 193.1 ->
//   174.0, GEMM2 117.9 -> 99.2). With 8 weight tiles per expert (dsv3-tp8-fp8b GEMM1, 56 blocks) the
//   layer was slower (355.8 -> 365.6), as were short reductions (GEMM2 with 2-4 blocks: 7-15 %);
// - GEMM2 with row scales on token tile 32: qwen235-tp8-fp8c / fp8t at 256 tokens 135.6 / 135.1 ->
//   132.6 / 132.0 us (GEMM2 56.6 -> 53.6).
// Elsewhere on tiles 8 and 32 no gain that holds across cases (qwen235-tp4-fp8b GEMM1 at tile 32:
// 127 -> 172 us).
inline bool pair_fp8_auto(bool gemm2, bool block_scales, int tokens_tile, int k_tiles, int w_tiles) {
  if (gemm2 && !block_scales && tokens_tile == 32) return true;
  return tokens_tile == 16 && w_tiles >= 32 && k_tiles >= (gemm2 ? 8 : 48);
}

// Host-only argument checks (no CUDA call): cudaErrorInvalidValue for N or K not a positive
// multiple of 16 (TMA global strides of 1-byte rows must be multiples of 16 B), G outside
// [1, 65536], max_rows < 0 or too large, an unsupported family/tile; and when max_rows > 0: null
// a / w / out / counts / padded_offsets (offsets for GEMM2) / a_scale / w_scale, a / w / out not
// 16-byte aligned, scales or bias not 4-byte aligned (UE8M0 weight scales: any alignment); block
// scales with N or K not a multiple of 128 or a_scale_stride < max_rows (with a_scale_row_token:
// < ceil(K/128), or GEMM2, or no offsets); a_scale_row_token without block scales. cudaSuccess
// otherwise.
cudaError_t check_fp8_grouped_gemm_args(const Fp8GroupedGemmArgs& args, bool gemm2);

// H quantised in GEMM1's epilogue (Fp8GroupedGemmArgs::hq_act): the launch takes it on the Swap-AB
// family (token tile <= 64) for static, per-token and 1x128 (n % 128 == 0) activation scales.
bool fp8_gemm1_quantises_h(ActQuant act, int tokens_tile, int n);
// Whether the FP8 Swap-AB GEMM2 can quantise H itself (Fp8GroupedGemmArgs::hs_src): per-token or
// 1x128 scales, and grouped_schedule::fp8_gemm2_hs_fits (at most 4 K blocks of 128).
bool fp8_gemm2_quantises_h(ActQuant act, int n);
// Sizes of its scratch for max_rows rows of H: partial absmax floats, and counter words (at the
// smallest Swap-AB token tile, 8).
int64_t fp8_hq_partials_floats(int64_t max_rows, int n, bool gated);
int64_t fp8_hq_counter_words(int64_t max_rows, int n, ActQuant act);

// Enqueue on `stream`; allocate nothing, never synchronise. Arguments are checked (above) before
// any CUDA call. max_rows == 0 (with valid shapes): nothing to do, cudaSuccess.
cudaError_t launch_fp8_grouped_gemm1(const Fp8GroupedGemmArgs& args, cudaStream_t stream);
cudaError_t launch_fp8_grouped_gemm2(const Fp8GroupedGemmArgs& args, cudaStream_t stream);

// The Swap-AB stage images of a launch's e4m3 weights (GroupedGemmArgs::w_packed; the BF16
// pack_grouped_gemm_weights' scheme): bytes (G x weight tiles x K blocks of 128 x 8 KB) and the
// one-off packing kernel on `stream` (args: w, num_groups, n, k, activation; N, K multiples of 16).
// A reduction whose last K block holds 1-64 (e.g. 192) pairs the tiles' tails: the last image of each
// even tile w holds tiles w and w + 1's last 64 K side by side (the tail-pair instances read it);
// the other images are the stage images as above.
int64_t packed_fp8_grouped_gemm_weight_bytes(const GroupedGemmArgs& args, bool gemm2);
cudaError_t pack_fp8_grouped_gemm_weights(const GroupedGemmArgs& args, bool gemm2, void* packed, cudaStream_t stream);

// Test hook: 1 when the last FP8 pair launch (Fp8GroupedGemmArgs::pair) of this host thread ran the
// tail-pair instances (GEMM2 reductions of 129-192 with packed weights: two tiles' last 64 K in one
// 8 KB stage), 0 when the plain pair instances, -1 before any pair launch.
int last_fp8_pair_tails();
// Whether a pair launch (token tile `tile`) of these arguments runs the tail-pair instance: GEMM2 on
// token tile 32 with packed weights (their tail images), a reduction of 129-192, row scales, no
// gathered rows, no forced odd count of weight tiles per CTA or forced balanced schedule, and
// FUSEDMOE_FP8_TAIL not 0; with the pairs forced (pair > 0) wherever that holds, by the rule up to
// 16 expected rows per expert (expected_rows, else rows_hint, against num_groups; measured).
bool fp8_tail_pairs_apply(const Fp8GroupedGemmArgs& a, int tile, bool gemm2);

// Every compiled FP8 grouped-GEMM instance name; *count receives the number.
// e.g. "sm90_fp8e4m3_grouped_gemm_128x128x128_s5_row_gated" (GEMM1 with a gated activation),
//      "sm90_fp8e4m3_grouped_gemm_128x128x128_s5_row"       (GEMM2, non-gated GEMM1).
const char* const* fp8_grouped_gemm_instance_names(int* count);

}  // namespace fusedmoe::kernels
