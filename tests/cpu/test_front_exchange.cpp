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
  for (uint32_t start : {0u, 1000u, 0x6A09E000u, 0xFFFFF000u}) {
    std::unordered_set<uint64_t> seen;
    for (uint32_t i = 0; i < 8192; ++i) {
      const uint32_t c = start + i;  // wraps past 2^32 - 1
      const uint64_t t = fx::tag(c);
      EXPECT_LE(t, fx::kTagMask);
      if (c != 0x6A09E667u) {
        EXPECT_NE(t, 0u) << c;
      }
      EXPECT_TRUE(seen.insert(t).second) << "epoch " << c;
    }
  }
  EXPECT_EQ(fx::tag(0x6A09E667u), 0u);  // the one epoch with a zero tag
}

// A workspace left by a memset of byte b (any b) holds the counter b b b b and words b...b: their
// tag bits never equal the counter's tag, so the first call waits for real words.
TEST(FrontExchange, MemsetPatternsNeverPassAsTagged) {
  for (uint32_t b = 0; b < 256; ++b) {
    const uint32_t counter = b * 0x01010101u;
    const uint64_t w = static_cast<uint64_t>(b) * 0x0101010101010101ull;
    EXPECT_FALSE(fx::tagged(w, fx::tag(counter))) << "byte " << b;
    EXPECT_FALSE(fx::tagged(0, fx::tag(counter))) << "byte " << b;  // zeroed words, any counter byte
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
  }
}
