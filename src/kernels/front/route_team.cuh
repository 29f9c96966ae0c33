// route_team.cuh — a team of W warps routes one token (the fused front's single routing block,
// up to 8 tokens), for the elementwise-score biased routers (kBiasedTopK with a sigmoid or
// sqrt-softplus score: DeepSeek-V3/R1, Kimi-K2, GLM, DeepSeek-V4 style), grouped or not.
//
// Why: one warp routing one token of 256 experts is a chain of dependent steps (8 slots per lane:
// scores, group top-2 by shuffles, a sorting network, k argmax rounds): ~3.8 us for a DeepSeek-V3
// token on the H200 (session 14), most of the fused front's decode latency. With one expert per
// thread the same selection is a few short, parallel steps and no rounds:
//   1. thread tt of the team (32 W threads) owns experts tt + i * 32 W (i < S <= kTeamSlots):
//      score, biased key (hd:: math: the router's own bits); grouped: keys to shared memory;
//   2. grouped: each group's top-2 keys (L lanes per group, strided scan + xor merge: the
//      router's method), its score key; a group is kept iff fewer than topk_group groups beat it
//      (higher key, or equal and lower index); experts of dropped groups get key 0 ("none");
//   3. each chunk of 32 consecutive experts (one warp, one i) ranks its keys among themselves
//      (32 broadcast shuffles; ties: lower expert); its k best are the chunk's candidates, at
//      fixed places cand[chunk * k + rank] (zeroed first: no atomics, no order dependence);
//   4. every candidate counts the candidates that beat it (a few threads each): rank r < k puts
//      it in slot r;
//   5. the team's first warp finishes the k slots as the router does (finish_slots: weights in
//      slot order, renormalised, scaled, stored; ids to the plan's shared copy).
// The k best by (key desc, expert asc) are those of the union of every chunk's k best, so the
// ids, their order and the weights are those of route_token (bit-identical: same keys, same
// weight arithmetic in the same slot order). Named barriers 1 + team index (the single routing
// block uses no other named barrier).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/timer.cuh"
#include "kernels/router/router.cuh"

namespace fusedmoe::kernels::front_detail {

inline constexpr int kTeamSlots = 4;      // experts per thread at most
inline constexpr int kTeamMaxGroups = 32; // n_group bound of the team path (kept-group counts per thread)
inline constexpr int kTeamMaxCand = 128;  // chunks x k bound (each candidate compares with all)
inline constexpr int kTeamMaxTokens = 8;  // teams of >= 2 warps in one block of 16 warps

__host__ __device__ inline int team_chunks(int num_experts) { return (num_experts + 31) / 32; }
// Shared memory of one token's team, in words (the candidates 16-byte aligned, read as pairs;
// the team's base is 16-byte aligned): keys [E] (first the raw bias), scores [E] (first the raw
// logits), group keys [n_group], kept-group flags [n_group], candidates as (key, expert) pairs
// [nc2] (nc2 = chunks x k rounded up to even, zeroed first) and their unbiased scores [nc2], slots
// (expert, key, unbiased score) [3 k].
struct TeamLayout {
  int vals, gkey, kept, nc2, cand, cval, slot, words;
  __host__ __device__ TeamLayout(int num_experts, int n_group, int k) {
    vals = num_experts;
    gkey = 2 * num_experts;
    kept = gkey + n_group;
    nc2 = (team_chunks(num_experts) * k + 1) / 2 * 2;
    cand = (kept + n_group + 3) / 4 * 4;
    cval = cand + 2 * nc2;
    slot = cval + nc2;
    words = (slot + 3 * k + 3) / 4 * 4;
  }
};

// Warps per token for `tokens` tokens in a block of 16 warps (a power of two), or 1 (the
// warp-per-token path): at most `cap`, no more than one expert per thread needs, at most
// kTeamSlots experts per thread.
__host__ __device__ inline int team_warps(int64_t tokens, int num_experts, int cap) {
  int w = cap;
  while (w > 1 && tokens * w > 16) w >>= 1;
  while (w > 1 && 32 * (w >> 1) >= num_experts) w >>= 1;
  if (w > 1 && (num_experts + 32 * w - 1) / (32 * w) > kTeamSlots) w = 1;
  return w;
}

__device__ __forceinline__ void team_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// The front trace's stamps of the team's phases (slots kRouteTraceSlot + n; lane 0 of the token's
// first warp, when the diagnostic trace is on): keys, kept groups, chunk candidates, ranks, stored.
__device__ __forceinline__ void team_stamp(unsigned long long* trace, int n) {
  if (trace != nullptr && (threadIdx.x & 31) == 0) trace[n] = globaltimer_ns();
}

// Routes `token` with warps [tb * W, tb * W + W) of the block (wi: this warp's index in the team).
// sm: the team's TeamLayout::words of shared memory; ids_shared: the token's k ids for the plan.
// Compact on purpose: every loop but the loads is rolled. This code runs once per launch on an SM
// whose instruction cache has not seen it, and fetching straight-line code costs more than
// executing it (a first version, unrolled over the slots and the 32 ranks, was 0.6-6.6 us slower
// than the single warp at 1-8 tokens on the H200: session 15, call 1).
template <typename T, router_detail::RowMode M>
__device__ __forceinline__ void route_token_team(const router_detail::Params& p, int64_t token, int tb, int wi, int W,
                                                 int lane, uint32_t* sm, int32_t* ids_shared,
                                                 unsigned long long* trace) {
  using namespace router_detail;
  static_assert(M == RowMode::kSigmoidRow || M == RowMode::kSqrtSoftplusRow, "elementwise scores only");
  const int E = p.num_experts, k = p.k;
  const int nt = 32 * W, tt = wi * 32 + lane;
  const int bar = 1 + tb;
  const bool grouped = p.n_group > 1;
  const bool use_bias = p.bias != nullptr;
  const TeamLayout lay(E, p.n_group, k);
  const int nc2 = lay.nc2;
  uint32_t* keys = sm;                                        // [E]
  float* vals = reinterpret_cast<float*>(sm + lay.vals);      // [E]
  uint32_t* gkey = sm + lay.gkey;                             // [n_group]
  uint32_t* kept = sm + lay.kept;                             // [n_group]
  uint2* cand = reinterpret_cast<uint2*>(sm + lay.cand);      // [nc2] (key, expert)
  float* cval = reinterpret_cast<float*>(sm + lay.cval);      // [nc2]
  uint32_t* slot = sm + lay.slot;                             // [k] x (expert, key, score)

  // 1. Loads (all in flight at once), then scores and keys, each thread its own experts.
  const T* row = static_cast<const T*>(p.logits) + token * E;
#pragma unroll
  for (int i = 0; i < kTeamSlots; ++i) {
    const int e = tt + i * nt;
    if (e < E) {
      vals[e] = load_logit(row + e);
      if (use_bias) keys[e] = __float_as_uint(__ldg(p.bias + e));
    }
  }
#pragma unroll 1
  for (int e = tt; e < E; e += nt) {
    const float s = score_of<M>(vals[e], 0.f, 0.f);
    const float b = use_bias ? hd::add(s, __uint_as_float(keys[e])) : s;
    vals[e] = s;
    keys[e] = hd::to_key(hd::canon(b));
  }
#pragma unroll 1
  for (int c = tt; c < nc2; c += nt) cand[c] = make_uint2(0u, 0u);
  team_barrier(bar, nt);
  team_stamp(trace, 0);

  // 2. Kept groups: each group's top-2 keys (L lanes per group), its score key; a group is kept
  // iff fewer than topk_group groups beat it.
  const int gs = grouped ? p.group_size : E;
  if (grouped) {
    const int ng = p.n_group;
    int L = 32;
    while (L > 1 && ng * L > nt) L >>= 1;
#pragma unroll 1
    for (int g0 = 0; g0 < ng; g0 += nt / L) {  // uniform over the team
      const int g = g0 + tt / L, sub = tt & (L - 1);
      uint32_t t1 = 0, t2 = 0;
      if (g < ng) {
#pragma unroll 1
        for (int j = sub; j < gs; j += L) {
          const uint32_t kk = keys[g * gs + j];
          if (kk > t1) {
            t2 = t1;
            t1 = kk;
          } else if (kk > t2) {
            t2 = kk;
          }
        }
      }
#pragma unroll 1
      for (int d = L >> 1; d >= 1; d >>= 1) {
        const uint32_t o1 = __shfl_xor_sync(kFull, t1, d), o2 = __shfl_xor_sync(kFull, t2, d);
        const uint32_t n2 = umax(umin(t1, o1), umax(t2, o2));
        t1 = umax(t1, o1);
        t2 = n2;
      }
      if (g < ng && sub == 0) {
        const float score = gs == 1 ? hd::from_key(t1) : hd::add(hd::from_key(t1), hd::from_key(t2));
        gkey[g] = hd::to_key(hd::canon(score));
      }
    }
    team_barrier(bar, nt);
#pragma unroll 1
    for (int g = tt; g < ng; g += nt) {
      const uint32_t mine = gkey[g];
      int beaten = 0;
#pragma unroll 1
      for (int h = 0; h < ng; ++h) {
        const uint32_t o = gkey[h];
        beaten += (o > mine || (o == mine && h < g)) ? 1 : 0;
      }
      kept[g] = beaten < p.topk_group ? 1u : 0u;
    }
    team_barrier(bar, nt);
  }
  team_stamp(trace, 1);

  // 3. Each chunk's k best: the chunk is this warp's 32 experts of round i (ties: lower expert).
#pragma unroll 1
  for (int base = wi * 32; base < E; base += nt) {  // uniform over the warp
    const int e = base + lane;
    const uint32_t mk = e < E && (!grouped || kept[e / gs] != 0u) ? keys[e] : 0u;
    if (!__any_sync(kFull, mk != 0u)) continue;
    int r = 0;
#pragma unroll 4
    for (int j = 0; j < 32; ++j) {
      const uint32_t o = __shfl_sync(kFull, mk, j);
      r += (o > mk || (o == mk && j < lane)) ? 1 : 0;
    }
    if (mk != 0u && r < k) {
      const int c = (base >> 5) * k + r;
      cand[c] = make_uint2(mk, static_cast<uint32_t>(e));
      cval[c] = vals[e];
    }
  }
  team_barrier(bar, nt);
  team_stamp(trace, 2);

  // 4. Global ranks of the candidates: P threads per candidate (lanes of one warp), each counting
  // over every P-th pair of candidates (16-byte reads), summed by xor shuffles.
  int P = 1;
  while (P < 32 && nc2 * P * 2 <= nt) P <<= 1;
  const uint4* pairs = reinterpret_cast<const uint4*>(cand);
#pragma unroll 1
  for (int c0 = 0; c0 < nc2; c0 += nt / P) {  // uniform over the team
    const int c = c0 + tt / P, part = tt & (P - 1);
    const uint2 me = c < nc2 ? cand[c] : make_uint2(0u, 0u);
    int r = 0;
    if (me.x != 0u) {
#pragma unroll 1
      for (int j = part; j < nc2 / 2; j += P) {
        const uint4 o = pairs[j];
        r += (o.x > me.x || (o.x == me.x && o.y < me.y)) ? 1 : 0;
        r += (o.z > me.x || (o.z == me.x && o.w < me.y)) ? 1 : 0;
      }
    }
#pragma unroll 1
    for (int d = P >> 1; d >= 1; d >>= 1) r += __shfl_xor_sync(kFull, r, d);
    if (me.x != 0u && part == 0 && r < k) {
      slot[3 * r] = me.y;
      slot[3 * r + 1] = me.x;
      slot[3 * r + 2] = __float_as_uint(cval[c]);
    }
  }
  team_barrier(bar, nt);
  team_stamp(trace, 3);

  // 5. The slots, as route_token finishes them.
  if (wi != 0) return;
  int32_t id = -1;
  float w = 0.f;
  if (lane < k) {
    id = static_cast<int32_t>(slot[3 * lane]);
    w = use_bias ? __uint_as_float(slot[3 * lane + 2]) : hd::from_key(slot[3 * lane + 1]);
  }
  finish_slots(p, token, lane, lane < k, id, w, false, 32, ids_shared);
  team_stamp(trace, 4);
}

}  // namespace fusedmoe::kernels::front_detail
