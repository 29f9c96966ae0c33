// grouped_schedule.cuh — which work a CTA of the grouped expert GEMMs (BF16 and FP8, both tile
// families) runs: the grouped raster over (token tile bound, weight chunk), or the balanced
// one-wave ranges of (active token tile, weight tile) items. Device side plus the host rules;
// included by sm90_bf16_grouped_gemm.cuh and sm90_fp8_grouped_gemm.cuh only.
#pragma once

#include <algorithm>
#include <cstdint>


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

// The balanced ranges: active token tiles U_e = ceil(count_e / kTokTile) in expert order by a
// block-wide exclusive scan (thread t holds experts [t * per, (t + 1) * per), per <= 8: the host
// checks G <= 8 * kThreads); items (j, w) j-major; this CTA takes [W * b / grid, W * (b + 1) / grid)
// as up to kMaxSegments segments (the host sizes the grid so; a range past that bound, possible
// only when the active tiles exceed the launch's row bound, is cut there). One pass of plan loads
// (counts, padded offsets and, if needed, offsets of the thread's experts together), one barrier
// inside. The caller zeroes *nseg before and synchronises after.
template <int kThreads, int kTokTile>
__device__ __forceinline__ void balanced_segments(const Work& w, Segment* seg, int* nseg, int* scan, int tid) {
  constexpr int kWarps = kThreads / 32;
  const int lane = tid % 32, warp = tid / 32;
  const int per = (w.num_groups + kThreads - 1) / kThreads;
  const int e0 = min(w.num_groups, tid * per);
  const int e1 = min(w.num_groups, e0 + per);
  int cnt[8], poff[8], off[8];
  int mine = 0;
#pragma unroll
  for (int q = 0; q < 8; ++q) {
    const bool in = e0 + q < e1;
    cnt[q] = in ? __ldcg(w.counts + e0 + q) : 0;
    poff[q] = in ? __ldcg(w.padded_offsets + e0 + q) : 0;
    off[q] = in && w.need_off ? __ldcg(w.offsets + e0 + q) : 0;
    mine += (cnt[q] + kTokTile - 1) / kTokTile;
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
  const int64_t items = int64_t(total) * w.w_tiles;
  const int64_t i0 = items * blockIdx.x / gridDim.x, i1 = items * (blockIdx.x + 1) / gridDim.x;
  if (i1 <= i0) return;  // (*nseg stays 0)
  const int64_t j0 = i0 / w.w_tiles;
  const int64_t j1 = min((i1 - 1) / w.w_tiles, j0 + kMaxSegments - 1);
  if (tid == 0) *nseg = int(j1 - j0 + 1);
  int64_t first = before + incl - mine;  // this thread's first token tile
#pragma unroll
  for (int q = 0; q < 8; ++q) {
    const int tiles = (cnt[q] + kTokTile - 1) / kTokTile;
    const int64_t lo = max(first, j0), hi = min(first + tiles - 1, j1);
    for (int64_t j = lo; j <= hi; ++j) {
      const int wb = j == j0 ? int(i0 % w.w_tiles) : 0;
      const int we = j == (i1 - 1) / w.w_tiles ? int((i1 - 1) % w.w_tiles) + 1 : w.w_tiles;
      seg[j - j0] = Segment{e0 + q, cnt[q], off[q], poff[q], int(j - first) * kTokTile, wb, we, 0};
    }
    first += tiles;
  }
}

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

// Host: the balanced schedule's rule (GroupedGemmArgs::balanced = 0, and the FP8 twin): GEMM2
// where the heuristic chains tiles (short reductions), Swap-AB without split-K, G <= 8 x threads,
// when the rows (rows_hint, T x slots) number between a quarter of the experts and all of them.
// There the active token tiles (about one per touched expert) times the weight chunks land a
// little above a whole number of waves in a way the raster, sized from the row bound, cannot
// foresee: qwen235-tp8 GEMM2 at 16 tokens ran 332 CTAs on 264 slots, the last 68 streaming alone
// for ~14 us. Measured on the H200 (session 16, BF16 layer, same run), balanced against the raster:
//   - 16 tokens: 1.6-9 us faster on every case (call 4: dsv3-tp8 258.8 -> 250.3 us, qwen235-tp8
//     124.6 -> 121.0, dsv4f-tp4 270.5 -> 264.9, qwen235-tp4 215.5 -> 212.6, qwen30-tp1 213.2 -> 211.5);
//   - 1 token: 0.7-3.2 us slower (the raster is one exact wave there; the scan's round trips add);
//   - 4 tokens: -2.5..+2.3 us; 64 tokens: dsv3-tp8 3-4 us slower, others 1-5 us faster;
//   - GEMM1 (tile pairs at 1-2 waves, gathered rows after the front): 1-10 us slower (call 2);
//   - with several token tiles per expert the j-major ranges read an expert's weights once per
//     token tile at different times, where the raster's neighbours share them in L2 (dsv3-tp8 at
//     256 tokens, tile 16: GEMM2 184 -> 221 us, call 2).
// (GroupedGemmArgs::balanced and ForwardOptions::balanced_gemm2 force it either way; bench --balanced.)
inline bool use_balanced_schedule(int tiles_per_cta, int groups, int64_t rows_hint) {
  return tiles_per_cta > 1 && 4 * rows_hint > int64_t(groups) && rows_hint <= int64_t(groups);
}

}  // namespace fusedmoe::kernels::grouped_schedule
