// Host-side launch rules of the fused front (kernels/front/front_launch.h): the shapes that route
// on several blocks at 2-16 tokens, pinned to the points measured in session 49, and the shapes
// the front takes.
#include <gtest/gtest.h>

#if defined(FUSEDMOE_WITH_CUDA)
#include "kernels/front/front_launch.h"

namespace {

namespace fk = fusedmoe::kernels;

TEST(FrontRules, SplitFrontTakesTheMeasuredPoints) {
  // dsv3 + FP8 in token order (E 256, quantising): blocks of 4 at 13-16 tokens (H100, session 49:
  // 7.08-7.68 -> 6.64-6.69 us per call), one block at 12 and below (0.1-0.2 us slower split).
  for (int64_t t = 13; t <= 16; ++t) EXPECT_TRUE(fk::front_split_rule(false, true, 256, t)) << t;
  for (int64_t t = 1; t <= 12; ++t) EXPECT_FALSE(fk::front_split_rule(false, true, 256, t)) << t;
  EXPECT_TRUE(fk::front_split_rule(false, true, 1024, 16));
  // qwen3 (E 128): one block (the split measured 0.2-1.0 us slower at 8-16 tokens).
  EXPECT_FALSE(fk::front_split_rule(false, true, 128, 16));
  // the BF16 front of forward() (no quantisation: dsv3-tp8 layers 3 % slower at 13 tokens split).
  EXPECT_FALSE(fk::front_split_rule(false, false, 256, 16));
  // precomputed ids: one routing block up to 16 tokens (no split); above 16 tokens the
  // multi-block rules apply to every router.
  EXPECT_FALSE(fk::front_split_rule(true, true, 256, 16));
  EXPECT_FALSE(fk::front_split_rule(false, true, 256, 17));
}

// The front's shapes: logits routers and precomputed ids up to 256 tokens (session 57; 16 before),
// never a hash router; tokens x slots within the plan's bound.
TEST(FrontRules, ShapesOfTheFusedFront) {
  using fusedmoe::RouterKind;
  for (int64_t t : {1, 16, 17, 64, 73, 256}) {
    EXPECT_TRUE(fk::front_small_shape_ok(RouterKind::kPrecomputed, t, 8)) << t;
    EXPECT_TRUE(fk::front_small_shape_ok(RouterKind::kBiasedTopK, t, 9)) << t;
    EXPECT_FALSE(fk::front_small_shape_ok(RouterKind::kHash, t, 8)) << t;
  }
  const char* why = nullptr;
  EXPECT_FALSE(fk::front_small_shape_ok(RouterKind::kPrecomputed, 257, 8, &why));
  EXPECT_STREQ(why, "precomputed ids above 256 tokens");
  EXPECT_FALSE(fk::front_small_shape_ok(RouterKind::kSoftmaxTopK, 257, 8));
  EXPECT_FALSE(fk::front_small_shape_ok(RouterKind::kPrecomputed, 0, 8));
  EXPECT_FALSE(fk::front_small_shape_ok(RouterKind::kPrecomputed, 256, 18));  // 256 x 18 entries > 256 x 17
}

// The workspace holds the front's block masks from 2 tokens (several blocks may route there).
TEST(FrontRules, ScratchFromTwoTokens) {
  EXPECT_EQ(fk::front_scratch_bytes(1, 256), size_t{0});
  EXPECT_GT(fk::front_scratch_bytes(2, 256), size_t{0});
  EXPECT_EQ(fk::front_scratch_bytes(13, 256), fk::front_scratch_bytes(256, 256));
}

}  // namespace
#endif
