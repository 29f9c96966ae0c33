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
// not ordered). No fence sits on the critical path. (Session 41, call 1: a first form, every warp polling all
// of its rows at once, ran 0.1-0.5 us slower than the barrier at 73-256 tokens: the waiting blocks'
// re-reads of ~1 KB per block kept the L2 busy.)
//
// The epoch: a 64-bit counter in the first kCounterBytes of the workspace (reserved first in every
// problem's layout, whatever its bounds). Every routing block with tokens reads it at entry; block 0
// adds one at its end, after it has seen every such block's words (each wrote them after its read),
// so all blocks of a launch read the same value and the next launch (after this grid: stream order,
// or its PDL wait) the next one. Each launch also overwrites every column it does not publish in
// (routing blocks without tokens, the columns past its routing blocks, the rows past its groups' and
// the "ids written" row unless used) with untagged zeros, so
// apart from this launch's words the exchange holds only the previous launch's: a word passes only
// with this launch's tag even if something outside the library rewrites the counter (unless it
// writes back exactly the previous launch's epoch). The tag (the epoch's low 48 bits with a fixed
// pattern xor-ed in) is injective over 2^48 consecutive epochs, is zero only for one epoch value
// (~2^47 launches away from a zeroed counter) and never equals a memset pattern (CPU test
// FrontExchange.*), so the workspace needs no initialisation.
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
// The workspace's region for these bounds: the words only above one routing block (16 tokens, the
// fused front's single-block bound), the counter's line always (the same offset in every layout).
// Above it, rows for the most groups the fused front takes (kMaxGroups), whatever this problem's:
// each launch clears what it does not publish, so the region holds one launch's words at most.
inline constexpr int64_t kOneBlockTokens = 16;
inline constexpr int kMaxGroups = 1088;  // front.cuh: kMaxGroups
constexpr size_t workspace_bytes(int64_t max_tokens) {
  return max_tokens <= kOneBlockTokens ? kCounterBytes : bytes(kMaxGroups);
}

// The launch tag of epoch c: injective over 2^48 consecutive c, zero only for c = kTagPattern
// (mod 2^48); bytes 5-4 of the tag (A5 C3 from a zero counter) differ from each other and from a
// memset byte's pair.
inline constexpr uint64_t kTagPattern = 0x0000A5C300000000ull;
FM_HD constexpr uint64_t tag(uint64_t epoch) { return (epoch ^ kTagPattern) & kTagMask; }
FM_HD constexpr uint64_t word(uint64_t tag48, uint32_t data16) { return tag48 << 16 | (data16 & 0xffffu); }
FM_HD constexpr bool tagged(uint64_t w, uint64_t tag48) { return (w >> 16) == tag48; }

}  // namespace fusedmoe::kernels::front_exchange
