// grouped_schedule_rules.h — host rules of the grouped GEMMs' schedules (grouped_schedule.cuh),
// plain C++ so that the CPU tests pin the decisions (tests/cpu/test_gemm_schedule.cpp).
#pragma once

#include <cstdint>

#include "kernels/common/hd.h"

namespace fusedmoe::kernels::grouped_schedule {

// Static balanced ranges: at most this many CTAs (launch_schedule falls back to the raster above
// it, and at 2^30 items or more), so that a range's start fits 32-bit arithmetic.
constexpr int64_t kMaxBalancedGrid = 65535;

// FP8 GEMM2 quantising H itself (Fp8GroupedGemmArgs::hs_src): H's K blocks of 128 must fit the
// activation slots of the Swap-AB instance with the fewest stages (4), N a multiple of 16 (of 128
// with 1x128 groups). Plain C++: the CPU-only build's resolve_options() takes the same rule.
constexpr int kFp8HsMaxKTiles = 4;
constexpr bool fp8_gemm2_hs_fits(int n, bool groups128) {
  return n > 0 && n % 16 == 0 && (n + 127) / 128 <= kFp8HsMaxKTiles && (!groups128 || n % 128 == 0);
}

// The start of CTA b's range of `items` over g CTAs, floor(items * b / g), for b <= g <=
// kMaxBalancedGrid, in 32-bit arithmetic: b * (items % g) < g * g < 2^32 (balanced_segments; the
// CPU tests compare it with the 64-bit quotient).
FM_HD uint32_t balanced_range_start(uint32_t items, uint32_t b, uint32_t g) {
  const uint32_t q = items / g, r = items % g;
  return b * q + b * r / g;
}

// Host: the balanced schedule's rule (GroupedGemmArgs::balanced = 0; the layer asks for it on
// GEMM2 when ForwardOptions::balanced_gemm2 resolves on). Swap-AB without split-K, G <= 8 x threads,
// rows (rows_hint, T x slots) above a quarter of the experts, and
//   - static ranges (no counter): tiles chained (short reductions) and rows up to the experts;
//   - dynamic (GroupedGemmArgs::queue): short reductions (k_tiles < 4 x stages) with rows above the
//     experts or chained tiles.
// Static, measured on the H200 (session 16, BF16 layer, same run), balanced against the raster.
// There the active token tiles (about one per touched expert) times the weight chunks land a
// little above a whole number of waves in a way the raster, sized from the row bound, cannot
// foresee: qwen235-tp8 GEMM2 at 16 tokens ran 332 CTAs on 264 slots, the last 68 streaming alone
// for ~14 us.
//   - 16 tokens: 1.6-9 us faster on every case (call 4: dsv3-tp8 258.8 -> 250.3 us, qwen235-tp8
//     124.6 -> 121.0, dsv4f-tp4 270.5 -> 264.9, qwen235-tp4 215.5 -> 212.6, qwen30-tp1 213.2 -> 211.5);
//   - 1 token: 0.7-3.2 us slower (the raster is one exact wave there; the scan's round trips add);
//   - 4 tokens: -2.5..+2.3 us; 64 tokens: dsv3-tp8 3-4 us slower, others 1-5 us faster;
//   - GEMM1 (tile pairs at 1-2 waves, gathered rows after the front): 1-10 us slower (call 2);
//   - with several token tiles per expert the j-major ranges read an expert's weights once per
//     token tile at different times, where the raster's neighbours share them in L2 (dsv3-tp8 at
//     256 tokens, tile 16: GEMM2 184 -> 221 us, call 2).
//   FP8 (session 17, call 1, forced on vs off at 16 tokens): 2-17 us faster on every case this rule
//   takes (dsv3-tp8-fp8b 179.9 -> 162.8 us).
// Dynamic (session 17, calls 5-6, BF16, forced on vs off, same run): 1.2-20 us faster at 16-256
// tokens on every case but gptoss-tp1 at 64 tokens (+6.5 us, both calls) and qwen235-tp8 at 256
// (+0.2..0.8), e.g. dsv3-tp8 256 tokens 548.1 vs 567.5 us, dsv4f-tp4 64 569.0 vs 578.8, gptoss-tp1
// 16 658.3 vs 671.0 (call 6), where the static ranges lost up to 55 us at 256 tokens (call 5); 0.4-4
// us slower at 1 token, and 6.4 us slower on mixtral-tp2 at 4 tokens (8 rows on 8 experts, 112-step
// reductions: not chained, hence the rule's second clause). The FP8 kernel's dynamic form was level
// with its static ranges at 16 tokens and 3-11 us slower at 64-256 on 4 of 6 cases (call 6): the
// layer ran FP8 with static ranges. Session 37 (schedule inlined, forced each way, two runs): the
// FP8 raster faster than the static ranges at 8 of the 17 points this rule takes (1-9 %), slower at
// 3 (0.8-3.3 %), and the dynamic form 7.4 % slower: the layer asks FP8 for neither (resolve(),
// src/core/moe.cpp), except row-scaled FP8 with gathered rows from rows above 3/4 of the experts
// (session 54: 16 tokens 2 % faster on qwen235-tp8-fp8c / fp8t, 6-8 tokens slower); forced, the
// static ranges run.
// (GroupedGemmArgs::balanced and ForwardOptions::balanced_gemm2 force it either way; bench --balanced.)
// Session 20 (raster-only kernels, call 2 and 3): the dynamic form only for short reductions
// (k_tiles < 4 x stages, choose_tiles_per_cta's chaining bound: GEMM2 of dsv3 / qwen3 / dsv4f). On
// long ones a work item is a whole 45-112-step tile and the raster was level or faster: mixtral-tp2
// at 4 tokens (tiles paired by the wave rule) GEMM2 88.3 vs 79.9 us, gptoss-tp1 at 256 tokens
// 1512.9 vs 1505.2 us with the dynamic form.
inline bool use_balanced_schedule(int tiles_per_cta, int groups, int64_t rows_hint, bool dynamic, bool short_reduction) {
  if (4 * rows_hint <= int64_t(groups)) return false;
  return dynamic ? short_reduction && (rows_hint > int64_t(groups) || tiles_per_cta > 1)
                 : tiles_per_cta > 1 && rows_hint <= int64_t(groups);
}

}  // namespace fusedmoe::kernels::grouped_schedule
