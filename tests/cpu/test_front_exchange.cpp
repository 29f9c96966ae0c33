// The fused front's tagged exchange (kernels/front/front_exchange.h): the launch tags and the
// layout of its words, checked on the host (the kernel uses the same functions).
#include <gtest/gtest.h>

#include <cstdint>
#include <unordered_set>

#include "kernels/front/front_exchange.h"

namespace fx = fusedmoe::kernels::front_exchange;

// Consecutive epochs get distinct tags (a stale word of an earlier launch never passes), none of
// them zero.
TEST(FrontExchange, TagsOfConsecutiveEpochsAreDistinctAndNonZero) {
  for (uint64_t start : {uint64_t{0}, uint64_t{1000}, fx::kTagPattern - 4096, ~uint64_t{0} - 4096}) {
    std::unordered_set<uint64_t> seen;
    for (uint64_t i = 0; i < 8192; ++i) {
      const uint64_t c = start + i;  // wraps past 2^64 - 1
      const uint64_t t = fx::tag(c);
      EXPECT_LE(t, fx::kTagMask);
      if ((c & fx::kTagMask) != fx::kTagPattern) {
        EXPECT_NE(t, 0u) << c;
      }
      EXPECT_TRUE(seen.insert(t).second) << "epoch " << c;
    }
  }
  EXPECT_EQ(fx::tag(fx::kTagPattern), 0u);  // the one epoch (mod 2^48) with a zero tag
}

// A workspace left by a memset of byte b (any b) holds the counter b...b and words b...b: their
// tag bits never equal the counter's tag, nor are zeroed words tagged for any such counter, so the
// first call waits for real words.
TEST(FrontExchange, MemsetPatternsNeverPassAsTagged) {
  for (uint64_t b = 0; b < 256; ++b) {
    const uint64_t pattern = b * 0x0101010101010101ull;
    EXPECT_FALSE(fx::tagged(pattern, fx::tag(pattern))) << "byte " << b;
    EXPECT_FALSE(fx::tagged(0, fx::tag(pattern))) << "byte " << b;
    EXPECT_FALSE(fx::tagged(~uint64_t{0}, fx::tag(pattern))) << "byte " << b;
  }
}

TEST(FrontExchange, WordsCarryDataAndTag) {
  const uint64_t t = fx::tag(12345u);
  for (uint32_t d : {0u, 1u, 0xABCDu, 0xFFFFu, 0x1FFFFu}) {
    const uint64_t w = fx::word(t, d);
    EXPECT_TRUE(fx::tagged(w, t));
    EXPECT_FALSE(fx::tagged(w, fx::tag(12346u)));
    EXPECT_EQ(w & 0xFFFFu, d & 0xFFFFu);
  }
}

// Rows: the duplicate flag, two halves per mask word, the "ids written" row; the bytes hold the
// counter's line and every row of every routing block.
TEST(FrontExchange, LayoutHoldsEveryRow) {
  for (int g : {1, 4, 5, 128, 129, 256, 257, 1088}) {
    const int w = fx::mask_words(g);
    EXPECT_EQ(w, (g + 3) / 4);
    EXPECT_EQ(fx::dup_row(), 0);
    EXPECT_EQ(fx::half_row(0, 0), 1);
    EXPECT_EQ(fx::half_row(w - 1, 1), 2 * w);
    EXPECT_EQ(fx::ready_row(g), 2 * w + 1);
    EXPECT_EQ(fx::rows(g), fx::ready_row(g) + 1);
    EXPECT_EQ(fx::bytes(g), fx::kCounterBytes + static_cast<size_t>(fx::rows(g)) * fx::kMaxBlocks * 8);
    EXPECT_GE(fx::workspace_bytes(17), fx::bytes(g));  // every group count's rows above one block
  }
  // The counter's line in every layout, also where the fused front runs one routing block.
  EXPECT_EQ(fx::workspace_bytes(1), fx::kCounterBytes);
  EXPECT_EQ(fx::workspace_bytes(16), fx::kCounterBytes);
  EXPECT_EQ(fx::workspace_bytes(256), fx::bytes(fx::kMaxGroups));
}
