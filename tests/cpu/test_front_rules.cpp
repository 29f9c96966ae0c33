// Host-side launch rules of the fused front (kernels/front/front_launch.h): the shapes that route
// on several blocks at 2-16 tokens, pinned to the points measured in session 49.
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
  // precomputed ids run as one routing block only; above 16 tokens the multi-block rules apply.
  EXPECT_FALSE(fk::front_split_rule(true, true, 256, 16));
  EXPECT_FALSE(fk::front_split_rule(false, true, 256, 17));
}

// The workspace holds the front's block masks from 2 tokens (several blocks may route there).
TEST(FrontRules, ScratchFromTwoTokens) {
  EXPECT_EQ(fk::front_scratch_bytes(1, 256), size_t{0});
  EXPECT_GT(fk::front_scratch_bytes(2, 256), size_t{0});
  EXPECT_EQ(fk::front_scratch_bytes(13, 256), fk::front_scratch_bytes(256, 256));
}

}  // namespace
#endif
