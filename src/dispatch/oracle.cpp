#include "dispatch/oracle.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#if defined(FUSEDMOE_WITH_CUDA)
#include "kernels/gemm/sm90_bf16_grouped_gemm.h"
#endif

namespace fusedmoe::detail {

namespace {

[[maybe_unused]] Status fp8_supported(const MoeProblem& p) {
  const WeightQuant& w = p.quant.weight;
  if (w.granularity == ScaleGranularity::kBlock) {
    if (w.block_n != 128 || w.block_k != 128)
      return Status(StatusCode::kUnsupported, "fp8 block scales must be 128x128");
    if (p.quant.act != ActQuant::kGroup128)
      return Status(StatusCode::kUnsupported, "fp8 128x128 block weights need 1x128 activation groups (kGroup128)");
    if (p.hidden % 128 != 0 || p.intermediate % 128 != 0)
      return Status(StatusCode::kUnsupported, "fp8 block scales need K and N multiples of 128");
    if (p.act_dtype != DType::kBFloat16)
      return Status(StatusCode::kUnsupported, "fp8 GEMMs write bf16: act_dtype must be bf16");
    return Status::Ok();
  }
  if (w.granularity != ScaleGranularity::kPerTensor && w.granularity != ScaleGranularity::kPerChannel)
    return Status(StatusCode::kUnsupported, std::string("fp8 weights with ") + to_string(w.granularity) +
                                                " scales are not supported (per-tensor or per-channel)");
  if (w.scale_format != ScaleFormat::kFloat32)
    return Status(StatusCode::kUnsupported, "fp8 per-tensor/per-channel weight scales must be float32");
  if (p.quant.act == ActQuant::kPerTensorDynamic && (p.router.weight_on_input || p.num_local_experts >= 0))
    return Status(StatusCode::kUnsupported,
                  "fp8 dynamic per-tensor activations: x's absmax runs over every token's raw row, not over the routed "
                  "(weighted, local) rows the GEMM reads; not built with weights on the input or an expert map");
  if (p.quant.act != ActQuant::kPerToken && p.quant.act != ActQuant::kPerTensorStatic &&
      p.quant.act != ActQuant::kPerTensorDynamic)
    return Status(StatusCode::kUnsupported, std::string("fp8 row-scaled GEMMs need per-token or per-tensor "
                                                        "activation scales, not ") + to_string(p.quant.act));
  if (p.act_dtype != DType::kBFloat16)
    return Status(StatusCode::kUnsupported, "fp8 GEMMs write bf16: act_dtype must be bf16");
  if (p.hidden % 16 != 0 || p.intermediate % 16 != 0)
    return Status(StatusCode::kUnsupported, "fp8 GEMMs need K and N multiples of 16");
  return Status::Ok();
}

// Backends register here as their kernels land; each says what it cannot run and why.
Status can_implement(Backend b, const MoeProblem& p) {
  switch (b) {
    case Backend::kGrouped:
#if !defined(FUSEDMOE_WITH_CUDA)
      return Status(StatusCode::kNoDevice, "built without CUDA kernels");
#else
      if (p.quant.weight.format == WeightFormat::kFP8E4M3) return fp8_supported(p);
      if (p.quant.weight.format != WeightFormat::kBF16)
        return Status(StatusCode::kUnsupported,
                      std::string(to_string(p.quant.weight.format)) + " grouped GEMMs are not built (bf16 only)");
      return Status::Ok();
#endif
    case Backend::kFused:
      return Status(StatusCode::kUnsupported, "single-pass fused (gather) kernels are not built yet");
    case Backend::kCutlassGrouped:
#if !defined(FUSEDMOE_WITH_CUDA)
      return Status(StatusCode::kNoDevice, "built without CUDA kernels");
#else
      if (p.quant.weight.format == WeightFormat::kFP8E4M3) {
        // 128x128 blocks: CUTLASS's blockwise-scaled GEMM; per-tensor / per-channel weight scales
        // (with per-tensor or per-token activations): CUTLASS's FP8 GEMM, scales in its epilogue
        const Status f = fp8_supported(p);
        if (!f.ok()) return f;
      } else if (p.quant.weight.format != WeightFormat::kBF16) {
        return Status(StatusCode::kUnsupported, std::string("CUTLASS grouped GEMMs are built for bf16 and fp8 e4m3 "
                                                            "weights, not ") +
                                                    to_string(p.quant.weight.format));
      }
      if (p.act_dtype != DType::kBFloat16)
        return Status(StatusCode::kUnsupported, "CUTLASS grouped GEMMs are built for bf16 activations");
      // expert biases: b1 in the activation kernel (or GEMM1's fused epilogue), b2 added by the
      // combine (GEMM2's CUTLASS epilogue has none; session 55)
      return Status::Ok();
#endif
    case Backend::kAuto:
      break;
  }
  return Status(StatusCode::kInternal, "kAuto is not a backend");
}

// MoeProblem::expected_local_slots is set (and there are local experts to spread it over).
bool local_slots_hinted(const MoeProblem& p) { return p.expected_local_slots > 0.f && p.local_experts() > 0; }
// Routed rows per expert: T * k / E under uniform routing (the CUTLASS rule's measure), T * hint /
// local with the hint.
double routed_rows_per_expert(const MoeProblem& p) {
  if (p.num_experts <= 0) return 0.0;
  const double t = static_cast<double>(p.num_tokens);
  return local_slots_hinted(p) ? t * p.expected_local_slots / p.local_experts() : t * p.top_k() / p.num_experts;
}
// Expected rows per expert, the tile rule's measure: T * slots / E under uniform routing (as
// always computed, so the tuned thresholds see the same values); with the hint the routed rows plus
// T * shared / E, as uniform counts the shared expert.
double rows_per_expert(const MoeProblem& p) {
  if (p.num_experts <= 0) return 0.0;
  const double t = static_cast<double>(p.num_tokens);
  if (!local_slots_hinted(p)) return t * p.slots_per_token() / p.num_experts;
  return routed_rows_per_expert(p) + t * p.num_shared_experts / p.num_experts;
}

// The Swap-AB token tile holds this many times the expected rows per expert
// (kernels::choose_tokens_tile): 2, except BF16 weights behind a correction-bias router (not
// precomputed ids) from 4 expected rows per expert up, which take 8. History: sessions 23-51 gave
// those BF16 layers 8 at every count (tuned on the bench's old data, whose random bias skews the
// grouped routers' loads); session 52 (H100, call 1d, crossover, uniform routing) found 2 faster at
// 64 tokens (dsv3-tp8 tile 8 875 vs 16's 915 us) and made it 2 everywhere; session 53 (H100, call 1,
// the layers with the oracle's full choice, headroom 8 vs 2 alternated twice) found 8 faster from 4
// expected rows: dsv3-tp8 at 128 tokens (4 rows: tile 32 vs 8) 973.0 vs 980.5 us, at 256 (8 rows:
// tile 32 vs 16 with evict_first) 1007.5 vs 1017.6; dsv3-ep8 945.3 vs 950.5, 962.4 vs 961.1 (level);
// dsv4f-tp4 at 256 (6 rows) 1116.0 vs 1123.1; while 2 stayed faster below: dsv4f-tp4 at 128 (3 rows)
// 1059.6 vs 1068.6, every case at 64 tokens (1.5-2 rows) by 0.2-0.8 %, level at 16. The rule also
// covers BF16 presets with a bias router that were not measured (nemotron-nano: E 128, k 6 + shared;
// from 80 tokens tile 32 and evict_first off), as the old rule did.
// FUSEDMOE_TILE_HEADROOM=n (read once, 1-64) sets it for every call, for measurement;
// ForwardOptions::tokens_tile overrides the tile itself.
int tile_headroom(const MoeProblem& p) {
  static const int forced = [] {
    const char* e = std::getenv("FUSEDMOE_TILE_HEADROOM");
    const int v = e != nullptr ? std::atoi(e) : 0;
    return v >= 1 && v <= 64 ? v : 0;
  }();
  if (forced > 0) return forced;
  // (validate(): a correction bias belongs to the biased-topk router only, never to precomputed ids)
  const bool bf16_weights = p.quant.weight.format == WeightFormat::kBF16;
  return bf16_weights && p.router.use_correction_bias && rows_per_expert(p) >= 4.0 ? 8 : 2;
}

#if defined(FUSEDMOE_WITH_CUDA)
// The auto tile family and token tile. (The middle band of 16-32 expected rows: Swap-AB 64 for BF16,
// 32 for row-scaled FP8, normal tiles for FP8 128x128 blocks; kernels/gemm/sm90_bf16_grouped_gemm.h
// says what was measured.)
kernels::TokensTileChoice auto_tiles(const MoeProblem& p) {
  const bool fp8 = p.quant.weight.format == WeightFormat::kFP8E4M3;
  const int wide = !fp8 ? 64 : p.quant.weight.granularity == ScaleGranularity::kBlock ? 0 : 32;
  if (!local_slots_hinted(p))
    return kernels::choose_tokens_tile(p.num_tokens, p.slots_per_token(), p.num_experts, wide, tile_headroom(p));
  // (the hint: the rule's T * slots / E as rows_per_expert(p) in 1/1024 steps of a row)
  constexpr int kScale = 1024;
  return kernels::choose_tokens_tile(static_cast<int64_t>(std::llround(rows_per_expert(p) * kScale)), 1, kScale, wide,
                                     tile_headroom(p));
}
#endif

// The tile family and token tile; their reason only with `reasons` (explain(): forward() builds no
// strings).
void choose_tiles(const MoeProblem& p, const ForwardOptions& o, Decision* d, bool reasons) {
  std::ostringstream why;
  if (o.tiles == TileFamily::kNormal) {
    d->family = TileFamily::kNormal;
    d->tokens_tile = 128;
    if (reasons) why << "forced normal";
  } else if (o.tiles == TileFamily::kSwapAB) {
    d->family = TileFamily::kSwapAB;
    d->tokens_tile = o.tokens_tile > 0 ? o.tokens_tile : 16;
    if (reasons) why << "forced swap-ab";
  } else {
    const int headroom = tile_headroom(p);
#if defined(FUSEDMOE_WITH_CUDA)
    const kernels::TokensTileChoice c = auto_tiles(p);
    d->family = c.family;
    d->tokens_tile = c.tokens_tile;
#endif
    const double per_expert = rows_per_expert(p);
    if (reasons) {
      if (local_slots_hinted(p))
        why << "expected rows per expert T*hint/local = " << per_expert << " (MoeProblem::expected_local_slots = "
            << p.expected_local_slots << ")";
      else
        why << "expected rows per expert T*slots/E = " << per_expert;
      if (d->family == TileFamily::kSwapAB && per_expert <= 16)
        why << " <= 16: swap-ab (weights fill WGMMA's M = 64, tokens are N), the token tile holding " << headroom
            << "x the expected rows"
            << (headroom != 2 ? " (BF16 behind a correction-bias router from 4 expected rows: measured on the "
                                "DeepSeek shapes; or FUSEDMOE_TILE_HEADROOM)"
                              : "");
      else
        why << (d->family == TileFamily::kSwapAB ? " in (16, 32]: swap-ab, the widest token tile (measured faster than "
                                                   "normal tiles there)"
                : per_expert <= 32 ? " in (16, 32] with fp8 128x128 blocks: normal (tokens fill WGMMA's M; measured)"
                                   : " > 32: normal (tokens fill WGMMA's M)");
    }
  }
  if (reasons) d->tile_reason = why.str();
}

// Auto: the CUTLASS grouped GEMMs from this many expected rows per expert (T * k / E) and tokens
// up. Measured on the H200 (bench --suite layer --cutlass, bench/results/2026-11-30_h200_session10,
// call 1): faster than the grouped backend's normal tiles on every BF16 suite case from 32 rows
// per expert at >= 512 tokens (dsv3-tp8 at 1024 tokens 859 vs 899 us; qwen30-tp1 at 512 tokens
// 399 vs 444 us), except qwen235-tp8 at 16384 tokens (fixed by the 256x128 GEMM1 tile, call 2);
// at 16 rows per expert Swap-AB was level or faster (dsv4f-tp4 at 512 tokens 857 vs 942 us). Below
// 512 tokens (decode) the grouped backend stays: its launches overlap (PDL) and were tuned there.
constexpr double kCutlassMinRowsPerExpert = 32.0;
constexpr int64_t kCutlassMinTokens = 512;
// FP8 128x128 blocks (call 4 of session 10): CUTLASS's blockwise grouped GEMM 1.02-1.34x faster than the
// grouped backend's FP8 kernels on dsv3-tp8/dsv3-ep8/dsv4f-tp4/qwen235-tp4-fp8b at 1024, 4096 and
// 16384 tokens (dsv3-ep8-fp8b 16384: 2212 vs 2957 us); not measured below 1024 tokens.
// FP8 with per-tensor / per-channel weight scales (session 19): CUTLASS's FP8 GEMM with the scales
// in its epilogue, the same threshold (measured in bench/results/2026-12-01_h200_session19).
constexpr int64_t kCutlassMinTokensFp8 = 1024;
// Expert biases (b1 in the activation, b2 added by the combine; session 55): from 64 expected rows
// per expert. H100, session 56 call 2 (the combine's bias rows reworked), gptoss-tp1 forced each
// way: 2048 / 3072 / 4096 / 16384 tokens (64-512 rows) CUTLASS 2586.0 / 2670.2 / 2997.5 / 7491.9 us
// vs the normal tiles' 2706.8 / 2801.2 / 3389.4 / 8971.3; 1024 tokens (32 rows) the Swap-AB tile 64
// 2224.0 vs 2392.4 (still bandwidth-bound there, at 90 % of the floor). Call 1 alike.
constexpr double kCutlassMinRowsPerExpertBias = 64.0;

// The grouped backend's own GEMM switches: forcing one asks for that backend's kernels.
// (scales_by_token only exists for FP8 128x128 blocks.)
bool grouped_switch_forced(const MoeProblem& p, const ForwardOptions& o) {
  const bool block_fp8 = p.quant.weight.format == WeightFormat::kFP8E4M3 &&
                         p.quant.weight.granularity == ScaleGranularity::kBlock;
  return o.gather_rows != Toggle::kAuto || o.staged_epilogue != Toggle::kAuto || o.split_k != Toggle::kAuto ||
         o.balanced_gemm2 != Toggle::kAuto || o.balanced_gemm1 != Toggle::kAuto || o.dense_swapab != Toggle::kAuto ||
         o.gemm1_dense_swapab != Toggle::kAuto || o.fp8_pair_swapab != Toggle::kAuto || (block_fp8 && o.scales_by_token != Toggle::kAuto);
}

bool cutlass_preferred(const MoeProblem& p, const ForwardOptions& o) {
  if (o.backend != Backend::kAuto || o.tiles != TileFamily::kAuto || grouped_switch_forced(p, o)) return false;
  const double per_expert = routed_rows_per_expert(p);
  const bool fp8 = p.quant.weight.format == WeightFormat::kFP8E4M3;
  const double min_rows = p.has_expert_bias ? kCutlassMinRowsPerExpertBias : kCutlassMinRowsPerExpert;
  return per_expert >= min_rows && p.num_tokens >= (fp8 ? kCutlassMinTokensFp8 : kCutlassMinTokens) &&
         can_implement(Backend::kCutlassGrouped, p).ok();
}

}  // namespace

Decision decide(const MoeProblem& p, const ForwardOptions& options, bool reasons) {
  Decision d;
  if (!reasons && options.backend != Backend::kFused) {
    // forward()'s hot path: the same choice as below without any text (no candidate list, no
    // reasons); anything else (a refusal, an error) takes the full path below for its message
    choose_tiles(p, options, &d, false);
    const bool fp8_tile_ok = p.quant.weight.format != WeightFormat::kFP8E4M3 || d.family != TileFamily::kSwapAB ||
                             d.tokens_tile == 8 || d.tokens_tile == 16 || d.tokens_tile == 32;
    if (fp8_tile_ok) {
      if (options.backend == Backend::kCutlassGrouped ? can_implement(Backend::kCutlassGrouped, p).ok()
                                                      : cutlass_preferred(p, options)) {
        d.chosen = Backend::kCutlassGrouped;
        return d;
      }
      if (options.backend != Backend::kCutlassGrouped && can_implement(Backend::kGrouped, p).ok()) {
        d.chosen = Backend::kGrouped;
        return d;
      }
    }
    d = Decision{};
  }
  for (Backend b : {Backend::kGrouped, Backend::kFused, Backend::kCutlassGrouped})
    d.candidates.push_back({b, can_implement(b, p)});
  choose_tiles(p, options, &d, true);
  if (p.quant.weight.format == WeightFormat::kFP8E4M3 && d.family == TileFamily::kSwapAB && d.tokens_tile != 8 &&
      d.tokens_tile != 16 && d.tokens_tile != 32) {
    d.status = Status(StatusCode::kUnsupported, "fp8 swap-ab token tiles are 8, 16 and 32");
    return d;
  }
  if (options.backend != Backend::kAuto) {
    for (const Candidate& c : d.candidates) {
      if (c.backend != options.backend) continue;
      if (c.legal.ok()) {
        d.chosen = c.backend;
        d.reason = "forced by ForwardOptions::backend";
      } else {
        d.status = Status(c.legal.code(), std::string("forced backend ") + to_string(c.backend) +
                                              " cannot run this problem: " + c.legal.message());
      }
      return d;
    }
  }
  if (cutlass_preferred(p, options)) {
    d.chosen = Backend::kCutlassGrouped;
    std::ostringstream why;
    why << "expected rows per expert " << (local_slots_hinted(p) ? "T*hint/local" : "T*k/E") << " = "
        << routed_rows_per_expert(p)
        << " >= " << (p.has_expert_bias ? kCutlassMinRowsPerExpertBias : kCutlassMinRowsPerExpert)
        << (p.has_expert_bias ? " (expert biases: b2 added by the combine)" : "") << " and T >= "
        << (p.quant.weight.format == WeightFormat::kFP8E4M3 ? kCutlassMinTokensFp8 : kCutlassMinTokens)
        << ": CUTLASS's persistent grouped GEMMs measured faster than the normal tiles";
    d.reason = why.str();
    return d;
  }
  for (const Candidate& c : d.candidates) {
    if (c.legal.ok()) {
      d.chosen = c.backend;
      d.reason = c.backend == Backend::kGrouped && p.has_expert_bias
                     ? "grouped backend (tiles below): with expert biases the CUTLASS path (b2 added by the combine) "
                       "takes over from 64 expected rows per expert (measured), or a grouped-backend switch is forced"
                 : c.backend == Backend::kGrouped
                     ? "grouped backend (tiles below): the CUTLASS path needs more rows per expert or tokens, "
                       "cannot run this problem, or a grouped-backend switch (tiles, gather_rows, staged_epilogue, "
                       "split_k, balanced_gemm2, balanced_gemm1, dense_swapab, gemm1_dense_swapab, fp8_pair_swapab, scales_by_token) is forced"
                     : "the only backend that can run this problem";
      return d;
    }
  }
  std::string why = "no backend can run this problem:";
  for (const Candidate& c : d.candidates) why += std::string(" [") + to_string(c.backend) + ": " + c.legal.message() + "]";
  d.status = Status(StatusCode::kUnsupported, why);
  return d;
}

bool weights_stream_once(const MoeProblem& p) {
#if defined(FUSEDMOE_WITH_CUDA)
  if (p.num_tokens > 256 || p.num_experts <= 0) return false;
  return auto_tiles(p).tokens_tile >= tile_headroom(p) * rows_per_expert(p);
#else
  (void)p;
  return false;
#endif
}

}  // namespace fusedmoe::detail
