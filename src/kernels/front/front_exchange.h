// front_exchange.h — the fused front's tagged exchange between its routing blocks (front.cuh, a
// cooperative launch of 73-256 tokens), plain C++ so that the workspace layout and the CPU tests
// share it.
//
// Opt-in (FUSEDMOE_FRONT_TAGGED=1): the grid barrier stays the default until this measures faster.
// Instead of a grid barrier (a release fence, an arrival, a wait, then a load round trip of the
// blocks' masks), each routing block with tokens stores its group masks as 64-bit words that carry
// a launch tag with the data: word = tag(epoch) << 16 | 16 bits of data, stored relaxed at GPU
// scope (a 64-bit store is single-copy atomic: a reader sees the whole word or an older one), then
// its row 0 (the duplicate flag). A reader's warp 0 polls the blocks' row 0 until each carries this
// launch's tag, then every warp reads its mask rows (re-reading any not yet tagged: the stores are
// not ordered). No fence sits on the path. (Session 41, call 1: a first form, every warp polling all
// of its rows at once, ran 0.1-0.5 us slower than the barrier at 73-256 tokens: the waiting blocks'
// re-reads of ~1 KB per block kept the L2 busy.)
//
// The epoch: a 32-bit counter in the first kCounterBytes of the workspace (the same offset in every
// problem's layout). Every routing block with tokens reads it at entry; block 0 adds one at its
// end, after it has seen every such block's words (each wrote them after its read), so all blocks
// of a launch read the same value and the next launch (after this grid: stream order, or its PDL
// wait) the next one. Words of earlier launches carry earlier epochs' tags (tag() is injective:
// distinct for 2^32 launches); the workspace needs no initialisation: a word left by anything else
// passes only if its top 48 bits equal the tag (tag(C) is never 0, and differs from a repeated
// byte b for the counter b b b b: the patterns a memset leaves; CPU test FrontExchange.*).
// Keep the workspace's first 128 bytes for the library between calls (writing an older epoch's
// value back there would let stale words pass).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/hd.h"

namespace fusedmoe::kernels::front_exchange {

inline constexpr int kMaxBlocks = 32;          // routing blocks of a cooperative front (front.cuh: kMaxRouteBlocks)
inline constexpr size_t kCounterBytes = 128;   // the epoch counter's own line, at the workspace's start
inline constexpr int kTagBits = 48;
inline constexpr uint64_t kTagMask = (uint64_t{1} << kTagBits) - 1;

// Rows of 64-bit words per block: the duplicate flag (row 0), the two 16-bit halves of each
// 32-bit mask word (rows 1 .. 2W), and the "ids written" row (2W + 1, only when a token reached a
// group twice: block 0 then plans from the ids in global memory). Row r of block b at
// [r * kMaxBlocks + b] (a warp reads one row of all blocks as consecutive words).
FM_HD constexpr int mask_words(int groups) { return (groups + 3) / 4; }
FM_HD constexpr int rows(int groups) { return 2 * mask_words(groups) + 2; }
FM_HD constexpr int dup_row() { return 0; }
FM_HD constexpr int half_row(int word, int half) { return 1 + 2 * word + half; }
FM_HD constexpr int ready_row(int groups) { return 2 * mask_words(groups) + 1; }

// Bytes of the exchange for `groups` groups (the counter's line, then the words).
constexpr size_t bytes(int groups) {
  return kCounterBytes + static_cast<size_t>(rows(groups > 0 ? groups : 0)) * kMaxBlocks * sizeof(uint64_t);
}

// The launch tag of epoch c: injective on 32-bit c (an odd multiplier is invertible modulo 2^48),
// zero only for c = 0x6A09E667.
FM_HD constexpr uint64_t tag(uint32_t epoch) {
  return (static_cast<uint64_t>(epoch ^ 0x6A09E667u) * 0x9E3779B97F4A7C15ull) & kTagMask;
}
FM_HD constexpr uint64_t word(uint64_t tag48, uint32_t data16) { return tag48 << 16 | (data16 & 0xffffu); }
FM_HD constexpr bool tagged(uint64_t w, uint64_t tag48) { return (w >> 16) == tag48; }

}  // namespace fusedmoe::kernels::front_exchange
