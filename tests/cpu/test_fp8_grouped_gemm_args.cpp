// Argument checks of the FP8 grouped GEMMs (kernels/gemm/sm90_fp8_grouped_gemm.h), without a GPU:
// the launchers check every argument on the host before any CUDA call, so bad arguments must come
// back as cudaErrorInvalidValue here (no device, no driver needed). The pointers below are fake,
// never dereferenced: every case is rejected (or, for max_rows == 0, accepted) before a launch.
#include <gtest/gtest.h>

#if defined(FUSEDMOE_WITH_CUDA)
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/gemm/sm90_fp8_grouped_gemm.h"

namespace {

using fusedmoe::Activation;
using fusedmoe::TileFamily;
using fusedmoe::kernels::Fp8GroupedGemmArgs;

// Fake, suitably aligned addresses (never dereferenced).
const void* fake(uintptr_t a) { return reinterpret_cast<const void*>(a); }

Fp8GroupedGemmArgs valid_args() {
  Fp8GroupedGemmArgs a;
  a.a = fake(0x10000);
  a.w = fake(0x20000);
  a.out = const_cast<void*>(fake(0x30000));
  a.counts = static_cast<const int32_t*>(fake(0x40000));
  a.offsets = static_cast<const int32_t*>(fake(0x50000));
  a.padded_offsets = static_cast<const int32_t*>(fake(0x60000));
  a.a_scale = static_cast<const float*>(fake(0x70000));
  a.w_scale = static_cast<const float*>(fake(0x80000));
  a.num_groups = 8;
  a.n = 256;
  a.k = 512;
  a.activation = Activation::silu();
  a.max_rows = 1024;
  a.family = TileFamily::kNormal;
  a.tokens_tile = 128;
  return a;
}

struct BadCase {
  std::string what;
  std::function<void(Fp8GroupedGemmArgs&)> mutate;
};

TEST(Fp8GroupedGemmArgs, ValidArgumentsPassTheHostCheck) {
  for (bool gemm2 : {false, true}) {
    EXPECT_EQ(fusedmoe::kernels::check_fp8_grouped_gemm_args(valid_args(), gemm2), cudaSuccess);
    Fp8GroupedGemmArgs a = valid_args();
    a.n = 16;
    a.k = 16;  // smallest legal sizes
    a.family = TileFamily::kAuto;
    a.tokens_tile = 0;
    a.a_scale_per_token = true;
    a.w_scale_per_channel = true;
    EXPECT_EQ(fusedmoe::kernels::check_fp8_grouped_gemm_args(a, gemm2), cudaSuccess);
  }
  // the Swap-AB family: token tiles 8, 16, 32 (auto with a tile <= 64 means Swap-AB)
  for (bool gemm2 : {false, true})
    for (int tile : {8, 16, 32}) {
      Fp8GroupedGemmArgs a = valid_args();
      a.family = TileFamily::kSwapAB;
      a.tokens_tile = tile;
      EXPECT_EQ(fusedmoe::kernels::check_fp8_grouped_gemm_args(a, gemm2), cudaSuccess) << tile;
      a.family = TileFamily::kAuto;
      EXPECT_EQ(fusedmoe::kernels::check_fp8_grouped_gemm_args(a, gemm2), cudaSuccess) << tile;
    }
}

TEST(Fp8GroupedGemmArgs, BadArgumentsAreRejectedBeforeAnyCudaCall) {
  const std::vector<BadCase> cases = {
      {"N not a multiple of 16", [](auto& a) { a.n = 200; }},
      {"N multiple of 8 only", [](auto& a) { a.n = 8; }},
      {"K not a multiple of 16", [](auto& a) { a.k = 520; }},
      {"N zero", [](auto& a) { a.n = 0; }},
      {"K negative", [](auto& a) { a.k = -16; }},
      {"no experts", [](auto& a) { a.num_groups = 0; }},
      {"too many experts", [](auto& a) { a.num_groups = 65537; }},
      {"negative max_rows", [](auto& a) { a.max_rows = -1; }},
      {"huge max_rows", [](auto& a) { a.max_rows = int64_t(1) << 40; }},
      {"Swap-AB with tile 24", [](auto& a) { a.family = TileFamily::kSwapAB; a.tokens_tile = 24; }},
      {"Swap-AB with tile 64 (not built for FP8)", [](auto& a) { a.family = TileFamily::kSwapAB; a.tokens_tile = 64; }},
      {"Swap-AB with tile 128", [](auto& a) { a.family = TileFamily::kSwapAB; a.tokens_tile = 128; }},
      {"auto with tile 48", [](auto& a) { a.family = TileFamily::kAuto; a.tokens_tile = 48; }},
      {"normal with tile 64", [](auto& a) { a.tokens_tile = 64; }},
      {"negative tiles per CTA", [](auto& a) { a.weight_tiles_per_cta = -1; }},
      {"null a", [](auto& a) { a.a = nullptr; }},
      {"null w", [](auto& a) { a.w = nullptr; }},
      {"null out", [](auto& a) { a.out = nullptr; }},
      {"null counts", [](auto& a) { a.counts = nullptr; }},
      {"null padded offsets", [](auto& a) { a.padded_offsets = nullptr; }},
      {"null a_scale", [](auto& a) { a.a_scale = nullptr; }},
      {"null w_scale", [](auto& a) { a.w_scale = nullptr; }},
      {"a not 16-byte aligned", [](auto& a) { a.a = fake(0x10008); }},
      {"w not 16-byte aligned", [](auto& a) { a.w = fake(0x20004); }},
      {"out not 16-byte aligned", [](auto& a) { a.out = const_cast<void*>(fake(0x30002)); }},
      {"a_scale not 4-byte aligned", [](auto& a) { a.a_scale = static_cast<const float*>(fake(0x70002)); }},
      {"w_scale not 4-byte aligned", [](auto& a) { a.w_scale = static_cast<const float*>(fake(0x80001)); }},
      {"bias not 4-byte aligned", [](auto& a) { a.bias = static_cast<const float*>(fake(0x90002)); }},
  };
  for (bool gemm2 : {false, true}) {
    for (const BadCase& c : cases) {
      Fp8GroupedGemmArgs a = valid_args();
      c.mutate(a);
      EXPECT_EQ(fusedmoe::kernels::check_fp8_grouped_gemm_args(a, gemm2), cudaErrorInvalidValue)
          << c.what << (gemm2 ? " (GEMM2)" : " (GEMM1)");
      // the launchers check first: same answer, and nothing touches a device
      const cudaError_t got = gemm2 ? fusedmoe::kernels::launch_fp8_grouped_gemm2(a, nullptr)
                                    : fusedmoe::kernels::launch_fp8_grouped_gemm1(a, nullptr);
      EXPECT_EQ(got, cudaErrorInvalidValue) << c.what << (gemm2 ? " (GEMM2 launch)" : " (GEMM1 launch)");
    }
  }
  // GEMM2 needs the unpadded offsets (its output rows); GEMM1 does not.
  Fp8GroupedGemmArgs a = valid_args();
  a.offsets = nullptr;
  EXPECT_EQ(fusedmoe::kernels::check_fp8_grouped_gemm_args(a, /*gemm2=*/true), cudaErrorInvalidValue);
  EXPECT_EQ(fusedmoe::kernels::launch_fp8_grouped_gemm2(a, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(fusedmoe::kernels::check_fp8_grouped_gemm_args(a, /*gemm2=*/false), cudaSuccess);
}

// Block scales in row order (stride >= max_rows) or in token order through row_token (GEMM1
// only, stride >= ceil(K/128), offsets needed, tokens x stride in 32 bits).
TEST(Fp8GroupedGemmArgs, BlockScalesRowOrTokenOrder) {
  namespace fk = fusedmoe::kernels;
  Fp8GroupedGemmArgs a = valid_args();
  a.block_scales = true;
  a.a_scale_stride = 1024;
  EXPECT_EQ(fk::check_fp8_grouped_gemm_args(a, false), cudaSuccess);
  EXPECT_EQ(fk::check_fp8_grouped_gemm_args(a, true), cudaSuccess);
  a.a_scale_stride = 1020;  // < max_rows
  EXPECT_EQ(fk::check_fp8_grouped_gemm_args(a, false), cudaErrorInvalidValue);
  Fp8GroupedGemmArgs t = valid_args();
  t.block_scales = true;
  t.a_scale_row_token = static_cast<const int32_t*>(fake(0xA0000));
  t.a_scale_stride = 4;  // K 512: 4 blocks
  EXPECT_EQ(fk::check_fp8_grouped_gemm_args(t, false), cudaSuccess);
  EXPECT_EQ(fk::check_fp8_grouped_gemm_args(t, true), cudaErrorInvalidValue) << "GEMM2 reads H's row-order scales";
  Fp8GroupedGemmArgs u = t;
  u.a_scale_stride = 3;
  EXPECT_EQ(fk::check_fp8_grouped_gemm_args(u, false), cudaErrorInvalidValue) << "stride below the K blocks";
  u = t;
  u.offsets = nullptr;
  EXPECT_EQ(fk::check_fp8_grouped_gemm_args(u, false), cudaErrorInvalidValue) << "row_token needs offsets";
  u = t;
  u.block_scales = false;
  EXPECT_EQ(fk::check_fp8_grouped_gemm_args(u, false), cudaErrorInvalidValue) << "row_token without block scales";
  u = t;
  u.a_scale_stride = int64_t(1) << 24;  // 1024 rows x 2^24 > 2^31
  EXPECT_EQ(fk::check_fp8_grouped_gemm_args(u, false), cudaErrorInvalidValue) << "token offsets past 32 bits";
}

// GEMM2 quantising H itself (hs_src, session 40): Swap-AB GEMM2 only, per token with row scales or
// 1x128 with block scales, at most 4 K blocks of H (n <= 512), a 16-byte aligned source.
TEST(Fp8GroupedGemmArgs, Gemm2QuantisingHChecksItsShape) {
  auto hs_args = [](fusedmoe::ActQuant act) {
    Fp8GroupedGemmArgs a = valid_args();
    a.family = TileFamily::kSwapAB;
    a.tokens_tile = 16;
    a.hs_src = fake(0x90000);
    a.hs_act = act;
    a.block_scales = act == fusedmoe::ActQuant::kGroup128;
    a.a_scale_stride = a.max_rows;
    a.a_scale_per_token = act == fusedmoe::ActQuant::kPerToken;
    return a;
  };
  using fusedmoe::ActQuant;
  using fusedmoe::kernels::check_fp8_grouped_gemm_args;
  for (ActQuant act : {ActQuant::kPerToken, ActQuant::kGroup128}) {
    EXPECT_EQ(check_fp8_grouped_gemm_args(hs_args(act), true), cudaSuccess);
    Fp8GroupedGemmArgs a = hs_args(act);
    a.n = 512;  // 4 K blocks: the most
    EXPECT_EQ(check_fp8_grouped_gemm_args(a, true), cudaSuccess);
    a.n = 640;  // 5
    EXPECT_EQ(check_fp8_grouped_gemm_args(a, true), cudaErrorInvalidValue);
    EXPECT_EQ(check_fp8_grouped_gemm_args(hs_args(act), false), cudaErrorInvalidValue);  // GEMM1
    a = hs_args(act);
    a.family = TileFamily::kNormal;
    a.tokens_tile = 128;
    EXPECT_EQ(check_fp8_grouped_gemm_args(a, true), cudaErrorInvalidValue);
    a = hs_args(act);
    a.hs_src = fake(0x90008);  // not 16-byte aligned
    EXPECT_EQ(check_fp8_grouped_gemm_args(a, true), cudaErrorInvalidValue);
  }
  Fp8GroupedGemmArgs a = hs_args(ActQuant::kPerToken);
  a.a_scale_per_token = false;  // per-token H needs per-token scales in the epilogue
  EXPECT_EQ(check_fp8_grouped_gemm_args(a, true), cudaErrorInvalidValue);
  a = hs_args(ActQuant::kGroup128);
  a.n = 192;  // no whole 1x128 groups
  EXPECT_EQ(check_fp8_grouped_gemm_args(a, true), cudaErrorInvalidValue);
  EXPECT_EQ(check_fp8_grouped_gemm_args(hs_args(ActQuant::kPerTensorStatic), true), cudaErrorInvalidValue);
}

// GEMM1 gathering its e4m3 rows from the token-order x (gather_x, session 45): Swap-AB GEMM1 only,
// with the plan's row_token and offsets, no early weights (the plan is read before the wait), no
// token-order scales of permuted rows, 16-byte aligned rows; `a` is then unused.
TEST(Fp8GroupedGemmArgs, GatheredRowsChecks) {
  auto g_args = [](bool block) {
    Fp8GroupedGemmArgs a = valid_args();
    a.family = TileFamily::kSwapAB;
    a.tokens_tile = 16;
    a.a = nullptr;
    a.gather_x = fake(0x90000);
    a.row_token = static_cast<const int32_t*>(fake(0xa0000));
    a.block_scales = block;
    a.a_scale_stride = 4;  // token order: the tokens' stride, below max_rows
    a.a_scale_per_token = !block;
    return a;
  };
  using fusedmoe::kernels::check_fp8_grouped_gemm_args;
  for (bool block : {false, true}) {
    EXPECT_EQ(check_fp8_grouped_gemm_args(g_args(block), false), cudaSuccess);
    Fp8GroupedGemmArgs a = g_args(block);
    a.gather_x_stride = 1024;  // wider rows of x: a multiple of 16, at least K
    EXPECT_EQ(check_fp8_grouped_gemm_args(a, false), cudaSuccess);
    EXPECT_EQ(check_fp8_grouped_gemm_args(g_args(block), true), cudaErrorInvalidValue);  // GEMM2
    const std::vector<BadCase> cases = {
        {"normal family", [](Fp8GroupedGemmArgs& x) { x.family = TileFamily::kNormal; x.tokens_tile = 128; }},
        {"no row_token", [](Fp8GroupedGemmArgs& x) { x.row_token = nullptr; }},
        {"no offsets", [](Fp8GroupedGemmArgs& x) { x.offsets = nullptr; }},
        {"early weights", [](Fp8GroupedGemmArgs& x) { x.early_weights = true; }},
        {"unaligned x", [](Fp8GroupedGemmArgs& x) { x.gather_x = fake(0x90008); }},
        {"stride below K", [](Fp8GroupedGemmArgs& x) { x.gather_x_stride = 256; }},
        {"stride not a multiple of 16", [](Fp8GroupedGemmArgs& x) { x.gather_x_stride = 520; }},
    };
    for (const BadCase& c : cases) {
      Fp8GroupedGemmArgs x = g_args(block);
      c.mutate(x);
      EXPECT_EQ(check_fp8_grouped_gemm_args(x, false), cudaErrorInvalidValue) << c.what << (block ? " (block)" : "");
    }
  }
  Fp8GroupedGemmArgs a = g_args(true);
  a.a_scale_row_token = a.row_token;  // token-order scales of permuted rows: not with gathered rows
  EXPECT_EQ(check_fp8_grouped_gemm_args(a, false), cudaErrorInvalidValue);
}

TEST(Fp8GroupedGemmArgs, NoRowsIsANoOpWithoutTouchingTheDevice) {
  Fp8GroupedGemmArgs a = valid_args();
  a.max_rows = 0;
  a.a = nullptr;  // pointers are not needed when there is nothing to do
  a.a_scale = nullptr;
  EXPECT_EQ(fusedmoe::kernels::launch_fp8_grouped_gemm1(a, nullptr), cudaSuccess);
  EXPECT_EQ(fusedmoe::kernels::launch_fp8_grouped_gemm2(a, nullptr), cudaSuccess);
  a.n = 24;  // shapes are still checked
  EXPECT_EQ(fusedmoe::kernels::launch_fp8_grouped_gemm1(a, nullptr), cudaErrorInvalidValue);
}

// Where a pair launch runs the tail pairs (session 59): qwen235-tp8's GEMM2 (N = 192, 128 experts)
// with packed weights on token tile 32 up to 16 expected rows per expert, or with the pairs forced;
// not on tile 16, GEMM1, block scales, without packed weights, a reduction outside 129-192, an odd
// forced count of weight tiles per CTA or a forced balanced schedule.
TEST(Fp8GroupedGemmArgs, TailPairsRule) {
  namespace k = fusedmoe::kernels;
  static const uint8_t packed[16] = {};
  Fp8GroupedGemmArgs a;
  a.num_groups = 128;
  a.n = 192;
  a.k = 4096;
  a.w_packed = packed;
  a.expected_rows = 256 * 8;  // 16 rows per expert
  EXPECT_TRUE(k::fp8_tail_pairs_apply(a, 32, true));
  EXPECT_FALSE(k::fp8_tail_pairs_apply(a, 16, true));
  EXPECT_FALSE(k::fp8_tail_pairs_apply(a, 32, false));
  a.expected_rows = 512 * 8;  // 32 rows
  EXPECT_FALSE(k::fp8_tail_pairs_apply(a, 32, true));
  a.pair = 1;  // forced pairs: wherever they can run
  EXPECT_TRUE(k::fp8_tail_pairs_apply(a, 32, true));
  a.pair = 0;
  a.expected_rows = 0;
  a.rows_hint = 100;  // (no expected rows: the hint)
  EXPECT_TRUE(k::fp8_tail_pairs_apply(a, 32, true));
  for (const int n : {128, 256, 208, 144, 176}) {
    a.n = n;
    EXPECT_EQ(k::fp8_tail_pairs_apply(a, 32, true), n == 144 || n == 176) << n;
  }
  a.n = 192;
  Fp8GroupedGemmArgs b = a;
  b.w_packed = nullptr;
  EXPECT_FALSE(k::fp8_tail_pairs_apply(b, 32, true));
  b = a;
  b.block_scales = true;
  EXPECT_FALSE(k::fp8_tail_pairs_apply(b, 32, true));
  b = a;
  b.weight_tiles_per_cta = 3;
  EXPECT_FALSE(k::fp8_tail_pairs_apply(b, 32, true));
  b.weight_tiles_per_cta = 4;
  EXPECT_TRUE(k::fp8_tail_pairs_apply(b, 32, true));
  b = a;
  b.balanced = 1;
  EXPECT_FALSE(k::fp8_tail_pairs_apply(b, 32, true));
}

TEST(Fp8GroupedGemmArgs, InstanceNamesSpellTheConfig) {
  int n = 0;
  const char* const* names = fusedmoe::kernels::fp8_grouped_gemm_instance_names(&n);
  ASSERT_EQ(n, 82);  // normal + Swap-AB 8/16/32, gated + plain each; Swap-AB also with the balanced schedules; dense Swap-AB; defer; pairs; _hs; _gather; tail pairs
  EXPECT_STREQ(names[0], "sm90_fp8e4m3_grouped_gemm_128x128x128_s5_row_gated");
  EXPECT_STREQ(names[1], "sm90_fp8e4m3_grouped_gemm_128x128x128_s5_row");
  EXPECT_STREQ(names[2], "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s11_row_gated");
  EXPECT_STREQ(names[7], "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s8_row");
  EXPECT_STREQ(names[13], "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s8_row_balanced");
  EXPECT_STREQ(names[27], "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s11_row_defer");
  EXPECT_STREQ(names[50], "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s11_row_hs");
  EXPECT_STREQ(names[67], "sm90_fp8e4m3_grouped_gemm_swapab_128x32x128_s4_row_balanced_hs");
  EXPECT_STREQ(names[68], "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s11_row_gather_gated");
  EXPECT_STREQ(names[79], "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s8_row_balanced_gather");
  EXPECT_STREQ(names[80], "sm90_fp8e4m3_grouped_gemm_swapab_128x32x128_s6_tails_row");
  EXPECT_STREQ(names[81], "sm90_fp8e4m3_grouped_gemm_swapab_128x32x128_s6_tails_row_hs");
}

}  // namespace
#else
TEST(Fp8GroupedGemmArgs, SkippedWithoutCuda) { GTEST_SKIP() << "CPU-only build: no kernels"; }
#endif
