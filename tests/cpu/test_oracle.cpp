// The oracle's two modes (src/dispatch/oracle.h): forward() asks without reasons (no text on the hot
// path), explain() with them; the decision itself must be the same.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/workspace.h"
#include "dispatch/oracle.h"
#include "fusedmoe/fusedmoe.h"
#if defined(FUSEDMOE_WITH_CUDA)
#include "kernels/gemm/cutlass_grouped_gemm.h"  // cutlass_grouped_auto_config
#endif

namespace fm = fusedmoe;

TEST(Oracle, DecisionWithoutReasonsIsTheSame) {
  int checked = 0;
  for (const fm::Preset& pr : fm::presets()) {
    for (int64_t t : {int64_t{1}, int64_t{16}, int64_t{300}, int64_t{8192}}) {
      for (int variant = 0; variant < 7; ++variant) {
        fm::MoeProblem p = pr.problem;
        if (variant == 1) p.quant = fm::QuantScheme::bf16();
        if (variant == 2) p.quant = fm::QuantScheme::fp8_per_channel();
        p.num_tokens = p.max_tokens = t;
        fm::ForwardOptions o;
        if (variant == 3) o.tiles = fm::TileFamily::kSwapAB;
        if (variant == 4) {
          o.tiles = fm::TileFamily::kSwapAB;
          o.tokens_tile = 64;  // no fp8 swap-ab tile 64: refused in both modes
        }
        if (variant == 5) o.backend = fm::Backend::kCutlassGrouped;  // forced: chosen or refused alike
        if (variant == 6) o.staged_epilogue = fm::Toggle::kOff;      // a grouped-backend switch forced
        const fm::detail::Decision full = fm::detail::decide(p, o, true);
        const fm::detail::Decision fast = fm::detail::decide(p, o, false);
        SCOPED_TRACE(pr.name + " T=" + std::to_string(t) + " variant " + std::to_string(variant));
        EXPECT_EQ(fast.chosen, full.chosen);
        EXPECT_EQ(fast.status.code(), full.status.code());
        if (full.chosen != fm::Backend::kAuto) {
          EXPECT_EQ(fast.family, full.family);
          EXPECT_EQ(fast.tokens_tile, full.tokens_tile);
          EXPECT_FALSE(full.tile_reason.empty());
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0);
}

#if defined(FUSEDMOE_WITH_CUDA)
// Every FP8 scheme that forward() runs is chosen (all validated on the H200: block scales, Swap-AB
// at decode and early weights in session 5, dynamic per-tensor activations in session 6); dynamic
// per-tensor with an expert map is refused with the reason.
TEST(Oracle, Fp8SchemesAreChosen) {
  fm::MoeProblem p = fm::find_preset("qwen235-tp8")->problem;
  p.num_tokens = p.max_tokens = 4;
  p.quant = fm::QuantScheme::fp8_per_tensor(true);
  const fm::detail::Decision d = fm::detail::decide(p, {}, true);
  EXPECT_EQ(d.chosen, fm::Backend::kGrouped) << d.status.message();
  fm::MoeProblem m = p;
  m.num_local_experts = m.num_experts / 2;
  const fm::detail::Decision dm = fm::detail::decide(m, {}, true);
  EXPECT_EQ(dm.chosen, fm::Backend::kAuto);
  EXPECT_NE(dm.status.message().find("dynamic per-tensor"), std::string::npos) << dm.status.message();
  fm::MoeProblem b = fm::find_preset("dsv3-tp8")->problem;
  b.num_tokens = b.max_tokens = 4;
  const fm::detail::Decision db = fm::detail::decide(b, {}, true);
  EXPECT_EQ(db.chosen, fm::Backend::kGrouped) << db.status.message();
  EXPECT_EQ(db.family, fm::TileFamily::kSwapAB);
}
#endif

#if defined(FUSEDMOE_WITH_CUDA)
// ForwardOptions::gemm2_tokens_tile (session 54): explain() names GEMM2's own Swap-AB tile when it
// divides GEMM1's, says "refused" with the reason otherwise, and "not applicable" on normal tiles.
TEST(Oracle, Gemm2TokenTileExplained) {
  fm::MoeProblem p = fm::find_preset("qwen235-tp8")->problem;
  p.quant = fm::QuantScheme::fp8_per_channel();
  p.num_tokens = p.max_tokens = 256;
  fm::ForwardOptions o;
  o.backend = fm::Backend::kGrouped;
  o.tiles = fm::TileFamily::kSwapAB;
  o.tokens_tile = 32;
  o.gemm2_tokens_tile = 16;
  std::string ex = fm::explain(p, o);
  EXPECT_NE(ex.find("GEMM2 token tile 16 (forced by ForwardOptions::gemm2_tokens_tile; rows padded to 32)"),
            std::string::npos) << ex;
  EXPECT_NE(ex.find("the same on swapab_64x16 tiles (GEMM2"), std::string::npos) << ex;
  for (const int bad : {64, 24, -8}) {  // FP8 Swap-AB tiles are 8, 16, 32; 24 does not divide 32
    o.gemm2_tokens_tile = bad;
    ex = fm::explain(p, o);
    EXPECT_NE(ex.find("refused: invalid argument: ForwardOptions::gemm2_tokens_tile"), std::string::npos) << bad << "\n" << ex;
  }
  p.quant = fm::QuantScheme::bf16();
  o.tokens_tile = 64;
  o.gemm2_tokens_tile = 32;  // BF16 has a 64-row Swap-AB tile
  ex = fm::explain(p, o);
  EXPECT_NE(ex.find("GEMM2 token tile 32"), std::string::npos) << ex;
  o.tiles = fm::TileFamily::kNormal;
  o.tokens_tile = 0;
  ex = fm::explain(p, o);
  EXPECT_NE(ex.find("gemm2_tokens_tile: not applicable on normal tiles"), std::string::npos) << ex;
}
#endif

#if defined(FUSEDMOE_WITH_CUDA)
// The CUTLASS grouped-GEMM backend: chosen at prefill for BF16 layers, forced or refused with the
// reason otherwise; explain() names its kernels.
TEST(Oracle, CutlassBackendChosenAtPrefillOrRefusedWithReason) {
  fm::MoeProblem p = fm::find_preset("qwen235-tp8")->problem;  // E 128, k 8
  p.quant = fm::QuantScheme::bf16();
  p.num_tokens = p.max_tokens = 16;
  EXPECT_EQ(fm::detail::decide(p, {}, true).chosen, fm::Backend::kGrouped);
  p.num_tokens = p.max_tokens = 4096;  // 256 rows per expert
  const fm::detail::Decision d = fm::detail::decide(p, {}, true);
  EXPECT_EQ(d.chosen, fm::Backend::kCutlassGrouped) << d.status.message();
  EXPECT_NE(d.reason.find("rows per expert"), std::string::npos) << d.reason;
  const std::string ex = fm::explain(p);
  // 256 rows per expert: 128x256 tiles on both GEMMs; from 512 rows, 2N = 384 takes 256x128 tiles
  EXPECT_NE(ex.find("cutlass_sm90_bf16_grouped_gemm_coop_128x256x64 (GEMM1)"), std::string::npos) << ex;
  EXPECT_NE(ex.find("cutlass_sm90_bf16_grouped_gemm_coop_128x256x64 (GEMM2)"), std::string::npos) << ex;
  fm::MoeProblem big = p;
  big.num_tokens = big.max_tokens = 16384;
  const std::string ex2 = fm::explain(big);
  EXPECT_NE(ex2.find("cutlass_sm90_bf16_grouped_gemm_coop_256x128x64 (GEMM1)"), std::string::npos) << ex2;
  EXPECT_NE(ex2.find("cutlass_sm90_bf16_grouped_gemm_coop_128x256x64 (GEMM2)"), std::string::npos) << ex2;
  // up to 128 rows per expert, GEMM2 on ping-pong 64x256 (session 39), GEMM1 unchanged
  fm::MoeProblem few = p;
  few.num_tokens = few.max_tokens = 2048;  // 128 rows per expert
  const std::string ex3 = fm::explain(few);
  EXPECT_NE(ex3.find("cutlass_sm90_bf16_grouped_gemm_coop_128x256x64 (GEMM1)"), std::string::npos) << ex3;
  EXPECT_NE(ex3.find("cutlass_sm90_bf16_grouped_gemm_pingpong_64x256x64"), std::string::npos) << ex3;
  EXPECT_EQ(fm::kernels::cutlass_grouped_auto_config(7168, 128, true), fm::kernels::CutlassConfig::kPingpong64x256);
  EXPECT_EQ(fm::kernels::cutlass_grouped_auto_config(7168, 129, true), fm::kernels::CutlassConfig::kCoop128x256);
  EXPECT_EQ(fm::kernels::cutlass_grouped_auto_config(7168, 0, true), fm::kernels::CutlassConfig::kCoop128x256);
  EXPECT_EQ(fm::kernels::cutlass_grouped_auto_config(512, 64, false), fm::kernels::CutlassConfig::kCoop128x256);
  fm::MoeProblem mixtral = fm::find_preset("mixtral-tp2")->problem;  // E 8, k 2: 64 rows per expert at 256
  mixtral.num_tokens = mixtral.max_tokens = 256;
  EXPECT_EQ(fm::detail::decide(mixtral, {}, true).chosen, fm::Backend::kGrouped) << "decode stays on the grouped backend";
  fm::ForwardOptions normal;  // forced tiles keep the grouped backend
  normal.tiles = fm::TileFamily::kNormal;
  EXPECT_EQ(fm::detail::decide(p, normal, true).chosen, fm::Backend::kGrouped);
  fm::ForwardOptions staged;  // so does any forced switch of the grouped backend's GEMMs
  staged.staged_epilogue = fm::Toggle::kOff;
  EXPECT_EQ(fm::detail::decide(p, staged, true).chosen, fm::Backend::kGrouped);
  EXPECT_EQ(fm::detail::decide(p, staged, false).chosen, fm::Backend::kGrouped);
  fm::ForwardOptions balanced;  // (bench --balanced at prefill measures the grouped backend both ways)
  balanced.balanced_gemm2 = fm::Toggle::kOff;
  EXPECT_EQ(fm::detail::decide(p, balanced, true).chosen, fm::Backend::kGrouped);
  fm::ForwardOptions forced;
  forced.backend = fm::Backend::kCutlassGrouped;
  p.num_tokens = p.max_tokens = 1;
  EXPECT_EQ(fm::detail::decide(p, forced, true).chosen, fm::Backend::kCutlassGrouped);
  EXPECT_EQ(fm::detail::decide(p, forced, false).chosen, fm::Backend::kCutlassGrouped);
  // FP8 per-channel / per-tensor weights: CUTLASS's FP8 GEMM with the scales in its epilogue (session
  // 19): forced at any size, auto from 1024 tokens as the block-scaled layers
  fm::MoeProblem f = p;
  f.quant = fm::QuantScheme::fp8_per_channel();
  EXPECT_EQ(fm::detail::decide(f, forced, true).chosen, fm::Backend::kCutlassGrouped);
  EXPECT_EQ(fm::detail::decide(f, forced, false).chosen, fm::Backend::kCutlassGrouped);
  EXPECT_EQ(fm::detail::decide(f, {}, true).chosen, fm::Backend::kGrouped);
  for (bool dynamic : {false, true}) {
    f.quant = dynamic ? fm::QuantScheme::fp8_per_tensor(true) : fm::QuantScheme::fp8_per_channel();
    f.num_tokens = f.max_tokens = 4096;
    EXPECT_EQ(fm::detail::decide(f, {}, true).chosen, fm::Backend::kCutlassGrouped);
    EXPECT_EQ(fm::detail::decide(f, {}, false).chosen, fm::Backend::kCutlassGrouped);
    const std::string exf = fm::explain(f);
    // (qwen235-tp8: GEMM1's 2N = 384, three 128-wide tiles: 1x1 clusters; GEMM2's 4096: 1x2)
    EXPECT_NE(exf.find("cutlass_sm90_fp8e4m3_rowscaled_grouped_gemm_coop_128x128x128 (GEMM1"), std::string::npos) << exf;
    EXPECT_NE(exf.find("cutlass_sm90_fp8e4m3_rowscaled_grouped_gemm_coop_128x128x128_c1x2 (GEMM2"), std::string::npos)
        << exf;
    f.num_tokens = f.max_tokens = 1;
  }
  fm::MoeProblem b = fm::find_preset("dsv3-tp8")->problem;  // FP8 128x128 blocks: auto from 1024 tokens
  b.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0);
  b.num_tokens = b.max_tokens = 512;
  EXPECT_EQ(fm::detail::decide(b, {}, true).chosen, fm::Backend::kGrouped);
  b.num_tokens = b.max_tokens = 4096;
  EXPECT_EQ(fm::detail::decide(b, {}, true).chosen, fm::Backend::kCutlassGrouped);
  EXPECT_EQ(fm::detail::decide(b, {}, false).chosen, fm::Backend::kCutlassGrouped);
  const std::string exb = fm::explain(b);
  EXPECT_NE(exb.find("cutlass_sm90_fp8e4m3_blockwise_grouped_gemm_coop_128x128x128_c1x2 (GEMM1"), std::string::npos) << exb;
  // the configurations of both GEMMs (kernels::CutlassFp8Config), auto: 1x2 clusters where N pairs up
  EXPECT_NE(exb.find("tiles: cutlass fp8 blockwise coop 128x128 c1x2 + coop 128x128 c1x2 (GEMM1 + GEMM2"),
            std::string::npos)
      << exb;
  // the Swap-AB epilogues' puts (measured, session 47): stmatrix in the FP8 kernel, per value in BF16's
  fm::MoeProblem bd = b;  // (decode: the grouped backend's Swap-AB tiles)
  bd.num_tokens = bd.max_tokens = 64;
  const std::string ex_fp8 = fm::explain(bd);
  EXPECT_NE(ex_fp8.find("swap_ab_epilogue: stmatrix puts (FP8 kernel"), std::string::npos) << ex_fp8;
  const std::string ex_bf16 = fm::explain(fm::find_preset("qwen235-tp8")->problem);  // (BF16 weights)
  EXPECT_NE(ex_bf16.find("swap_ab_epilogue: per-value puts (BF16 kernel"), std::string::npos) << ex_bf16;
  // expert biases (b2 added by the combine, session 55): auto from 64 expected rows per expert
  // (session 56: gptoss-tp1 faster on CUTLASS at 2048-16384 tokens, slower at 1024), saying why;
  // forced at any size
  fm::MoeProblem g = fm::find_preset("gptoss-tp1")->problem;  // E 128, k 4
  g.num_tokens = g.max_tokens = 1024;                         // 32 rows per expert
  const fm::detail::Decision da = fm::detail::decide(g, {}, true);
  EXPECT_EQ(da.chosen, fm::Backend::kGrouped);
  EXPECT_NE(da.reason.find("with expert biases the CUTLASS path (b2 added by the combine) takes over from 64"),
            std::string::npos) << da.reason;
  EXPECT_EQ(fm::detail::decide(g, {}, false).chosen, fm::Backend::kGrouped);
  for (int64_t t : {2048, 4096, 16384}) {
    fm::MoeProblem h = g;
    h.num_tokens = h.max_tokens = t;
    const fm::detail::Decision dh = fm::detail::decide(h, {}, true);
    EXPECT_EQ(dh.chosen, fm::Backend::kCutlassGrouped) << t;
    EXPECT_NE(dh.reason.find(">= 64 (expert biases: b2 added by the combine)"), std::string::npos) << dh.reason;
    EXPECT_EQ(fm::detail::decide(h, {}, false).chosen, fm::Backend::kCutlassGrouped) << t;
    const std::string ex = fm::explain(h);
    EXPECT_NE(ex.find("(GEMM2), combine (+ b2, each slot's expert bias)"), std::string::npos) << t;
    // interleaved gate / up over 2N = 5760 (>= 16 tiles of 256, the last half empty): the activation
    // in GEMM1's epilogue below 128 rows per expert (session 56 call 3: faster at 64, level at 128,
    // slower at 512), else the separate pass
    const bool fused = t < 4096;
    EXPECT_EQ(ex.find("fused_activation: auto, on (interleaved gate / up") != std::string::npos, fused) << ex;
    EXPECT_EQ(ex.find("cutlass_sm90_bf16_grouped_gemm1_act_coop_128x256x64 (GEMM1") != std::string::npos, fused) << ex;
    EXPECT_EQ(ex.find("(GEMM1), grouped_activation") != std::string::npos, !fused) << ex;
    fm::ForwardOptions act_off, act_on;
    act_off.fused_activation = fm::Toggle::kOff;
    act_on.fused_activation = fm::Toggle::kOn;
    EXPECT_NE(fm::explain(h, act_off).find("(GEMM1), grouped_activation"), std::string::npos);
    EXPECT_NE(fm::explain(h, act_on).find("cutlass_sm90_bf16_grouped_gemm1_act_coop_128x256x64 (GEMM1"), std::string::npos);
    fm::ForwardOptions tiles;  // a grouped-backend switch keeps it there
    tiles.tiles = fm::TileFamily::kNormal;
    EXPECT_EQ(fm::detail::decide(h, tiles, true).chosen, fm::Backend::kGrouped) << t;
  }
  const fm::detail::Decision dg = fm::detail::decide(g, forced, true);
  EXPECT_EQ(dg.chosen, fm::Backend::kCutlassGrouped) << dg.status.message();
  EXPECT_EQ(fm::detail::decide(g, forced, false).chosen, fm::Backend::kCutlassGrouped);
}
#endif

// The CUTLASS path's GEMM1 rows share the expert-output region; groups padded to 8 rows (not the
// tallest tile's 128) keep the workspace close to what the grouped backend alone needs.
TEST(Workspace, CutlassRowsDoNotInflateSmallBatchWorkspaces) {
  fm::MoeProblem p = fm::find_preset("qwen3next-tp1")->problem;  // E 512 + shared, N 512, K 2048
  p.quant = fm::QuantScheme::bf16();
  p.num_tokens = p.max_tokens = 256;
  size_t bytes = 0;
  ASSERT_TRUE(fm::workspace_size(p, &bytes).ok());
  const size_t rows = 256 * static_cast<size_t>(p.slots_per_token());
  const size_t groups = static_cast<size_t>(p.weight_experts());
  // the grouped backend's regions: permuted x and H padded to 128 rows per group, Y unpadded
  const size_t pad128 = rows + std::min(rows, groups) * 127;
  const size_t grouped = pad128 * (p.hidden + p.intermediate) * 2 + rows * p.hidden * 2;
  EXPECT_LT(bytes, grouped + grouped / 4) << "workspace " << bytes << " vs ~" << grouped;
}

#if defined(FUSEDMOE_WITH_CUDA)
// ForwardOptions::pingpong_gemm2 on the CUTLASS backend pads each expert's rows to 128, so GEMM1's
// pre-activation rows must fit the expert-output region, which is sized for 8-row padding: where
// they do not, explain() says the switch is not applied there (forward() does the same).
TEST(Explain, PingPongGemm2OnTheCutlassBackendOnlyWhereTheWorkspaceHoldsIt) {
  fm::ForwardOptions o;
  o.backend = fm::Backend::kCutlassGrouped;
  o.pingpong_gemm2 = fm::Toggle::kOn;
  fm::MoeProblem q = fm::find_preset("qwen235-tp8")->problem;  // K 4096 against 2N 384: fits
  q.num_tokens = q.max_tokens = 1024;
  EXPECT_TRUE(fm::detail::WorkspaceLayout::plan(q).holds_cutlass_rows(q, 128));
  EXPECT_NE(fm::explain(q, o).find("GEMM2 on the grouped backend's ping-pong tiles"), std::string::npos)
      << fm::explain(q, o);
  fm::MoeProblem n = fm::find_preset("qwen3next-tp1")->problem;  // E 512 + shared, 2N 1024 against K 2048
  n.quant = fm::QuantScheme::bf16();
  n.num_tokens = n.max_tokens = 256;
  const fm::detail::WorkspaceLayout wn = fm::detail::WorkspaceLayout::plan(n);
  EXPECT_TRUE(wn.holds_cutlass_rows(n, 8));
  EXPECT_FALSE(wn.holds_cutlass_rows(n, 128));
  EXPECT_NE(fm::explain(n, o).find("pingpong_gemm2: not applied on this backend"), std::string::npos)
      << fm::explain(n, o);
  EXPECT_EQ(fm::explain(n, o).find("s4_pingpong"), std::string::npos) << fm::explain(n, o);
  // the grouped backend's normal tiles: the ping-pong GEMM2 by its instance name, wherever it fits
  fm::ForwardOptions g;
  g.tiles = fm::TileFamily::kNormal;
  g.tokens_tile = 128;
  g.pingpong_gemm2 = fm::Toggle::kOn;
  EXPECT_NE(fm::explain(n, g).find("sm90_bf16_grouped_gemm2_128x128x64_s4_pingpong"), std::string::npos)
      << fm::explain(n, g);
  g.pingpong_gemm2 = fm::Toggle::kOff;
  EXPECT_EQ(fm::explain(n, g).find("s4_pingpong"), std::string::npos) << fm::explain(n, g);
}
#endif

namespace {
// A preset in BF16 at t tokens.
fm::MoeProblem bf16(const char* name, int64_t t) {
  fm::MoeProblem p = fm::find_preset(name)->problem;
  p.quant = fm::QuantScheme::bf16();
  p.num_tokens = p.max_tokens = t;
  return p;
}
}  // namespace

// The balanced GEMM2 schedule. BF16 (dynamic): rows (T x slots) above a quarter of the experts, up
// to 256 tokens. FP8 (static ranges): off unless forced (session 37).
TEST(Oracle, BalancedGemm2AutoRule) {
  const fm::ForwardOptions o;
  EXPECT_FALSE(fm::resolve_options(bf16("qwen235-tp8", 1), o).balanced_gemm2);   // 8 rows, 128 experts
  EXPECT_FALSE(fm::resolve_options(bf16("qwen235-tp8", 4), o).balanced_gemm2);   // 32 = E / 4
  EXPECT_TRUE(fm::resolve_options(bf16("qwen235-tp8", 5), o).balanced_gemm2);    // 40
  EXPECT_TRUE(fm::resolve_options(bf16("qwen235-tp8", 16), o).balanced_gemm2);   // 128
  EXPECT_TRUE(fm::resolve_options(bf16("qwen235-tp8", 17), o).balanced_gemm2);   // 136 > E: still (dynamic)
  EXPECT_TRUE(fm::resolve_options(bf16("dsv3-tp8", 64), o).balanced_gemm2);
  EXPECT_TRUE(fm::resolve_options(bf16("dsv3-tp8", 256), o).balanced_gemm2);
  EXPECT_FALSE(fm::resolve_options(bf16("dsv3-tp8", 257), o).balanced_gemm2);   // past the measured range
  EXPECT_NE(fm::resolve_options(bf16("dsv3-tp8", 64), o).why.find("balanced_gemm2: on (auto: requested, dynamic"),
            std::string::npos);
  fm::ForwardOptions on;
  on.balanced_gemm2 = fm::Toggle::kOn;
  EXPECT_TRUE(fm::resolve_options(bf16("dsv3-tp8", 1024), on).balanced_gemm2);
  fm::ForwardOptions off;
  off.balanced_gemm2 = fm::Toggle::kOff;
  EXPECT_FALSE(fm::resolve_options(bf16("qwen235-tp8", 16), off).balanced_gemm2);
  fm::MoeProblem q = bf16("qwen235-tp8", 16);
  q.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);
  EXPECT_FALSE(fm::resolve_options(q, o).balanced_gemm2);  // block FP8: the raster (measured)
  EXPECT_TRUE(fm::resolve_options(q, on).balanced_gemm2);
  EXPECT_FALSE(fm::resolve_options(q, off).balanced_gemm2);
  q.num_tokens = q.max_tokens = 64;
  EXPECT_FALSE(fm::resolve_options(q, o).balanced_gemm2);
  EXPECT_TRUE(fm::resolve_options(q, on).balanced_gemm2);
  EXPECT_NE(fm::resolve_options(q, o).why.find("balanced_gemm2: off (auto: off (FP8: the raster measured faster"),
            std::string::npos);
}

// The expected rows of this rank (uniform routing) that FP8 GEMM1's one-wave rule and the tile hint
// read: expert parallelism counts only its local experts' share, a shared expert adds every token.
TEST(Oracle, ExpectedLocalRows) {
  EXPECT_DOUBLE_EQ(fm::detail::expected_local_rows(bf16("dsv3-tp8", 128)), 1024.0);    // 128 x 8
  EXPECT_DOUBLE_EQ(fm::detail::expected_local_rows(bf16("dsv3-ep8", 256)), 256.0);     // 256 x 8 x 32 / 256
  EXPECT_DOUBLE_EQ(fm::detail::expected_local_rows(bf16("qwen235-tp8", 3)), 24.0);
  fm::MoeProblem s = bf16("dsv3-tp8", 16);
  s.num_shared_experts = 1;
  EXPECT_DOUBLE_EQ(fm::detail::expected_local_rows(s), 16.0 * 8 + 16);
  EXPECT_EQ(fm::detail::expected_rows_per_group(s), (16 * 8 + 16) / 257);
  EXPECT_EQ(fm::detail::expected_rows_per_group(bf16("dsv3-ep8", 256)), 8);
}

// The balanced FP8 GEMM1 schedule (ForwardOptions::balanced_gemm1): auto off (measured slower,
// session 26), forced on for FP8 weights only; forcing it keeps the grouped backend.
TEST(Oracle, BalancedGemm1Switch) {
  const fm::ForwardOptions o;
  fm::ForwardOptions on;
  on.balanced_gemm1 = fm::Toggle::kOn;
  fm::MoeProblem q = bf16("dsv3-tp8", 256);
  q.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);
  EXPECT_FALSE(fm::resolve_options(q, o).balanced_gemm1);
  EXPECT_TRUE(fm::resolve_options(q, on).balanced_gemm1);
  EXPECT_NE(fm::resolve_options(q, o).why.find("balanced_gemm1: off (auto: off"), std::string::npos);
  EXPECT_FALSE(fm::resolve_options(bf16("dsv3-tp8", 256), on).balanced_gemm1);  // BF16 weights: not applied
#if defined(FUSEDMOE_WITH_CUDA)
  q.num_tokens = q.max_tokens = 4096;  // prefill: the CUTLASS backend unless a grouped switch is forced
  EXPECT_EQ(fm::detail::decide(q, o, true).chosen, fm::Backend::kCutlassGrouped);
  EXPECT_EQ(fm::detail::decide(q, on, true).chosen, fm::Backend::kGrouped);
#endif
}

// ForwardOptions::dense_swapab: auto leaves it to the launchers' rules (0); forced either way;
// forcing it keeps the grouped backend.
TEST(Oracle, DenseSwapAbSwitch) {
  const fm::ForwardOptions o;
  fm::ForwardOptions on, off;
  on.dense_swapab = fm::Toggle::kOn;
  off.dense_swapab = fm::Toggle::kOff;
  fm::MoeProblem q = bf16("dsv3-tp8", 256);
  q.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);
  EXPECT_EQ(fm::resolve_options(q, o).dense_swapab, 0);
  EXPECT_EQ(fm::resolve_options(q, on).dense_swapab, 1);
  EXPECT_EQ(fm::resolve_options(q, off).dense_swapab, -1);
  EXPECT_NE(fm::resolve_options(q, o).why.find("dense_swapab: rule"), std::string::npos);
  EXPECT_EQ(fm::resolve_options(bf16("dsv3-tp8", 256), o).dense_swapab, 0);
  EXPECT_EQ(fm::resolve_options(bf16("dsv3-tp8", 256), on).dense_swapab, 1);
  // GEMM1's own switch: auto follows dense_swapab; forced, it wins for GEMM1 and explain() says so
  EXPECT_EQ(fm::resolve_options(q, on).gemm1_dense_swapab, 1);
  EXPECT_EQ(fm::resolve_options(q, o).gemm1_dense_swapab, 0);
  fm::ForwardOptions g1 = off;
  g1.gemm1_dense_swapab = fm::Toggle::kOn;
  EXPECT_EQ(fm::resolve_options(q, g1).gemm1_dense_swapab, 1);
  EXPECT_EQ(fm::resolve_options(q, g1).dense_swapab, -1);
  EXPECT_NE(fm::resolve_options(q, g1).why.find("gemm1_dense_swapab: on (forced"), std::string::npos);
#if defined(FUSEDMOE_WITH_CUDA)
  q.num_tokens = q.max_tokens = 4096;
  EXPECT_EQ(fm::detail::decide(q, o, true).chosen, fm::Backend::kCutlassGrouped);
  EXPECT_EQ(fm::detail::decide(q, on, true).chosen, fm::Backend::kGrouped);
  EXPECT_NE(fm::detail::decide(q, on, true).reason.find("dense_swapab"), std::string::npos);  // (says which switch)
#endif
}

// ForwardOptions::gather_rows' auto rule (moe.cpp resolve): on at decode from a logits router with
// <= 400 MB of touched expert weights, or for experts of <= 6 MB; for quantised activations only
// row-scaled FP8 from logits up to 128 tokens; a forced value wins where gathering applies.
// ForwardOptions::cutlass_gemm2 (auto off, measured slower: session 22): forced on where the CUTLASS
// backend runs a BF16 layer, GEMM1 on the grouped backend's normal tiles with gathered rows, GEMM2 on
// CUTLASS; explain() names both kernels; not applicable to FP8 or weights on the input.
TEST(Oracle, CutlassGemm2Switch) {
  fm::MoeProblem p = fm::find_preset("qwen235-tp8")->problem;
  p.quant = fm::QuantScheme::bf16();
  p.num_tokens = p.max_tokens = 16384;
  EXPECT_FALSE(fm::resolve_options(p, {}).cutlass_gemm2);
  fm::ForwardOptions on;
  on.cutlass_gemm2 = fm::Toggle::kOn;
  EXPECT_TRUE(fm::resolve_options(p, on).cutlass_gemm2);
#if defined(FUSEDMOE_WITH_CUDA)
  EXPECT_EQ(fm::detail::decide(p, on, true).chosen, fm::Backend::kCutlassGrouped);  // (the backend stays)
  const std::string ex = fm::explain(p, on);
  EXPECT_NE(ex.find("GEMM1 on the grouped backend, GEMM2 on CUTLASS"), std::string::npos) << ex;
  EXPECT_NE(ex.find("(no permute)"), std::string::npos) << ex;
  EXPECT_NE(ex.find("cutlass_sm90_bf16_grouped_gemm_coop_128x256x64 (GEMM2)"), std::string::npos) << ex;
  EXPECT_EQ(fm::explain(p).find("GEMM2 on CUTLASS"), std::string::npos);
#endif
  fm::MoeProblem f = p;
  f.quant = fm::QuantScheme::fp8_per_channel();
  EXPECT_FALSE(fm::resolve_options(f, on).cutlass_gemm2);
  EXPECT_NE(fm::resolve_options(f, on).why.find("not applicable: BF16 x and weights"), std::string::npos);
  fm::MoeProblem l4 = fm::find_preset("llama4-scout")->problem;  // weight on input
  l4.num_tokens = l4.max_tokens = 4096;
  EXPECT_FALSE(fm::resolve_options(l4, on).cutlass_gemm2);
}

// ForwardOptions::weights_evict_first's auto rule (oracle weights_stream_once, moe.cpp resolve): on up
// to 256 tokens where the auto token tile holds the tile rule's headroom times the expected rows per
// expert (each expert's weights stream once; the headroom is 2 except BF16 behind a correction-bias
// router from 4 expected rows up, 8, session 53; session 24 had measured evict_first slower on
// dsv3-tp8 BF16 at 256 tokens with 8x and skewed loads), off for FP8 with <= 40 MB of touched weights
// (call 4) and at prefill. Forced values win.
TEST(Oracle, WeightsEvictFirstAutoRule) {
  const fm::ForwardOptions o;
#if defined(FUSEDMOE_WITH_CUDA)
  for (int64_t t : {1, 16, 64, 256}) {
    EXPECT_TRUE(fm::resolve_options(bf16("qwen235-tp8", t), o).weights_evict_first) << t;  // measured at 16, 256
    EXPECT_TRUE(fm::resolve_options(bf16("mixtral-tp2", t), o).weights_evict_first) << t;  // measured at 16, 256
  }
  EXPECT_TRUE(fm::resolve_options(bf16("dsv3-tp8", 16), o).weights_evict_first);   // tile 8, 0.5 rows x 2
  EXPECT_TRUE(fm::resolve_options(bf16("dsv3-tp8", 128), o).weights_evict_first);  // tile 32, 4 rows x 8
  EXPECT_FALSE(fm::resolve_options(bf16("dsv3-tp8", 256), o).weights_evict_first);  // tile 32 < 8 rows x 8
  fm::MoeProblem b = fm::find_preset("dsv3-tp8")->problem;  // FP8 blocks: headroom 2
  b.num_tokens = b.max_tokens = 256;
  EXPECT_TRUE(fm::resolve_options(b, o).weights_evict_first);  // tile 16 for 8 rows
  EXPECT_NE(fm::resolve_options(b, o).why.find("weights_evict_first: on (auto: each expert's weights stream once"),
            std::string::npos);
  // FP8 with <= 40 MB of touched weights: off (qwen235-tp8 at 1-2 tokens: 8 / 16 x 2.36 MB; dsv4f-tp4
  // and qwen235-tp4 at 1 token: 37.7 MB); dsv3-tp8's 8 x 5.5 MB at 1 token: on.
  fm::MoeProblem q8 = bf16("qwen235-tp8", 2);
  q8.quant = fm::QuantScheme::fp8_per_channel();
  EXPECT_FALSE(fm::resolve_options(q8, o).weights_evict_first);
  EXPECT_NE(fm::resolve_options(q8, o).why.find("weights_evict_first: off (auto: off (FP8 with <= 40 MB"),
            std::string::npos);
  q8.num_tokens = q8.max_tokens = 4;
  EXPECT_TRUE(fm::resolve_options(q8, o).weights_evict_first);
  for (const char* name : {"dsv4f-tp4", "qwen235-tp4"}) {
    fm::MoeProblem f = fm::find_preset(name)->problem;  // FP8 128x128 blocks
    f.num_tokens = f.max_tokens = 1;
    EXPECT_FALSE(fm::resolve_options(f, o).weights_evict_first) << name;
    f.num_tokens = f.max_tokens = 2;
    EXPECT_TRUE(fm::resolve_options(f, o).weights_evict_first) << name;
  }
  b.num_tokens = b.max_tokens = 1;
  EXPECT_TRUE(fm::resolve_options(b, o).weights_evict_first);
#endif
  EXPECT_FALSE(fm::resolve_options(bf16("qwen235-tp8", 512), o).weights_evict_first);  // > 256 tokens
  EXPECT_FALSE(fm::resolve_options(bf16("mixtral-tp2", 4096), o).weights_evict_first);
  fm::ForwardOptions on, off;
  on.weights_evict_first = fm::Toggle::kOn;
  off.weights_evict_first = fm::Toggle::kOff;
  EXPECT_TRUE(fm::resolve_options(bf16("mixtral-tp2", 4096), on).weights_evict_first);
  EXPECT_FALSE(fm::resolve_options(bf16("qwen235-tp8", 16), off).weights_evict_first);
}

TEST(Oracle, GatherRowsAutoRule) {
  const fm::ForwardOptions o;
  EXPECT_TRUE(fm::resolve_options(bf16("qwen30-tp1", 1), o).gather_rows);    // 8 x 9.4 MB
  EXPECT_TRUE(fm::resolve_options(bf16("qwen30-tp1", 4), o).gather_rows);    // 32 x 9.4 MB
  EXPECT_FALSE(fm::resolve_options(bf16("qwen30-tp1", 16), o).gather_rows);  // 128 x 9.4 MB
  EXPECT_TRUE(fm::resolve_options(bf16("gptoss-tp1", 1), o).gather_rows);    // 4 x 50 MB
  EXPECT_FALSE(fm::resolve_options(bf16("gptoss-tp1", 4), o).gather_rows);   // 16 x 50 MB
  EXPECT_TRUE(fm::resolve_options(bf16("qwen235-tp8", 256), o).gather_rows);  // 4.7 MB experts
  EXPECT_FALSE(fm::resolve_options(bf16("qwen235-tp8", 300), o).gather_rows);
  fm::MoeProblem pre = bf16("qwen30-tp1", 1);
  pre.router = fm::RouterConfig::precomputed(pre.router.top_k);
  EXPECT_TRUE(fm::resolve_options(pre, o).gather_rows);  // up to 16 tokens in the fused front too
  pre.num_tokens = pre.max_tokens = 4;
  EXPECT_TRUE(fm::resolve_options(pre, o).gather_rows);
  pre = bf16("qwen235-tp8", 16);
  pre.router = fm::RouterConfig::precomputed(pre.router.top_k);
  EXPECT_TRUE(fm::resolve_options(pre, o).gather_rows);   // small experts, any router
  fm::MoeProblem q = bf16("qwen235-tp8", 1);
  q.quant = fm::QuantScheme::fp8_per_channel();
  // Row-scaled FP8 from logits up to 128 tokens (session 54): the fused front quantises x in token
  // order and GEMM1 gathers its e4m3 rows.
  for (int64_t t : {1, 4, 16, 17, 64, 128}) {
    fm::MoeProblem r = q;
    r.num_tokens = r.max_tokens = t;
    EXPECT_TRUE(fm::resolve_options(r, o).gather_rows) << t;
    EXPECT_TRUE(fm::resolve_options(r, o).fuse_front) << t;
    r.quant = fm::QuantScheme::fp8_per_tensor(false);  // static per-tensor x: also row-scaled
    EXPECT_TRUE(fm::resolve_options(r, o).gather_rows) << t;
    EXPECT_TRUE(fm::resolve_options(r, o).fuse_front) << t;
  }
  EXPECT_NE(fm::resolve_options(q, o).why.find("gather_rows: on (auto: row-scaled FP8"), std::string::npos);
  // from precomputed ids too (session 56 up to 16 tokens, session 57 up to 128: the fused front
  // takes them up to 256 tokens)
  for (int64_t t : {1, 4, 16, 17, 64, 128, 256}) {
    fm::MoeProblem r = q;
    r.router = fm::RouterConfig::precomputed(r.router.top_k);
    r.num_tokens = r.max_tokens = t;
    EXPECT_EQ(fm::resolve_options(r, o).gather_rows, t <= 128) << t;
    EXPECT_TRUE(fm::resolve_options(r, o).fuse_front) << t;
    r.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);  // block scales: the permute
    EXPECT_FALSE(fm::resolve_options(r, o).gather_rows) << t;
  }
  // and GEMM2's static balanced ranges requested from rows above 3/4 of the experts (the kernel's
  // rule decides where they run)
  EXPECT_FALSE(fm::resolve_options(q, o).balanced_gemm2);  // 1 token
  for (int64_t t : {8, 12, 13, 16}) {
    fm::MoeProblem r = q;
    r.num_tokens = r.max_tokens = t;
    EXPECT_EQ(fm::resolve_options(r, o).balanced_gemm2, t >= 13) << t;  // 8 x t rows, 128 experts
  }
  {
    fm::MoeProblem b = q;
    b.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);
    EXPECT_FALSE(fm::resolve_options(b, o).balanced_gemm2);
    fm::ForwardOptions g_off;
    g_off.gather_rows = fm::Toggle::kOff;
    fm::MoeProblem r = q;
    r.num_tokens = r.max_tokens = 16;
    EXPECT_TRUE(fm::resolve_options(r, o).balanced_gemm2);
    EXPECT_FALSE(fm::resolve_options(r, g_off).balanced_gemm2);  // measured with gathered rows only
  }
  {
    fm::MoeProblem r = q;
    r.num_tokens = r.max_tokens = 256;  // 2 % slower in session 47
    EXPECT_FALSE(fm::resolve_options(r, o).gather_rows);
    r.num_tokens = r.max_tokens = 16;
    r.quant = fm::QuantScheme::fp8_per_tensor(true);  // dynamic per-tensor x: a pass over x first
    EXPECT_FALSE(fm::resolve_options(r, o).gather_rows);
    EXPECT_FALSE(fm::resolve_options(r, o).fuse_front);
    r.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);  // block scales: the permute
    EXPECT_FALSE(fm::resolve_options(r, o).gather_rows);
    EXPECT_FALSE(fm::resolve_options(r, o).fuse_front);
    EXPECT_NE(fm::resolve_options(r, o).why.find("gather_rows: off (auto: off for this FP8 layer"), std::string::npos);
    r.quant = fm::QuantScheme::fp8_per_channel();
    fm::ForwardOptions separate;
    separate.fuse_front = fm::Toggle::kOff;  // gathered e4m3 rows only behind the fused front
    EXPECT_FALSE(fm::resolve_options(r, separate).gather_rows);
  }
  {
    fm::ForwardOptions g_on;
    g_on.gather_rows = fm::Toggle::kOn;
    EXPECT_TRUE(fm::resolve_options(q, g_on).gather_rows);  // e4m3 x in token order, gathered by GEMM1
    fm::MoeProblem b = q;
    b.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0);
    EXPECT_TRUE(fm::resolve_options(b, g_on).gather_rows);
    b.router.weight_on_input = true;  // routed and shared rows would differ: not applicable
    EXPECT_FALSE(fm::resolve_options(b, g_on).gather_rows);
  }
  // The fused front: on, except quantised x up to 16 tokens (GEMM1's early weights; session 36)
  // where GEMM1 does not gather (row-scaled FP8, above: from logits, or precomputed ids since
  // session 56).
  EXPECT_TRUE(fm::resolve_options(q, o).fuse_front);
  EXPECT_TRUE(fm::resolve_options(pre, o).fuse_front);
  q.router = fm::RouterConfig::precomputed(q.router.top_k);
  EXPECT_TRUE(fm::resolve_options(q, o).fuse_front);
  EXPECT_TRUE(fm::resolve_options(q, o).gather_rows);
  q.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);  // block scales: no gather
  EXPECT_FALSE(fm::resolve_options(q, o).fuse_front);
  EXPECT_FALSE(fm::resolve_options(q, o).gather_rows);
  q.num_tokens = q.max_tokens = 16;
  EXPECT_FALSE(fm::resolve_options(q, o).fuse_front);
  q.num_tokens = q.max_tokens = 17;
  EXPECT_TRUE(fm::resolve_options(q, o).fuse_front);
  q.num_tokens = q.max_tokens = 64;
  EXPECT_TRUE(fm::resolve_options(q, o).fuse_front);
  q.num_tokens = q.max_tokens = 256;  // precomputed ids: the fused front up to 256 tokens (session 57)
  EXPECT_TRUE(fm::resolve_options(q, o).fuse_front);
  q.num_tokens = q.max_tokens = 257;  // above: the separate kernels
  EXPECT_FALSE(fm::resolve_options(q, o).fuse_front);
  EXPECT_NE(fm::resolve_options(q, o).why.find("precomputed ids above 256 tokens"), std::string::npos);
  q.num_tokens = q.max_tokens = 64;
  fm::ForwardOptions fused;
  fused.fuse_front = fm::Toggle::kOn;
  EXPECT_TRUE(fm::resolve_options(q, fused).fuse_front);
  // H quantised in GEMM1 (session 36): auto on with static per-tensor scales only; forced on for
  // per-token / 1x128 scales; never with dynamic per-tensor scales (all of H first) or BF16
  {
    fm::ForwardOptions hq_on;
    hq_on.fused_h_quant = fm::Toggle::kOn;
    fm::MoeProblem h = bf16("qwen235-tp8", 16);
    EXPECT_FALSE(fm::resolve_options(h, hq_on).fused_h_quant);
    h.quant = fm::QuantScheme::fp8_per_tensor(false);
    EXPECT_TRUE(fm::resolve_options(h, o).fused_h_quant);
    h.quant = fm::QuantScheme::fp8_per_channel();
    EXPECT_FALSE(fm::resolve_options(h, o).fused_h_quant);
    EXPECT_TRUE(fm::resolve_options(h, hq_on).fused_h_quant);
    h.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0);
    EXPECT_FALSE(fm::resolve_options(h, hq_on).fused_h_quant);  // N = 192: no whole 1x128 groups
    h.intermediate = 256;
    EXPECT_FALSE(fm::resolve_options(h, o).fused_h_quant);
    EXPECT_TRUE(fm::resolve_options(h, hq_on).fused_h_quant);
    h.quant = fm::QuantScheme::fp8_per_tensor(true);
    EXPECT_FALSE(fm::resolve_options(h, hq_on).fused_h_quant);
  }
  // H quantised by GEMM2 (session 40): auto on up to 256 tokens with per token / 1x128 scales (512
  // with 1x128, session 41) and N <= 512, not with H quantised in GEMM1, not BF16 or per-tensor scales
  {
    fm::ForwardOptions hs_on, both;
    hs_on.gemm2_quantises_h = fm::Toggle::kOn;
    both.gemm2_quantises_h = fm::Toggle::kOn;
    both.fused_h_quant = fm::Toggle::kOn;
    fm::MoeProblem h = bf16("qwen235-tp8", 16);
    EXPECT_FALSE(fm::resolve_options(h, hs_on).gemm2_quantises_h);
    h.quant = fm::QuantScheme::fp8_per_channel();
    EXPECT_TRUE(fm::resolve_options(h, hs_on).gemm2_quantises_h);
    EXPECT_TRUE(fm::resolve_options(h, o).gemm2_quantises_h);  // auto: on at 16 tokens
    fm::MoeProblem big = h;
    big.num_tokens = big.max_tokens = 512;
    EXPECT_FALSE(fm::resolve_options(big, o).gemm2_quantises_h);  // auto: per token, not above 256
    EXPECT_TRUE(fm::resolve_options(big, hs_on).gemm2_quantises_h);
    {
      fm::MoeProblem b128 = big;  // 1x128 scales: auto up to 512 tokens
      b128.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);
      b128.intermediate = 256;
      EXPECT_TRUE(fm::resolve_options(b128, o).gemm2_quantises_h);
      b128.num_tokens = b128.max_tokens = 513;
      EXPECT_FALSE(fm::resolve_options(b128, o).gemm2_quantises_h);
    }
    EXPECT_FALSE(fm::resolve_options(h, both).gemm2_quantises_h);  // (GEMM1 quantises it)
    h.quant = fm::QuantScheme::fp8_per_tensor(false);
    EXPECT_FALSE(fm::resolve_options(h, hs_on).gemm2_quantises_h);
    h.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0);
    EXPECT_FALSE(fm::resolve_options(h, hs_on).gemm2_quantises_h);  // N = 192: no whole 1x128 groups
    h.intermediate = 512;
    EXPECT_TRUE(fm::resolve_options(h, hs_on).gemm2_quantises_h);
    h.intermediate = 640;  // 5 K blocks
    EXPECT_FALSE(fm::resolve_options(h, hs_on).gemm2_quantises_h);
  }
  // Gathered rows count on the fused front: forced off, precomputed qwen30 (9.4 MB experts) permutes.
  fm::ForwardOptions separate;
  separate.fuse_front = fm::Toggle::kOff;
  fm::MoeProblem pre1 = bf16("qwen30-tp1", 1);
  pre1.router = fm::RouterConfig::precomputed(pre1.router.top_k);
  EXPECT_TRUE(fm::resolve_options(pre1, o).gather_rows);
  EXPECT_FALSE(fm::resolve_options(pre1, separate).gather_rows);
  fm::ForwardOptions off;
  off.gather_rows = fm::Toggle::kOff;
  EXPECT_FALSE(fm::resolve_options(bf16("qwen30-tp1", 1), off).gather_rows);
  EXPECT_NE(fm::resolve_options(bf16("qwen30-tp1", 1), o).why.find("gather_rows: on"), std::string::npos);
}

#if defined(FUSEDMOE_WITH_CUDA)
// The Swap-AB token tile (kernels::choose_tokens_tile, session 23): the smallest of 8/16/32 holding
// 2x the expected rows per expert, 8x for BF16 behind a correction-bias router from 4 expected rows
// up (session 53; oracle tile_headroom); explain() says it.
TEST(Oracle, SwapAbTokenTileRule) {
  auto tile = [](const fm::MoeProblem& p) {
    const fm::detail::Decision d = fm::detail::decide(p, {}, false);
    return d.family == fm::TileFamily::kSwapAB ? d.tokens_tile : -d.tokens_tile;
  };
  for (auto [t, want] : {std::pair{64, 8}, {128, 16}, {256, 32}}) EXPECT_EQ(tile(bf16("qwen235-tp8", t)), want) << t;
  for (auto [t, want] : {std::pair{1, 8}, {16, 8}, {64, 8}, {128, 32}, {256, 32}})
    EXPECT_EQ(tile(bf16("dsv3-tp8", t)), want) << t;
  EXPECT_EQ(tile(bf16("dsv4f-tp4", 128)), 8);  // 3 rows: 2x
  EXPECT_EQ(tile(bf16("dsv4f-tp4", 256)), 32);  // 6 rows: 8x
  fm::MoeProblem fp8 = fm::find_preset("dsv3-tp8")->problem;  // FP8 128x128 blocks: 2x
  ASSERT_EQ(fp8.quant.weight.format, fm::WeightFormat::kFP8E4M3);
  fp8.num_tokens = fp8.max_tokens = 256;
  EXPECT_EQ(tile(fp8), 16);
  fm::MoeProblem pre = bf16("dsv3-tp8", 256);  // precomputed ids: no bias, 2x
  pre.router = fm::RouterConfig::precomputed(pre.router.top_k);
  EXPECT_EQ(tile(pre), 16);
  EXPECT_NE(fm::explain(bf16("dsv3-tp8", 256)).find("8x the expected rows (BF16 behind a correction-bias router"),
            std::string::npos);
  EXPECT_NE(fm::explain(bf16("dsv3-tp8", 64)).find("2x the expected rows"), std::string::npos);
  EXPECT_NE(fm::explain(bf16("qwen235-tp8", 256)).find("2x the expected rows"), std::string::npos);
}
#endif

#if defined(FUSEDMOE_WITH_CUDA)
// MoeProblem::expected_local_slots (session 55): an expert-parallel rank whose tokens route to its
// own experts (all-to-all dispatch; vLLM's dsv3-ep8 figure is that layer as E32 top-8) expects
// T * hint / local rows per expert, not T * k / E: the token tile, the CUTLASS rule and the expected
// rows follow the hint; 0 keeps the uniform rule; values outside [0, top_k] are refused.
TEST(Oracle, ExpectedLocalSlotsHint) {
  fm::MoeProblem p = fm::find_preset("dsv3-ep8")->problem;  // E 256, 32 local, k 8
  p.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);
  p.num_tokens = p.max_tokens = 64;
  fm::detail::Decision d = fm::detail::decide(p, {}, true);
  EXPECT_EQ(d.family, fm::TileFamily::kSwapAB);
  EXPECT_EQ(d.tokens_tile, 8);  // uniform: 64 * 8 / 256 = 2 rows per expert
  EXPECT_DOUBLE_EQ(fm::detail::expected_local_rows(p), 64.0);
  p.expected_local_slots = 8.f;  // every slot local: 64 * 8 / 32 = 16 rows per expert
  d = fm::detail::decide(p, {}, true);
  EXPECT_EQ(d.family, fm::TileFamily::kSwapAB);
  EXPECT_EQ(d.tokens_tile, 32);
  EXPECT_NE(d.tile_reason.find("T*hint/local = 16 (MoeProblem::expected_local_slots = 8)"), std::string::npos)
      << d.tile_reason;
  EXPECT_EQ(fm::detail::decide(p, {}, false).tokens_tile, 32);
  EXPECT_DOUBLE_EQ(fm::detail::expected_local_rows(p), 512.0);
  EXPECT_EQ(fm::detail::expected_rows_per_group(p), 16);
  // at 1024 tokens the hint's 256 rows per expert take the CUTLASS path (uniform: 32, also CUTLASS);
  // at 256 tokens (64 rows: normal tiles; uniform 8: Swap-AB)
  p.num_tokens = p.max_tokens = 256;
  EXPECT_EQ(fm::detail::decide(p, {}, true).family, fm::TileFamily::kNormal);
  p.expected_local_slots = 0.f;
  EXPECT_EQ(fm::detail::decide(p, {}, true).family, fm::TileFamily::kSwapAB);
  // the hint equal to the uniform value changes nothing
  fm::MoeProblem u = fm::find_preset("qwen235-tp8")->problem;
  u.num_tokens = u.max_tokens = 48;
  const fm::detail::Decision du = fm::detail::decide(u, {}, true);
  u.expected_local_slots = float(u.top_k());  // no expert map: uniform is k
  const fm::detail::Decision dh = fm::detail::decide(u, {}, true);
  EXPECT_EQ(dh.family, du.family);
  EXPECT_EQ(dh.tokens_tile, du.tokens_tile);
  // refused outside [0, top_k]
  for (const float bad : {-1.f, 9.f, std::nanf("")}) {
    p.expected_local_slots = bad;
    const fm::Status st = fm::validate(p);
    EXPECT_EQ(st.code(), fm::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("expected_local_slots"), std::string::npos) << st.message();
  }
}
#endif
