// grouped_schedule.cuh — which work a CTA of the grouped expert GEMMs (BF16 and FP8, both tile
// families) runs: the grouped raster over (token tile bound, weight chunk), or the balanced
// one-wave ranges of (active token tile, weight tile) items. Device side plus the launches' host
// helpers (the rule itself: grouped_schedule_rules.h); included by sm90_bf16_grouped_gemm.cuh and
// sm90_fp8_grouped_gemm.cuh only.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/gemm/grouped_schedule_rules.h"

namespace fusedmoe::kernels::grouped_schedule {

// One run of a CTA's work: weight tiles [wb, we) of the token tile at rows [local0, local0 + tile)
// of expert e (count rows, unpadded offset off, padded offset poff). The grouped raster gives a CTA
// one run; the balanced schedule up to kMaxSegments.
struct Segment {
  int e, count, off, poff, local0, wb, we, pad_;
};
constexpr int kMaxSegments = 8;

// What the schedule reads (the dispatch plan) and how the launch cut the work.
struct Work {
  const int32_t* counts;
  const int32_t* offsets;          // read when need_off (GEMM2's unpadded rows, gathered A, token-order scales)
  const int32_t* padded_offsets;
  int num_groups;
  bool need_off;
  int w_tiles;                      // weight tiles per expert
  // raster: this CTA's padded row and weight tiles [wb, we)
  int row0, wb, we;
};

// The raster: the unique e with padded_offsets[e] <= row0 < padded_offsets[e+1], one pass over the
// groups with every load independent (one memory round trip for G <= threads). Writes seg[0] and
// *nseg (= 1) from the thread that finds it, unless the token tile lies in the expert's padding.
// The caller zeroes *nseg before and synchronises after.
template <int kThreads>
__device__ __forceinline__ void raster_segment(const Work& w, Segment* seg, int* nseg, int tid) {
#pragma unroll 2
  for (int i = tid; i < w.num_groups; i += kThreads) {
    const int lo = __ldcg(w.padded_offsets + i);
    const int hi = __ldcg(w.padded_offsets + i + 1);
    const int cnt = __ldcg(w.counts + i);
    const int off = w.need_off ? __ldcg(w.offsets + i) : 0;
    if (lo <= w.row0 && w.row0 < hi) {
      const int local0 = w.row0 - lo;
      seg[0] = Segment{i, cnt, off, lo, local0, w.wb, w.we, 0};
      *nseg = local0 < cnt ? 1 : 0;  // 0: the token tile is entirely in the expert's padding
    }
  }
}

// Active token tiles U_e = ceil(count_e / kTokTile) in expert order by a block-wide exclusive scan:
// thread t holds experts [e0, e1) = [t * per, (t + 1) * per), per <= 8 (the host checks G <= 8 *
// kThreads), with their counts, padded offsets and (if needed) offsets loaded in one pass; `first`
// is the thread's first token tile, `total` the sum over all experts. One barrier inside.
struct TileScan {
  int cnt[8], poff[8], off[8];
  int e0, e1, first, total;
};
template <int kThreads, int kTokTile>
__device__ __forceinline__ TileScan scan_active_tiles(const Work& w, int* scan, int tid) {
  constexpr int kWarps = kThreads / 32;
  const int lane = tid % 32, warp = tid / 32;
  const int per = (w.num_groups + kThreads - 1) / kThreads;
  TileScan t;
  t.e0 = min(w.num_groups, tid * per);
  t.e1 = min(w.num_groups, t.e0 + per);
  int mine = 0;
#pragma unroll
  for (int q = 0; q < 8; ++q) {
    const bool in = t.e0 + q < t.e1;
    t.cnt[q] = in ? __ldcg(w.counts + t.e0 + q) : 0;
    t.poff[q] = in ? __ldcg(w.padded_offsets + t.e0 + q) : 0;
    t.off[q] = in && w.need_off ? __ldcg(w.offsets + t.e0 + q) : 0;
    mine += (t.cnt[q] + kTokTile - 1) / kTokTile;
  }
  int incl = mine;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int v = __shfl_up_sync(0xffffffff, incl, d);
    if (lane >= d) incl += v;
  }
  if (lane == 31) scan[warp] = incl;
  __syncthreads();
  int before = 0, total = 0;
#pragma unroll
  for (int q = 0; q < kWarps; ++q) {
    const int v = scan[q];
    before += q < warp ? v : 0;
    total += v;
  }
  t.first = before + incl - mine;
  t.total = total;
  return t;
}

// The balanced ranges: items (j, w) over the active token tiles j-major; this CTA takes
// [W * b / grid, W * (b + 1) / grid) as up to kMaxSegments segments (the host sizes the grid so; a
// range past that bound, possible only when the active tiles exceed the launch's row bound, is cut
// there). One barrier inside (the scan). The caller zeroes *nseg before and synchronises after.
// Inlined, 32-bit arithmetic, the loop over a thread's experts unrolled (no local memory): the host
// launches these ranges only with grid <= kMaxBalancedGrid and items < 2^30 (launch_schedule), and
// the item count is clamped below 2^31 here. (Session 37: the earlier form, not inlined, with 64-bit
// divisions and a rolled loop over the TileScan arrays, took ~4.4-5.9 us from kernel entry to the
// known schedule on the FP8 GEMM2 at 16 tokens, 2 CTAs per SM, where the raster takes ~1.1-1.4;
// session 19 had found the path to the first TMA sensitive to the code's length: 64-bit divisions
// inlined made the kernels ~4x longer.)
template <int kThreads, int kTokTile>
__device__ __forceinline__ void balanced_segments(const Work& w, Segment* seg, int* nseg, int* scan, int tid) {
  const TileScan t = scan_active_tiles<kThreads, kTokTile>(w, scan, tid);
  const uint64_t items64 = uint64_t(uint32_t(t.total)) * uint32_t(w.w_tiles);
  const uint32_t items = items64 < 0x7fffffffull ? uint32_t(items64) : 0x7fffffffu;
  const uint32_t i0 = balanced_range_start(items, blockIdx.x, gridDim.x);
  const uint32_t i1 = balanced_range_start(items, blockIdx.x + 1, gridDim.x);
  if (i1 <= i0) return;  // (*nseg stays 0)
  const uint32_t wt = uint32_t(w.w_tiles);
  const uint32_t j0 = i0 / wt, j_last = (i1 - 1) / wt;
  const uint32_t j1 = min(j_last, j0 + uint32_t(kMaxSegments - 1));
  const int wb0 = int(i0 - j0 * wt), we_last = int(i1 - 1 - j_last * wt) + 1;
  if (tid == 0) *nseg = int(j1 - j0 + 1);
  uint32_t first = uint32_t(t.first);  // this thread's first token tile
#pragma unroll
  for (int q8 = 0; q8 < 8; ++q8) {
    if (t.e0 + q8 >= t.e1) break;
    const uint32_t tiles = uint32_t(t.cnt[q8] + kTokTile - 1) / kTokTile;
    const uint32_t lo = max(first, j0), hi = min(first + tiles, j1 + 1);  // [lo, hi)
#pragma unroll 1
    for (uint32_t j = lo; j < hi; ++j) {
      const int wb = j == j0 ? wb0 : 0;
      const int we = j == j_last ? we_last : w.w_tiles;
      seg[j - j0] = Segment{t.e0 + q8, t.cnt[q8], t.off[q8], t.poff[q8], int(j - first) * kTokTile, wb, we, 0};
    }
    first += tiles;
  }
}

// ---- The dynamic balanced schedule (Params::queue) ----
// Items (expert e, weight tile w, token tile j), expert-major, then w, then j (a weight tile's token
// tiles run back to back in one CTA: the repeats of its weights come from L2). The items are cut
// into chunks of L; CTA b runs chunk b first (known before griddepcontrol.wait, so its first
// weights can stream early), then chunks grid + atomicAdd(queue, 1) until none is left: CTAs that
// entered late or run slowly take fewer. The producer thread turns items into segments (maximal
// runs of consecutive weight tiles of one token tile) and hands them to the consumers through a
// ring of kDynQueue entries: it writes entry n after waiting for the ring slot of the segment's
// first stage and before arriving on that stage's full barrier, and the consumers read it after
// waiting on that barrier. Entry n is overwritten by entry n + kDynQueue, written after the slot of
// a stage >= kDynQueue stages later was released, hence after the consumers read entry n
// (kDynQueue >= kStages). An entry with e = -1 ends the list. The queue word is zeroed by the
// kernel before (GroupedGemmArgs::zero_queue) after its own wait, so no reset between calls or
// graph replays is needed.
constexpr int kDynQueue = 16;
constexpr int kDynChunksPerCta = 8;  // about this many chunks per CTA: L = ceil(items / (8 x grid))

// first_tile[e] = U_0 + ... + U_{e-1} for e <= G (first_tile[G] = the total). One barrier inside;
// the caller synchronises after. Inlined (session 37, with balanced_segments above).
template <int kThreads, int kTokTile>
__device__ __forceinline__ void dynamic_table(const Work& w, int* first_tile, int* scan, int tid) {
  const TileScan t = scan_active_tiles<kThreads, kTokTile>(w, scan, tid);
  int first = t.first;
#pragma unroll
  for (int q = 0; q < 8; ++q) {
    if (t.e0 + q < t.e1) first_tile[t.e0 + q] = first;
    first += (t.cnt[q] + kTokTile - 1) / kTokTile;
  }
  if (tid == 0) first_tile[w.num_groups] = t.total;
}

// The producer's walk over the dynamic items (one thread).
struct DynWalk {
  const int* first_tile;  // shared memory, dynamic_table
  const Work* w;
  int e = 0, e_loaded = -1;
  int cnt = 0, off = 0, poff = 0;

  // The expert holding item i: the last e < G with first_tile[e] * w_tiles <= i (an empty expert
  // shares its value with the next one, so the last is the non-empty one). Binary search.
  __device__ __forceinline__ void seek(int64_t i) {
    int lo = 0, hi = w->num_groups - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (int64_t(first_tile[mid]) * w->w_tiles <= i) lo = mid;
      else hi = mid - 1;
    }
    e = lo;
  }
  // The segment starting at item i (< i1, items in increasing order since the last seek): the
  // weight tiles of one token tile that follow in [i, i1). Returns the item after it.
  template <int kTokTile>
  __device__ __forceinline__ int64_t next(int64_t i, int64_t i1, Segment* s) {
    while (int64_t(first_tile[e + 1]) * w->w_tiles <= i) ++e;
    if (e != e_loaded) {
      cnt = __ldcg(w->counts + e);
      poff = __ldcg(w->padded_offsets + e);
      off = w->need_off ? __ldcg(w->offsets + e) : 0;
      e_loaded = e;
    }
    const int f = first_tile[e], u = first_tile[e + 1] - f;
    const int64_t r = i - int64_t(f) * w->w_tiles;
    const int wt = int(r / u), j = int(r % u);
    int we = wt + 1;
    if (u == 1) we = wt + int(min(i1, int64_t(f + 1) * w->w_tiles) - i);
    *s = Segment{e, cnt, off, poff, j * kTokTile, wt, we, 0};
    return i + (we - wt);
  }
};

// This CTA's share of the dynamic items: `items` in chunks of `len`, `chunks` of them (L =
// ceil(items / (kDynChunksPerCta x grid)); none when the launch is not dynamic).
struct DynChunks {
  int64_t items, len, chunks;
};
__device__ __forceinline__ DynChunks dynamic_chunks(bool dyn, int total_tiles, int w_tiles) {
  if (!dyn) return DynChunks{0, 1, 0};  // (no 64-bit division on the raster's path)
  const int64_t items = int64_t(total_tiles) * w_tiles;
  const int64_t per = int64_t(gridDim.x) * kDynChunksPerCta;
  const int64_t len = max(int64_t(1), (items + per - 1) / per);
  return DynChunks{items, len, (items + len - 1) / len};
}

// The dynamic producer (one thread): the walk's position [i, i1) in the current chunk and the
// segment `cur` it stands on. begin() takes chunk blockIdx.x (before griddepcontrol.wait: the plan
// is readable); run() then hands every segment to issue(segment), taking further chunks from the
// queue word (after the wait: the kernel before zeroed it after its own wait).
struct DynProducer {
  DynWalk walk;
  DynChunks c;
  int64_t i = 0, i1 = 0;
  Segment cur{};

  template <int kTokTile>
  __device__ __forceinline__ void chunk(int64_t n) {
    i = n * c.len;
    i1 = min(c.items, i + c.len);
    walk.seek(i);
    i = walk.template next<kTokTile>(i, i1, &cur);
  }
  template <int kTokTile>
  __device__ __forceinline__ void begin() {
    chunk<kTokTile>(blockIdx.x);
  }
  template <int kTokTile, class Issue>
  __device__ __forceinline__ void run(int* queue, Issue&& issue) {
    int64_t next = int64_t(gridDim.x) + atomicAdd(queue, 1);
    for (;;) {
      issue(cur);
      if (i < i1) {
        i = walk.template next<kTokTile>(i, i1, &cur);
        continue;
      }
      if (next >= c.chunks) break;
      const int64_t n = next;
      next = int64_t(gridDim.x) + atomicAdd(queue, 1);
      chunk<kTokTile>(n);
    }
  }
};

// A segment read by a whole warp, every field warp-uniform (lets the compiler see block-uniform
// values, keeping the WGMMA path non-divergent). A single thread reads the Segment as stored.
__device__ __forceinline__ Segment uniform_segment(const Segment& g) {
  return Segment{__shfl_sync(0xffffffff, g.e, 0),      __shfl_sync(0xffffffff, g.count, 0),
                 __shfl_sync(0xffffffff, g.off, 0),    __shfl_sync(0xffffffff, g.poff, 0),
                 __shfl_sync(0xffffffff, g.local0, 0), __shfl_sync(0xffffffff, g.wb, 0),
                 __shfl_sync(0xffffffff, g.we, 0),     0};
}

// Host: the CTAs of a balanced launch: one per slot (one wave), fewer when there are fewer items,
// more when a CTA's range could span more than kMaxSegments token tiles (a range of L consecutive
// items touches at most 1 + ceil((L - 1) / w_tiles) token tiles; L <= (kMaxSegments - 2) * w_tiles
// + 1 keeps it to kMaxSegments - 1, one segment of margin). The bound holds while the active token
// tiles stay within the row bound (max_rows, the launch's contract); past it the kernel cuts the
// range (those rows are left unwritten, as the raster leaves rows beyond its grid).
inline int64_t balanced_grid(int64_t items_bound, int w_tiles, int64_t slots) {
  const int64_t per_cta_max = int64_t(kMaxSegments - 2) * w_tiles + 1;
  const int64_t ctas = std::min(slots, items_bound);
  return std::max(ctas, (items_bound + per_cta_max - 1) / per_cta_max);
}

// Host: the CTAs of a dynamic balanced launch: one wave (no segment bound: the producer walks
// any number of items).
inline int64_t dynamic_grid(int64_t items_bound, int64_t slots) { return std::max<int64_t>(1, std::min(slots, items_bound)); }

// Host: the balanced schedule's rule, use_balanced_schedule: grouped_schedule_rules.h.

// Host: the launch's schedule. kind 0 = the raster (grid as given), 1 = static balanced ranges,
// 2 = dynamic (queue given). The balanced forms need `eligible` (Swap-AB, no split-K, G <= 8 x
// threads, rows in the plan's order); `forced` is GroupedGemmArgs::balanced (> 0 on, < 0 off, 0 the
// rule where `rule_applies`: GEMM2 with the weight chunk left to the kernel).
struct LaunchSchedule {
  int kind;
  int64_t grid;
};
inline LaunchSchedule launch_schedule(bool eligible, int forced, bool rule_applies, int tiles_per_cta, int groups,
                                      int64_t rows_hint, bool queue, int64_t items_bound, int w_tiles, int64_t slots,
                                      int64_t raster_grid, bool short_reduction) {
  const bool rule =
      forced == 0 && rule_applies && use_balanced_schedule(tiles_per_cta, groups, rows_hint, queue, short_reduction);
  if (!eligible || !(forced > 0 || rule)) return LaunchSchedule{0, raster_grid};
  if (queue) return LaunchSchedule{2, dynamic_grid(items_bound, slots)};
  const int64_t grid = balanced_grid(items_bound, w_tiles, slots);
  // (the kernel's 32-bit range arithmetic, balanced_segments; only a forced launch can pass these)
  if (grid > kMaxBalancedGrid || items_bound >= (int64_t(1) << 30)) return LaunchSchedule{0, raster_grid};
  return LaunchSchedule{1, grid};
}

// A launch's weight tiles per expert and K steps per tile (Cfg::kWRows rows per tile, half gate
// and half up columns for a gated GEMM1; Cfg::kTileK elements per step): the packed weights' layout.
struct WeightTiles {
  int w_tiles, k_tiles;
};
template <class Cfg>
WeightTiles weight_tiles(int n, int k, bool gated, bool gemm2) {
  const int red = gemm2 ? n : k, out_cols = gemm2 ? k : n;
  const int cols_per_tile = gated ? Cfg::kWRows / 2 : Cfg::kWRows;
  return {(out_cols + cols_per_tile - 1) / cols_per_tile, (red + Cfg::kTileK - 1) / Cfg::kTileK};
}

}  // namespace fusedmoe::kernels::grouped_schedule
