// plan.cuh — device code of the dispatch plan (see plan_launch.h for the contract).
//
// Entries are the (token, slot) pairs in linear order i = token * slots + slot; an entry's key is
// its group (local expert, or the shared expert = group L at slot k) or G ("skipped": -1 id,
// id >= E / < -1 (recorded in error_flag), non-local expert). Rows of a group are its entries in
// ascending i, which is (token, slot) order; groups follow each other in index order.
//
// Two paths, both deterministic (no result depends on the order of atomics; shared-memory atomics
// only build counts):
//   * single block (N = T * slots <= kPlanSingleMaxEntries): keys -> per-warp histograms ->
//     per-group column scan across warps + block scan over groups (= offsets) -> ordered ranks
//     (__match_any_sync peers + per-warp running bases) -> rows staged in shared memory in row
//     order -> coalesced row_token/row_slot writes. One launch.
//   * chunked (larger N), chunk = a power of two in [512, 4096] entries (about N / 256, so that
//     small problems still spread over the SMs):
//       K1 plan_histogram_kernel   per-chunk group histogram -> scratch hist[chunk][G]
//       K2 plan_column_scan_kernel a block per group: exclusive scan over chunks (in place) + counts
//       K3 plan_rank_scatter_kernel  the single-block algorithm per chunk, rows based at
//                                  offsets[g] + hist[chunk][g]; every block scans counts into the
//                                  offsets itself (block 0 writes offsets, padded_offsets).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/pdl.cuh"
#include "kernels/common/token_count.cuh"
#include "kernels/dispatch/plan_launch.h"
#include "kernels/router/router_launch.h"

namespace fusedmoe::kernels::plan_detail {

inline constexpr int kPlanChunkMin = 512;          // entries per chunk (chunked path): a power of
inline constexpr int kPlanChunkMax = 4096;         //   two in [512, 4096], ~N / 256 (enough blocks)
inline constexpr int kPlanChunkTarget = 256;       // chunks wanted when N allows
inline constexpr int kPlanChunkWarps = 8;          // K3 block: 8 warps x chunk / 8 entries
inline constexpr int kPlanSingleMaxEntries = 8192;  // single-block path up to here
inline constexpr int kPlanEntriesPerWarpSingle = 256;
inline constexpr int kPlanHistThreads = 512;        // K1
inline constexpr int kPlanScanThreads = 256;        // K2: a block per group, threads over chunks

struct PlanParams {
  const int32_t* topk_ids;
  const int32_t* expert_map;
  int32_t num_entries;  // bound of N = T * slots (fits int32: checked on the host)
  int64_t max_tokens;   // bound of T
  const int32_t* num_tokens_dev;  // optional device-side T (<= max_tokens)
  int32_t top_k;
  int32_t slots;
  int32_t num_experts;
  int32_t num_local;
  int32_t num_shared;
  int32_t num_groups;  // G
  int32_t tile_m;
  int32_t num_chunks;
  int32_t chunk;       // entries per chunk (chunked path)
  int32_t* counts;
  int32_t* offsets;
  int32_t* padded_offsets;
  int32_t* row_token;
  int32_t* row_slot;
  int32_t* slot_row;
  int32_t* error_flag;
  int32_t* chunk_hist;     // [num_chunks][G] (chunked path)
};

// Group of entry i, or G when skipped. Records ids outside [-1, E) in error_flag.
__device__ __forceinline__ int entry_group(const PlanParams& p, int32_t i, bool record_errors) {
  const int32_t t = i / p.slots;
  const int32_t s = i - t * p.slots;
  if (s >= p.top_k) return p.num_local;  // the shared expert (slot k), every token
  // L2 load: the ids may have been written earlier in the same kernel (fused front path).
  const int32_t id = __ldcg(p.topk_ids + (static_cast<int64_t>(t) * p.top_k + s));
  if (id < 0 || id >= p.num_experts) {
    if (id != -1 && record_errors && p.error_flag != nullptr) {
      if (atomicCAS(p.error_flag, 0, kErrorIdOutOfRange) == 0) {
        p.error_flag[1] = t;
        p.error_flag[2] = s;
        p.error_flag[3] = id;
      }
    }
    return p.num_groups;
  }
  const int32_t g = p.expert_map != nullptr ? __ldg(p.expert_map + id) : id;
  return (g >= 0 && g < p.num_local) ? g : p.num_groups;
}

// Entries of this call: T * slots, T read on the device when a device count is given.
__device__ __forceinline__ int32_t plan_entries(const PlanParams& p) {
  if (p.num_tokens_dev == nullptr) return p.num_entries;
  return static_cast<int32_t>(resolve_token_count(p.max_tokens, p.num_tokens_dev, nullptr) * p.slots);
}

// c rounded up to a multiple of the tile (c < 2^31, tile >= 1; power-of-two tiles by a mask).
__device__ __forceinline__ uint32_t round_up_tile(uint32_t c, int tile) {
  const uint32_t t = static_cast<uint32_t>(tile);
  return (t & (t - 1u)) == 0u ? (c + t - 1u) & ~(t - 1u) : (c + t - 1u) / t * t;
}

// Exclusive block scan of one value per thread (blockDim.x a multiple of 32, <= 1024).
// `warp_tot` is shared scratch of 32 elements. Returns the exclusive prefix; *total gets the sum.
// Contains __syncthreads(): call from every thread.
template <class T>
__device__ __forceinline__ T block_exclusive_scan(T v, T* warp_tot, T* total) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int nwarps = blockDim.x >> 5;
  T inc = v;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const T o = __shfl_up_sync(0xffffffffu, inc, d);
    if (lane >= d) inc += o;
  }
  if (lane == 31) warp_tot[warp] = inc;
  __syncthreads();
  if (warp == 0) {
    T w = lane < nwarps ? warp_tot[lane] : T(0);
    T wi = w;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const T o = __shfl_up_sync(0xffffffffu, wi, d);
      if (lane >= d) wi += o;
    }
    if (lane < nwarps) warp_tot[lane] = wi - w;  // exclusive warp prefix
    if (lane == 31) warp_tot[32] = wi;           // block total (slot 32)
  }
  __syncthreads();
  const T result = warp_tot[warp] + inc - v;
  *total = warp_tot[32];
  __syncthreads();  // warp_tot may be reused right after
  return result;
}

// ---- the shared ranking / scatter body (single block or one chunk) --------------------------
//
// Dynamic shared memory layout (see plan_smem_bytes):
//   uint16 hist[W][G]   per-warp counts, then per-warp running row positions within the chunk
//   uint16 keys[CH]     group of each entry of the chunk (G = skipped)
//   uint16 stage[CH]    chunk-local entry index of each chunk-local row, in row order
//   int32  base[G]      global row of chunk-local position p of group g = base[g] + p
//   int32  cnt[G]       counts[g] (chunked path: read at the start, scanned into the offsets)
//   int64  scan[33]     block-scan scratch
__host__ __device__ constexpr size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

__host__ __device__ inline size_t plan_smem_bytes(int warps, int groups, int chunk) {
  size_t b = align_up(static_cast<size_t>(warps) * groups * 2, 16);
  b += align_up(static_cast<size_t>(chunk) * 2, 16) * 2;
  b += align_up(static_cast<size_t>(groups) * 4, 16) * 2;
  b += 33 * 8;
  return b;
}

template <bool kSingle>
__device__ __forceinline__ void plan_rank_scatter_body(const PlanParams& p, int chunk, int32_t begin, int32_t n,
                                                       int entries_per_warp) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int G = p.num_groups;
  const int W = blockDim.x >> 5;
  const int CH = kSingle ? n : p.chunk;
  uint16_t* hist = reinterpret_cast<uint16_t*>(smem_raw);
  uint16_t* keys = reinterpret_cast<uint16_t*>(smem_raw + align_up(size_t(W) * G * 2, 16));
  uint16_t* stage = keys + align_up(size_t(CH) * 2, 16) / 2;
  int32_t* base = reinterpret_cast<int32_t*>(reinterpret_cast<unsigned char*>(stage) + align_up(size_t(CH) * 2, 16));
  int32_t* cnt = reinterpret_cast<int32_t*>(reinterpret_cast<unsigned char*>(base) + align_up(size_t(G) * 4, 16));
  unsigned long long* scan = reinterpret_cast<unsigned long long*>(reinterpret_cast<unsigned char*>(cnt) +
                                                                   align_up(size_t(G) * 4, 16));
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;

  // Phase 0: keys of the chunk; zero the per-warp histograms. Chunked: this chunk's rows of each
  // group in earlier chunks (K2) and the counts, loaded first so that their latency overlaps.
  if (!kSingle)
    for (int g = tid; g < G; g += blockDim.x) {
      base[g] = __ldcg(p.chunk_hist + static_cast<int64_t>(chunk) * G + g);
      cnt[g] = __ldcg(p.counts + g);
    }
  for (int j = tid; j < n; j += blockDim.x) keys[j] = static_cast<uint16_t>(entry_group(p, begin + j, kSingle));
  {
    uint32_t* h32 = reinterpret_cast<uint32_t*>(hist);
    const int words = (W * G + 1) / 2;
    for (int j = tid; j < words; j += blockDim.x) h32[j] = 0u;
  }
  __syncthreads();

  // Phase A: per-warp counts. One leader per distinct key per step: no conflicting updates.
  const int wbeg = warp * entries_per_warp;
  const int wend = min(n, wbeg + entries_per_warp);
  uint16_t* my_hist = hist + warp * G;
  for (int j0 = wbeg; j0 < wend; j0 += 32) {
    const int j = j0 + lane;
    const unsigned key = j < wend ? keys[j] : 0xFFFFu;
    const unsigned peers = __match_any_sync(0xffffffffu, key);
    if (key < unsigned(G) && lane == __ffs(peers) - 1) my_hist[key] = my_hist[key] + __popc(peers);
    __syncwarp();
  }
  __syncthreads();

  // Phase B: per group, running positions across warps; block scan over groups.
  const int ipt = (G + blockDim.x - 1) / blockDim.x;  // groups per thread, contiguous
  const int g0 = tid * ipt;
  const int g1 = min(G, g0 + ipt);
  // low 32: rows, high 32: padded rows. Single: this block's (= all) rows per group. Chunked:
  // `mine` the chunk's rows (chunk-local positions), `gmine` the counts (global offsets).
  unsigned long long mine = 0, gmine = 0;
  for (int g = g0; g < g1; ++g) {
    uint32_t c = 0;
    for (int w = 0; w < W; ++w) c += hist[w * G + g];
    mine += c;
    if (kSingle) {
      mine += static_cast<unsigned long long>(round_up_tile(c, p.tile_m)) << 32;
    } else {
      const uint32_t cg = static_cast<uint32_t>(cnt[g]);
      gmine += cg;
      gmine += static_cast<unsigned long long>(round_up_tile(cg, p.tile_m)) << 32;
    }
  }
  unsigned long long total = 0, gtotal = 0;
  const unsigned long long excl = block_exclusive_scan<unsigned long long>(mine, scan, &total);
  unsigned long long gexcl = 0;
  if (!kSingle) gexcl = block_exclusive_scan<unsigned long long>(gmine, scan, &gtotal);
  uint32_t run = static_cast<uint32_t>(excl);  // chunk-local start of group g0
  uint32_t prun = static_cast<uint32_t>(excl >> 32);
  uint32_t grun = static_cast<uint32_t>(gexcl);  // chunked: global offsets of group g0
  uint32_t gprun = static_cast<uint32_t>(gexcl >> 32);
  for (int g = g0; g < g1; ++g) {
    const uint32_t start = run;
    for (int w = 0; w < W; ++w) {
      const uint32_t h = hist[w * G + g];
      hist[w * G + g] = static_cast<uint16_t>(run);
      run += h;
    }
    const uint32_t c = run - start;
    if (kSingle) {
      p.counts[g] = static_cast<int32_t>(c);
      p.offsets[g] = static_cast<int32_t>(start);
      p.padded_offsets[g] = static_cast<int32_t>(prun);
      prun += static_cast<uint32_t>(round_up_tile(c, p.tile_m));
      base[g] = 0;
    } else {
      if (chunk == 0) {
        p.offsets[g] = static_cast<int32_t>(grun);
        p.padded_offsets[g] = static_cast<int32_t>(gprun);
      }
      // Global row of this chunk's first row of g: offsets[g] + rows of g in earlier chunks.
      base[g] = static_cast<int32_t>(grun) + base[g] - static_cast<int32_t>(start);
      const uint32_t cg = static_cast<uint32_t>(cnt[g]);
      grun += cg;
      gprun += static_cast<uint32_t>(round_up_tile(cg, p.tile_m));
    }
  }
  if (kSingle && tid == 0) {
    p.offsets[G] = static_cast<int32_t>(total);
    p.padded_offsets[G] = static_cast<int32_t>(total >> 32);
  }
  if (!kSingle && chunk == 0 && tid == 0) {
    p.offsets[G] = static_cast<int32_t>(gtotal);
    p.padded_offsets[G] = static_cast<int32_t>(gtotal >> 32);
  }
  const int n_valid = static_cast<int>(static_cast<uint32_t>(total));
  __syncthreads();

  // Phase C: ordered ranks. Within a warp step, peers with the same key take consecutive
  // positions in lane order; the warp's running position per key advances after the step.
  const unsigned lanemask_lt = (1u << lane) - 1u;
  for (int j0 = wbeg; j0 < wend; j0 += 32) {
    const int j = j0 + lane;
    const unsigned key = j < wend ? keys[j] : 0xFFFFu;
    const unsigned peers = __match_any_sync(0xffffffffu, key);
    if (key < unsigned(G)) {
      const int pos = my_hist[key] + __popc(peers & lanemask_lt);
      stage[pos] = static_cast<uint16_t>(j);
      p.slot_row[begin + j] = base[key] + pos;
    } else if (j < wend) {
      p.slot_row[begin + j] = -1;
    }
    __syncwarp();
    if (key < unsigned(G) && lane == __ffs(peers) - 1) my_hist[key] = my_hist[key] + __popc(peers);
    __syncwarp();
  }
  __syncthreads();

  // Phase D: rows in row order (runs of consecutive rows per group: coalesced stores).
  for (int pos = tid; pos < n_valid; pos += blockDim.x) {
    const int j = stage[pos];
    const int row = base[keys[j]] + pos;
    const int32_t i = begin + j;
    const int32_t t = i / p.slots;
    p.row_token[row] = t;
    p.row_slot[row] = i - t * p.slots;
  }
}

// The plan kernels are defined in one translation unit only (plan_launch.cu defines
// FUSEDMOE_PLAN_KERNELS); other users of this header get the device functions.
#if defined(FUSEDMOE_PLAN_KERNELS)
// Single-block plan: the whole problem is one chunk.
__global__ void __launch_bounds__(1024, 1) plan_single_kernel(PlanParams p, int entries_per_warp) {
  pdl_enter();  // kernels/common/pdl.cuh: first, before any global access
  plan_rank_scatter_body<true>(p, 0, 0, plan_entries(p), entries_per_warp);
}

// K3 of the chunked path: one block per chunk.
__global__ void __launch_bounds__(kPlanChunkWarps * 32) plan_rank_scatter_kernel(PlanParams p) {
  pdl_enter();  // kernels/common/pdl.cuh: first, before any global access
  const int chunk = blockIdx.x;
  const int32_t begin = chunk * p.chunk;
  const int32_t n = max(0, min(p.chunk, plan_entries(p) - begin));
  plan_rank_scatter_body<false>(p, chunk, begin, n, p.chunk / kPlanChunkWarps);
}

// K1: per-chunk histograms (shared-memory atomics only build counts: order-independent).
__global__ void __launch_bounds__(kPlanHistThreads) plan_histogram_kernel(PlanParams p) {
  pdl_enter();  // kernels/common/pdl.cuh: first, before any global access
  extern __shared__ __align__(16) unsigned char smem_raw[];
  int32_t* hist = reinterpret_cast<int32_t*>(smem_raw);
  const int G = p.num_groups;
  const int chunk = blockIdx.x;
  const int32_t begin = chunk * p.chunk;
  const int32_t n = max(0, min(p.chunk, plan_entries(p) - begin));
  for (int g = threadIdx.x; g < G; g += blockDim.x) hist[g] = 0;
  __syncthreads();
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    const int g = entry_group(p, begin + j, true);
    if (g < G) atomicAdd(hist + g, 1);
  }
  __syncthreads();
  int32_t* out = p.chunk_hist + static_cast<int64_t>(chunk) * G;
  for (int g = threadIdx.x; g < G; g += blockDim.x) out[g] = hist[g];
}

// K2: block g = group g, threads over contiguous ranges of chunks. Replaces hist[c][g] by the
// rows of g in chunks < c and writes counts[g] (K3 scans the counts into the offsets).
__global__ void __launch_bounds__(kPlanScanThreads) plan_column_scan_kernel(PlanParams p) {
  pdl_enter();  // kernels/common/pdl.cuh: first, before any global access
  __shared__ uint32_t scan[33];
  constexpr int kMaxPerThread = 8;  // chunks per thread kept in registers
  const int G = p.num_groups;
  const int g = blockIdx.x;
  const int C = p.num_chunks;
  const int per = (C + kPlanScanThreads - 1) / kPlanScanThreads;
  const int c0 = threadIdx.x * per;
  int32_t* col = p.chunk_hist + g;
  uint32_t total = 0;
  if (per <= kMaxPerThread) {  // registers hold the thread's column entries between the passes
    uint32_t v[kMaxPerThread];
    uint32_t sum = 0;
#pragma unroll
    for (int q = 0; q < kMaxPerThread; ++q) {
      v[q] = (q < per && c0 + q < C) ? static_cast<uint32_t>(__ldcg(col + static_cast<int64_t>(c0 + q) * G)) : 0u;
      sum += v[q];
    }
    uint32_t run = block_exclusive_scan<uint32_t>(sum, scan, &total);
#pragma unroll
    for (int q = 0; q < kMaxPerThread; ++q) {
      if (q < per && c0 + q < C) col[static_cast<int64_t>(c0 + q) * G] = static_cast<int32_t>(run);
      run += v[q];
    }
  } else {  // more chunks (over 2048): read twice
    const int c1 = min(C, c0 + per);
    uint32_t sum = 0;
    for (int c = c0; c < c1; ++c) sum += static_cast<uint32_t>(__ldcg(col + static_cast<int64_t>(c) * G));
    uint32_t run = block_exclusive_scan<uint32_t>(sum, scan, &total);
    for (int c = c0; c < c1; ++c) {
      int32_t* h = col + static_cast<int64_t>(c) * G;
      const uint32_t v = static_cast<uint32_t>(__ldcg(h));
      *h = static_cast<int32_t>(run);
      run += v;
    }
  }
  if (threadIdx.x == 0) p.counts[g] = static_cast<int32_t>(total);
}

#endif  // FUSEDMOE_PLAN_KERNELS

// Checks a PlanArgs and fills the kernel parameters (plan_launch.cu); the chunked-path fields
// (num_chunks, chunk, chunk_hist) are left zero.
cudaError_t prepare_plan(const PlanArgs& a, PlanParams* out);

}  // namespace fusedmoe::kernels::plan_detail
