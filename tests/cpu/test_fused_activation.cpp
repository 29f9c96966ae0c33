// ForwardOptions::fused_activation (session 43): the CUTLASS GEMM1 with the activation in its
// epilogue. What can be checked without a GPU: the epilogue's gate / up pairing against CUTLASS's
// own accumulator layout (every consumer thread), the gate / up block order of W1
// (reference::gate_up_blocks8, MoeTensors::w1_gate_up_blocks), the switch's resolution and
// explain(), and the errors of pack_gate_up_blocks() / validate().
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fusedmoe/fusedmoe.h"
#include "fusedmoe/reference.h"
#if defined(FUSEDMOE_WITH_CUDA)
#include "kernels/gemm/cutlass_grouped_gemm.h"
#endif

namespace fm = fusedmoe;

#if defined(FUSEDMOE_WITH_CUDA)
TEST(FusedActivation, EpiloguePairingMatchesCutlassAccumulatorLayout) {
  EXPECT_EQ(fm::kernels::cutlass_gated_layout_check(), "");
}

// CUTLASS's blockwise mainloop loads every activation and weight scale block of a tile, for every
// FP8 blockwise configuration and the FP8 GEMM1 with the activation (one weight scale per 4 rows;
// per 8 rows, blocks 2, 3, 6, 7, ... of each tile would be left out: session 46's review).
TEST(FusedActivation, BlockwiseScalesAllLoaded) { EXPECT_EQ(fm::kernels::cutlass_fp8_scale_load_check(), ""); }
#endif

// Row 16b + q of an expert = gate row 8b + q (q < 8), up row 8b + q - 8 (q >= 8); every row once.
TEST(FusedActivation, GateUpBlocksOfEight) {
  const int64_t experts = 3, n = 24, k = 5;
  std::vector<uint16_t> w(static_cast<size_t>(experts * 2 * n * k)), out(w.size(), 0xffff);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<uint16_t>(i);  // distinct per element
  fm::ref::gate_up_blocks8(w.data(), experts, n, k, out.data());
  for (int64_t e = 0; e < experts; ++e) {
    std::vector<int> used(static_cast<size_t>(2 * n), 0);
    for (int64_t r = 0; r < 2 * n; ++r) {
      const int64_t b = r / 16, q = r % 16;
      const int64_t src = q < 8 ? 8 * b + q : n + 8 * b + q - 8;
      ++used[static_cast<size_t>(src)];
      for (int64_t c = 0; c < k; ++c)
        ASSERT_EQ(out[static_cast<size_t>((e * 2 * n + r) * k + c)], w[static_cast<size_t>((e * 2 * n + src) * k + c)])
            << "expert " << e << " row " << r;
    }
    for (int u : used) EXPECT_EQ(u, 1);
  }
  // The first rows spelled out: gate 0-7, up 0-7, gate 8-15, up 8-15, gate 16-23, up 16-23.
  EXPECT_EQ(out[0], w[0]);
  EXPECT_EQ(out[8 * k], w[n * k]);
  EXPECT_EQ(out[16 * k], w[8 * k]);
  EXPECT_EQ(out[47 * k], w[(n + 23) * k]);
}

namespace {
fm::MoeProblem bf16_prefill(const char* name, int64_t t) {
  fm::MoeProblem p = fm::find_preset(name)->problem;
  p.quant = fm::QuantScheme::bf16();
  p.num_tokens = p.max_tokens = t;
  return p;
}
}  // namespace

// Forced on: BF16 x and weights, not with cutlass_gemm2; explain() names the kernel and says where
// W1 comes from. Auto: resolve() leaves it to forward(), which has the tensors.
TEST(FusedActivation, SwitchResolution) {
  fm::MoeProblem p = bf16_prefill("mixtral-tp2", 16384);
  EXPECT_FALSE(fm::resolve_options(p, {}).fused_activation);
  fm::ForwardOptions on;
  on.fused_activation = fm::Toggle::kOn;
  EXPECT_TRUE(fm::resolve_options(p, on).fused_activation);
  EXPECT_NE(fm::resolve_options(p, on).why.find("w1_gate_up_blocks"), std::string::npos);
  fm::ForwardOptions both = on;
  both.cutlass_gemm2 = fm::Toggle::kOn;
  EXPECT_FALSE(fm::resolve_options(p, both).fused_activation);
  fm::MoeProblem f = p;
  f.quant = fm::QuantScheme::fp8_per_channel();
  EXPECT_FALSE(fm::resolve_options(f, on).fused_activation);
  EXPECT_NE(fm::resolve_options(f, on).why.find(
                "not applicable: BF16 x and weights or FP8 128x128 blocks, and not with cutlass_gemm2"),
            std::string::npos);
  // FP8 128x128 blocks: forced only (auto off until measured), also where cutlass_gemm2 is asked for
  // (that switch is BF16's)
  fm::MoeProblem fb = p;
  fb.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0);
  EXPECT_FALSE(fm::resolve_options(fb, {}).fused_activation);
  EXPECT_TRUE(fm::resolve_options(fb, on).fused_activation);
  EXPECT_NE(fm::resolve_options(fb, {}).why.find("auto: off for FP8 128x128 blocks"), std::string::npos);
#if defined(FUSEDMOE_WITH_CUDA)
  const std::string ex = fm::explain(p, on);
  EXPECT_NE(ex.find(fm::kernels::cutlass_gated_gemm1_name()), std::string::npos) << ex;
  EXPECT_NE(ex.find("over MoeTensors::w1_gate_up_blocks"), std::string::npos) << ex;
  EXPECT_EQ(ex.find("grouped_activation"), std::string::npos) << ex;
  EXPECT_NE(fm::explain(p).find("grouped_activation"), std::string::npos);
  // auto: forward() turns it on when the blocks are given and CUTLASS's GEMM1 runs 128x256 tiles;
  // explain() (no tensors) says so; not where the two-pass GEMM1 runs 256x128 (qwen235-tp8, 2N 384)
  EXPECT_NE(fm::explain(p).find("fused_activation: auto, on when MoeTensors::w1_gate_up_blocks is given"),
            std::string::npos) << fm::explain(p);
  for (int64_t t : {4096, 16384}) {  // 2N = 384: measured slower as a layer
    const fm::MoeProblem q = bf16_prefill("qwen235-tp8", t);
    EXPECT_EQ(fm::explain(q).find("fused_activation: auto"), std::string::npos) << fm::explain(q);
  }
  // interleaved gate / up (GPT-OSS's order) and activations without a gate read w1 as it is
  fm::MoeProblem s = p;
  s.activation = fm::Activation::squared_relu();
  const std::string exs = fm::explain(s, on);
  EXPECT_NE(exs.find(fm::kernels::cutlass_gated_gemm1_name()), std::string::npos) << exs;
  EXPECT_EQ(exs.find("w1_gate_up_blocks"), std::string::npos) << exs;
  // FP8 blocks: the blockwise GEMM1 with the activation, then H quantised as before; not by default
  const std::string exf = fm::explain(fb, on);
  EXPECT_NE(exf.find(std::string(fm::kernels::cutlass_fp8_gated_gemm1_name()) + " (GEMM1 over MoeTensors::w1_gate_up_blocks"),
            std::string::npos) << exf;
  EXPECT_EQ(exf.find("grouped_activation"), std::string::npos) << exf;
  EXPECT_NE(exf.find("quantise the intermediate"), std::string::npos) << exf;
  EXPECT_NE(exf.find("tiles: cutlass fp8 blockwise coop 128x128 + activation + coop 128x128 c1x2"), std::string::npos)
      << exf;
  const std::string exd = fm::explain(fb);
  EXPECT_EQ(exd.find(fm::kernels::cutlass_fp8_gated_gemm1_name()), std::string::npos) << exd;
  EXPECT_NE(exd.find("grouped_activation"), std::string::npos) << exd;
#endif
}

TEST(FusedActivation, PackAndValidateErrors) {
  fm::MoeProblem p = bf16_prefill("qwen235-tp8", 64);
  alignas(16) static uint16_t a[64], b[64];
  // other formats and activations: refused before any device work
  fm::MoeProblem f = p;
  f.quant = fm::QuantScheme::fp8_per_channel();
  EXPECT_EQ(fm::pack_gate_up_blocks(f, a, b, nullptr).code(), fm::StatusCode::kUnsupported);
  // FP8 128x128 blocks are accepted (1-byte rows): the overlap check counts bytes of e4m3
  fm::MoeProblem fb = bf16_prefill("dsv3-tp8", 64);
  fb.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);
  EXPECT_NE(fm::pack_gate_up_blocks(fb, a, b, nullptr).code(), fm::StatusCode::kUnsupported);
  EXPECT_EQ(fm::pack_gate_up_blocks(fb, a, a, nullptr).code(), fm::StatusCode::kInvalidArgument);  // overlap
  fm::MoeProblem i = p;
  i.activation = fm::Activation::swiglu_oai();
  EXPECT_EQ(fm::pack_gate_up_blocks(i, a, b, nullptr).code(), fm::StatusCode::kUnsupported);
  fm::MoeProblem s = p;
  s.activation = fm::Activation::squared_relu();
  EXPECT_EQ(fm::pack_gate_up_blocks(s, a, b, nullptr).code(), fm::StatusCode::kUnsupported);
  // pointers
  EXPECT_EQ(fm::pack_gate_up_blocks(p, nullptr, b, nullptr).code(), fm::StatusCode::kMisaligned);
  EXPECT_EQ(fm::pack_gate_up_blocks(p, a, reinterpret_cast<char*>(b) + 2, nullptr).code(), fm::StatusCode::kMisaligned);
  EXPECT_EQ(fm::pack_gate_up_blocks(p, a, a, nullptr).code(), fm::StatusCode::kInvalidArgument);  // overlap
  // validate(): the blocks only where they mean something
  fm::MoeTensors t;
  t.x = a;
  t.router_logits = a;
  t.w1 = a;
  t.w2 = a;
  t.out = b;
  t.w1_gate_up_blocks = reinterpret_cast<char*>(b) + 8;
  EXPECT_EQ(fm::validate(p, t).code(), fm::StatusCode::kMisaligned);
  t.w1_gate_up_blocks = b;
  EXPECT_EQ(fm::validate(i, t).code(), fm::StatusCode::kUnsupported);
  EXPECT_EQ(fm::validate(f, t).code(), fm::StatusCode::kUnsupported);  // FP8 per channel: no fused GEMM1
}
