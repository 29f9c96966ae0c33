// Host-side schedule rules of the grouped GEMMs (sm90_bf16_grouped_gemm.h, grouped_schedule_rules.h): the
// decisions the layer takes on the suite's shapes, pinned to the ones measured on the H200.
#include <gtest/gtest.h>

#if defined(FUSEDMOE_WITH_CUDA)
#include <cstdint>
#include <random>

#include "kernels/gemm/grouped_schedule_rules.h"
#include "kernels/gemm/sm90_bf16_grouped_gemm.h"
#include "kernels/gemm/sm90_fp8_grouped_gemm.h"

namespace {

namespace fk = fusedmoe::kernels;

// GEMM1 of a BF16 layer at T tokens: the tile the oracle picks, then one_wave_tiles_per_cta with the
// launch's numbers (weight tiles of 64 rows for Swap-AB, 128 for the normal family, K steps of 64;
// 2 CTAs per SM for Swap-AB, 1 for the normal family, 132 SMs).
int gemm1_one_wave(int64_t tokens, int top_k, int experts, int n, int k) {
  const fk::TokensTileChoice c = fk::choose_tokens_tile(tokens, top_k, experts);
  const bool swap = c.family == fusedmoe::TileFamily::kSwapAB;
  const int w_rows = swap ? 64 : 128;
  const int w_tiles = (2 * n + w_rows - 1) / w_rows;  // gated: gate and up rows
  const int k_tiles = (k + 63) / 64;
  const int64_t slots = swap ? 264 : 132;
  return fk::one_wave_tiles_per_cta(tokens * top_k, experts, c.tokens_tile, w_tiles, k_tiles, slots, swap ? 192 : 512);
}

// The expected active token tiles (GEMM1's one-wave and dense rules): 1 - e^-mean of the groups,
// ceil(mean / tile) tiles each; 0 for unknown rows.
TEST(GemmSchedule, ExpectedActiveTokenTiles) {
  EXPECT_EQ(fk::expected_active_token_tiles(32, 128, 8), 29);    // qwen30-tp1 at 4 tokens
  EXPECT_EQ(fk::expected_active_token_tiles(2048, 128, 32), 128);  // qwen235-tp8 at 256 tokens
  EXPECT_EQ(fk::expected_active_token_tiles(4096, 128, 16), 256);  // 32 rows a group: two tiles of 16
  EXPECT_EQ(fk::expected_active_token_tiles(0, 128, 8), 0);
}

TEST(GemmSchedule, OneWaveGemm1TakesTheMeasuredPoints) {
  // Faster on the H200 (session 20, calls 3-5): qwen235-tp8 at 64 / 256 tokens, 3 tiles of 64 steps
  // (2 x 128 CTAs); mixtral-tp2 at 256, 7 normal tiles (128 CTAs).
  EXPECT_EQ(gemm1_one_wave(64, 8, 128, 192, 4096), 3);
  EXPECT_EQ(gemm1_one_wave(256, 8, 128, 192, 4096), 3);
  EXPECT_EQ(gemm1_one_wave(256, 2, 8, 7168, 4096), 7);
  // Slower there, so left at one tile: long Swap-AB chains (qwen30-tp1 and qwen235-tp4 at 64 / 256
  // tokens, dsv3-tp8 at 256) and mixtral-tp2 at 64 (7 Swap-AB tiles, 448 steps).
  EXPECT_EQ(gemm1_one_wave(64, 8, 128, 768, 2048), 1);
  EXPECT_EQ(gemm1_one_wave(256, 8, 128, 768, 2048), 1);
  EXPECT_EQ(gemm1_one_wave(64, 8, 128, 384, 4096), 1);
  EXPECT_EQ(gemm1_one_wave(256, 8, 128, 384, 4096), 1);
  EXPECT_EQ(gemm1_one_wave(256, 8, 256, 256, 7168), 1);
  EXPECT_EQ(gemm1_one_wave(64, 2, 8, 7168, 4096), 1);
  // Few rows per expert (under half a token tile): one token tile per active expert, G (1 - e^-mean)
  // of them. qwen235-tp8 at 16 tokens: 81 x 6 tiles on 264 slots, 2 per CTA (session 24, call 1:
  // 116.5 vs 119.3 us); at 1 and 4 tokens one wave holds them already.
  EXPECT_EQ(gemm1_one_wave(16, 8, 128, 192, 4096), 2);
  for (int64_t t : {1, 4}) EXPECT_EQ(gemm1_one_wave(t, 8, 128, 192, 4096), 1) << t;
  // Also new with session 24's rule, not measured: mixtral-tp2 at 129-255 tokens (normal tiles,
  // 48-64 expected rows per expert) takes the 7 tiles measured at 256.
  EXPECT_EQ(gemm1_one_wave(192, 2, 8, 7168, 4096), 7);
  // dsv3-tp8 (112-step tiles: no chain fits 192 steps) and gptoss-tp1 (no count that fits one wave
  // fills 90 % of it).
  for (int64_t t : {1, 4, 16}) {
    EXPECT_EQ(gemm1_one_wave(t, 8, 256, 256, 7168), 1) << t;
    EXPECT_EQ(gemm1_one_wave(t, 4, 128, 2880, 2880), 1) << t;
  }
  // Degenerate arguments.
  EXPECT_EQ(fk::one_wave_tiles_per_cta(0, 128, 8, 6, 64, 264, 192), 1);
  EXPECT_EQ(fk::one_wave_tiles_per_cta(512, 0, 8, 6, 64, 264, 192), 1);
  EXPECT_EQ(fk::one_wave_tiles_per_cta(512, 128, 8, 1, 64, 264, 192), 1);
}

// GEMM1 of an FP8 layer (Swap-AB, weight tiles of 64 rows, K blocks of 128, 264 slots) with the
// oracle's measured tile: the FP8 launch's one-wave rule (sm90_fp8_grouped_gemm.h) with the rows the
// layer passes (expected local rows).
int fp8_gemm1_one_wave(int64_t tokens, int top_k, int local, int experts, int n, int k, int tile) {
  const int k_tiles = (k + 127) / 128;
  if (!fk::one_wave_fp8_applies(true, k_tiles)) return 1;
  const int64_t rows = (tokens * top_k * local + experts - 1) / experts;
  return fk::one_wave_tiles_per_cta(rows, local, tile, 2 * n / 64, k_tiles, 264, fk::kOneWaveFp8MaxSteps);
}

TEST(GemmSchedule, OneWaveFp8Gemm1TakesTheMeasuredPoints) {
  // Faster on the H200 (session 26, calls 1-2, 8 tiles per CTA forced): dsv3-tp8-fp8b and
  // dsv3-ep8-fp8b at 128 tokens (tile 8) and 256 (tile 16).
  EXPECT_EQ(fp8_gemm1_one_wave(128, 8, 256, 256, 256, 7168, 8), 8);
  EXPECT_EQ(fp8_gemm1_one_wave(256, 8, 256, 256, 256, 7168, 16), 8);
  EXPECT_EQ(fp8_gemm1_one_wave(128, 8, 32, 256, 2048, 7168, 8), 8);
  EXPECT_EQ(fp8_gemm1_one_wave(256, 8, 32, 256, 2048, 7168, 16), 8);
  // Slower or level there, so one tile: the same cases at 16 and 64 tokens; K 4096 (32 blocks):
  // qwen235-tp4-fp8b, qwen235-tp8-fp8c, dsv4f-tp4-fp8b.
  for (int64_t t : {16, 64}) {
    EXPECT_EQ(fp8_gemm1_one_wave(t, 8, 256, 256, 256, 7168, 8), 1) << t;
    EXPECT_EQ(fp8_gemm1_one_wave(t, 8, 32, 256, 2048, 7168, 8), 1) << t;
  }
  EXPECT_EQ(fp8_gemm1_one_wave(256, 8, 128, 128, 384, 4096, 32), 1);
  EXPECT_EQ(fp8_gemm1_one_wave(256, 8, 128, 128, 192, 4096, 32), 1);
  EXPECT_EQ(fp8_gemm1_one_wave(256, 6, 256, 256, 512, 4096, 16), 1);
  EXPECT_FALSE(fk::one_wave_fp8_applies(false, 56));  // (the normal family never chains this way)
}

// The dense FP8 Swap-AB instances' rule (dense_fp8_auto), at the points measured on the H200
// (session 27, call 1, both GEMMs dense vs 2 CTAs per SM, stage split).
TEST(GemmSchedule, DenseFp8TakesTheMeasuredPoints) {
  // GEMM1, block scales: dense (dsv3-tp8-fp8b at 64 tokens, tile 8; qwen235-tp4-fp8b at 256, tile 16)
  EXPECT_TRUE(fk::dense_fp8_auto(false, true, 8, false, false));
  EXPECT_TRUE(fk::dense_fp8_auto(false, true, 16, false, false));
  // ... but not under the one-wave chain (dsv3-tp8-fp8b at 128 / 256 tokens)
  EXPECT_FALSE(fk::dense_fp8_auto(false, true, 8, true, false));
  EXPECT_FALSE(fk::dense_fp8_auto(false, true, 16, true, false));
  // GEMM1, row scales (qwen235-tp8-fp8c): tile 8 no (16 / 64 tokens), 16-32 yes (128 / 256)
  EXPECT_FALSE(fk::dense_fp8_auto(false, false, 8, false, false));
  EXPECT_TRUE(fk::dense_fp8_auto(false, false, 16, false, false));
  EXPECT_TRUE(fk::dense_fp8_auto(false, false, 32, false, false));
  // GEMM2: the raster with block scales (any tile; qwen235-tp4-fp8b at 256 runs tile 32) or row
  // scales on tiles 8-16 yes; row scales on tile 32 (qwen235-tp8-fp8c at 256) and the balanced
  // schedule (16 tokens) no
  EXPECT_TRUE(fk::dense_fp8_auto(true, true, 8, false, false));
  EXPECT_TRUE(fk::dense_fp8_auto(true, true, 32, false, false));
  EXPECT_TRUE(fk::dense_fp8_auto(true, false, 16, false, false));
  EXPECT_FALSE(fk::dense_fp8_auto(true, true, 8, false, true));
  EXPECT_FALSE(fk::dense_fp8_auto(true, false, 32, false, false));
}

// The FP8 pair instances' rule (pair_fp8_auto), at the points measured on the H200 (session 34,
// call 2: both GEMMs on the pair instances vs the default, stage split).
TEST(GemmSchedule, PairFp8TakesTheMeasuredPoints) {
  // token tile 16, long reductions over many weight tiles: dsv3-ep8-fp8b at 256 tokens, GEMM1 (56 K
  // blocks, 64 gated tiles) and GEMM2 (16 blocks, 112 tiles)
  EXPECT_TRUE(fk::pair_fp8_auto(false, true, 16, 56, 64));
  EXPECT_TRUE(fk::pair_fp8_auto(true, true, 16, 16, 112));
  // not: dsv3-tp8-fp8b GEMM1 (56 blocks, 8 tiles) and GEMM2 (2 blocks), dsv4f-tp4-fp8b GEMM1 (32
  // blocks) and GEMM2 (4)
  EXPECT_FALSE(fk::pair_fp8_auto(false, true, 16, 56, 8));
  EXPECT_FALSE(fk::pair_fp8_auto(true, true, 16, 2, 112));
  EXPECT_FALSE(fk::pair_fp8_auto(false, true, 16, 32, 16));
  EXPECT_FALSE(fk::pair_fp8_auto(true, true, 16, 4, 64));
  // not: tile 8 (16-64 tokens), tile 32 with block scales (qwen235-tp4-fp8b at 256)
  EXPECT_FALSE(fk::pair_fp8_auto(false, true, 8, 56, 64));
  EXPECT_FALSE(fk::pair_fp8_auto(true, true, 8, 16, 112));
  EXPECT_FALSE(fk::pair_fp8_auto(false, true, 32, 32, 12));
  EXPECT_FALSE(fk::pair_fp8_auto(true, true, 32, 3, 64));
  // row scales: GEMM2 on tile 32 (qwen235-tp8-fp8c / fp8t at 256 tokens), not GEMM1, not tile 8
  EXPECT_TRUE(fk::pair_fp8_auto(true, false, 32, 2, 64));
  EXPECT_FALSE(fk::pair_fp8_auto(false, false, 32, 32, 6));
  EXPECT_FALSE(fk::pair_fp8_auto(true, false, 8, 2, 64));
}

// The BF16 dense rule (dense_bf16_auto): single weight tiles on the raster (split-K or not); GEMM2
// on token tiles 8-16, and on tile 32 for long reductions over many experts.
TEST(GemmSchedule, DenseBf16OnlyForSingleRasterTiles) {
  EXPECT_TRUE(fk::dense_bf16_auto(false, 8, 1, false));  // gptoss-tp1 GEMM1 (measured faster), 1-token split-K
  EXPECT_TRUE(fk::dense_bf16_auto(true, 16, 1, false));  // dsv3-ep8 / gptoss-tp1 GEMM2 (faster)
  EXPECT_TRUE(fk::dense_bf16_auto(false, 32, 1, false));
  EXPECT_FALSE(fk::dense_bf16_auto(false, 8, 2, false));  // chained tiles
  // GEMM1 chained by choose_tiles_per_cta in one wave of dense slots (qwen30-tp1 at 4 tokens: 348
  // expected CTAs, 264 / 528 slots: faster); not past it (qwen30-tp1 at 8: 612), not by the one-wave
  // rule, not with unknown rows, GEMM1 only, not balanced
  EXPECT_EQ(fk::dense_swapab_ctas_per_sm(8), 4);
  EXPECT_EQ(fk::dense_swapab_ctas_per_sm(32), 3);
  EXPECT_TRUE(fk::dense_bf16_auto(false, 8, 2, false, 0, 0, true, 348, 264, 528));
  EXPECT_FALSE(fk::dense_bf16_auto(false, 8, 2, false, 0, 0, true, 612, 264, 528));
  EXPECT_FALSE(fk::dense_bf16_auto(false, 8, 2, false, 0, 0, false, 348, 264, 528));
  EXPECT_FALSE(fk::dense_bf16_auto(false, 8, 2, false, 0, 0, true, 0, 264, 528));
  EXPECT_FALSE(fk::dense_bf16_auto(true, 8, 2, false, 0, 0, true, 348, 264, 528));
  EXPECT_FALSE(fk::dense_bf16_auto(false, 8, 2, true, 0, 0, true, 348, 264, 528));
  // GEMM1 single tiles: only past one wave of 2-CTA slots (dsv3-ep8 at 2 tokens: 128 CTAs, slower)
  EXPECT_FALSE(fk::dense_bf16_auto(false, 8, 1, false, 0, 0, false, 128, 264));
  EXPECT_TRUE(fk::dense_bf16_auto(false, 8, 1, false, 0, 0, false, 720, 264));  // gptoss-tp1 at 2 tokens
  EXPECT_TRUE(fk::dense_bf16_auto(false, 8, 1, false, 0, 0, false, 0, 264));    // (unknown rows: as before)
  EXPECT_TRUE(fk::dense_bf16_auto(true, 8, 1, false, 0, 0, false, 128, 264));   // (GEMM2 unchanged)
  EXPECT_FALSE(fk::dense_bf16_auto(true, 8, 1, true));    // the balanced GEMM2 of short reductions (slower)
  EXPECT_FALSE(fk::dense_bf16_auto(true, 32, 1, false));  // GEMM2 on tile 32 (mixtral-tp2 at 64: slower)
  EXPECT_FALSE(fk::dense_bf16_auto(true, 32, 1, false, 7168, 8));  // mixtral-tp2 (slower)
  EXPECT_FALSE(fk::dense_bf16_auto(true, 32, 1, false, 256, 256));  // dsv3-tp8: short reduction (slower)
  EXPECT_TRUE(fk::dense_bf16_auto(true, 32, 1, false, 2048, 32));   // dsv3-ep8 at 128-256 tokens (faster)
  EXPECT_FALSE(fk::dense_bf16_auto(true, 32, 2, false, 2048, 32));  // chained tiles
}

// GEMM2's balanced schedule rule (use_balanced_schedule). `short_reduction` is the launch's
// k_tiles < 4 x stages: K steps of 64 over N for BF16 (Swap-AB 8: 11 stages, 16: 10, 32: 8).
TEST(GemmSchedule, BalancedGemm2Rule) {
  namespace gs = fusedmoe::kernels::grouped_schedule;
  // Dynamic (BF16). Short reductions take it with rows above the experts or chained tiles:
  // dsv3-tp8 at 256 tokens (N 256: 4 steps, 2048 rows on 256 experts), qwen235-tp8 at 16 (N 192:
  // 3 steps, chained, 128 rows on 128 experts).
  EXPECT_TRUE(gs::use_balanced_schedule(1, 256, 2048, true, 4 < 4 * 10));
  EXPECT_TRUE(gs::use_balanced_schedule(8, 128, 128, true, 3 < 4 * 11));
  // Long reductions stay on the raster (session 20): mixtral-tp2 at 4 tokens (N 7168: 112 steps,
  // tiles paired by the wave rule), gptoss-tp1 at 256 (N 2880: 45 steps on Swap-AB 16).
  EXPECT_FALSE(gs::use_balanced_schedule(2, 8, 8, true, 112 < 4 * 11));
  EXPECT_FALSE(gs::use_balanced_schedule(1, 128, 1024, true, 45 < 4 * 10));
  // Rows up to a quarter of the experts: the raster (1 token on qwen3's 128 experts), both forms.
  EXPECT_FALSE(gs::use_balanced_schedule(8, 128, 8, true, true));
  EXPECT_FALSE(gs::use_balanced_schedule(8, 128, 8, false, true));
  // A short reduction without chained tiles and rows within the experts: the raster.
  EXPECT_FALSE(gs::use_balanced_schedule(1, 128, 64, true, true));
  // Static (FP8): chained tiles with rows in (experts / 4, experts]; the reduction length is not
  // part of it.
  EXPECT_TRUE(gs::use_balanced_schedule(4, 256, 128, false, true));
  EXPECT_TRUE(gs::use_balanced_schedule(4, 256, 128, false, false));
  EXPECT_FALSE(gs::use_balanced_schedule(4, 256, 512, false, true));
  EXPECT_FALSE(gs::use_balanced_schedule(1, 256, 128, false, true));
}

// The static ranges' 32-bit start, floor(items * b / g), against the 64-bit quotient: random and
// boundary values up to the launch bounds (g <= kMaxBalancedGrid, items < 2^31), and every CTA's
// range [start(b), start(b + 1)) tiles the items.
TEST(GemmSchedule, BalancedRangeStart32Bit) {
  namespace gs = fusedmoe::kernels::grouped_schedule;
  std::mt19937_64 rng(std::random_device{}());
  auto check = [](uint32_t items, uint32_t b, uint32_t g) {
    const uint64_t want = uint64_t(items) * b / g;
    ASSERT_EQ(gs::balanced_range_start(items, b, g), want) << "items " << items << " b " << b << " g " << g;
  };
  const uint32_t gmax = uint32_t(gs::kMaxBalancedGrid);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t g = 1 + uint32_t(rng() % gmax);
    const uint32_t items = uint32_t(rng() % 0x80000000ull);
    check(items, uint32_t(rng() % (uint64_t(g) + 1)), g);
  }
  for (uint32_t g : {1u, 2u, 263u, 264u, 65534u, gmax})
    for (uint32_t items : {0u, 1u, g - 1, g, g + 1, 0x3fffffffu, 0x7ffffffeu, 0x7fffffffu})
      for (uint32_t b : {0u, 1u, g / 2, g - 1, g}) check(items, b, g);
  for (uint32_t g : {7u, 264u, 1000u}) {
    const uint32_t items = 12345;
    EXPECT_EQ(gs::balanced_range_start(items, 0, g), 0u);
    EXPECT_EQ(gs::balanced_range_start(items, g, g), items);
    for (uint32_t b = 0; b < g; ++b)
      EXPECT_LE(gs::balanced_range_start(items, b, g), gs::balanced_range_start(items, b + 1, g));
  }
}

}  // namespace
#else
TEST(GemmSchedule, SkippedWithoutCuda) { GTEST_SKIP() << "CPU-only build: no kernels"; }
#endif
