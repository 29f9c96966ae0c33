// front.cuh — the fused front half for small token counts (decode): route + optional FP8
// quantisation of x in token order + dispatch plan, in ONE launch (contract in front_launch.h).
//
// Routing: a warp per token with the router's own per-token body (router.cuh: route_token, so
// ids/weights are bit-identical to the router kernel).
//   * bound <= 16: ONE routing block, all 16 warps route (token = warp), no grid barrier; except
//     a quantising front over >= 256 experts at 13-16 tokens, which takes several blocks of 4 as
//     below (front_split_rule, front_launch.h: with one block the routing ends ~0.6 us later there);
//   * precomputed ids (any bound, the logits mode's instances): the routing warp reads its token's
//     ids and weights, marks ids outside [0, E) (id -1, weight 0, as router_gather_kernel) and
//     finishes the slots as that kernel does; block 0 reports the first bad id in (token, slot)
//     order in the error flag (several routing blocks: each block's first, as a 64-bit key, reaches
//     block 0 through its shared memory in a cluster or the scratch in a cooperative grid);
//   * above: blocks [0, route_blocks) route tokens tpb * b .. tpb * b + tpb - 1 with warps
//     0 .. tpb - 1 (tpb = 4 or 8: FrontParams::tokens_per_block), as one thread-block cluster
//     (17-72 tokens, and the split 13-16) or a cooperative launch (a barrier of the routing blocks
//     before the plan).
//   The routing blocks do not quantise; blocks after them do.
// When x is quantised (FP8 in token order, the gather layout, with the permute/quantise kernel's
// exact scalar helpers), quantising-only blocks after the routing ones share x's rows: one
// SM streams only ~15-60 GB/s of them, so the host gives each block ~16 KB of x.
//
// The plan uses that top-k never picks an expert twice for a token, so a group's rows in (token,
// slot) order are its tokens in ascending order:
//   * each routing warp's entry lanes set their token's bit in the block's byte of their group
//     (shared memory, four groups per word; tokens 8-15 of a single block in a second array);
//   * one routing block: after a block barrier every warp with a token scans the G counts
//     (popcounts) itself and each entry lane computes its row (offset of its group + tokens of
//     the group below it): no more barriers;
//   * several, a cooperative grid: each exports its masks to scratch, one barrier of the routing
//     blocks (on the driver's grid barrier word: nothing to zero beforehand; grid_barrier_word),
//     then every block with tokens reads all blocks' masks (warp reductions over the blocks give
//     each group's total and its tokens in earlier blocks), one block barrier, and its warps
//     compute their own rows as above;
//   * several, a thread-block cluster: each entry adds its group's count into every block's
//     shared memory (push_group_count) between the two phases of a cluster barrier, so each block
//     holds every group's total and its tokens in earlier blocks without reading the others;
//   * a warp of block 0 also writes counts, offsets and padded offsets;
//   * if a token reaches a group twice (an expert map sending two experts to one local slot),
//     block 0 runs the general single-block plan body of plan.cuh instead.
// Block 0 also writes the whole error flag (zero, or a device token count out of range), so no
// memset precedes the launch.
#pragma once
#include <cuda_runtime.h>

#include <cooperative_groups.h>

#include <cstdint>

#include "kernels/common/pdl.cuh"
#include "kernels/common/timer.cuh"
#include "kernels/common/token_count.cuh"
#include "kernels/dispatch/plan.cuh"
#include "kernels/quant/permute_quant.cuh"
#include "kernels/router/router.cuh"

namespace fusedmoe::kernels::front_detail {

inline constexpr int kRouteWarps = 8;   // tokens per routing block (at most, above 16 tokens)
// Tokens per routing block above 16 tokens (FrontParams::tokens_per_block; the launcher's
// front_tokens_per_block, FUSEDMOE_FRONT_TPB): fewer routing warps per SM route faster (their
// instructions compete for the SM's issue slots; qwen3 routing of one token per SM 2.05 us, 8 per
// SM 2.43, 16 per SM 2.88: session 28), so kCoopTokensPerBlock while the blocks fit the cluster
// (kClusterBlocksOf4) or the cooperative grid (kMaxRouteBlocks), else kRouteWarps. Measured on
// the H200 (session 28, call 5, cooperative, kernel time, 4 vs 8 tokens per block):
// 64 / 128 tokens qwen3 5.28 / 5.28 vs 5.41 / 5.41 us, dsv3 + FP8 6.91 / 6.91-6.94 vs 7.04 / 7.23;
// 64 blocks of 4 at 256 tokens (each lane gathering two blocks' masks) lost: 6.24 vs 5.57, 7.90 vs 7.30.
inline constexpr int kCoopTokensPerBlock = 4;
inline constexpr int kWideTokens = 16;  // bound of the single routing block (all 16 warps route)
// Routing blocks as one thread-block cluster (the launcher's front_tokens_per_block): up to
// kClusterBlocksOf4 blocks of 4 tokens (17-48 tokens), else up to kClusterBlocksOf8 of 8 (49-72);
// FUSEDMOE_FRONT_CLUSTER caps the blocks at n <= kMaxClusterBlocks (above 8 a non-portable size,
// where the GPU allows it: else the cooperative launch). Measured on the H200: session 9 (per
// call, against the cooperative launch in the same run) qwen3 17-48 tokens 6.4-6.6 -> 5.75-6.0 us,
// dsv3 + FP8 9.8-9.9 -> 9.1-9.6 us; 2 blocks of 8 tokens lost 1 us at 9 tokens to the single
// block of 16 warps. Session 29, once the counts were pushed (push_group_count), call 3, per call /
// kernel: at 64 tokens a cluster of 8 against the cooperative launch, qwen3 5.51 / 4.90 vs 6.00 /
// 5.06 us, dsv3 + FP8 7.26 / 6.18 vs 7.98 / 6.82; at 17-48 tokens qwen3 4.96-5.24 vs 5.85-6.04,
// dsv3 + FP8 6.64-7.05 vs 7.74-7.92. Call 6, non-portable sizes against the portable default
// (8 blocks) in the same run, per call: 33 / 48 tokens as 9 / 12 blocks of 4 qwen3 5.05 / 5.28 vs
// 5.15 / 5.28 (5 / 6 of 8), dsv3 + FP8 6.65 / 6.95 vs 6.92 / 7.14; 65 tokens as 9 blocks of 8
// qwen3 5.66 vs 6.00 (cooperative), dsv3 7.49 vs 8.09; but 96 tokens as 12 of 8 qwen3 6.30 vs 6.08,
// dsv3 8.39 vs 8.15, and 16 blocks much slower (call 4: 128 tokens qwen3 7.89 vs 6.07).
inline constexpr int kClusterBlocksOf4 = 12;
inline constexpr int kClusterBlocksOf8 = 9;
inline constexpr int kMaxClusterBlocks = 16;
inline constexpr int kPortableClusterBlocks = 8;  // above: cudaFuncAttributeNonPortableClusterSizeAllowed
inline constexpr int kMaxThreads = 512; // 16 warps: all route (one routing block), or 8 + 8 quantising
inline constexpr size_t kFrontMaxSmem = 96 * 1024;  // dynamic shared memory bound (checked on the host)
inline constexpr int64_t kQuantBytesPerBlock = 16 * 1024;  // of x per block when rows are spread

struct FrontParams {
  router_detail::Params r;      // r.num_tokens: the bound; r.num_tokens_dev: optional device count
  plan_detail::PlanParams plan;
  int plan_entries_per_warp;    // ceil(bound entries / warps of the block)
  // Token-order quantisation (quant_scheme != kNone): q_out[t, K] e4m3, q_scales per scheme.
  int quant_scheme;             // pq_detail::Scheme (kNone, kStatic, kToken, kGroup)
  bool ue8m0;
  bool x_f16;                   // x is f16 (else bf16)
  const void* x;
  int64_t x_stride;             // elements
  int hidden;                   // K (multiple of 16)
  int units;                    // K / 16
  const float* static_scale;
  uint8_t* q_out;
  float* q_scales;
  int64_t rows_pad4;            // scale row stride: bound rounded up to 4
  // Launch shape: blocks [0, route_blocks) route (one block of 16 tokens when the bound is <= 16,
  // else tokens_per_block tokens per block); the blocks after them only quantise. quant_warps: quantising warps
  // of the grid (16 per quantising-only block; with routing_blocks_quantise also warps 8-15 of
  // the routing blocks, numbered first: the launcher's fallback when a cluster grid holds no
  // other block).
  int route_blocks;
  int tokens_per_block;         // several routing blocks: tokens (= routing warps) per block, <= kRouteWarps
  int quant_warps;
  bool routing_blocks_quantise;
  uint32_t* block_masks;        // a cooperative launch: block_masks_bytes(G) of scratch
  int cluster_blocks;           // > 1: the routing blocks form one thread-block cluster (no scratch)
  bool precomputed;             // RouterKind::kPrecomputed (the logits mode's instances): r.ids_in / r.weights_in
  // Diagnostic timeline (nullptr in production): globaltimer stamps, kTraceSlots per block
  // (front_launch.h: set_front_trace).
  unsigned long long* trace;
};

// Timeline stamps of the diagnostic trace (routing blocks): per block [0] entry, [1] routing and
// quantisation done; [2] past the grid (or cluster) barrier, [3] group counts of all blocks read,
// [4] rows written; block 0 [5] after the fallback plan, [6] end; block 0's token 0 (route_token's
// route_stamp, a FUSEDMOE_ROUTE_TRACE build) [8] scores, [9] groups kept, [10] candidates sorted,
// [11] k rounds, [12] slots stored.
inline constexpr int kTraceSlots = 16;
inline constexpr int kMaxRouteBlocks = 32;  // 256 tokens / 8 (128 / 4)
inline constexpr int kTraceBlocks = kMaxRouteBlocks;  // the routing blocks
inline constexpr int kRouteTraceSlot = 8;
// Fine stamps (a diagnosis build with -DFUSEDMOE_FRONT_FINE_TRACE=1 only): block 0's thread 0
// records clock64 once `dep` is computed at kFineStamps points after the routing, into the
// kFineStamps slots after the blocks' ones (the bench's buffer holds them).
inline constexpr int kFineStamps = 16;
#ifndef FUSEDMOE_FRONT_FINE_TRACE
#define FUSEDMOE_FRONT_FINE_TRACE 0
#endif
__device__ __forceinline__ void fine_stamp(unsigned long long* trace, int i, uint32_t dep) {
#if FUSEDMOE_FRONT_FINE_TRACE
  if (trace == nullptr || threadIdx.x != 0 || blockIdx.x != 0) return;
  unsigned long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t) : "r"(dep) : "memory");
  trace[kTraceBlocks * kTraceSlots + i] = t;
#else
  (void)trace;
  (void)i;
  (void)dep;
#endif
}
__device__ __forceinline__ void trace_stamp(unsigned long long* trace, int slot) {
  if (trace == nullptr || threadIdx.x != 0 || blockIdx.x >= kTraceBlocks) return;  // routing blocks only
  trace[blockIdx.x * kTraceSlots + slot] = globaltimer_ns();
}
// Block 0's SM clock (clock64) at entry and end, in slots 13 and 14 (the bench's MHz estimate).
__device__ __forceinline__ void trace_clock(unsigned long long* trace, int slot) {
  if (trace == nullptr || threadIdx.x != 0 || blockIdx.x != 0) return;
  trace[slot] = static_cast<unsigned long long>(clock64());
}
// The driver's grid barrier word of a cooperative launch, used as cooperative_groups' grid.sync
// uses it (the first block adds 2^31 - (n - 1), the others 1: its top bit flips once all n have
// arrived, and its low bits return to where they were), but only the n routing blocks meet, each
// reads the word's sense at entry (no block can flip it before its own arrival: the read is off
// the critical path) and arrives with a reduction that returns nothing (red.release), where
// grid.sync's atom waits for the old value. Measured on the H200 (session 28): the barrier 1.10 ->
// 1.03 us after the last block's routing (qwen3, 64-256 tokens).
__device__ __forceinline__ unsigned int* grid_barrier_word() {
  return &cooperative_groups::details::get_grid_workspace()->barrier;
}
__device__ __forceinline__ unsigned int ld_relaxed_gpu(const unsigned int* a) {
  unsigned int v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  return v;
}
__device__ __forceinline__ unsigned int ld_acquire_gpu(const unsigned int* a) {
  unsigned int v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  return v;
}
__device__ __forceinline__ void red_release_gpu_add(unsigned int* a, unsigned int v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(a), "r"(v) : "memory");
}

// ---- the plan of the fused front (see the header comment) ----------------------------------
// Group g's byte of a block: bit w set when the block's token 8b + w reaches g. Four groups per
// 32-bit word (byte g % 4 of word g / 4), in shared memory (s_mask) and, for the other blocks,
// exported to global scratch as word j of block b at [j * 32 + b] (blocks fastest: a warp reads
// one word of all blocks as one 128-byte line; with blocks as rows, 32 blocks reading the same
// 8 KB line by line cost 2-5 us), then each block's duplicate flag at [W * 32 + b] and, from
// precomputed ids, the block's first bad id as a key (token << 5 | slot) at [(W + 1) * 32 + b]
// (0xffffffff: none) and the id as given at [(W + 2) * 32 + b].
inline constexpr int kMaxGroups = 1088;  // G bound of the fused path (E <= 1024 + a shared expert)
inline constexpr int kMaxMaskWords = kMaxGroups / 4;
__host__ __device__ inline int mask_words(int groups) { return (groups + 3) / 4; }
__host__ __device__ inline size_t block_masks_bytes(int groups) {
  return static_cast<size_t>(mask_words(groups) + 3) * kMaxRouteBlocks * 4;
}
// Token ids of the block's tokens, in shared memory for the plan (up to 16 tokens x k <= kMaxTopK;
// prepare_router refuses larger k).
inline constexpr int kSharedIds = kWideTokens * kMaxTopK;
inline constexpr int kMaskWordsPerWarp = (kMaxMaskWords + kMaxThreads / 32 - 1) / (kMaxThreads / 32);

// Phase B of a multi-block launch (after the grid barrier; every thread of a block that owns
// tokens calls it): for each group, its tokens in all blocks (cnt) and pre = its tokens in the
// blocks before this one + the tokens of the groups below it in its mask word, into
// s_cb[g] = pre << 16 | cnt (pre <= 4 x 256), and per mask word the tokens of its four groups into
// s_ws[j]. Warp w takes words w, w + 16, ...; lane l reads block l's word (nb <= 32 blocks own
// tokens); warp reductions over the blocks give both numbers for four groups at once (two 16-bit
// pairs per register). Returns true, in every thread, when some block saw a token reach a group
// twice. Ends with a block barrier.
// The blocks' masks are read from global scratch (a cooperative launch).
struct ScratchMasks {
  const uint32_t* g;
  __device__ __forceinline__ uint32_t word(int b, int j) const { return __ldcg(g + j * kMaxRouteBlocks + b); }
  __device__ __forceinline__ uint32_t dup(int b, int W) const { return __ldcg(g + W * kMaxRouteBlocks + b); }
};
// (.aligned: every thread of a warp executes the same barrier instruction; the __syncwarp makes
// sure the warp has reconverged after the divergent routing and ranking code)
__device__ __forceinline__ void cluster_arrive() {
  __syncwarp();
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
  __syncwarp();
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// A thread-block cluster of routing blocks: each entry pushes its group's count into every block
// of the cluster (s_cb[g] += 1, and += 1 << 16 in the blocks after its own: the tokens of g in
// earlier blocks), with distributed shared memory reductions that return nothing, before the
// cluster barrier; after it every block holds s_cb = bef << 16 | cnt (the tokens of g in earlier
// blocks and in all), then adds the in-word prefixes: gather_block_counts' layout, with no reads
// of other blocks' masks. (Session 29: reading the masks after the barrier took ~1.3-1.6 us at 17
// tokens, the barrier itself ~0.35.)
__device__ __forceinline__ uint32_t cluster_addr(const void* local, int rank) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(local));
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
  return r;
}
__device__ __forceinline__ void push_group_count(uint32_t* local_word, int blocks, int me) {
#pragma unroll 1
  for (int b = 0; b < blocks; ++b)
    asm volatile("red.shared::cluster.add.u32 [%0], %1;" ::"r"(cluster_addr(local_word, b)), "r"(b > me ? 0x10001u : 1u)
                 : "memory");
}
// The least of `v` and block 0's *local_min (distributed shared memory, before the cluster barrier's
// second phase, as push_group_count).
__device__ __forceinline__ void push_min64(unsigned long long* local_min, unsigned long long v) {
  asm volatile("red.shared::cluster.min.u64 [%0], %1;" ::"r"(cluster_addr(local_min, 0)), "l"(v) : "memory");
}
__device__ __forceinline__ void push_flag(int* local_flag, int blocks) {
#pragma unroll 1
  for (int b = 0; b < blocks; ++b)
    asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(cluster_addr(local_flag, b)), "r"(1) : "memory");
}

// Routing blocks that own tokens: ceil(num_tokens / tpb) (num_tokens <= kMaxRouteBlocks x 8 here;
// tpb a power of two in practice: a shift instead of the 64-bit division's ~250 cycles, session 29).
__device__ __forceinline__ int blocks_with_tokens(int64_t num_tokens, int tpb) {
  const int n = static_cast<int>(num_tokens) + tpb - 1;
  return (tpb & (tpb - 1)) == 0 ? n >> (__ffs(tpb) - 1) : n / tpb;
}

template <class Masks>
__device__ __forceinline__ bool gather_block_counts(const Masks& masks, int G, int nb, uint32_t* s_cb, uint32_t* s_ws,
                                                    unsigned long long* trace = nullptr) {
  constexpr unsigned kAll = 0xffffffffu;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const int W = mask_words(G);
  const int me = blockIdx.x;
  const bool reads = lane < nb;
  uint32_t v[kMaskWordsPerWarp];
#pragma unroll
  for (int i = 0; i < kMaskWordsPerWarp; ++i) {
    const int j = warp + i * nwarps;
    v[i] = (reads && j < W) ? masks.word(lane, j) : 0u;
  }
  const uint32_t dup_word = reads ? masks.dup(lane, W) : 0u;
  const bool dup = __any_sync(kAll, dup_word != 0u);
  fine_stamp(trace, 7, dup);
#pragma unroll
  for (int i = 0; i < kMaskWordsPerWarp; ++i) {
    const int j = warp + i * nwarps;
    if (j >= W) break;  // warp-uniform
    const uint32_t x = v[i];
    // (group 4j, 4j + 2) and (4j + 1, 4j + 3) as 16-bit pairs: sums over 32 blocks stay <= 256
    // (the tokens). Totals and the sums over the blocks before this one by warp reductions
    // (REDUX: one instruction each, no shuffle chain).
    const uint32_t own02 = __popc(x & 0xffu) | (__popc(x & 0xff0000u) << 16);
    const uint32_t own13 = __popc(x & 0xff00u) | (__popc(x & 0xff000000u) << 16);
    const bool before = lane < me;
    const uint32_t ta = __reduce_add_sync(kAll, own02), tb = __reduce_add_sync(kAll, own13);
    const uint32_t ea = __reduce_add_sync(kAll, before ? own02 : 0u), eb = __reduce_add_sync(kAll, before ? own13 : 0u);
    if (lane == 0) {  // groups past G have no bits: zero counts
      const int g = 4 * j;
      const uint32_t c0 = ta & 0xffffu, c1 = tb & 0xffffu, c2 = ta >> 16, c3 = tb >> 16;
      s_cb[g] = ((ea & 0xffffu) << 16) | c0;
      s_cb[g + 1] = (((eb & 0xffffu) + c0) << 16) | c1;
      s_cb[g + 2] = (((ea >> 16) + c0 + c1) << 16) | c2;
      s_cb[g + 3] = (((eb >> 16) + c0 + c1 + c2) << 16) | c3;
      s_ws[j] = c0 + c1 + c2 + c3;
    }
  }
  fine_stamp(trace, 8, 0u);
  __syncthreads();
  fine_stamp(trace, 9, 0u);
  return dup;
}

// The group counts phase C reads: one block (its own masks: popcounts) or several (s_cb, s_ws).
// Bits [0, w) of group g's byte in a mask word array.
__device__ __forceinline__ uint32_t byte_below(const uint32_t* mask, int g, int w) {
  return __popc((mask[g >> 2] >> (8 * (g & 3))) & ((1u << w) - 1u));
}
// One routing block of up to 16 tokens: tokens 0-7 in mask, 8-15 in mask2 (same layout).
struct OneBlockCounts {
  const uint32_t* mask;
  const uint32_t* mask2;
  __device__ __forceinline__ uint32_t word(int j) const { return __popc(mask[j]) + __popc(mask2[j]); }
  __device__ __forceinline__ uint32_t cnt(int q) const { return byte_below(mask, q, 8) + byte_below(mask2, q, 8); }
  // Tokens of the groups of g's word below g (no blocks before this one).
  __device__ __forceinline__ uint32_t pre(int g) const {
    const uint32_t m = (1u << (8 * (g & 3))) - 1u;
    return __popc(mask[g >> 2] & m) + __popc(mask2[g >> 2] & m);
  }
  // The block's tokens of g below token `t` of the block.
  __device__ __forceinline__ uint32_t own_below(int g, int t) const {
    return t < 8 ? byte_below(mask, g, t) : byte_below(mask, g, 8) + byte_below(mask2, g, t - 8);
  }
};
struct GridCounts {
  const uint32_t* cb;
  const uint32_t* ws;
  const uint32_t* mask;  // this block's
  __device__ __forceinline__ uint32_t own_below(int g, int t) const { return byte_below(mask, g, t); }
  __device__ __forceinline__ uint32_t word(int j) const { return ws[j]; }
  __device__ __forceinline__ uint32_t cnt(int q) const { return cb[q] & 0xffffu; }
  __device__ __forceinline__ uint32_t pre(int g) const { return cb[g] >> 16; }
};

// Phase C: one warp, every lane calls (warp-uniform). The warp scans the group counts itself
// (lane l: mask words [l * wpl, (l + 1) * wpl), four groups each; one warp scan), so no block
// barrier is needed; an entry lane (g < G: its group, w: its token's bit in the block, entry:
// its global entry index) gets its row = the scan base of g's lane + the tokens of the words
// before g's in that lane's range + pre(g) (the group's tokens in earlier blocks and the tokens
// of the groups before g in its word) + the block's tokens of g below it, and stores slot_row /
// row_token / row_slot. Compact loops: the cost is the chain of dependent instructions (~7 cycles
// per integer op, ~25 per shuffle, ~40 per REDUX on the H200: session 29's latency probe).
template <class C>
__device__ __forceinline__ void warp_plan_rows(const plan_detail::PlanParams& p, const C& c, bool has_entry, int g, int w,
                                               int32_t entry, int32_t token, int slot, unsigned long long* trace = nullptr) {
  constexpr unsigned kAll = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const int G = p.num_groups;
  const int W = mask_words(G);
  const int wpl = static_cast<int>((static_cast<unsigned>(W) + 31u) >> 5);
  const int j0 = lane * wpl, j1 = min(W, j0 + wpl);
  uint32_t sum = 0;
#pragma unroll 1
  for (int j = j0; j < j1; ++j) sum += c.word(j);
  fine_stamp(trace, 10, sum);
  uint32_t inc = sum;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const uint32_t o = __shfl_up_sync(kAll, inc, d);
    if (lane >= d) inc += o;
  }
  const bool mapped = has_entry && g < G;
  const int jg = g >> 2;
  const int owner = !mapped ? 0 : (wpl & (wpl - 1)) == 0 ? jg >> (__ffs(wpl) - 1) : jg / wpl;
  fine_stamp(trace, 11, inc);
  const uint32_t base = __shfl_sync(kAll, inc - sum, owner);
  fine_stamp(trace, 12, base);
  if (!has_entry) return;
  if (!mapped) {
    p.slot_row[entry] = -1;
    return;
  }
  uint32_t r = base + c.pre(g) + c.own_below(g, w);
#pragma unroll 1
  for (int j = owner * wpl; j < jg; ++j) r += c.word(j);
  fine_stamp(trace, 13, r);
  p.slot_row[entry] = static_cast<int32_t>(r);
  p.row_token[r] = token;
  p.row_slot[r] = slot;
  fine_stamp(trace, 14, r);
}

// Block 0's counts, offsets and padded offsets, by one warp (its own scans of the counts).
template <class C>
__device__ __forceinline__ void warp_plan_offsets(const plan_detail::PlanParams& p, const C& c) {
  constexpr unsigned kAll = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const int G = p.num_groups;
  const int gpl = (G + 31) / 32;
  const int g0 = lane * gpl, g1 = min(G, g0 + gpl);
  uint32_t sum = 0, psum = 0;
#pragma unroll 1
  for (int q = g0; q < g1; ++q) {
    const uint32_t n = c.cnt(q);
    sum += n;
    psum += plan_detail::round_up_tile(n, p.tile_m);
  }
  uint32_t inc = sum, pinc = psum;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const uint32_t o = __shfl_up_sync(kAll, inc, d), po = __shfl_up_sync(kAll, pinc, d);
    if (lane >= d) {
      inc += o;
      pinc += po;
    }
  }
  uint32_t run = inc - sum, prun = pinc - psum;
#pragma unroll 1
  for (int q = g0; q < g1; ++q) {
    const uint32_t n = c.cnt(q);
    p.counts[q] = static_cast<int32_t>(n);
    p.offsets[q] = static_cast<int32_t>(run);
    p.padded_offsets[q] = static_cast<int32_t>(prun);
    run += n;
    prun += plan_detail::round_up_tile(n, p.tile_m);
  }
  if (lane == 31) {
    p.offsets[G] = static_cast<int32_t>(inc);
    p.padded_offsets[G] = static_cast<int32_t>(pinc);
  }
}

// Per-token scheme: quantise token t's row (one warp: the row-wide amax first, then the units).
// Bit-identical to permute_quant_kernel in token order.
template <class TIn>
__device__ __forceinline__ void quantize_row_warp(const FrontParams& f, int64_t t, int lane) {
  using namespace pq_detail;
  const uint4* xrow = reinterpret_cast<const uint4*>(static_cast<const TIn*>(f.x) + t * f.x_stride);
  uint4* orow = reinterpret_cast<uint4*>(f.q_out + t * static_cast<int64_t>(f.hidden));
  float m = 0.f;
  for (int u = lane; u < f.units; u += 32) {
    const uint4 raw[2] = {__ldg(xrow + 2 * u), __ldg(xrow + 2 * u + 1)};
    m = fmaxf(m, unit_amax<TIn>(raw));
  }
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  const float t_scale = fp8_scale_from_amax(m, f.ue8m0);
  const float t_inv = rcp_rn(t_scale);
  if (lane == 0 && f.q_scales != nullptr) f.q_scales[t] = t_scale;
  for (int u = lane; u < f.units; u += 32) {
    const uint4 raw[2] = {__ldg(xrow + 2 * u), __ldg(xrow + 2 * u + 1)};
    orow[u] = quantize_unit<TIn>(raw, t_inv);
  }
}

// Static and 128-group schemes: the quantising warps of the whole grid share the rows as (token,
// chunk) items, a chunk being 32 units of 16 elements (4 groups of 128): warp qw of nq takes items
// qw, qw + nq, ... and issues the loads of kChunkBatch items before converting any. One SM
// streams only ~60 GB/s of such loads, so the rows are spread over as many blocks as the host
// gives (FrontParams::quant_blocks). Bytes and scales are bit-identical to quantize_row_warp /
// the permute/quantise kernel.
inline constexpr int kChunkBatch = 4;
template <class TIn>
__device__ __forceinline__ void quantize_chunks_warp(const FrontParams& f, int64_t ntok, int qw, int nq, int lane) {
  using namespace pq_detail;
  const int nchunks = (f.units + 31) / 32;
  const int64_t items = ntok * nchunks;
  float t_scale = 1.f, t_inv = 1.f;
  if (f.quant_scheme == kStatic) {
    t_scale = __ldg(f.static_scale);
    t_inv = rcp_rn(t_scale);
  }
  for (int64_t i0 = qw; i0 < items; i0 += static_cast<int64_t>(nq) * kChunkBatch) {
    uint4 raw[kChunkBatch][2];
#pragma unroll
    for (int b = 0; b < kChunkBatch; ++b) {
      const int64_t item = i0 + static_cast<int64_t>(b) * nq;
      const int64_t t = item / nchunks;
      const int u = static_cast<int>(item - t * nchunks) * 32 + lane;
      const bool in = item < items && u < f.units;
      const uint4* xrow = reinterpret_cast<const uint4*>(static_cast<const TIn*>(f.x) + t * f.x_stride);
#pragma unroll
      for (int l = 0; l < 2; ++l) raw[b][l] = in ? __ldg(xrow + 2 * u + l) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int b = 0; b < kChunkBatch; ++b) {
      const int64_t item = i0 + static_cast<int64_t>(b) * nq;  // warp-uniform
      if (item >= items) break;
      const int64_t token = item / nchunks;
      const int u = static_cast<int>(item - token * nchunks) * 32 + lane;
      const bool in = u < f.units;
      float scale = t_scale, inv = t_inv;
      if (f.quant_scheme == kGroup) {
        float m = unit_amax<TIn>(raw[b]);
#pragma unroll
        for (int o = 1; o < 8; o <<= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        scale = fp8_scale_from_amax(m, f.ue8m0);
        inv = rcp_rn(scale);
        if (in && (u & 7) == 0 && f.q_scales != nullptr) f.q_scales[static_cast<int64_t>(u >> 3) * f.rows_pad4 + token] = scale;
      }
      if (!in) continue;
      reinterpret_cast<uint4*>(f.q_out + token * static_cast<int64_t>(f.hidden))[u] = quantize_unit<TIn>(raw[b], inv);
    }
  }
}

// Quantising warp `qw` of `nq` in the grid: the rows (per-token scheme) or the chunks of x.
__device__ __forceinline__ void quantize_part(const FrontParams& f, int64_t num_tokens, int qw, int nq, int lane) {
  if (f.quant_scheme == pq_detail::kToken) {  // a row-wide amax: one warp per row
    for (int64_t t = qw; t < num_tokens; t += nq) {
      if (f.x_f16) quantize_row_warp<__half>(f, t, lane);
      else quantize_row_warp<__nv_bfloat16>(f, t, lane);
    }
  } else if (f.x_f16) {
    quantize_chunks_warp<__half>(f, num_tokens, qw, nq, lane);
  } else {
    quantize_chunks_warp<__nv_bfloat16>(f, num_tokens, qw, nq, lane);
  }
}

// kOneBlock: the instance for one routing block (bound <= kWideTokens: route_blocks == 1, a plain
// launch, precomputed ids too); the other instance runs several routing blocks (a cluster or a
// cooperative grid). Each holds only its own plan code: at 1-16 tokens a block fetches its
// instructions cold at every call (the grouped GEMMs' raster-only instances, session 20).
template <typename T, int VEC, int NV, router_detail::RowMode M, bool kOneBlock>
__global__ void __launch_bounds__(kMaxThreads, 1) front_small_kernel(const FrontParams f) {
  // kernels/common/pdl.cuh: first, before any global access. Dependents launch now: every reader
  // of this kernel's outputs waits (griddepcontrol.wait) before reading them, as in forward(),
  // where a permute sits between this kernel and GEMM1 (whose early weights read the plan before
  // their wait: complete two launches back).
  pdl_enter();
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ int32_t s_ids[kSharedIds];
  __shared__ uint32_t s_mask[kMaxMaskWords];
  __shared__ uint32_t s_mask2[kMaxMaskWords];  // one routing block: tokens 8-15
  __shared__ uint32_t s_cb[kMaxGroups];
  __shared__ uint32_t s_ws[kMaxMaskWords];
  __shared__ int s_dup;
  __shared__ int s_dup_any;                     // a cluster: some block saw a token reach a group twice
  // Precomputed ids: the first id outside [0, E) in (token, slot) order as (token << 5 | slot) << 32 |
  // the id as read (~0: none; the id as read, since the caller's ids may be the output ids of an
  // earlier call, overwritten by then). Each routing warp with a bad slot takes the minimum with its
  // token's first; block 0's holds the whole launch's at the end (one routing block, a cluster, or
  // the cooperative grid's exported keys).
  __shared__ unsigned long long s_bad64;
  constexpr int kWarps = kMaxThreads / 32;
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int warp = static_cast<int>(threadIdx.x >> 5);
  const int G = f.plan.num_groups;
  const int W = mask_words(G);
  // One routing block (bound <= 16): all 16 warps route (token = warp), no grid barrier, x is
  // quantised by the blocks after it. Several: warps 0..tpb-1 route tokens tpb * b + w.
  constexpr bool wide = kOneBlock;  // (the launcher: route_blocks == 1 exactly with this instance)
  // (precomputed ids run on the logits mode's instances only: the others compile no such branch)
  const bool precomputed = (kOneBlock || M == router_detail::RowMode::kLogitsRow) && f.precomputed;
  const bool routes = static_cast<int>(blockIdx.x) < f.route_blocks;
  const int tpb = f.tokens_per_block;  // several routing blocks (wide: all 16 warps route)
  const bool route_warp = routes && (wide || warp < tpb);
  const int64_t num_tokens = resolve_token_count(f.r.num_tokens, f.r.num_tokens_dev, nullptr);  // flag: block 0, last
  const int64_t token = wide ? warp : static_cast<int64_t>(blockIdx.x) * tpb + warp;
  trace_stamp(f.trace, 0);
  trace_clock(f.trace, 13);
  fine_stamp(f.trace, 0, 0u);
  // A cooperative launch: the barrier word's sense before any routing block arrives (see
  // grid_barrier_word), read by a thread that does not route (warp 8) for thread 0.
  const bool cooperative = !wide && f.cluster_blocks <= 1;
  const bool clustered = !wide && f.cluster_blocks > 1;
  __shared__ unsigned int s_bar_sense;
  if (cooperative && routes && threadIdx.x == kRouteWarps * 32) s_bar_sense = ld_relaxed_gpu(grid_barrier_word());
  if (routes) {
    if (wide) {  // zeroed by everyone; the block barrier after the routing orders it before the bits
      for (int q = threadIdx.x; q < W; q += blockDim.x) s_mask[q] = s_mask2[q] = 0u;
      if (threadIdx.x == 0) {
        s_dup = 0;
        s_bad64 = ~0ull;
      }
    } else if (warp >= tpb) {
      // Zeroed by the other warps, which then arrive at named barrier 1; the routing warps wait there
      // (long done by then) before setting bits. No block barrier before the routing.
      for (int q = threadIdx.x - tpb * 32; q < W; q += blockDim.x - tpb * 32) s_mask[q] = 0u;
      if (threadIdx.x == tpb * 32) {
        s_dup = 0;
        s_bad64 = ~0ull;
      }
      if (clustered) {
        // A cluster: also the pushed counts, then the cluster barrier's first phase (every block's
        // zeros before any push), which also orders s_mask's for this block's routing warps.
        for (int q = threadIdx.x - tpb * 32; q < G; q += blockDim.x - tpb * 32) s_cb[q] = 0u;
        if (threadIdx.x == tpb * 32) s_dup_any = 0;
        cluster_arrive();
      } else {
        asm volatile("bar.arrive 1, %0;" ::"r"(kMaxThreads) : "memory");
      }
    } else if (clustered) {
      cluster_arrive();  // the routing warps: nothing to zero
    }
  }

  // The entry of a routing warp's lane: slot `lane` of the warp's token (lane < slots).
  bool has_entry = false;
  int g = G, slot = 0;
  uint32_t bad_slots = 0u;  // precomputed: the slots of the warp's token with an id outside [0, E)
  int32_t first_bad = 0;    // ... and the first one's id as read
  if (route_warp) {
    if (token < num_tokens) {
      int32_t* ids = s_ids + warp * f.r.k;
      uint32_t* wsm = reinterpret_cast<uint32_t*>(smem_raw) + static_cast<int64_t>(warp) * (f.r.num_experts + f.r.n_group);
      unsigned long long* rtrace = (f.trace != nullptr && blockIdx.x == 0 && warp == 0) ? f.trace + kRouteTraceSlot : nullptr;
      if (precomputed) {  // the caller's ids and weights (router_gather_kernel's checks and slots)
        int32_t id = -1, raw = -1;
        float w = 0.f;
        bool bad = false;
        if (lane < f.r.k) {
          const int64_t i = token * f.r.k + lane;
          raw = id = f.r.ids_in[i];
          w = f.r.weights_in[i];
          bad = id < 0 || id >= f.r.num_experts;
          if (bad) {
            id = -1;
            w = 0.f;
          }
        }
        bad_slots = __ballot_sync(0xffffffffu, bad);
        first_bad = __shfl_sync(0xffffffffu, raw, bad_slots != 0u ? __ffs(static_cast<int>(bad_slots)) - 1 : 0);
        router_detail::finish_slots(f.r, token, lane, lane < f.r.k, id, w, bad, 32, ids);
      } else {
        route_token<T, VEC, NV, M, true>(f.r, token, lane, wsm, router_detail::valid_slots<VEC, NV>(lane, f.r.num_experts),
                                         ids, rtrace);
      }
      __syncwarp();
      fine_stamp(f.trace, 1, static_cast<uint32_t>(ids[0]));
    }
    if (wide) __syncthreads();
    else if (clustered) cluster_wait();  // every block's s_cb and s_mask are zero
    else asm volatile("bar.sync 1, %0;" ::"r"(kMaxThreads) : "memory");  // every routing warp: the masks are zero
    if (token < num_tokens) {
      const int32_t* ids = s_ids + warp * f.r.k;
      const plan_detail::PlanParams& p = f.plan;
      if (lane < p.slots) {
        has_entry = true;
        slot = lane;
        if (lane >= p.top_k) {
          g = p.num_local;  // the shared expert: every token
        } else {
          const int32_t id = ids[lane];
          if (id >= 0 && id < p.num_experts) {
            const int32_t m = p.expert_map != nullptr ? __ldg(p.expert_map + id) : id;
            if (m >= 0 && m < p.num_local) g = m;
          }
        }
        if (g < G) {
          const uint32_t bit = 1u << (8 * (g & 3) + (warp & 7));
          if (atomicOr((warp >= 8 ? s_mask2 : s_mask) + (g >> 2), bit) & bit) {
            s_dup = 1;
            if (clustered) push_flag(&s_dup_any, f.cluster_blocks);
          }
          if (clustered) push_group_count(s_cb + g, f.cluster_blocks, static_cast<int>(blockIdx.x));
        }
      }
      if (bad_slots != 0u && lane == 0) {
        // The token's first bad slot: into block 0's minimum (a cluster) or this block's (one
        // routing block; the cooperative grid exports it with the masks), after the barrier that
        // ordered s_bad64's initialisation.
        const unsigned long long key =
            (static_cast<unsigned long long>((static_cast<uint32_t>(token) << 5) | (__ffs(static_cast<int>(bad_slots)) - 1))
             << 32) |
            static_cast<uint32_t>(first_bad);
        if (clustered) push_min64(&s_bad64, key);
        else atomicMin(&s_bad64, key);
      }
      fine_stamp(f.trace, 2, static_cast<uint32_t>(g));
    }
  } else if (f.quant_scheme != pq_detail::kNone && (!routes || (f.routing_blocks_quantise && warp >= kRouteWarps))) {
    // Quantising warps, numbered over the grid: 16 per quantising-only block. The routing blocks'
    // warps 8-15 do not quantise (sharing the SM slowed the routing warps: dsv3 + FP8 at 64-256
    // tokens routed ~0.35 us later; session 28) unless no other block does. The first 8 also zero
    // the scales' padding.
    const int first = f.routing_blocks_quantise ? f.route_blocks * kRouteWarps : 0;
    const int qw = routes ? static_cast<int>(blockIdx.x) * kRouteWarps + (warp - kRouteWarps)
                          : first + (static_cast<int>(blockIdx.x) - f.route_blocks) * kWarps + warp;
    quantize_part(f, num_tokens, qw, f.quant_warps, lane);
    if (qw < kRouteWarps && f.q_scales != nullptr) {
      const int qt = qw * 32 + lane;
      constexpr int qn = kRouteWarps * 32;
      if (f.quant_scheme == pq_detail::kStatic) {
        if (qt == 0) f.q_scales[0] = __ldg(f.static_scale);
      } else {
        // Zero the scale slots of rows [bound, rows_pad4) (the TMA padding), as the quantiser.
        const int pad = static_cast<int>(f.rows_pad4 - f.r.num_tokens);
        const int kb = f.quant_scheme == pq_detail::kGroup ? (f.hidden + 127) / 128 : 1;
        for (int i = qt; i < kb * pad; i += qn)
          f.q_scales[static_cast<int64_t>(i / pad) * f.rows_pad4 + f.r.num_tokens + i % pad] = 0.f;
      }
    }
  }

  const int64_t entry = token * f.plan.slots + slot;
  const bool ranks = route_warp && token < num_tokens;  // warp-uniform
  bool dup;
  if (wide) {
    // One routing block: no grid barrier (blocks after it only quantise, and are done).
    if (!routes) return;
    __syncthreads();
    trace_stamp(f.trace, 1);
    trace_stamp(f.trace, 2);
    dup = s_dup != 0;
    trace_stamp(f.trace, 3);
    if (!dup) {
      // The first warp without a token (or the last) also writes counts and offsets.
      const int writer = num_tokens < kWarps - 1 ? static_cast<int>(num_tokens) : kWarps - 1;
      const OneBlockCounts c{s_mask, s_mask2};
      if (ranks)
        warp_plan_rows(f.plan, c, has_entry, g, warp, static_cast<int32_t>(entry), static_cast<int32_t>(token), slot, f.trace);
      if (warp == writer) warp_plan_offsets(f.plan, c);
    }
  } else if (f.cluster_blocks > 1) {
    // A thread-block cluster of routing blocks (blocks after it only quantise, and are done): the
    // entries pushed their counts into every block (push_group_count); the cluster barrier's
    // second phase makes them visible. No block reads another's shared memory after it, so
    // blocks leave when done.
    if (!routes) return;
    if (!route_warp) cluster_wait();  // the first phase (the routing warps waited before pushing)
    trace_stamp(f.trace, 1);
    cluster_arrive();
    cluster_wait();
    trace_stamp(f.trace, 2);
    // Per mask word the tokens of its four groups (warp_plan_rows' scan), and each group's pre
    // (gather_block_counts' layout); groups past G are unset.
    for (int j = threadIdx.x; j < W; j += blockDim.x) {
      uint32_t t = 0;
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (4 * j + q < G) {
          const uint32_t v = s_cb[4 * j + q];
          s_cb[4 * j + q] = v + (t << 16);
          t += v & 0xffffu;
        }
      s_ws[j] = t;
    }
    dup = s_dup_any != 0;
    __syncthreads();
    trace_stamp(f.trace, 3);
    if (!dup) {
      const GridCounts c{s_cb, s_ws, s_mask};
      if (ranks)
        warp_plan_rows(f.plan, c, has_entry, g, warp & 7, static_cast<int32_t>(entry), static_cast<int32_t>(token), slot, f.trace);
      if (blockIdx.x == 0 && warp == kRouteWarps) warp_plan_offsets(f.plan, c);
    }
  } else {
    // Every block with tokens exports its masks; the barrier (release / acquire) makes them
    // visible to the plan.
    if (routes) {
      __syncthreads();
      trace_stamp(f.trace, 1);
      if (threadIdx.x <= W)
        f.block_masks[threadIdx.x * kMaxRouteBlocks + blockIdx.x] = threadIdx.x < W ? s_mask[threadIdx.x] : static_cast<uint32_t>(s_dup);
      static_assert(kMaxMaskWords < kMaxThreads - 1, "the bad-id export's thread exports no mask word");
      if (precomputed && threadIdx.x == kMaxThreads - 1) {
        const unsigned long long v = s_bad64;
        f.block_masks[(W + 1) * kMaxRouteBlocks + blockIdx.x] = static_cast<uint32_t>(v >> 32);
        f.block_masks[(W + 2) * kMaxRouteBlocks + blockIdx.x] = static_cast<uint32_t>(v);
      }
    }
    // Only the routing blocks meet (grid_barrier_word); the quantising-only blocks are done.
    if (!routes) return;
    __syncthreads();  // the exported masks before thread 0's release
    fine_stamp(f.trace, 3, 0u);
    if (threadIdx.x == 0) {
      unsigned int* bar = grid_barrier_word();
      red_release_gpu_add(bar, blockIdx.x == 0 ? 0x80000000u - static_cast<unsigned int>(f.route_blocks - 1) : 1u);
      fine_stamp(f.trace, 4, 0u);
      const unsigned int sense = s_bar_sense;
      while (((ld_acquire_gpu(bar) ^ sense) & 0x80000000u) == 0u) {
      }
    }
    __barrier_sync(0);  // as grid.sync (the non-.aligned barrier: thread 0 arrives after its loop)
    trace_stamp(f.trace, 2);
    fine_stamp(f.trace, 5, 0u);
    const int nb = blocks_with_tokens(num_tokens, tpb);
    fine_stamp(f.trace, 6, static_cast<uint32_t>(nb));
    if (static_cast<int>(blockIdx.x) >= max(nb, 1)) return;  // no tokens here (block 0 stays: it writes counts)
    dup = gather_block_counts(ScratchMasks{f.block_masks}, G, nb, s_cb, s_ws, f.trace);
    trace_stamp(f.trace, 3);
    if (precomputed && blockIdx.x == 0 && warp == kRouteWarps + 1) {
      // Every routing block's first bad id (exported before the barrier): the least key, into
      // block 0's s_bad64 for the error flag (read after the block barrier at the end).
      const bool reads = lane < f.route_blocks;
      const uint32_t key = reads ? __ldcg(f.block_masks + (W + 1) * kMaxRouteBlocks + lane) : ~0u;
      const uint32_t id = reads ? __ldcg(f.block_masks + (W + 2) * kMaxRouteBlocks + lane) : ~0u;
      const uint32_t least = __reduce_min_sync(0xffffffffu, key);
      const int at = __ffs(static_cast<int>(__ballot_sync(0xffffffffu, key == least))) - 1;
      const uint32_t least_id = __shfl_sync(0xffffffffu, id, at);
      if (lane == 0) s_bad64 = (static_cast<unsigned long long>(least) << 32) | least_id;
    }
    if (!dup) {
      // Block 0's warp 8 writes counts and offsets while the routing warps compute their rows.
      const GridCounts c{s_cb, s_ws, s_mask};
      if (ranks)
        warp_plan_rows(f.plan, c, has_entry, g, warp & 7, static_cast<int32_t>(entry), static_cast<int32_t>(token), slot, f.trace);
      if (blockIdx.x == 0 && warp == kRouteWarps) warp_plan_offsets(f.plan, c);
    }
  }
  trace_stamp(f.trace, 4);
  if (blockIdx.x != 0) return;
  // A token reached a group twice (an expert map folding experts): block 0 runs the general plan
  // (the ids are in global memory; every routing warp wrote them before the barrier).
  if (dup) {
    __syncthreads();
    plan_detail::plan_rank_scatter_body<true>(f.plan, 0, 0, static_cast<int32_t>(num_tokens * f.plan.slots),
                                              f.plan_entries_per_warp);
  }
  trace_stamp(f.trace, 5);
  // The whole error flag: the device token count that was clamped, else (precomputed ids) the
  // first id outside [0, E) in (token, slot) order, else zero.
  if (precomputed && cooperative) __syncthreads();  // warp 9's s_bad64 (every thread of block 0 is here)
  if (threadIdx.x == 0) {
    int4 bad = make_int4(0, 0, 0, 0);
    if (precomputed) {  // (one routing block: its minimum, ordered by the block barrier after the masks)
      const unsigned long long v = s_bad64;
      const uint32_t key = static_cast<uint32_t>(v >> 32);
      if (key != ~0u) bad = make_int4(kErrorIdOutOfRange, static_cast<int>(key >> 5), static_cast<int>(key & 31u),
                                      static_cast<int32_t>(static_cast<uint32_t>(v)));
    }
    write_token_count_flag(f.r.num_tokens, f.r.num_tokens_dev, f.r.error_flag, bad);
  }
  trace_clock(f.trace, 14);
  fine_stamp(f.trace, 15, 0u);
  trace_stamp(f.trace, 6);
}

}  // namespace fusedmoe::kernels::front_detail
