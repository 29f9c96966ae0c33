// The public entry points: validate -> size workspace -> decide backend -> run.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <type_traits>

#include "core/check.h"
#include "core/stages.h"
#include "core/workspace.h"
#include "dispatch/oracle.h"
#include "fusedmoe/device.h"
#include "fusedmoe/moe.h"
#include "kernels/common/launch_mode.h"
#include "kernels/gemm/grouped_schedule_rules.h"
#if defined(FUSEDMOE_WITH_CUDA)
#include <cuda_runtime.h>

#include "kernels/front/front_launch.h"
#include "kernels/gemm/cutlass_grouped_gemm.h"
#include "kernels/gemm/sm90_bf16_grouped_gemm.h"
#include "kernels/gemm/sm90_fp8_grouped_gemm.h"
#include "kernels/quant/permute_quant_launch.h"
#endif

namespace fusedmoe {

Status workspace_size(const MoeProblem& p, size_t* bytes) {
  FM_REQUIRE(bytes != nullptr, kInvalidArgument, "bytes is null");
  FM_TRY(validate(p));
  *bytes = detail::WorkspaceLayout::plan(p).total;
  return Status::Ok();
}

namespace {
// Up to this many tokens, quantised activations go through the separate dispatch kernels (see
// the fuse_front rule in resolve()).
constexpr int64_t kFrontSeparateQuantMaxTokens = 16;
// Row-scaled FP8 gathers its e4m3 rows (GEMM1) behind the fused front up to this many tokens.
constexpr int64_t kFp8GatherMaxTokens = 128;
// Precomputed ids run in the fused front up to this many tokens (the front's own bound, mirrored
// for builds without the kernels; above it, separate kernels).
constexpr int64_t kFrontPrecomputedMaxTokens = 256;
#if defined(FUSEDMOE_WITH_CUDA)
static_assert(kFrontPrecomputedMaxTokens == kernels::kFrontPrecomputedMaxTokens, "the fused front's precomputed bound");
#endif
// The dynamic balanced GEMM2 (BF16), measured up to this many tokens (session 17, call 5).
constexpr int64_t kBalancedMaxTokens = 256;

// The switches as forward() resolves them; the reasons only when `why` is given (explain(): the
// hot path builds no strings).
ResolvedOptions resolve(const MoeProblem& p, const ForwardOptions& o, std::ostringstream* why) {
  ResolvedOptions r;
  auto pick = [&](const char* name, Toggle t, bool auto_value, const char* auto_reason) {
    const bool v = t == Toggle::kAuto ? auto_value : t == Toggle::kOn;
    if (why)
      *why << "  " << name << ": " << (v ? "on" : "off") << " ("
           << (t == Toggle::kAuto ? auto_reason : "forced by ForwardOptions") << ")\n";
    return v;
  };
  const bool decode = p.num_tokens <= 256;
  r.overlap_launches = pick("overlap_launches", o.overlap_launches, decode,
                            decode ? "auto: <= 256 tokens, launch latency and weight prefetch matter"
                                   : "auto: > 256 tokens, no gain measured");
  r.staged_epilogue = pick("staged_epilogue", o.staged_epilogue, true, "auto: measured faster at prefill");
  // FP8 (session 45): x quantised in token order (T rows instead of T*k) and GEMM1 gathering its
  // e4m3 rows, on the Swap-AB tiles (forward() keeps the permuted rows on normal tiles); auto only
  // for row-scaled FP8 behind the fused front (fp8_gather_auto below, session 54); else forced
  // (ForwardOptions::gather_rows = kOn): H200, session 47 call 1 (two rounds, on / off interleaved,
  // 1-256 tokens, four FP8 cases, packed weights) slower at 13 of 16 points, by up to 33 %
  // (dsv3-tp8-fp8b at 256 tokens 361.5 -> 481.7 us; at 16 tokens 148.0 -> 168.4; the gathering
  // GEMM1 gives up its early weights and the pair / dense instances the rules otherwise pick);
  // faster only on qwen235-tp8-fp8c at 1-64 tokens (0.7-2.8 %, 64 tokens 97.0 -> 94.3).
  // (K % 16 == 0, the gathered rows' 16-byte chunks: validate() requires it of every FP8 problem)
  const bool fp8_gather_ok = p.quant.weight.format == WeightFormat::kFP8E4M3 && p.quant.act != ActQuant::kNone &&
                             !p.router.weight_on_input;
  const bool gather_ok = (p.quant.act == ActQuant::kNone && !p.router.weight_on_input) || fp8_gather_ok;
  // Auto: on at decode when the fused front routes from logits (route + plan in one kernel; GEMM1
  // then gathers right after it instead of after a permute) and the touched experts' weights are
  // at most ~400 MB (the layer is latency-bound). H200, session 12 call 4, with the router: 1.7-5
  // us faster at 1 token on all five BF16 decode cases, 1-6 us at 4 tokens on qwen235-tp8 /
  // dsv3-tp8 / qwen30-tp1; 2-7 us slower at 4 tokens on gptoss-tp1 / mixtral-tp2 (0.7-3.5 GB
  // touched: GEMM1's early weights under PDL, which gathering gives up, matter more there) and
  // mixed from precomputed ids with separate router/plan kernels. Session 15 call 3, precomputed
  // ids in the fused front (<= 16 tokens), gather on vs off at 1 token: qwen30-tp1 32.1 vs 37.3
  // us, gptoss-tp1 62.0 vs 66.7, mixtral-tp2 96.3 vs 101.7, dsv3-tp8 44.4 vs 46.5, qwen235-tp8
  // 25.2 vs 27.4.
  // The fused front: off with quantised x up to 16 tokens. The separate kernels put the quantiser
  // between the plan and GEMM1, which lets GEMM1 stream its first weight stages before its wait
  // (PDL early weights). H200, session 15, per call, fused vs separate: with the router separate
  // was faster on all 12 FP8 cases of call 4 (dsv3-tp8-fp8b / dsv4f-tp4-fp8b / qwen235-tp8 fp8c,
  // fp8t x 1, 4, 16 tokens) by 0.7-10 us (dsv3-tp8-fp8b 50.7 -> 41.7 us at 1 token) and on both
  // of call 5 at 64 (dsv3 244.2 -> 239.7, qwen235 fp8c 126.0 -> 124.7); at 256 mixed (+-2.4 us);
  // from precomputed ids mixed (dsv3 3.4-3.8 us faster separate at 1-4 tokens, dsv4f / qwen235
  // 1-3.7 us faster fused). Session 36 (call 1, the six FP8 cases with packed weights, fused vs
  // separate in one run): at 32-64 tokens, where the front is a thread-block cluster, fused was
  // faster on 11 of 12 points (qwen235-tp8-fp8c 64 tokens 101.1 -> 97.4 us, qwen235-tp4-fp8b 32
  // 155.1 -> 150.2; dsv4f-tp4-fp8b at 32 +0.5 %); at 1-16 tokens mixed (-5.3 % to +6.1 %). Hence
  // separate only up to 16 tokens.
  const double wbytes = p.quant.weight.format == WeightFormat::kFP8E4M3 ? 1.0 : 2.0;
  const double expert_bytes =
      wbytes * (double(p.activation.gemm1_rows(p.intermediate)) * p.hidden + double(p.hidden) * p.intermediate);
  const double touched_experts = std::min<double>(double(p.local_experts()), double(p.num_tokens) * p.top_k()) +
                                 p.num_shared_experts;
  // Few touched weights or small experts: the layer is latency-bound (the gather rules below).
  const bool few_touched = touched_experts * expert_bytes <= 400e6;
  const bool small_experts = expert_bytes <= 6e6;
  const bool small_layer = few_touched || small_experts;
  // Row-scaled FP8 (per-tensor or per-channel weights, per-token or static per-tensor x) from
  // logits up to 128 tokens: the fused front quantises x in token order and GEMM1 gathers its e4m3
  // rows, one kernel before GEMM1 instead of router + plan + permute/quantise. H100, session 54
  // call 1 (qwen235-tp8-fp8c / fp8t, each switch forced each way and both on, one run): the pair
  // faster than the old defaults at every point of 1-128 tokens, fp8c 1 / 4 / 16 / 32 / 64 / 128
  // tokens 23.16 -> 19.40 / 40.74 -> 37.64 / 87.23 -> 81.50 / 113.10 -> 112.21 / 119.32 -> 118.56 /
  // 140.08 -> 133.77 us (fp8t alike: 16 tokens 88.12 -> 82.68); either switch alone gains little
  // up to 16 tokens. The block-scaled cases lose with gathered rows (session 47: the pair and dense
  // instances their GEMM1 gives up) and keep the permute. 256 tokens: 2 % slower in session 47
  // (fp8c), not taken. From precomputed ids, as from logits: H100, session 56 call 1 (forced each
  // way, one run), default -> pair at 1 / 4 / 16 tokens: fp8c 23.97 -> 17.69 / 40.34 -> 35.06 /
  // 85.62 -> 79.71 us, fp8t 23.02 -> 17.39 / 40.30 -> 36.06 / 87.43 -> 80.18 (faster than from
  // logits, whose router does more); session 57 call 2 (the front on several blocks), separate
  // kernels -> fused front + gathered rows at 17 / 32 / 64 / 128 tokens: fp8c 83.94 -> 78.44 /
  // 117.95 -> 110.12 / 124.85 -> 116.55 / 139.55 -> 128.34 us, fp8t 85.23 -> 78.36 / 116.91 ->
  // 109.87 / 125.86 -> 117.33 / 140.68 -> 129.82.
  // The fused front routes logits rows, and precomputed ids up to 256 tokens (session 57: one
  // routing block up to 16, several above).
  const bool precomputed = p.router.kind == RouterKind::kPrecomputed;
  const bool front_routes = reads_logits(p.router.kind) || (precomputed && p.num_tokens <= kFrontPrecomputedMaxTokens);
  const bool fp8_row_scaled = fp8_gather_ok &&
                              (p.quant.weight.granularity == ScaleGranularity::kPerTensor ||
                               p.quant.weight.granularity == ScaleGranularity::kPerChannel) &&
                              (p.quant.act == ActQuant::kPerToken || p.quant.act == ActQuant::kPerTensorStatic);
  const bool fp8_gather_auto = fp8_row_scaled && front_routes &&
                               p.num_tokens <= kFp8GatherMaxTokens && small_layer;
  const bool front_auto = front_routes && (p.quant.act == ActQuant::kNone ||
                                           p.num_tokens > kFrontSeparateQuantMaxTokens || fp8_gather_auto);
  r.fuse_front = pick("fuse_front", o.fuse_front, front_auto,
                      front_auto ? (p.quant.act != ActQuant::kNone && p.num_tokens <= kFrontSeparateQuantMaxTokens
                                        ? "auto: route + plan + x quantised in token order in one kernel (row-scaled "
                                          "FP8 with gathered rows; measured)"
                                        : "auto: route + plan in one kernel at small token counts")
                      : !front_routes ? (precomputed ? "auto: off (precomputed ids above 256 tokens: separate kernels)"
                                                     : "auto: off (a hash router reads no logits row)")
                                      : "auto: off with quantised x up to 16 tokens (the quantiser between the plan and "
                                        "GEMM1 lets GEMM1 prefetch weights; measured)");
  // Also with any router for small experts (<= 6 MB of weights each; qwen235-tp8's 4.7 MB: 1-4 %
  // faster at 4-256 tokens with and without the router, call 5; 9-13 MB experts were mixed).
  // Precomputed ids also run in the fused front: up to 16 tokens since session 15, up to 256 since
  // session 57 (H100, call 2, `bench --precomputed --front`, 17-256 tokens on ten cases, fused vs
  // separate: faster or level at all 50 points, up to 6.6 %: qwen235-tp8-fp8c at 32 tokens 117.99
  // -> 110.67 us, qwen235-tp8 BF16 at 256 244.11 -> 234.76; the front alone 4.1-5.3 us per call
  // against 10.1-13.2 for the three separate launches in the dispatch suite).
  const bool fused_front = r.fuse_front && front_routes;
  const bool bf16_gather_auto =
      gather_ok && !fp8_gather_ok && p.num_tokens <= 256 && ((fused_front && few_touched) || small_experts);
  const bool fp8_gather = fp8_gather_auto && fused_front;
  const bool gather_auto = bf16_gather_auto || fp8_gather;
  r.gather_rows = pick("gather_rows", o.gather_rows, gather_auto,
                       bf16_gather_auto ? "auto: decode with <= 400 MB of touched expert weights behind the fused front "
                                          "(logits or precomputed ids), or experts of <= 6 MB (measured)"
                       : fp8_gather     ? "auto: row-scaled FP8 from logits or precomputed ids up to 128 tokens, the "
                                          "fused front quantising x in token order (measured)"
                       : !gather_ok     ? "auto: off (quantised x or weights on the input: not applicable)"
                       : fp8_gather_ok  ? "auto: off for this FP8 layer (gathered e4m3 rows measured faster only row-scaled "
                                          "behind the fused front up to 128 tokens; slower on block scales)"
                                        : "auto: off (> 256 tokens, or larger experts / more touched weights; measured)") &&
                  gather_ok;
  if (why && o.gather_rows == Toggle::kOn && !gather_ok)
    *why << "    (not applicable: weights on the input, or a weight format without gathered rows)\n";
  // The weights' L2 policy (ForwardOptions::weights_evict_first says what was measured): evict_first
  // where each expert's weights stream once, except FP8 layers whose touched weights fit in 40 MB
  // (under the 50 MB L2; 1-2 tokens: evict_normal 4-8 % faster there, session 24 call 4).
  const bool once = detail::weights_stream_once(p);
  const bool small_fp8 = p.quant.weight.format == WeightFormat::kFP8E4M3 && touched_experts * expert_bytes <= 40e6;
  r.weights_evict_first =
      pick("weights_evict_first", o.weights_evict_first, once && !small_fp8,
           !once       ? "auto: off (> 256 tokens, or an expert's rows may overflow its token tile: its next tile "
                         "re-reads the weights from L2; measured)"
           : small_fp8 ? "auto: off (FP8 with <= 40 MB of touched expert weights: measured faster with evict_normal)"
                       : "auto: each expert's weights stream once (the token tile holds the tile rule's headroom x "
                         "the expected rows; measured)");
  r.split_k = pick("split_k", o.split_k == Toggle::kOff ? Toggle::kOff : Toggle::kAuto, true,
                   "auto: swap-ab tiles filling under half of the CTA slots split K over a cluster");
  // The balanced GEMM2 schedule (Swap-AB, kernels/gemm/grouped_schedule.cuh, use_balanced_schedule:
  // the kernel adds its own conditions). BF16 runs it dynamic (CTAs take chunks of the work from a
  // counter as they finish): requested from a quarter as many rows (T x slots) as experts, up to 256
  // tokens. Measured on the H200, sessions 16-17 (numbers in grouped_schedule_rules.h). FP8 (static
  // ranges) is off by default: session 37 (call 3, two runs, forced each way at 4-32 tokens on five
  // FP8 cases, with the inlined schedule) measured the raster 1-9 % faster at 8 of the 17 points
  // the earlier rule (rows in (experts / 4, experts]) took and the static ranges faster at 3
  // (0.8-3.3 %: 16 tokens on dsv3-tp8-fp8b and dsv4f-tp4-fp8b, 12 on qwen235-tp4-fp8b).
  const int64_t rows = p.num_tokens * p.slots_per_token();
  const int64_t groups = p.local_experts() + p.num_shared_experts;
  const bool bf16_weights = p.quant.weight.format == WeightFormat::kBF16;
  const bool fp8_weights = p.quant.weight.format == WeightFormat::kFP8E4M3;
  // Row-scaled FP8 behind the fused front with gathered rows (fp8_gather): the static ranges from
  // rows above 3/4 of the experts (the kernel's rule then runs them for chained tiles up to rows =
  // experts: qwen235-tp8 at 13-16 tokens). H100, session 54, forced each way: 16 tokens faster in
  // three runs (call 3: fp8c 81.95 -> 80.56 us, fp8t 83.19 -> 81.56; call 4, two rounds: fp8c
  // 81.22 / 80.61 -> 79.24 / 79.05, fp8t 81.07 / 81.83 -> 79.78 / 80.08), 12 tokens level
  // (+-0.7 %), 6-8 tokens slower (fp8c 1.6 %, fp8t 7-8 %: 54.68 -> 59.01 us at 8).
  const bool fp8_balanced = fp8_gather && r.gather_rows && 4 * rows > 3 * groups;
  const bool balanced_auto =
      (bf16_weights && 4 * rows > groups && p.num_tokens <= kBalancedMaxTokens) || fp8_balanced;
  r.balanced_gemm2 = pick("balanced_gemm2", o.balanced_gemm2, balanced_auto,
                          !(bf16_weights || fp8_weights) ? "auto: off (BF16 and FP8 weights only)"
                          : bf16_weights
                              ? (balanced_auto ? "auto: requested, dynamic (rows above a quarter of the experts, <= 256 "
                                                 "tokens); the kernel runs it where GEMM2 has Swap-AB tiles without "
                                                 "split-K, short reductions (under 4 ring lengths), chained unless rows exceed the "
                                                 "experts (measured)"
                                               : "auto: off (rows up to a quarter of the experts, or > 256 tokens; measured)")
                          : fp8_balanced
                              ? "auto: requested, static ranges (row-scaled FP8 with gathered rows, rows above 3/4 of "
                                "the experts; the kernel runs them for chained tiles up to rows = experts; measured)"
                              : "auto: off (FP8: the raster measured faster than the static ranges at 8 of 17 points "
                                "within (experts / 4, experts] rows, 1-9 %, slower at 3, 0.8-3.3 %)") &&
                     (bf16_weights || fp8_weights);
  // FP8 GEMM1 on the balanced schedule's static ranges (the kernel runs it for Swap-AB tiles without
  // split-K).
  r.balanced_gemm1 = pick("balanced_gemm1", o.balanced_gemm1, false, "auto: off (not measured faster yet)") &&
                     fp8_weights;
  // The dense Swap-AB instances (3-4 CTAs per SM): by the launchers' measured rules
  // (kernels::dense_fp8_auto / dense_bf16_auto, which need the launch's tile, chain and schedule).
  r.dense_swapab = o.dense_swapab == Toggle::kOn ? 1 : o.dense_swapab == Toggle::kOff ? -1 : 0;
  r.gemm1_dense_swapab = o.gemm1_dense_swapab == Toggle::kOn    ? 1
                         : o.gemm1_dense_swapab == Toggle::kOff ? -1
                                                                : r.dense_swapab;
  if (why && o.gemm1_dense_swapab != Toggle::kAuto)
    *why << "  gemm1_dense_swapab: " << (r.gemm1_dense_swapab > 0 ? "on" : "off") << " (forced by ForwardOptions)\n";
  if (why)
    *why << "  dense_swapab: "
         << (o.dense_swapab != Toggle::kAuto
                 ? (r.dense_swapab > 0 ? "on (forced by ForwardOptions)" : "off (forced by ForwardOptions)")
                 : "rule (auto, per launch: FP8 GEMM1 with block scales, or row scales from token tile 16, unless "
                   "the one-wave chain runs; FP8 GEMM2 on the raster with block scales or token tiles 8-16; BF16 "
                   "where single weight tiles run on the raster (GEMM2: token tiles 8-16; GEMM1: past one wave of 2-CTA slots), "
                   "BF16 GEMM1 chains that fit one dense wave; measured)")
         << "\n";
  // The FP8 pair instances (two weight tiles per stage): by the launcher's measured rule
  // (kernels::pair_fp8_auto, which needs the launch's tile, reduction length and weight tiles).
  r.fp8_pair_swapab = o.fp8_pair_swapab == Toggle::kOn ? 1 : o.fp8_pair_swapab == Toggle::kOff ? -1 : 0;
  if (why && fp8_weights)
    *why << "  fp8_pair_swapab: "
         << (o.fp8_pair_swapab != Toggle::kAuto
                 ? (r.fp8_pair_swapab > 0 ? "on (forced by ForwardOptions)" : "off (forced by ForwardOptions)")
                 : "rule (auto, per launch: token tile 16 with >= 32 weight tiles per expert and GEMM1 >= 48 or "
                   "GEMM2 >= 8 K blocks of 128, and row-scaled GEMM2 on token tile 32; measured)")
         << "\n";
  if (why && (p.quant.weight.format == WeightFormat::kBF16 || p.quant.weight.format == WeightFormat::kFP8E4M3))
    *why << "  packed_weights: "
         << (o.packed_weights == Toggle::kOff ? "off (forced by ForwardOptions)"
                                              : "auto: the Swap-AB GEMMs read MoeTensors::w1_packed / w2_packed when "
                                                "given (pack_weights; measured faster), each GEMM whose reduction fills "
                                                "its last 128-byte K step; and an FP8 row-scaled GEMM2 with a reduction "
                                                "of 129-192 on the tile-32 pair instances up to 16 expected rows per "
                                                "expert (their tail stages hold both tiles' last 64 K; measured)")
         << "\n";
  // The Swap-AB epilogues' puts: each kernel compiled with the one measured faster for it.
  if (why && (p.quant.weight.format == WeightFormat::kBF16 || p.quant.weight.format == WeightFormat::kFP8E4M3))
    *why << "  swap_ab_epilogue: "
         << (p.quant.weight.format == WeightFormat::kFP8E4M3
                 ? "stmatrix puts (FP8 kernel; measured level or faster at 11 of 12 decode points, up to 4.2 %)"
                 : "per-value puts (BF16 kernel; stmatrix measured level to 1.7 % slower)")
         << "\n";
  if (fp8_weights && p.quant.act != ActQuant::kNone) {
    const bool hq_ok = p.quant.act != ActQuant::kPerTensorDynamic &&
                       (p.quant.act != ActQuant::kGroup128 || p.intermediate % 128 == 0);
    // H200, session 36 (call 2, the six FP8 cases at 1-256 tokens with packed weights, on vs off in
    // one run): static per-tensor scales 2.5-8 % faster (each tile quantises its own outputs); per
    // token and 1x128 slower at 27 of 30 points, by up to 19 % (qwen235-tp8-fp8c at 1 token 22.1 ->
    // 26.2 us; call 3 on the final code: static 3.0-9.8 % faster): the last tile's
    // arrival (a fence and an atomic at GPU scope), the re-read of the group and the counters'
    // memset sit on the critical path and cost more than the separate pass.
    const bool hq_static = p.quant.act == ActQuant::kPerTensorStatic;
    r.fused_h_quant = pick("fused_h_quant", o.fused_h_quant, hq_static,
                           hq_static ? "auto: on with static per-tensor scales where GEMM1 runs Swap-AB tiles (each "
                                       "tile quantises its own outputs; measured faster)"
                                     : "auto: off with per-token / 1x128 scales (the last tile of each group "
                                       "quantises it: measured slower than the separate pass)") &&
                      hq_ok;
    if (why && o.fused_h_quant != Toggle::kOff && !hq_ok)
      *why << "    (not applicable: dynamic per-tensor scales need all of H first, or 1x128 groups with N % 128 != 0)\n";
    // GEMM2 quantising H itself (each CTA its token tile's rows; no cross-CTA step, no pass between
    // the GEMMs). H200, session 40 (call 3, two runs, the four FP8 cases it applies to at 1 / 16 / 64
    // / 256 tokens, forced on vs the separate pass): 0.5-11.8 % faster at 14 of 16 points, level at
    // the other two (qwen235-tp8-fp8c at 16 tokens 73.1 vs 73.1 µs; dsv4f-tp4-fp8b at 1 token 38.4 ->
    // 33.9, qwen235-tp4-fp8b at 256 233.6 -> 221.9). Auto: on up to 256 tokens (measured there),
    // and with 1x128 scales up to 512: session 40 call 5 (two runs, forced on vs off at 512
    // tokens) dsv3-tp8-fp8b 494.8 -> 473.0 us, dsv4f-tp4-fp8b 548.1 -> 522.2, qwen235-tp4-fp8b
    // level; per token (qwen235-tp8-fp8c) 0.5-0.7 % slower there, so not above 256.
    const bool hs_auto = decode || (p.quant.act == ActQuant::kGroup128 && p.num_tokens <= 512);
    const bool hs_ok = kernels::grouped_schedule::fp8_gemm2_hs_fits(static_cast<int>(p.intermediate),
                                                                     p.quant.act == ActQuant::kGroup128);
    if (p.quant.act == ActQuant::kPerToken || p.quant.act == ActQuant::kGroup128) {
      r.gemm2_quantises_h = pick("gemm2_quantises_h", o.gemm2_quantises_h, hs_auto,
                                 hs_auto ? "auto: on up to 256 tokens (512 with 1x128 scales) where GEMM2 runs Swap-AB "
                                           "tiles (each CTA quantises its token tile's rows of H; measured faster than "
                                           "the separate pass)"
                                         : "auto: off above 256 tokens (512 with 1x128 scales; measured level or "
                                           "slower per token at 512)") &&
                            hs_ok && !r.fused_h_quant;
      const bool wanted = o.gemm2_quantises_h == Toggle::kOn || (o.gemm2_quantises_h == Toggle::kAuto && hs_auto);
      if (why && wanted && !hs_ok)
        *why << "    (not applicable: H has more than " << kernels::grouped_schedule::kFp8HsMaxKTiles
             << " K blocks of 128, or 1x128 groups with N % 128 != 0)\n";
      if (why && wanted && hs_ok && r.fused_h_quant)
        *why << "    (not applicable: H is quantised in GEMM1's epilogue, fused_h_quant)\n";
    }
  }
  const bool block_fp8 = p.quant.weight.format == WeightFormat::kFP8E4M3 &&
                         p.quant.weight.granularity == ScaleGranularity::kBlock && !p.router.weight_on_input;
  if (block_fp8)
    r.scales_by_token = pick("scales_by_token", o.scales_by_token, true,
                             "auto: x's 1x128 scales in token order, read through row_token (no gather)");
  // GEMM1 on the grouped backend (gathered rows, activation in the epilogue), GEMM2 on CUTLASS
  const bool hybrid_ok = bf16_weights && p.act_dtype == DType::kBFloat16 && gather_ok;
  r.cutlass_gemm2 = pick("cutlass_gemm2", o.cutlass_gemm2, false,
                         "auto: off (forced on it applies where the CUTLASS backend runs BF16 x and weights)") &&
                    hybrid_ok;
  if (why && o.cutlass_gemm2 == Toggle::kOn && !hybrid_ok)
    *why << "    (not applicable: BF16 x and weights without weights on the input only)\n";
  // GEMM2 on the ping-pong normal tiles (grouped backend; on the CUTLASS backend instead of its GEMM2)
  const bool ping_ok = bf16_weights && p.act_dtype == DType::kBFloat16 && !r.cutlass_gemm2;
  r.pingpong_gemm2 = pick("pingpong_gemm2", o.pingpong_gemm2, false, "auto: off (measured slower: prefill layers 1.004-1.19x CUTLASS's GEMM2, session 38)") && ping_ok;
  if (why && o.pingpong_gemm2 == Toggle::kOn && !ping_ok)
    *why << "    (not applicable: BF16 x and weights, and not with cutlass_gemm2)\n";
  // The activation in the CUTLASS GEMM1's epilogue (split gate / up halves: MoeTensors::
  // w1_gate_up_blocks, checked by forward(), which has the tensors)
  // (FP8 128x128 blocks: CUTLASS's blockwise GEMM1 with the same epilogue, forced only until measured)
  const bool fp8_blocks = fp8_weights && p.quant.weight.granularity == ScaleGranularity::kBlock;
  const bool fused_act_ok = (bf16_weights && p.act_dtype == DType::kBFloat16 && !r.cutlass_gemm2) || fp8_blocks;
  r.fused_activation = pick("fused_activation", o.fused_activation, false,
                            fp8_blocks ? "auto: off for FP8 128x128 blocks (built, not yet measured); forced on it "
                                         "applies where the CUTLASS backend runs the layer"
                                       : "auto: forward() turns it on where the CUTLASS backend runs the layer, "
                                         "MoeTensors::w1_gate_up_blocks is given (or gate / up are interleaved) and "
                                         "CUTLASS's GEMM1 would run its 128x256 tile over whole 256-row tiles of W1 "
                                         "(measured faster there; interleaved also over >= 16 tiles below 128 rows per expert)") &&
                       fused_act_ok;
  if (why && o.fused_activation == Toggle::kOn && !fused_act_ok)
    *why << "    (not applicable: BF16 x and weights or FP8 128x128 blocks, and not with cutlass_gemm2)\n";
  if (why && r.fused_activation && p.activation.gated() && !p.activation.interleaved)
    *why << "    (reads MoeTensors::w1_gate_up_blocks: pack_gate_up_blocks())\n";
  return r;
}
}  // namespace

ResolvedOptions resolve_options(const MoeProblem& p, const ForwardOptions& o) {
  std::ostringstream why;
  ResolvedOptions r = resolve(p, o, &why);
  r.why = why.str();
  return r;
}

#if defined(FUSEDMOE_WITH_CUDA)
namespace {
// A pair of CUTLASS configurations (GEMM1, GEMM2) read once from `var` = "c1,c2": values 1..count,
// anything else (0, missing, out of range) the auto choice.
template <class Config>
struct ConfigPair {
  Config gemm1 = Config::kAuto, gemm2 = Config::kAuto;
};
template <class Config>
ConfigPair<Config> read_config_pair(const char* var, int count) {
  ConfigPair<Config> r;
  int a = 0, b = 0;
  if (const char* e = std::getenv(var); e != nullptr && std::sscanf(e, "%d,%d", &a, &b) >= 1) {
    auto cfg = [count](int v) { return v >= 1 && v <= count ? Config(v) : Config::kAuto; };
    r.gemm1 = cfg(a);
    r.gemm2 = cfg(b);
  }
  return r;
}
// FUSEDMOE_CUTLASS_CONFIG=c1,c2 (kernels::CutlassConfig: 1 = cooperative 128x256, 2 = ping-pong
// 128x128, 3 = cooperative 128x256 on 2x1 clusters, 4 = cooperative 256x128, 5 = ping-pong 64x256,
// 6 = cooperative 128x256 on 1x2 clusters, 0 = auto) forces the CUTLASS configuration of GEMM1 and
// GEMM2: a tuning override.
using CutlassOverride = ConfigPair<kernels::CutlassConfig>;
const CutlassOverride& cutlass_override() {
  static const CutlassOverride o =
      read_config_pair<kernels::CutlassConfig>("FUSEDMOE_CUTLASS_CONFIG", kernels::kCutlassConfigs);
  return o;
}
// FUSEDMOE_CUTLASS_FP8_CONFIG=c1,c2 (kernels::CutlassFp8Config: 1 = cooperative 128x128, 2 = the same
// on 1x2 clusters, 3 = ping-pong 64x128 on 1x2 clusters, 0 = auto) forces the configuration of the
// CUTLASS FP8 GEMM1 and GEMM2 (blockwise and row-scaled): a tuning override.
using CutlassFp8Override = ConfigPair<kernels::CutlassFp8Config>;
const CutlassFp8Override& cutlass_fp8_override() {
  static const CutlassFp8Override o =
      read_config_pair<kernels::CutlassFp8Config>("FUSEDMOE_CUTLASS_FP8_CONFIG", kernels::kCutlassFp8Configs);
  return o;
}

// ForwardOptions::fused_activation's auto rule where the CUTLASS backend runs a BF16 layer: on when the
// caller gave MoeTensors::w1_gate_up_blocks (gate and up as W1's halves) and CUTLASS's GEMM1 would run
// its cooperative 128x256 tile, the fused kernel's. H200, session 43 calls 5-6 (the fast-quotient
// epilogue, 8a3f5db; bench --stages --fused-act, 4096 / 16384 tokens): the GEMM1 stage (GEMM1 +
// activation) 1-10 % faster at 13 of 14 such points (mixtral-tp2 16384: 6571 -> 6155 us, qwen30-tp1
// 1605 -> 1448, dsv4f-tp4 1577 -> 1475, qwen235-tp4 1425 -> 1331; mixtral-tp2 4096 level), but 9.5 %
// slower where the two-pass path runs CUTLASS's 256x128 tile (qwen235-tp8 at 16384: 2N = 384), and
// qwen235-tp8 at 4096 (128x256 tiles both ways, its last one half empty) 3.4-8 % slower as a layer
// in three runs though its GEMM1 stage was faster: so only where 2N fills whole 256-wide tiles.
// Interleaved gate / up (GPT-OSS: no blocks needed, the pairs are adjacent columns): also where 2N
// spans at least 16 such tiles (a half-empty last one) below 128 expected rows per expert. H100,
// session 56 call 3, gptoss-tp1 (2N = 5760) forced each way in one run: 2048 tokens (64 rows) 2613.4
// vs 2703.7 us (GEMM1 stage 1659 vs 1752), 4096 (128 rows) level (3145.6 vs 3145.0), 16384 (512
// rows) 8119.1 vs 7758.5 (GEMM1 stage 5553 vs 4902: slower where compute-bound). Call 4: 2048 /
// 3072 / 4096 tokens 2495.4 / 2557.4 / 3030.2 fused vs 2580.9 / 2677.3 / 2997.5 us.
bool fused_activation_auto(const MoeProblem& p) {
  const int64_t r1 = p.gemm1_rows();
  const bool tiles_ok = r1 % 256 == 0 || (p.activation.interleaved && r1 >= 16 * 256 &&
                                          detail::expected_rows_per_group(p) < 128.0);
  return p.quant.weight.format == WeightFormat::kBF16 && p.act_dtype == DType::kBFloat16 && p.activation.gated() &&
         tiles_ok && cutlass_override().gemm1 == kernels::CutlassConfig::kAuto &&
         kernels::cutlass_grouped_auto_config(p.gemm1_rows(), detail::expected_rows_per_group(p), false) ==
             kernels::CutlassConfig::kCoop128x256;
}

// The fused GEMM1 reads MoeTensors::w1_gate_up_blocks where gate and up are W1's halves.
bool fused_activation_needs_blocks(const MoeProblem& p) { return p.activation.gated() && !p.activation.interleaved; }

// Whether the CUTLASS backend's GEMM1 runs with the activation in its epilogue: forced
// (ResolvedOptions), or by the auto rule, where the caller gave MoeTensors::w1_gate_up_blocks if the
// kernel needs them (`has_blocks`; explain(), which has no tensors, asks with true and says so).
bool fused_activation_runs(const MoeProblem& p, const ForwardOptions& o, const ResolvedOptions& ro, bool has_blocks) {
  return ro.fused_activation || (o.fused_activation == Toggle::kAuto && !ro.cutlass_gemm2 &&
                                 (has_blocks || !fused_activation_needs_blocks(p)) && fused_activation_auto(p));
}

// FP8 on the grouped backend: where H is quantised for GEMM2 (forward() and explain() agree on it).
enum class HQuantStep { kPass, kGemm1Epilogue, kGemm2 };
// ForwardOptions::gemm2_tokens_tile against GEMM1's tile: 0 keeps GEMM1's; on Swap-AB tiles a
// tile that divides GEMM1's (FP8: 8, 16, 32), so that the rows padded to GEMM1's tile are whole
// GEMM2 tiles; on normal tiles not applicable (GEMM1's tile, explain() says so).
Status resolve_gemm2_tile(const MoeProblem& p, const ForwardOptions& o, TileFamily family, int tile1, int* tile2) {
  *tile2 = tile1;
  const int t = o.gemm2_tokens_tile;
  if (t == 0 || family != TileFamily::kSwapAB) return Status::Ok();
  const bool fp8 = p.quant.weight.format == WeightFormat::kFP8E4M3;
  const bool known = t == 8 || t == 16 || t == 32 || (t == 64 && !fp8);
  FM_REQUIRE(known && t <= tile1 && tile1 % t == 0, kInvalidArgument,
             "ForwardOptions::gemm2_tokens_tile " << t << ": GEMM2's Swap-AB token tile must divide GEMM1's ("
                                                  << tile1 << ") and be 8, 16, 32" << (fp8 ? "" : " or 64")
                                                  << " (0: GEMM1's)");
  *tile2 = t;
  return Status::Ok();
}

HQuantStep h_quant_step(const MoeProblem& p, const ResolvedOptions& ro, TileFamily family, int tokens_tile) {
  const int n = static_cast<int>(p.intermediate);
  if (ro.fused_h_quant && kernels::fp8_gemm1_quantises_h(p.quant.act, tokens_tile, n)) return HQuantStep::kGemm1Epilogue;
  // (resolve() has checked the scheme and N: fp8_gemm2_hs_fits)
  if (ro.gemm2_quantises_h && family == TileFamily::kSwapAB) return HQuantStep::kGemm2;
  return HQuantStep::kPass;
}

// FP8: H (bf16, padded rows) quantised in the activation scheme into inter_q / inter_scales (row
// order, per-token scale of padded row r at r; padding rows are garbage and feed no stored output).
// h_rows: H's row bound, GEMM1's max_rows (the permuted layout's act_rows; with gathered GEMM1
// rows x stays in token order, act_rows is T, and H still has the padded rows).
cudaError_t quantise_intermediate(const MoeProblem& p, const MoeTensors& t, const DispatchResult& r, int64_t h_rows,
                                  const detail::WorkspaceLayout& w, char* base, Stream stream) {
  void* inter = base + w.intermediate.offset;
  void* inter_q = base + w.inter_q.offset;
  float* inter_scales = reinterpret_cast<float*>(base + w.inter_scales.offset);
  kernels::PermuteQuantArgs hq;
  hq.x = inter;
  hq.act_dtype = p.act_dtype;
  hq.num_tokens = h_rows;                              // the bound; the rows that exist:
  hq.num_tokens_dev = r.padded_offsets + r.num_groups;  // padded_offsets[G], read on the device
  hq.hidden = p.intermediate;
  hq.quant = p.quant.act;
  hq.scale_format = p.quant.act_scale_format;
  hq.static_scale = t.act2_scale;
  hq.out = inter_q;
  hq.out_scales = inter_scales;
  hq.rows_out = h_rows;
  // (dynamic per-tensor: H's absmax over the rows that exist, not the stale padding rows)
  hq.amax_group_counts = r.counts;
  hq.amax_group_padded_offsets = r.padded_offsets;
  hq.amax_groups = r.num_groups;
  hq.scratch = base + w.quant_scratch.offset;
  hq.scratch_bytes = w.quant_scratch.bytes;
  return kernels::launch_permute_quant(hq, stream);
}

// The plan's and the problem's fields that every grouped GEMM launch of the layer reads.
kernels::GroupedGemmArgs plan_gemm_args(const MoeProblem& p, const DispatchResult& r) {
  kernels::GroupedGemmArgs g;
  g.counts = r.counts;
  g.offsets = r.offsets;
  g.padded_offsets = r.padded_offsets;
  g.num_groups = r.num_groups;
  g.n = p.intermediate;
  g.k = p.hidden;
  g.activation = p.activation;
  return g;
}

// The expert bias b2 of a layer whose GEMM2 runs on the CUTLASS backend (no bias in its epilogue):
// the combine adds each slot's group bias row, weighted like the row (session 55; GPU test
// Forward.CutlassBackendExpertBias); nullptr without biases.
const float* cutlass_combine_bias(const MoeProblem& p, const MoeTensors& t) { return p.has_expert_bias ? t.b2 : nullptr; }

// The BF16 CUTLASS GEMM2 (H [padded rows, N] at the plan's padded offsets -> Y [R, K], unpadded
// grouped order) and the combine; after either GEMM1 (CUTLASS + activation, or the grouped
// backend's under ForwardOptions::cutlass_gemm2). Its group arrays in the scratch's second half:
// its setup kernel must not overwrite GEMM1's arrays early.
Status run_cutlass_gemm2_and_combine(const MoeProblem& p, const MoeTensors& t, const DispatchResult& r,
                                     const detail::WorkspaceLayout& w, void* workspace, Stream stream,
                                     const ForwardOptions& options, bool pingpong = false) {
  char* base = static_cast<char*>(workspace);
  void* expert_out = base + w.expert_out.offset;
  if (pingpong) {
    // ForwardOptions::pingpong_gemm2: GEMM2 on the grouped backend's ping-pong normal tiles (the
    // dispatch padded each expert's rows to 128, the tile)
    kernels::GroupedGemmArgs g = plan_gemm_args(p, r);
    g.a = base + w.intermediate.offset;
    g.w = t.w2;
    g.out = expert_out;  // unpadded grouped order, as the combine reads
    g.max_rows = r.act_rows;
    g.family = TileFamily::kNormal;
    g.tokens_tile = 128;
    g.staged_epilogue = true;
    g.pingpong = 1;
    g.k_splits = 1;
    g.rows_hint = p.num_tokens * p.slots_per_token();
    g.balanced = -1;
    const cudaError_t e = kernels::launch_grouped_gemm2(g, stream);
    FM_REQUIRE(e == cudaSuccess, kCudaError, "grouped GEMM2 (ping-pong): " << cudaGetErrorString(e));
    if (options.stop_after == Stage::kGemm2) return Status::Ok();
    return detail::run_combine(p, r, expert_out, t.out, t.out_row_stride, stream, true, cutlass_combine_bias(p, t));
  }
  const size_t half = w.cutlass_scratch.bytes / 2 / detail::kWorkspaceAlign * detail::kWorkspaceAlign;
  kernels::CutlassGroupedArgs c;
  c.a = base + w.intermediate.offset;
  c.w = t.w2;
  c.out = expert_out;  // [R, K], unpadded grouped order (what the combine reads)
  c.counts = r.counts;
  c.a_offsets = r.padded_offsets;
  c.out_offsets = r.offsets;
  c.num_groups = r.num_groups;
  c.n = p.hidden;
  c.k = p.intermediate;
  c.config = cutlass_override().gemm2;
  c.rows_hint = detail::expected_rows_per_group(p);
  c.gemm2 = true;
  c.scratch = base + w.cutlass_scratch.offset + half;
  c.scratch_bytes = half;
  const cudaError_t e = kernels::launch_cutlass_grouped_gemm(c, stream);
  FM_REQUIRE(e == cudaSuccess, kCudaError, "CUTLASS grouped GEMM2: " << cudaGetErrorString(e));
  if (options.stop_after == Stage::kGemm2) return Status::Ok();
  return detail::run_combine(p, r, expert_out, t.out, t.out_row_stride, stream, true, cutlass_combine_bias(p, t));
}

// Backend::kCutlassGrouped after dispatch: GEMM1 (CUTLASS grouped, pre-activation rows into the
// expert-output region) -> activation kernel (bias b1, the activation, into the intermediate) ->
// GEMM2 (CUTLASS grouped, unpadded rows) -> the combine.
Status run_cutlass_layer(const MoeProblem& p, const MoeTensors& t, const DispatchResult& r, void* workspace,
                         Stream stream, const ForwardOptions& options, bool pingpong_gemm2, bool fused_activation) {
  const detail::WorkspaceLayout w = detail::WorkspaceLayout::plan(p);
  char* base = static_cast<char*>(workspace);
  void* inter = base + w.intermediate.offset;
  void* expert_out = base + w.expert_out.offset;
  const size_t half = w.cutlass_scratch.bytes / 2 / detail::kWorkspaceAlign * detail::kWorkspaceAlign;
  // GEMM1's pre-activation rows (expert_out) -> bias b1, the activation -> H (the intermediate)
  auto activation = [&] {
    kernels::ActivationArgs a;
    a.in = expert_out;
    a.out = inter;
    a.bias = p.has_expert_bias ? t.b1 : nullptr;
    a.counts = r.counts;
    a.padded_offsets = r.padded_offsets;
    a.num_groups = r.num_groups;
    a.n = p.intermediate;
    a.activation = p.activation;
    a.max_rows = r.act_rows;
    return kernels::launch_grouped_activation(a, stream);
  };
  // FP8: x was quantised on the permute; GEMM1 (pre-activation rows) -> the activation -> H quantised
  // in the activation scheme (counted in GEMM2's stage, as on the grouped backend) -> GEMM2 -> the
  // combine. `f` carries the scheme's own fields; `launch` is its CUTLASS GEMM.
  auto fp8_layer = [&](auto f, auto launch) -> Status {
    using WScale = decltype(f.w_scale);
    f.a = r.act;
    f.a_scale = r.act_scales;
    f.w = t.w1;
    f.w_scale = static_cast<WScale>(t.w1_scale);
    f.out = expert_out;
    f.counts = r.counts;
    f.a_offsets = r.padded_offsets;
    f.out_offsets = r.padded_offsets;
    f.num_groups = r.num_groups;
    f.n = p.activation.gemm1_rows(p.intermediate);
    f.k = p.hidden;
    f.max_rows = r.act_rows;
    f.config = cutlass_fp8_override().gemm1;
    f.scratch = base + w.cutlass_scratch.offset;
    f.scratch_bytes = half;
    cudaError_t e = cudaSuccess;
    if constexpr (std::is_same_v<decltype(f), kernels::CutlassFp8BlockArgs>) {
      if (fused_activation) {
        // GEMM1 writes H itself (bf16): b1 and the activation in its epilogue, W1 with gate / up in
        // blocks of 8 where they are W1's halves (checked by forward()); then H is quantised below
        const bool blocks = p.activation.gated() && !p.activation.interleaved;
        kernels::CutlassFp8GatedArgs c;
        c.a = f.a;
        c.a_scale = f.a_scale;
        c.a_scale_stride = f.a_scale_stride;
        c.w = blocks ? t.w1_gate_up_blocks : t.w1;
        c.w_scale = t.w1_scale;
        c.w_scale_ue8m0 = f.w_scale_ue8m0;
        c.out = inter;  // H [R_pad, N], padded row order
        c.bias = p.has_expert_bias ? t.b1 : nullptr;
        c.counts = r.counts;
        c.a_offsets = r.padded_offsets;
        c.out_offsets = r.padded_offsets;
        c.num_groups = r.num_groups;
        c.n = p.intermediate;
        c.k = p.hidden;
        c.activation = p.activation;
        c.max_rows = r.act_rows;
        c.scratch = f.scratch;
        c.scratch_bytes = half;
        e = kernels::launch_cutlass_fp8_gated_gemm1(c, stream);
        FM_REQUIRE(e == cudaSuccess, kCudaError, "CUTLASS FP8 grouped GEMM1 with the activation: " << cudaGetErrorString(e));
      }
    }
    if (!fused_activation) {
      e = launch(f, stream);
      FM_REQUIRE(e == cudaSuccess, kCudaError, "CUTLASS FP8 grouped GEMM1: " << cudaGetErrorString(e));
      e = activation();
      FM_REQUIRE(e == cudaSuccess, kCudaError, "activation: " << cudaGetErrorString(e));
    }
    if (options.stop_after == Stage::kGemm1) return Status::Ok();
    e = quantise_intermediate(p, t, r, r.act_rows, w, base, stream);
    FM_REQUIRE(e == cudaSuccess, kCudaError, "quantise the intermediate: " << cudaGetErrorString(e));
    f.a = base + w.inter_q.offset;
    f.a_scale = reinterpret_cast<const float*>(base + w.inter_scales.offset);
    f.w = t.w2;
    f.w_scale = static_cast<WScale>(t.w2_scale);
    f.out_offsets = r.offsets;  // GEMM2: unpadded rows (what the combine reads)
    f.n = p.hidden;
    f.k = p.intermediate;
    f.config = cutlass_fp8_override().gemm2;
    f.scratch = base + w.cutlass_scratch.offset + half;  // (its setup must not overwrite GEMM1's arrays early)
    e = launch(f, stream);
    FM_REQUIRE(e == cudaSuccess, kCudaError, "CUTLASS FP8 grouped GEMM2: " << cudaGetErrorString(e));
    if (options.stop_after == Stage::kGemm2) return Status::Ok();
    return detail::run_combine(p, r, expert_out, t.out, t.out_row_stride, stream, true, cutlass_combine_bias(p, t));
  };
  if (p.quant.weight.format == WeightFormat::kFP8E4M3 && p.quant.weight.granularity != ScaleGranularity::kBlock) {
    // per-tensor / per-channel weight scales: CUTLASS's FP8 grouped GEMM with the scales in its
    // epilogue, read in place (per tensor, or per token in padded row order)
    kernels::CutlassFp8RowArgs f;
    f.a_scale_per_token = p.quant.act == ActQuant::kPerToken;
    f.w_scale_per_channel = p.quant.weight.granularity == ScaleGranularity::kPerChannel;
    return fp8_layer(f, kernels::launch_cutlass_fp8_row_gemm);
  }
  if (p.quant.weight.format == WeightFormat::kFP8E4M3) {
    // 128x128 blocks: CUTLASS's blockwise-scaled grouped GEMM (row-order 1x128 scales, re-laid per
    // group by the launch)
    kernels::CutlassFp8BlockArgs f;
    f.a_scale_stride = (r.act_rows + 3) / 4 * 4;
    f.w_scale_ue8m0 = p.quant.weight.scale_format == ScaleFormat::kUE8M0;
    return fp8_layer(f, kernels::launch_cutlass_fp8_block_gemm);
  }
  if (fused_activation) {
    // GEMM1 writes H itself: b1 and the activation in its epilogue (W1 with gate / up in blocks of 8
    // where they are W1's halves; checked by forward())
    const bool blocks = p.activation.gated() && !p.activation.interleaved;
    kernels::CutlassGatedArgs c;
    c.a = r.act;
    c.w = blocks ? t.w1_gate_up_blocks : t.w1;
    c.out = inter;  // H [R_pad, N], padded row order (what GEMM2 reads)
    c.bias = p.has_expert_bias ? t.b1 : nullptr;
    c.counts = r.counts;
    c.a_offsets = r.padded_offsets;
    c.out_offsets = r.padded_offsets;
    c.num_groups = r.num_groups;
    c.n = p.intermediate;
    c.k = p.hidden;
    c.activation = p.activation;
    c.scratch = base + w.cutlass_scratch.offset;
    c.scratch_bytes = half;
    const cudaError_t e = kernels::launch_cutlass_gated_gemm1(c, stream);
    FM_REQUIRE(e == cudaSuccess, kCudaError, "CUTLASS grouped GEMM1 with the activation: " << cudaGetErrorString(e));
    if (options.stop_after == Stage::kGemm1) return Status::Ok();
    return run_cutlass_gemm2_and_combine(p, t, r, w, workspace, stream, options, pingpong_gemm2);
  }
  kernels::CutlassGroupedArgs c;
  c.a = r.act;
  c.w = t.w1;
  c.out = expert_out;  // pre-activation rows [R_pad, R1], padded row order
  c.counts = r.counts;
  c.a_offsets = r.padded_offsets;
  c.out_offsets = r.padded_offsets;
  c.num_groups = r.num_groups;
  c.n = p.activation.gemm1_rows(p.intermediate);
  c.k = p.hidden;
  c.config = cutlass_override().gemm1;
  c.rows_hint = detail::expected_rows_per_group(p);
  c.scratch = base + w.cutlass_scratch.offset;
  c.scratch_bytes = half;
  cudaError_t e = kernels::launch_cutlass_grouped_gemm(c, stream);
  FM_REQUIRE(e == cudaSuccess, kCudaError, "CUTLASS grouped GEMM1: " << cudaGetErrorString(e));
  e = activation();
  FM_REQUIRE(e == cudaSuccess, kCudaError, "activation: " << cudaGetErrorString(e));
  if (options.stop_after == Stage::kGemm1) return Status::Ok();
  return run_cutlass_gemm2_and_combine(p, t, r, w, workspace, stream, options, pingpong_gemm2);
}
}  // namespace
#endif

namespace {
// forward()'s layer: route -> ... -> combine (forward() then copies the optional routing outputs).
Status forward_layer(const MoeProblem& p, const MoeTensors& t, void* workspace, size_t workspace_bytes, Stream stream,
                     const ForwardOptions& options) {
  FM_TRY(detail::check_call(p, t, workspace, workspace_bytes));
  FM_REQUIRE(options.k_splits >= 0 && options.k_splits <= 8, kInvalidArgument,
             "ForwardOptions::k_splits " << options.k_splits << " outside [0, 8]");
  FM_REQUIRE(options.gemm1_k_splits >= 0 && options.gemm1_k_splits <= 8, kInvalidArgument,
             "ForwardOptions::gemm1_k_splits " << options.gemm1_k_splits << " outside [0, 8]");
  FM_REQUIRE(options.weight_tiles_per_cta >= 0, kInvalidArgument,
             "ForwardOptions::weight_tiles_per_cta " << options.weight_tiles_per_cta << " is negative");
  FM_REQUIRE(options.gemm1_weight_tiles_per_cta >= 0, kInvalidArgument,
             "ForwardOptions::gemm1_weight_tiles_per_cta " << options.gemm1_weight_tiles_per_cta << " is negative");
  FM_REQUIRE(options.early_weight_stages >= -1, kInvalidArgument,
             "ForwardOptions::early_weight_stages " << options.early_weight_stages << " below -1");
  FM_REQUIRE(options.gemm2_early_weight_stages >= -1, kInvalidArgument,
             "ForwardOptions::gemm2_early_weight_stages " << options.gemm2_early_weight_stages << " below -1");
  const detail::Decision d = detail::decide(p, options, /*reasons=*/false);
  if (d.chosen == Backend::kAuto) return d.status;
  if (p.num_tokens == 0) return Status::Ok();
#if !defined(FUSEDMOE_WITH_CUDA)
  (void)stream;
  return Status(StatusCode::kNoDevice, "built without CUDA kernels");
#else
  // kGrouped: permute into expert-contiguous rows padded to the GEMMs' token tile, GEMM1 +
  // activation into the intermediate, GEMM2 into per-row expert outputs, weighted combine.
  const ResolvedOptions ro = resolve(p, options, nullptr);
  const kernels::ScopedOverlap overlap(ro.overlap_launches);  // every launch below (launch_mode.h)
  // Gathered rows (ForwardOptions::gather_rows): BF16 x stays in token order and GEMM1 reads its
  // rows through the plan; not with weights on the input (routed and shared rows would differ).
  // ForwardOptions::cutlass_gemm2: where CUTLASS would run the layer, GEMM1 runs below on normal
  // tiles with gathered rows, then GEMM2 on CUTLASS
  const bool hybrid = d.chosen == Backend::kCutlassGrouped && ro.cutlass_gemm2;
  if (d.chosen == Backend::kCutlassGrouped && !hybrid) {
    // Expert-contiguous rows (no tile padding needed: CUTLASS takes each group's row count; 8
    // keeps every group's first row 16-row aligned, at no cost), then the CUTLASS GEMMs.
    DispatchOptions o;
    o.permute = true;
    o.fuse_front = ro.fuse_front;
    // (GEMM2 on the ping-pong normal tiles: every expert's rows padded to their 128-row tile, where
    // the workspace holds GEMM1's rows so padded)
    const bool ping = ro.pingpong_gemm2 && detail::WorkspaceLayout::plan(p).holds_cutlass_rows(p, 128);
    o.tile_m = ping ? 128 : detail::kCutlassTileRows;
    o.group_scales_by_token = false;  // FP8 blocks: row-order scales, re-laid for CUTLASS per group
    // (FP8: forced only, and only with 128x128 blocks; resolve() turns it off otherwise)
    const bool fused_act = fused_activation_runs(p, options, ro, t.w1_gate_up_blocks != nullptr);
    FM_REQUIRE(!fused_act || !p.activation.gated() || p.activation.interleaved || t.w1_gate_up_blocks != nullptr,
               kInvalidArgument,
               "ForwardOptions::fused_activation: a gated activation with gate and up as W1's halves needs "
               "MoeTensors::w1_gate_up_blocks (pack_gate_up_blocks())");
    DispatchResult r;
    FM_TRY(detail::run_dispatch(p, t, workspace, stream, o, &r));
    if (options.stop_after == Stage::kDispatch) return Status::Ok();
    return run_cutlass_layer(p, t, r, workspace, stream, options, ping, fused_act);
  }
  const TileFamily family = hybrid ? TileFamily::kNormal : d.family;
  const int tokens_tile = hybrid ? 128 : d.tokens_tile;
  int gemm2_tile = tokens_tile;
  FM_TRY(resolve_gemm2_tile(p, options, family, tokens_tile, &gemm2_tile));
  // (FP8: gathered e4m3 rows on the Swap-AB tiles only; on normal tiles the permuted rows, as
  // explain() says: a global kOn must not break the token counts that run normal tiles)
  const bool gather = (ro.gather_rows && (p.quant.weight.format != WeightFormat::kFP8E4M3 || family == TileFamily::kSwapAB)) ||
                      hybrid;
  DispatchOptions o;
  o.permute = !gather;
  o.fuse_front = ro.fuse_front;
  o.tile_m = tokens_tile;
  // FP8 block scales: x's 1x128 scales stay in token order and GEMM1 reads them through row_token
  // (no gather of the scales into row order: at 16384 tokens of DeepSeek-V3, 21 us and a launch).
  o.group_scales_by_token = ro.scales_by_token;
  const detail::WorkspaceLayout w = detail::WorkspaceLayout::plan(p);
  char* base = static_cast<char*>(workspace);
  // FP8 on Swap-AB tiles: H quantised in GEMM1's epilogue (ResolvedOptions::fused_h_quant). Its
  // arrival counters start at zero: cleared here, before the layer's first kernel (GEMM1 leaves
  // them zero, but the workspace may hold anything before the first call or between problems).
  const HQuantStep h_step = h_quant_step(p, ro, family, tokens_tile);
  const bool hq = p.quant.weight.format == WeightFormat::kFP8E4M3 && !hybrid && h_step == HQuantStep::kGemm1Epilogue;
  int* hq_counters = reinterpret_cast<int*>(base + w.hq_counters.offset);
  if (hq && p.quant.act != ActQuant::kPerTensorStatic) {
    const int64_t bound = kernels::grouped_gemm_max_padded_rows(p.num_tokens * p.slots_per_token(), p.weight_experts(),
                                                                tokens_tile);
    const size_t bytes = std::min<size_t>(
        w.hq_counters.bytes, size_t(kernels::fp8_hq_counter_words(bound, p.intermediate, p.quant.act)) * 4);
    const cudaError_t e = cudaMemsetAsync(hq_counters, 0, bytes, stream);
    FM_REQUIRE(e == cudaSuccess, kCudaError, "clear H's quantisation counters: " << cudaGetErrorString(e));
  }
  DispatchResult r;
  FM_TRY(detail::run_dispatch(p, t, workspace, stream, o, &r));
  if (options.stop_after == Stage::kDispatch) return Status::Ok();
  void* inter = base + w.intermediate.offset;
  void* expert_out = base + w.expert_out.offset;
  kernels::GroupedGemmArgs g = plan_gemm_args(p, r);
  // The GEMMs' row bound: every (token, slot) row plus the padding of each non-empty group (the
  // permuted layout's act_rows; in token order act_rows is T).
  g.max_rows = gather ? kernels::grouped_gemm_max_padded_rows(p.num_tokens * p.slots_per_token(), r.num_groups,
                                                              tokens_tile)
                      : r.act_rows;
  g.family = family;
  g.tokens_tile = tokens_tile;
  g.staged_epilogue = ro.staged_epilogue;
  const int gemm2_k_splits = options.k_splits > 0 ? options.k_splits : ro.split_k ? 0 : 1;  // (a forced value wins)
  g.k_splits = options.gemm1_k_splits > 0 ? options.gemm1_k_splits : gemm2_k_splits;
  g.weight_tiles_per_cta = options.gemm1_weight_tiles_per_cta > 0 ? options.gemm1_weight_tiles_per_cta
                                                                    : options.weight_tiles_per_cta;
  g.rows_hint = p.num_tokens * p.slots_per_token();  // (the bound with a device-side token count)
  g.expected_rows = static_cast<int64_t>(std::ceil(detail::expected_local_rows(p)));  // (the dense rule)
  // GEMM1's chained weight tiles sized to one wave of the expected active token tiles (BF16, decode;
  // sm90_bf16_grouped_gemm.cuh, one_wave_tiles_per_cta; bench --tpc1 1 measures without it)
  g.one_wave = p.num_tokens <= 256;
  // Early weights read the plan before GEMM1's PDL wait: only with the permute between the plan
  // and GEMM1 (it waits before it triggers), so the plan was written two launches back. (The fused
  // front triggers its dependents at its start, also where it quantises x in token order.)
  g.early_weights = o.permute;
  // The whole ring of weight stages before the wait unless overridden: they stream while the
  // permute runs and slow it (~2 -> ~11 us at 1 token on the H200), yet the layer came out 1-2 us
  // faster at 1 token than with none (session 12, calls 2-3: the weights are on the way sooner).
  g.early_weight_stages = options.early_weight_stages;
  g.weights_evict_first = ro.weights_evict_first;
  g.dense = ro.gemm1_dense_swapab;  // (GEMM2: ro.dense_swapab, below)
  g.pair = ro.fp8_pair_swapab;
  if (gather) {
    g.gather_x = r.act;  // [T, K] dense: x itself or its dense copy
    g.row_token = r.row_token;
  } else {
    g.a = r.act;
  }
  g.w = t.w1;
  // packed weights (MoeTensors::w1_packed / w2_packed): the Swap-AB launches read them where the
  // reduction fills its last K step (BF16 and FP8: the FP8 arguments below copy these)
  const bool packed = options.packed_weights != Toggle::kOff;
  g.w_packed = packed ? t.w1_packed : nullptr;
  g.bias = p.has_expert_bias ? t.b1 : nullptr;
  g.out = inter;
  // GEMM2's dynamic balanced schedule takes its work from this counter; GEMM1 zeroes it after its
  // wait (so after the previous call's GEMM2 is done with it) and GEMM2 reads it after its own.
  int* gemm_queue = reinterpret_cast<int*>(base + w.gemm_queue.offset);
  g.zero_queue = p.quant.weight.format == WeightFormat::kBF16 ? gemm_queue : nullptr;
  // FP8 (W8A8 e4m3, normal tiles; the oracle allowed per-tensor/per-channel weights with per-token
  // or static per-tensor activations): x was quantised on the permute; GEMM1 writes bf16 H; H is
  // quantised in the same scheme over its padded rows (the per-token scale of padded row r at r, as
  // GEMM2 reads it; padding rows are garbage and only feed outputs nobody stores); then GEMM2.
  const bool fp8 = p.quant.weight.format == WeightFormat::kFP8E4M3;
  const int64_t rows_pad4 = (r.act_rows + 3) / 4 * 4;  // x's activation scale stride (rows, or tokens when gathered)
  // H's rows: GEMM1's padded row bound (= act_rows with the permuted layout; with gathered rows x is
  // in token order while H keeps the padded rows) and its scale stride
  const int64_t h_rows = g.max_rows;
  const int64_t h_pad4 = (h_rows + 3) / 4 * 4;
  kernels::Fp8GroupedGemmArgs f;
  if (fp8) {
    static_cast<kernels::GroupedGemmArgs&>(f) = g;
    // Split-K and early weights as the BF16 GEMMs (the permute + quantise sits between the plan
    // and GEMM1).
    f.a_scale = r.act_scales;
    f.a_scale_per_token = p.quant.act == ActQuant::kPerToken;
    f.w_scale = static_cast<const float*>(t.w1_scale);  // (UE8M0 block scales: bytes)
    f.w_scale_per_channel = p.quant.weight.granularity == ScaleGranularity::kPerChannel;
    // block scales: [K/128 (N/128 for H), rows_pad4] activation scales, rows fastest
    f.block_scales = p.quant.weight.granularity == ScaleGranularity::kBlock;
    f.a_scale_stride = rows_pad4;
    if (r.act_scales_by_token != nullptr) {
      f.a_scale = r.act_scales_by_token;
      f.a_scale_stride = r.act_scales_token_stride;
      f.a_scale_row_token = r.row_token;
    }
    f.w_scale_ue8m0 = p.quant.weight.scale_format == ScaleFormat::kUE8M0;
    f.balanced = ro.balanced_gemm1 ? 1 : -1;  // (static ranges: GEMM1 has no queue)
    // the one-wave rule's rows (kernels/gemm/sm90_fp8_grouped_gemm.h, one_wave_fp8_applies): the
    // expected local rows, T x k x local / E (+ T per shared expert), not all T x slots
    f.rows_hint = static_cast<int64_t>(std::ceil(detail::expected_local_rows(p)));
    if (hq) {  // H quantised in the epilogue into inter_q / inter_scales, as quantise_intermediate would
      f.hq_act = p.quant.act;
      f.hq_ue8m0 = p.quant.act_scale_format == ScaleFormat::kUE8M0;
      f.hq_out = base + w.inter_q.offset;
      f.hq_scales = reinterpret_cast<float*>(base + w.inter_scales.offset);
      f.hq_scale_stride = h_pad4;
      f.hq_static = t.act2_scale;
      f.hq_partials = reinterpret_cast<float*>(base + w.hq_partials.offset);
      f.hq_counters = hq_counters;
    }
  }
  cudaError_t e = fp8 ? kernels::launch_fp8_grouped_gemm1(f, stream) : kernels::launch_grouped_gemm1(g, stream);
  FM_REQUIRE(e == cudaSuccess, kCudaError, "grouped GEMM1: " << cudaGetErrorString(e));
  if (options.stop_after == Stage::kGemm1) return Status::Ok();
  if (hybrid) return run_cutlass_gemm2_and_combine(p, t, r, w, workspace, stream, options);
  g.gather_x = nullptr;
  g.row_token = nullptr;
  g.early_weights = true;
  // (BF16: GEMM1 is the predecessor, itself streaming weights: up to 64 tokens the whole ring
  // across the first run's tiles, above it the first tile's K steps; ForwardOptions::
  // gemm2_early_weight_stages says what was measured)
  g.early_weight_stages = options.gemm2_early_weight_stages;
  g.early_weights_span = options.gemm2_early_weight_stages >= 0 || p.num_tokens <= 64;
  g.k_splits = gemm2_k_splits;
  g.weight_tiles_per_cta = options.weight_tiles_per_cta;
  g.dense = ro.dense_swapab;
  g.pair = ro.fp8_pair_swapab;
  g.one_wave = false;
  g.a = inter;
  g.w = t.w2;
  g.w_packed = packed ? t.w2_packed : nullptr;
  g.bias = p.has_expert_bias ? t.b2 : nullptr;
  g.out = expert_out;
  // GEMM2's token tile (ForwardOptions::gemm2_tokens_tile; the rows stay padded to GEMM1's; FP8's
  // arguments copy it below)
  g.tokens_tile = gemm2_tile;
  // balanced schedule: forced, the kernel's rule (rows_hint, chained tiles), or off; BF16 runs it
  // dynamic (the counter), FP8 with static ranges (measured, grouped_schedule.cuh)
  g.balanced = options.balanced_gemm2 == Toggle::kOn ? 1 : ro.balanced_gemm2 ? 0 : -1;
  g.zero_queue = nullptr;
  g.queue = gemm_queue;
  g.pingpong = ro.pingpong_gemm2 ? 1 : 0;  // (normal tiles only; BF16)
  if (fp8) {
    void* inter_q = base + w.inter_q.offset;
    float* inter_scales = reinterpret_cast<float*>(base + w.inter_scales.offset);
    // H quantised by GEMM2 itself (ResolvedOptions::gemm2_quantises_h; Swap-AB tiles only): no pass
    const bool hs = h_step == HQuantStep::kGemm2;
    if (!hq && !hs) {
      e = quantise_intermediate(p, t, r, h_rows, w, base, stream);
      FM_REQUIRE(e == cudaSuccess, kCudaError, "quantise the intermediate: " << cudaGetErrorString(e));
    }
    // GEMM2's shared arguments exactly as the BF16 GEMM2 has them (all of them, so that nothing set
    // for GEMM1 carries over: before session 25 FP8 GEMM2 kept GEMM1's forced weight tiles per CTA,
    // bench --tpc1), then FP8's own. The FP8-only fields (scale formats) are the same for both GEMMs.
    static_cast<kernels::GroupedGemmArgs&>(f) = g;
    f.a = inter_q;
    f.a_scale = inter_scales;  // H's scales in row order
    if (hq && p.quant.act == ActQuant::kPerTensorStatic) f.a_scale = t.act2_scale;  // (GEMM1 wrote none)
    f.hq_act = ActQuant::kNone;
    if (hs) {
      f.hs_src = inter;
      f.hs_act = p.quant.act;
      f.hs_ue8m0 = p.quant.act_scale_format == ScaleFormat::kUE8M0;
    }
    f.a_scale_stride = h_pad4;
    f.a_scale_row_token = nullptr;
    // (early weights are safe: the quantise of H above waits for GEMM1 before it triggers, so the
    // plan is complete when GEMM2 starts. With H quantised in GEMM1, GEMM2 follows GEMM1, which was
    // launched only after the plan was complete: after the permute's wait, or, with gathered rows
    // (x quantised in token order, in the fused front too), after GEMM1's own wait at its start,
    // which precedes its trigger (no early weights then); so too with H quantised by GEMM2, whose
    // CTAs read H after their PDL wait on GEMM1.)
    // (H's quantise: as the permute for GEMM1)
    f.early_weight_stages =
        options.gemm2_early_weight_stages >= 0 ? options.gemm2_early_weight_stages : options.early_weight_stages;
    f.w_scale = static_cast<const float*>(t.w2_scale);
    f.queue = nullptr;  // (static ranges: the FP8 kernel's dynamic form measured no faster, session 17)
  }
  e = fp8 ? kernels::launch_fp8_grouped_gemm2(f, stream) : kernels::launch_grouped_gemm2(g, stream);
  FM_REQUIRE(e == cudaSuccess, kCudaError, "grouped GEMM2: " << cudaGetErrorString(e));
  if (options.stop_after == Stage::kGemm2) return Status::Ok();
  return detail::run_combine(p, r, expert_out, t.out, t.out_row_stride, stream, true);
#endif
}
}  // namespace

// The layer, then the optional routing outputs (MoeTensors::out_topk_ids / out_topk_weights):
// copies of the workspace's [T, k] ids and weights, stream-ordered after the combine (so they never
// sit between two kernels of the PDL chain). No copy when neither is given.
Status forward(const MoeProblem& p, const MoeTensors& t, void* workspace, size_t workspace_bytes, Stream stream,
               const ForwardOptions& options) {
  FM_TRY(forward_layer(p, t, workspace, workspace_bytes, stream, options));
#if defined(FUSEDMOE_WITH_CUDA)
  if (p.num_tokens > 0 && (t.out_topk_ids != nullptr || t.out_topk_weights != nullptr)) {
    const detail::WorkspaceLayout w = detail::WorkspaceLayout::plan(p);
    char* base = static_cast<char*>(workspace);
    const size_t entries = static_cast<size_t>(p.num_tokens) * static_cast<size_t>(p.top_k());
    cudaStream_t s = stream;
    if (t.out_topk_ids != nullptr) {
      const cudaError_t e = cudaMemcpyAsync(t.out_topk_ids, base + w.topk_ids.offset, entries * sizeof(int32_t),
                                            cudaMemcpyDeviceToDevice, s);
      FM_REQUIRE(e == cudaSuccess, kCudaError, "copy of the routing ids to out_topk_ids: " << cudaGetErrorString(e));
    }
    if (t.out_topk_weights != nullptr) {
      const cudaError_t e = cudaMemcpyAsync(t.out_topk_weights, base + w.topk_weights.offset, entries * sizeof(float),
                                            cudaMemcpyDeviceToDevice, s);
      FM_REQUIRE(e == cudaSuccess, kCudaError,
                 "copy of the routing weights to out_topk_weights: " << cudaGetErrorString(e));
    }
  }
#endif
  return Status::Ok();
}

std::string explain(const MoeProblem& p, const ForwardOptions& options) {
  std::ostringstream os;
  os << p << "\n";
  const Status v = validate(p);
  if (!v.ok()) {
    os << "invalid: " << v.to_string() << "\n";
    return os.str();
  }
  os << "workspace: " << detail::WorkspaceLayout::plan(p).total << " bytes for max_tokens " << p.max_tokens << "\n";
  os << "FLOPs at T=" << p.num_tokens << ": " << p.flops() << "\n";
  const detail::Decision d = detail::decide(p, options);
  os << "backends (override: " << to_string(options.backend) << ", tiles: " << to_string(options.tiles) << "):\n";
  for (const auto& c : d.candidates)
    os << "  " << to_string(c.backend) << ": " << (c.legal.ok() ? "can run" : c.legal.message()) << "\n";
  if (d.chosen != Backend::kAuto) {
    os << "chosen: " << to_string(d.chosen) << " (" << d.reason << ")\n";
#if defined(FUSEDMOE_WITH_CUDA)
    // The fused front runs when its shape allows and ForwardOptions::fuse_front resolves on.
    const ResolvedOptions ro = resolve(p, options, nullptr);
    const bool front_fused = ro.fuse_front &&
                             kernels::front_small_shape_ok(p.router.kind, p.num_tokens, p.slots_per_token());
    if (d.chosen == Backend::kCutlassGrouped) {
      const CutlassOverride& co = cutlass_override();
      const int64_t rows_hint = detail::expected_rows_per_group(p);
      auto resolved = [&](kernels::CutlassConfig c, int n, bool gemm2) {
        return c == kernels::CutlassConfig::kAuto ? kernels::cutlass_grouped_auto_config(n, rows_hint, gemm2) : c;
      };
      auto cfg = [&](kernels::CutlassConfig c, int n, bool gemm2) {
        return kernels::cutlass_grouped_gemm_name(resolved(c, n, gemm2));
      };
      auto brief = [&](kernels::CutlassConfig c, int n, bool gemm2) {
        switch (resolved(c, n, gemm2)) {
          case kernels::CutlassConfig::kCoop128x256: return "coop 128x256";
          case kernels::CutlassConfig::kCoop128x256Cluster2: return "coop 128x256 c2x1";
          case kernels::CutlassConfig::kCoop256x128: return "coop 256x128";
          case kernels::CutlassConfig::kPingpong64x256: return "pingpong 64x256";
          case kernels::CutlassConfig::kCoop128x256Cluster1x2: return "coop 128x256 c1x2";
          default: return "pingpong 128x128";
        }
      };
      const int r1 = p.activation.gemm1_rows(p.intermediate);
      // b2: CUTLASS's GEMM2 epilogue has no bias, the combine adds it (cutlass_combine_bias)
      const char* combine = p.has_expert_bias ? "combine (+ b2, each slot's expert bias)" : "combine";
      if (p.quant.weight.format == WeightFormat::kFP8E4M3) {
        const bool block = p.quant.weight.granularity == ScaleGranularity::kBlock;
        const CutlassFp8Override& fo = cutlass_fp8_override();
        auto fp8_name = [&](kernels::CutlassFp8Config c, int n) {
          return block ? kernels::cutlass_fp8_block_gemm_name(c, n) : kernels::cutlass_fp8_row_gemm_name(c, n);
        };
        const bool fused = block && ro.fused_activation;  // (FP8: forced only; its own 128x128 kernel)
        os << "tiles: cutlass fp8 " << (block ? "blockwise " : "row-scaled ")
           << (fused ? "coop 128x128 + activation" : kernels::cutlass_fp8_config_brief(fo.gemm1, r1)) << " + "
           << kernels::cutlass_fp8_config_brief(fo.gemm2, static_cast<int>(p.hidden))
           << " (GEMM1 + GEMM2 configurations: cooperative 128x128 tiles on 1x2 clusters where the GEMM's 128-wide "
              "N tiles pair up, else on 1x1 clusters: measured, session 46"
           << ((fo.gemm1 != kernels::CutlassFp8Config::kAuto && !fused) || fo.gemm2 != kernels::CutlassFp8Config::kAuto
                   ? "; overridden by FUSEDMOE_CUTLASS_FP8_CONFIG"
                   : "")
           << ")\n";
        os << "kernels: " << (front_fused ? "fused route + plan" : "router, dispatch plan")
           << ", permute + e4m3 quantise, "
           << (fused ? std::string(kernels::cutlass_fp8_gated_gemm1_name()) +
                           (p.activation.gated() && !p.activation.interleaved
                                ? " (GEMM1 over MoeTensors::w1_gate_up_blocks, b1 and the activation in its epilogue: "
                                  "ForwardOptions::fused_activation)"
                                : " (GEMM1, b1 and the activation in its epilogue: ForwardOptions::fused_activation)")
                     : std::string(fp8_name(fo.gemm1, r1)) +
                           (block ? " (GEMM1; scales re-laid per group), grouped_activation"
                                  : " (GEMM1; scales in the epilogue), grouped_activation"))
           << ", quantise the intermediate, " << fp8_name(fo.gemm2, static_cast<int>(p.hidden)) << " (GEMM2), " << combine << "\n";
        return os.str();
      }
      if (ro.cutlass_gemm2) {
        os << "tiles: normal 128 gathered + cutlass " << brief(co.gemm2, p.hidden, true)
           << " (GEMM1 on the grouped backend, GEMM2 on CUTLASS: ForwardOptions::cutlass_gemm2)\n";
        const char* g1 = kernels::grouped_gemm1_name(TileFamily::kNormal, 128);
        os << "kernels: " << (front_fused ? "fused route + plan" : "router, dispatch plan") << " (no permute), "
           << (g1 ? g1 : "?") << " (GEMM1: x's rows gathered, activation in its epilogue), "
           << cfg(co.gemm2, p.hidden, true) << " (GEMM2), " << combine << "\n";
        return os.str();
      }
      const bool ping_fits = detail::WorkspaceLayout::plan(p).holds_cutlass_rows(p, 128);
      const bool act_auto = !ro.fused_activation && fused_activation_runs(p, options, ro, true);
      if (act_auto && fused_activation_needs_blocks(p))
        os << "fused_activation: auto, on when MoeTensors::w1_gate_up_blocks is given (pack_gate_up_blocks()): "
           << kernels::cutlass_gated_gemm1_name() << " then runs GEMM1 with the activation in its epilogue, "
              "no grouped_activation (measured faster, session 43)\n";
      if (act_auto && !fused_activation_needs_blocks(p))
        os << "fused_activation: auto, on (interleaved gate / up: GEMM1 applies b1 and the activation in its "
              "epilogue, no grouped_activation)\n";
      // GEMM1 (and where the activation runs) as forward() launches them
      const bool act_fused = ro.fused_activation || (act_auto && !fused_activation_needs_blocks(p));
      const std::string gemm1 =
          act_fused
              ? std::string(kernels::cutlass_gated_gemm1_name()) +
                    (p.activation.gated() && !p.activation.interleaved
                         ? " (GEMM1 over MoeTensors::w1_gate_up_blocks, b1 and the activation in its epilogue: "
                           "ForwardOptions::fused_activation)"
                         : " (GEMM1, b1 and the activation in its epilogue: ForwardOptions::fused_activation)")
              : std::string(cfg(co.gemm1, r1, false)) + " (GEMM1), grouped_activation";
      if (ro.pingpong_gemm2 && !ping_fits)
        os << "pingpong_gemm2: not applied on this backend (the workspace's expert-output region holds "
              "GEMM1's rows padded to 8 per expert, not 128: CUTLASS's GEMM2 runs)\n";
      if (ro.pingpong_gemm2 && ping_fits) {
        os << "tiles: cutlass " << (act_fused ? "coop 128x256 + activation" : brief(co.gemm1, r1, false))
           << " + normal 128 ping-pong (GEMM1 on CUTLASS, GEMM2 on the grouped backend's ping-pong tiles: "
              "ForwardOptions::pingpong_gemm2)\n";
        os << "kernels: " << (front_fused ? "fused route + plan" : "router, dispatch plan")
           << ", permute (rows padded to 128 per expert), " << gemm1 << ", "
           << kernels::grouped_gemm2_name(TileFamily::kNormal, 128, true)
           << " (GEMM2), " << combine << "\n";
        return os.str();
      }
      os << "tiles: cutlass " << (act_fused ? "coop 128x256 + activation" : brief(co.gemm1, r1, false))
         << " + " << brief(co.gemm2, p.hidden, true)
         << " (GEMM1 + GEMM2 configurations)\n";
      os << "kernels: " << (front_fused ? "fused route + plan" : "router, dispatch plan")
         << ", permute, " << gemm1 << ", " << cfg(co.gemm2, p.hidden, true)
         << " (GEMM2), " << combine << " (CUTLASS configuration: cooperative 128x256, or 256x128 for an N that is not a "
            "multiple of 256 below 2048 with >= 512 rows per expert, measured in session 10; GEMM2 on ping-pong "
            "64x256 at <= 128 rows per expert, measured in session 39"
         << (co.gemm1 != kernels::CutlassConfig::kAuto || co.gemm2 != kernels::CutlassConfig::kAuto
                 ? "; overridden by FUSEDMOE_CUTLASS_CONFIG"
                 : "")
         << ")\n";
      return os.str();
    }
#endif
    os << "tiles: " << to_string(d.family) << ", token tile " << d.tokens_tile << " (" << d.tile_reason << ")\n";
    os << "switches:\n" << resolve_options(p, options).why;
#if defined(FUSEDMOE_WITH_CUDA)
    if (d.chosen == Backend::kGrouped) {
      const char* g1 = kernels::grouped_gemm1_name(d.family, d.tokens_tile);
      int tile2 = d.tokens_tile;
      const Status t2 = resolve_gemm2_tile(p, options, d.family, d.tokens_tile, &tile2);
      if (!t2.ok()) os << "refused: " << t2.to_string() << "\n";
      else if (options.gemm2_tokens_tile != 0 && d.family != TileFamily::kSwapAB)
        os << "gemm2_tokens_tile: not applicable on normal tiles (GEMM2 runs GEMM1's)\n";
      else if (tile2 != d.tokens_tile)
        os << "GEMM2 token tile " << tile2 << " (forced by ForwardOptions::gemm2_tokens_tile; rows padded to " << d.tokens_tile
           << ")\n";
      const char* g2 = kernels::grouped_gemm2_name(d.family, tile2, ro.pingpong_gemm2 && d.family == TileFamily::kNormal);
      os << "kernels: " << (front_fused ? "fused route + plan (one launch, <= 256 tokens)" : "router, dispatch plan");
      if (p.quant.weight.format == WeightFormat::kFP8E4M3) {
        const std::string tile = d.family == TileFamily::kSwapAB ? "swapab_64x" + std::to_string(d.tokens_tile)
                                                                 : std::string("128x128");
        const HQuantStep h = h_quant_step(p, ro, d.family, d.tokens_tile);
        const bool fp8_gather = ro.gather_rows && d.family == TileFamily::kSwapAB;  // (as forward())
        const std::string same2 =
            tile2 == d.tokens_tile ? std::string("the same") : "the same on swapab_64x" + std::to_string(tile2) + " tiles";
        os << (fp8_gather     ? ", e4m3 quantise in token order (GEMM1 gathers x's rows: no permute)"
               : ro.gather_rows ? ", permute + e4m3 quantise (gather_rows: not applicable on normal tiles)"
                                : ", permute + e4m3 quantise")
           << ", sm90_fp8e4m3_grouped_gemm_" << tile << "x128" << (fp8_gather ? "_gather" : "") << " (GEMM1, "
           << to_string(p.quant.weight.granularity) << " scales"
           << (h == HQuantStep::kGemm1Epilogue ? "; H quantised in its epilogue), " + same2 + " (GEMM2)"
               : h == HQuantStep::kGemm2     ? "), " + same2 + " (GEMM2, quantising its token tiles' rows of H: _hs)"
                                             : "), quantise the intermediate, " + same2 + " (GEMM2)")
           << ", combine\n";
      }
      else
        os << (ro.gather_rows ? " (GEMM1 gathers x's rows: no permute), " : ", permute, ")
           << (g1 ? g1 : "?") << ", " << (g2 ? g2 : "?") << ", combine\n";
    }
#endif
  }
  else
    os << "chosen: none (" << d.status.message() << ")\n";
  return os.str();
}

#if defined(FUSEDMOE_WITH_CUDA)
namespace {
// The GEMM arguments that fix a packed weight image: the weights, G, N, K and the activation.
Status packing_args(const MoeProblem& p, int gemm, const void* w, kernels::GroupedGemmArgs* a) {
  FM_TRY(validate(p));
  FM_REQUIRE(gemm == 1 || gemm == 2, kInvalidArgument, "gemm must be 1 (w1) or 2 (w2), got " << gemm);
  FM_REQUIRE(p.quant.weight.format == WeightFormat::kBF16 || p.quant.weight.format == WeightFormat::kFP8E4M3,
             kUnsupported, "packed weights exist for BF16 and FP8 e4m3 weights");
  a->w = w;
  a->num_groups = p.weight_experts();  // (forward()'s groups: local experts, then shared ones)
  a->n = p.intermediate;
  a->k = p.hidden;
  a->activation = p.activation;
  return Status::Ok();
}
}  // namespace
#endif

Status packed_weights_size(const MoeProblem& p, int gemm, size_t* bytes) {
  FM_REQUIRE(bytes != nullptr, kInvalidArgument, "bytes is null");
#if !defined(FUSEDMOE_WITH_CUDA)
  (void)p; (void)gemm;
  return Status(StatusCode::kNoDevice, "built without CUDA kernels");
#else
  kernels::GroupedGemmArgs a;
  FM_TRY(packing_args(p, gemm, nullptr, &a));
  *bytes = static_cast<size_t>(p.quant.weight.format == WeightFormat::kFP8E4M3
                                   ? kernels::packed_fp8_grouped_gemm_weight_bytes(a, gemm == 2)
                                   : kernels::packed_grouped_gemm_weight_bytes(a, gemm == 2));
  return Status::Ok();
#endif
}

Status pack_weights(const MoeProblem& p, int gemm, const void* w, void* packed, Stream stream) {
#if !defined(FUSEDMOE_WITH_CUDA)
  (void)p; (void)gemm; (void)w; (void)packed; (void)stream;
  return Status(StatusCode::kNoDevice, "built without CUDA kernels");
#else
  kernels::GroupedGemmArgs a;
  FM_TRY(packing_args(p, gemm, w, &a));
  FM_REQUIRE(w != nullptr && reinterpret_cast<uintptr_t>(w) % 16 == 0, kMisaligned, "w must be non-null and 16-byte aligned");
  FM_REQUIRE(packed != nullptr && reinterpret_cast<uintptr_t>(packed) % 16 == 0, kMisaligned,
             "packed must be non-null and 16-byte aligned");
  FM_TRY(detail::check_device());
  const cudaError_t e = p.quant.weight.format == WeightFormat::kFP8E4M3
                            ? kernels::pack_fp8_grouped_gemm_weights(a, gemm == 2, packed, stream)
                            : kernels::pack_grouped_gemm_weights(a, gemm == 2, packed, stream);
  FM_REQUIRE(e == cudaSuccess, kCudaError, "pack_weights: " << cudaGetErrorString(e));
  return Status::Ok();
#endif
}

Status pack_gate_up_blocks(const MoeProblem& p, const void* w1, void* out, Stream stream) {
  FM_TRY(validate(p));
  const bool fp8_blocks = p.quant.weight.format == WeightFormat::kFP8E4M3 &&
                          p.quant.weight.granularity == ScaleGranularity::kBlock;
  FM_REQUIRE(p.quant.weight.format == WeightFormat::kBF16 || fp8_blocks, kUnsupported,
             "pack_gate_up_blocks: BF16 weights or FP8 e4m3 with 128x128 blocks only (weight format "
                 << to_string(p.quant.weight.format) << ")");
  const int elem_bytes = fp8_blocks ? 1 : 2;
  FM_REQUIRE(p.activation.gated() && !p.activation.interleaved, kUnsupported,
             "pack_gate_up_blocks: for gated activations with gate and up as W1's two halves (activation "
                 << to_string(p.activation.kind) << (p.activation.interleaved ? ", interleaved" : "") << ")");
  FM_REQUIRE(w1 != nullptr && reinterpret_cast<uintptr_t>(w1) % 16 == 0, kMisaligned, "w1 must be non-null and 16-byte aligned");
  FM_REQUIRE(out != nullptr && reinterpret_cast<uintptr_t>(out) % 16 == 0, kMisaligned, "out must be non-null and 16-byte aligned");
  const uintptr_t bytes = static_cast<uintptr_t>(p.weight_experts()) * 2 * p.intermediate * p.hidden * elem_bytes;
  const uintptr_t a = reinterpret_cast<uintptr_t>(w1), b = reinterpret_cast<uintptr_t>(out);
  FM_REQUIRE(a + bytes <= b || b + bytes <= a, kInvalidArgument, "pack_gate_up_blocks: out overlaps w1");
#if !defined(FUSEDMOE_WITH_CUDA)
  (void)stream;
  return Status(StatusCode::kNoDevice, "built without CUDA kernels");
#else
  FM_TRY(detail::check_device());
  const cudaError_t e = kernels::launch_gate_up_blocks8(w1, out, p.weight_experts(), static_cast<int>(p.intermediate),
                                                        static_cast<int>(p.hidden), stream, elem_bytes);
  FM_REQUIRE(e == cudaSuccess, kCudaError, "pack_gate_up_blocks: " << cudaGetErrorString(e));
  return Status::Ok();
#endif
}

}  // namespace fusedmoe
