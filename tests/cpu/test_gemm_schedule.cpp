// Host-side schedule rules of the grouped GEMMs (kernels/gemm/sm90_bf16_grouped_gemm.h): the
// decisions the layer takes on the suite's shapes, pinned to the ones measured on the H200.
#include <gtest/gtest.h>

#if defined(FUSEDMOE_WITH_CUDA)
#include <cstdint>

#include "kernels/gemm/sm90_bf16_grouped_gemm.h"

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
  // Few rows per expert (under half a token tile: the active tiles are not predictable), and one
  // wave already: one tile.
  for (int64_t t : {1, 4, 16}) {
    EXPECT_EQ(gemm1_one_wave(t, 8, 128, 192, 4096), 1) << t;
    EXPECT_EQ(gemm1_one_wave(t, 8, 256, 256, 7168), 1) << t;
    EXPECT_EQ(gemm1_one_wave(t, 4, 128, 2880, 2880), 1) << t;
  }
  // Degenerate arguments.
  EXPECT_EQ(fk::one_wave_tiles_per_cta(0, 128, 8, 6, 64, 264, 192), 1);
  EXPECT_EQ(fk::one_wave_tiles_per_cta(512, 0, 8, 6, 64, 264, 192), 1);
  EXPECT_EQ(fk::one_wave_tiles_per_cta(512, 128, 8, 1, 64, 264, 192), 1);
}

}  // namespace
#else
TEST(GemmSchedule, SkippedWithoutCuda) { GTEST_SKIP() << "CPU-only build: no kernels"; }
#endif
