// router.cuh — the router kernels of fusedmoe/router.h (every RouterKind), bit-exact with the CPU
// reference src/reference/router.cpp.
//
// router_topk_kernel<T, VEC, NV>: one warp per token (grid-stride), 4 warps per block.
//   * Layout (router_common.h): lane l holds experts l*VEC + i*32*VEC + c (i < NV, c < VEC) in
//     registers, read as one VEC-wide load per i (16 / 8 / 4 bytes; scalar loads when the logits
//     pointer is not aligned, same layout). Invalid slots (expert >= E) read as -inf.
//   * Softmax (canonical order, documented in router_common.h and router.cpp): warp max by xor
//     shuffles; y = hd::expf(x - max); each lane sums its slots in ascending order from 0; xor
//     butterfly 16, 8, 4, 2, 1 (own + other); p = y / sum. The CPU reference emulates exactly
//     this with 32 partial sums.
//   * Selection: each value becomes an order-preserving uint32 key of its canonical float
//     (NaN -> -inf, -0 -> +0). Each lane caches the best key of its not-yet-taken slots (strict
//     '>', ascending: its lowest expert among equals). A round is __reduce_max_sync over the
//     lanes' keys, then __reduce_min_sync over the expert ids of the lanes holding that key:
//     the global maximum with the lowest expert id. Only the winning lane marks the slot taken
//     and rescans. k rounds; -inf keys (0x007FFFFF) stay selectable, "none" is key 0.
//   * Grouped kBiasedTopK: the biased keys go to shared memory; L = 2^floor(log2(32/n_group))
//     lanes per group (1 when n_group >= 32) find the group's top-2 keys (strided scan + xor
//     merge), score = canon(top1 + top2); topk_group rounds of the same argmax over the groups
//     (ties: lower group) mark the eligible experts; then the k rounds over those.
//   * Weights: from the winning key (softmax p, unbiased s, logits), or for kBiasedTopK with a
//     correction bias by re-reading the chosen logit and recomputing its score with the same
//     max/sum. Lane j < k owns slot j; slot sums (k-way softmax, renormalisation) run in slot
//     order from 0 through shuffles; then * routed_scaling.
// router_gather_kernel<T>: kPrecomputed and kHash (without logits or with an elementwise score):
//   a segment of KP = 2^ceil(log2 k) lanes per token, lane j = slot j; ids validated (bad ones ->
//   -1, weight 0, reported through error_flag with atomicCAS).
// All float arithmetic that must match the reference goes through hd:: (no contraction).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "fusedmoe/router.h"
#include "kernels/common/pdl.cuh"
#include "kernels/common/hd_math.h"
#include "kernels/common/router_common.h"
#include "kernels/common/token_count.cuh"
#include "kernels/router/router_launch.h"

namespace fusedmoe::kernels::router_detail {

inline constexpr int kWarpsPerBlock = 4;
inline constexpr int kThreads = 32 * kWarpsPerBlock;
// Resident blocks per SM the registers are budgeted for: up to 8 slots per lane 8 blocks (64
// registers per thread, 32 warps; without spills), else 1. More warps hide the latency of the
// shuffle and reduction chains (the kernel is bound by its ALU pipe at large T: ncu, session 13).
__host__ __device__ constexpr int min_blocks_for_slots(int slots) { return slots <= 8 ? 8 : 1; }
inline constexpr int kGatherThreads = 256;
inline constexpr unsigned kFull = 0xffffffffu;

struct Params {
  int64_t num_tokens = 0;       // launch bound (the count itself unless num_tokens_dev is set)
  const int32_t* num_tokens_dev = nullptr;  // optional device-side count <= num_tokens
  int num_experts = 0;
  int k = 1;
  RouterKind kind = RouterKind::kSoftmaxTopK;
  ScoreFunction score = ScoreFunction::kSoftmax;
  bool renormalize = false;
  bool aligned = false;         // logits base aligned to VEC * sizeof(T)
  float scaling = 1.f;
  int n_group = 1;              // > 1: grouped kBiasedTopK
  int topk_group = 1;
  int group_size = 1;
  int lanes_per_group = 1;      // power of two
  int kp_log2 = 0;              // gather: lanes per token = 1 << kp_log2 >= k
  const void* logits = nullptr;
  const float* bias = nullptr;
  const int64_t* token_ids = nullptr;
  const int32_t* hash_table = nullptr;
  int64_t hash_vocab = 0;
  const int32_t* ids_in = nullptr;
  const float* weights_in = nullptr;
  int32_t* ids_out = nullptr;
  float* weights_out = nullptr;
  int32_t* error_flag = nullptr;
  bool owns_error_flag = false; // router_topk_kernel writes the whole flag (RouterArgs::owns_error_flag)
  int wsm_words = 0;            // router_topk_kernel: per-warp words of the grouped scratch (E + n_group)
};

// Words of a warp's shared lists for the sorted selection of the router kernel (slots 1..kCap-1
// of each lane as uint2), 0 when the selection is not the sorted one (kCap outside [2, 8]).
__host__ __device__ constexpr int heads_words(int cap) { return cap >= 2 && cap <= 8 ? (cap - 1) * 32 * 2 : 0; }

// ---- loads ----
// Element types: float, or uint16_t holding bf16 bits.
__device__ __forceinline__ float load_logit(const float* p) { return hd::sanitize_logit(__ldg(p)); }
__device__ __forceinline__ float load_logit(const uint16_t* p) {
  return hd::sanitize_logit(hd::bf16_bits_to_float(__ldg(reinterpret_cast<const unsigned short*>(p))));
}

// The raw (widened, not yet sanitised) logit at p.
__device__ __forceinline__ float raw_logit(const float* p) { return __ldg(p); }
__device__ __forceinline__ float raw_logit(const uint16_t* p) {
  return hd::bf16_bits_to_float(__ldg(reinterpret_cast<const unsigned short*>(p)));
}

// VEC consecutive logits from p (VEC-aligned when `aligned`), widened and sanitised. Both load
// paths fill the same raw values and the sanitising runs once after them (if-converted, the two
// paths would otherwise each sanitise: ALU instructions, the pipe that bounds the router kernel).
template <int VEC, typename T>
__device__ __forceinline__ void load_chunk(const T* p, bool aligned, float* out) {
  constexpr int kBytes = VEC * static_cast<int>(sizeof(T));
  float raw[VEC];
  bool vectorised = false;
  if constexpr (VEC > 1) {
    if (aligned) {
      vectorised = true;
      uint32_t w[kBytes / 4];
      if constexpr (kBytes == 16) {
        const uint4 u = __ldg(reinterpret_cast<const uint4*>(p));
        w[0] = u.x; w[1] = u.y; w[2] = u.z; w[3] = u.w;
      } else if constexpr (kBytes == 8) {
        const uint2 u = __ldg(reinterpret_cast<const uint2*>(p));
        w[0] = u.x; w[1] = u.y;
      } else {
        static_assert(kBytes == 4, "vector width");
        w[0] = __ldg(reinterpret_cast<const unsigned int*>(p));
      }
#pragma unroll
      for (int j = 0; j < kBytes / 4; ++j) {
        if constexpr (sizeof(T) == 4) {
          raw[j] = hd::as_float(w[j]);
        } else {
          raw[2 * j] = hd::as_float(w[j] << 16);
          raw[2 * j + 1] = hd::as_float(w[j] & 0xffff0000u);
        }
      }
    }
  }
  if (!vectorised) {
#pragma unroll
    for (int c = 0; c < VEC; ++c) raw[c] = raw_logit(p + c);
  }
#pragma unroll
  for (int c = 0; c < VEC; ++c) out[c] = hd::sanitize_logit(raw[c]);
}

// ---- small helpers ----
// Diagnostic stamp of route_token's phases (the fused front's trace; nullptr elsewhere): the
// global timer once `dep` is computed, by lane 0. Compiled in only with -DFUSEDMOE_ROUTE_TRACE=1
// (a build for diagnosis: the checks cost ~0.2 us of decode latency in the fused front).
#ifndef FUSEDMOE_ROUTE_TRACE
#define FUSEDMOE_ROUTE_TRACE 0
#endif
__device__ __forceinline__ void route_stamp(unsigned long long* trace, int slot, uint32_t dep) {
#if FUSEDMOE_ROUTE_TRACE
  if (trace == nullptr || (threadIdx.x & 31) != 0) return;
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) : "r"(dep) : "memory");
  trace[slot] = t;
#else
  (void)trace;
  (void)slot;
  (void)dep;
#endif
}

__device__ __forceinline__ uint32_t umax(uint32_t a, uint32_t b) { return a > b ? a : b; }
__device__ __forceinline__ uint32_t umin(uint32_t a, uint32_t b) { return a < b ? a : b; }
__device__ __forceinline__ void report_error(int32_t* flag, int code, int64_t token, int slot, int32_t id) {
  if (flag == nullptr) return;
  if (atomicCAS(flag, 0, code) == 0) {
    flag[1] = static_cast<int32_t>(token);
    flag[2] = slot;
    flag[3] = id;
  }
}

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int d = 16; d >= 1; d /= 2) x = fmaxf(x, __shfl_xor_sync(kFull, x, d));
  return x;
}

// Sum of v over lanes 0..count-1 (count <= 16) of each `width`-lane segment, in lane order, from 0.
// The shuffles are independent of the sum: all are issued first, then the adds run in order.
template <int N>
__device__ __forceinline__ float slot_sum_n(float v, int count, int width) {
  float x[N];
#pragma unroll
  for (int j = 0; j < N; ++j) x[j] = __shfl_sync(kFull, v, j, width);
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < N; ++j)
    if (j < count) s = hd::add(s, x[j]);
  return s;
}
// (count <= 8, most routers: half the shuffles; count is uniform over the warp)
__device__ __forceinline__ float slot_sum(float v, int count, int width) {
  return count <= 8 ? slot_sum_n<8>(v, count, width) : slot_sum_n<16>(v, count, width);
}

// What the warp-per-token kernel computes per expert before selecting:
//   kSoftmaxRow: the row softmax (kSoftmaxTopK; kBiasedTopK / kHash with ScoreFunction::kSoftmax);
//   kSigmoidRow / kSqrtSoftplusRow: that score of each logit (kBiasedTopK);
//   kLogitsRow: nothing, the logits are the selection values (kTopKSoftmax, kSigmoidTop1).
enum class RowMode : int { kSoftmaxRow = 0, kSigmoidRow = 1, kSqrtSoftplusRow = 2, kLogitsRow = 3 };

// score(x) of one expert for the elementwise modes; for kSoftmaxRow with the row's max and sum.
template <RowMode M>
__device__ __forceinline__ float score_of(float x, float max, float sum) {
  if constexpr (M == RowMode::kSoftmaxRow) return max == hd::kNegInf ? 0.f : hd::div(hd::expf(hd::sub(x, max)), sum);
  else if constexpr (M == RowMode::kSigmoidRow) return hd::sigmoid(x);
  else if constexpr (M == RowMode::kSqrtSoftplusRow) return hd::sqrt_softplus(x);
  else return x;
}

// Renormalisation (slot order), scaling, store. Lanes r < k of each `width`-lane segment hold the
// slots; every lane of the warp must call this. ids_shared: optional copy of the token's ids in
// shared memory (the fused front's one-block plan).
__device__ __forceinline__ void finish_slots(const Params& p, int64_t token, int r, bool active, int32_t id,
                                             float w, bool bad, int width, int32_t* ids_shared = nullptr) {
  if (p.renormalize) {
    const float sum = slot_sum(w, p.k, width);
    w = hd::div(w, hd::add(sum, hd::kRenormEpsilon));
  }
  w = hd::mul(w, p.scaling);
  if (bad) w = 0.f;
  if (active) {
    const int64_t o = token * p.k + r;
    p.ids_out[o] = id;
    p.weights_out[o] = w;
    if (ids_shared != nullptr) ids_shared[r] = id;
  }
}

// kHash: slot r of `token`; weight_of(logit) gives the weight from the chosen expert's logit (or
// 1/k without logits). Bad ids -> -1, weight 0, reported.
template <typename T, typename WeightOf>
__device__ __forceinline__ void hash_slot(const Params& p, int64_t token, int r, WeightOf weight_of, int32_t* id,
                                          float* w, bool* bad) {
  const int64_t token_id = p.token_ids[token];
  if (token_id < 0 || token_id >= p.hash_vocab) {
    *bad = true;
    if (r == 0) {
      const int32_t clamped = token_id < INT32_MIN ? INT32_MIN : token_id > INT32_MAX ? INT32_MAX
                                                                                     : static_cast<int32_t>(token_id);
      report_error(p.error_flag, kErrorHashTokenOutOfRange, token, -1, clamped);
    }
    return;
  }
  const int32_t e = p.hash_table[token_id * p.k + r];
  if (e < 0 || e >= p.num_experts) {
    *bad = true;
    report_error(p.error_flag, kErrorIdOutOfRange, token, r, e);
    return;
  }
  *id = e;
  if (p.logits != nullptr) {
    const T* row = static_cast<const T*>(p.logits) + token * p.num_experts;
    *w = weight_of(load_logit(row + e));
  } else {
    *w = hd::div(1.f, static_cast<float>(p.k));
  }
}

// The best key among the lane's untaken slots: strict '>' in ascending slot (= expert) order.
// kVal: also that slot's val[] (the unbiased score of a biased selection).
template <int VEC, int NV, bool kVal>
__device__ __forceinline__ void local_best(const uint32_t (&key)[VEC * NV], const float (&val)[VEC * NV], uint32_t taken,
                                           int lane, uint32_t* best_key, uint32_t* best_expert, float* best_val) {
  uint32_t bk = 0, be = 0xffffffffu;
  float bv = 0.f;
#pragma unroll
  for (int i = 0; i < NV; ++i)
#pragma unroll
    for (int c = 0; c < VEC; ++c) {
      const int s = i * VEC + c;
      if (!((taken >> s) & 1u) && key[s] > bk) {
        bk = key[s];
        be = static_cast<uint32_t>(i * 32 * VEC + lane * VEC + c);
        if constexpr (kVal) bv = val[s];
      }
    }
  *best_key = bk;
  *best_expert = be;
  if constexpr (kVal) *best_val = bv;
}

// Compare-exchange of a sorted-selection network: after it, slot a holds the better of the two
// candidates (higher key; equal keys: lower expert id), slot b the other.
template <int N>
__device__ __forceinline__ void cmp_swap(uint32_t (&sk)[N], uint32_t (&se)[N], int a, int b) {
  const bool swap = sk[b] > sk[a] || (sk[b] == sk[a] && se[b] < se[a]);
  const uint32_t ka = sk[a], ea = se[a];
  sk[a] = swap ? sk[b] : ka;
  se[a] = swap ? se[b] : ea;
  sk[b] = swap ? ka : sk[b];
  se[b] = swap ? ea : se[b];
}

// Sorts a lane's N <= 8 candidates best first (sorting networks: 1, 5 and 19 comparators; the
// 8-input one is the optimal depth-6 network, checked exhaustively by the 0-1 principle).
template <int N>
__device__ __forceinline__ void sort_candidates(uint32_t (&sk)[N], uint32_t (&se)[N]) {
  static_assert(N == 2 || N == 4 || N == 8, "sorted selection: 2, 4 or 8 slots per lane");
  if constexpr (N == 2) {
    cmp_swap(sk, se, 0, 1);
  } else if constexpr (N == 4) {
    constexpr int net[5][2] = {{0, 1}, {2, 3}, {0, 2}, {1, 3}, {1, 2}};
#pragma unroll
    for (const auto& c : net) cmp_swap(sk, se, c[0], c[1]);
  } else {
    constexpr int net[19][2] = {{0, 2}, {1, 3}, {4, 6}, {5, 7}, {0, 4}, {1, 5}, {2, 6}, {3, 7}, {0, 1}, {2, 3},
                                {4, 5}, {6, 7}, {2, 4}, {3, 5}, {1, 4}, {3, 6}, {1, 2}, {3, 4}, {5, 6}};
#pragma unroll
    for (const auto& c : net) cmp_swap(sk, se, c[0], c[1]);
  }
}

// Slots of a lane holding an expert < E (the same for every token).
template <int VEC, int NV>
__device__ __forceinline__ uint32_t valid_slots(int lane, int num_experts) {
  uint32_t valid = 0;
#pragma unroll
  for (int i = 0; i < NV; ++i)
    if (i * 32 * VEC + lane * VEC < num_experts) valid |= ((1u << VEC) - 1u) << (i * VEC);
  return valid;
}

// ---- grouped selection from registers (kBiasedTopK with n_group > 1) ----
// When every group is a run of whole VEC-chunks of one load (group_size a multiple of VEC that
// divides 32 * VEC: the run is L = group_size / VEC consecutive lanes, a power of two) and there
// are at most 32 groups, the group scores and the kept groups need no shared memory:
//   * a group's top-2 keys: each lane's two best of its VEC keys, merged over the run's lanes by
//     xor shuffles (the top two of a multiset do not depend on how it is split, so these are the
//     keys the strided scan finds); score = canon(top1 + top2) as there;
//   * group g is kept iff fewer than topk_group groups beat it (higher score key, or an equal key
//     and a lower index): the set the topk_group argmax rounds pick (ties to the lower group).
//     Each lane counts, for the groups of its chunks, over all groups' scores (n_group
//     broadcast shuffles).
// Used by the fused front (route_token<..., kGroupRegs = true>), where the token's latency counts:
// dsv3 routing at 1 token 5.3 -> 4.4 us (H200). The router kernel keeps the shared-memory scan:
// at 16384 tokens this path issued fewer instructions (29.3 M vs 31.1 M) but ran slower (48.0 vs 46.1 us).
// Up to 4 loads per lane (more would hold 4 x NV more registers in the fused front: spills).
template <int VEC, int NV>
__device__ __forceinline__ bool group_regs_ok(const Params& p) {
  return NV <= 4 && p.group_size % VEC == 0 && (32 * VEC) % p.group_size == 0 && p.n_group <= 32;
}
// The lane's eligible slots (bit i * VEC + c) for a grouped kBiasedTopK; key: the selection keys.
template <int VEC, int NV>
__device__ __forceinline__ uint32_t group_eligible_regs(const Params& p, const uint32_t (&key)[VEC * NV], uint32_t valid,
                                                        int lane) {
  const int L = p.group_size / VEC;  // lanes per group (power of two, <= 32)
  const int log2l = __ffs(L) - 1;
  const int runs = 32 >> log2l;      // groups per load
  uint32_t t1[NV], t2[NV];
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    t1[i] = 0u;
    t2[i] = 0u;
    if ((valid >> (i * VEC)) & 1u) {  // a chunk is valid as a whole (E = n_group * group_size)
#pragma unroll
      for (int c = 0; c < VEC; ++c) {
        const uint32_t kk = key[i * VEC + c];
        t2[i] = umax(t2[i], umin(t1[i], kk));
        t1[i] = umax(t1[i], kk);
      }
    }
  }
  for (int d = 1; d < L; d <<= 1) {
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      const uint32_t o1 = __shfl_xor_sync(kFull, t1[i], d), o2 = __shfl_xor_sync(kFull, t2[i], d);
      t2[i] = umax(umin(t1[i], o1), umax(t2[i], o2));
      t1[i] = umax(t1[i], o1);
    }
  }
  uint32_t gk[NV];
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    const float score = p.group_size == 1 ? hd::from_key(t1[i]) : hd::add(hd::from_key(t1[i]), hd::from_key(t2[i]));
    gk[i] = hd::to_key(hd::canon(score));
  }
  int beaten[NV];
#pragma unroll
  for (int i = 0; i < NV; ++i) beaten[i] = 0;
  const int my_run = lane >> log2l;
#pragma unroll
  for (int gi = 0; gi < NV; ++gi) {
    const int first = gi * runs;  // group of run 0 in load gi
    if (first >= p.n_group) break;
    const int nr = min(runs, p.n_group - first);
#pragma unroll 4
    for (int r = 0; r < nr; ++r) {  // (unrolled: the broadcast shuffles overlap)
      const uint32_t sg = __shfl_sync(kFull, gk[gi], r * L);
#pragma unroll
      for (int i = 0; i < NV; ++i) beaten[i] += (sg > gk[i] || (sg == gk[i] && first + r < i * runs + my_run)) ? 1 : 0;
    }
  }
  uint32_t eligible = 0;
#pragma unroll
  for (int i = 0; i < NV; ++i)
    if (((valid >> (i * VEC)) & 1u) && beaten[i] < p.topk_group) eligible |= ((1u << VEC) - 1u) << (i * VEC);
  return eligible;
}

// ---- one warp routes one token: every router that reads the whole row of logits ----
// wsm: this warp's shared scratch of num_experts + n_group words (grouped kBiasedTopK only);
// ids_shared: see finish_slots.
// trace: the fused front's diagnostic stamps of the phases (route_stamp), nullptr elsewhere.
// heads: this warp's shared scratch of heads_words(VEC * NV) words (the router kernel; nullptr in
// the fused front): the sorted selection's lists live there and a pop is one shared load.
template <typename T, int VEC, int NV, RowMode M, bool kGroupRegs = false>
__device__ __forceinline__ void route_token(const Params& p, int64_t token, int lane, uint32_t* wsm,
                                            uint32_t valid, int32_t* ids_shared = nullptr,
                                            unsigned long long* trace = nullptr, uint2* heads = nullptr) {
  constexpr int kCap = VEC * NV;
  static_assert(kCap <= 32 && (VEC & (VEC - 1)) == 0, "slots per lane");
  // Up to 16 slots per lane the correction bias is loaded together with the logits (one memory
  // round trip), and the unbiased score of each chosen expert comes from its lane's registers (a
  // shuffle per round) instead of a second, dependent read of its logit. With 32 slots the two
  // extra arrays would not fit the fused front's 128 registers: the bias is read where it is
  // added and the chosen logit is re-read (the same bits either way).
  constexpr bool kWide = kCap > 16;
  const int num_experts = p.num_experts;
  const int k = p.k;
  const bool grouped = p.kind == RouterKind::kBiasedTopK && p.n_group > 1;
  const bool use_bias = p.kind == RouterKind::kBiasedTopK && p.bias != nullptr;
  {
    const T* row = static_cast<const T*>(p.logits) + token * num_experts;
    float v[kCap];
    float bv[kWide ? 1 : kCap];
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      const int e0 = i * 32 * VEC + lane * VEC;
      if (e0 < num_experts) {
        load_chunk<VEC>(row + e0, p.aligned, v + i * VEC);
      } else {
#pragma unroll
        for (int c = 0; c < VEC; ++c) v[i * VEC + c] = hd::kNegInf;
      }
    }
    if constexpr (!kWide) {
      if (use_bias) {
#pragma unroll
        for (int i = 0; i < NV; ++i)
#pragma unroll
          for (int c = 0; c < VEC; ++c)
            bv[i * VEC + c] = ((valid >> (i * VEC + c)) & 1u) ? __ldg(p.bias + i * 32 * VEC + lane * VEC + c) : 0.f;
      }
    }

    // Scores. Softmax in the canonical order (see the header comment).
    float row_max = hd::kNegInf, row_sum = 0.f;
    if constexpr (M == RowMode::kSoftmaxRow) {
#pragma unroll
      for (int s = 0; s < kCap; ++s) row_max = fmaxf(row_max, v[s]);
      row_max = warp_max(row_max);
      if (row_max == hd::kNegInf) {
#pragma unroll
        for (int s = 0; s < kCap; ++s) v[s] = 0.f;
      } else {
        float part = 0.f;
#pragma unroll
        for (int s = 0; s < kCap; ++s) {
          v[s] = hd::expf(hd::sub(v[s], row_max));  // invalid slots: e^-inf = 0
          part = hd::add(part, v[s]);
        }
#pragma unroll
        for (int d = 16; d >= 1; d /= 2) part = hd::add(part, __shfl_xor_sync(kFull, part, d));
        row_sum = part;
        if (p.kind != RouterKind::kHash) {
          const hd::Divisor by_sum(row_sum);
#pragma unroll
          for (int s = 0; s < kCap; ++s) v[s] = by_sum.divide_nonnegative(v[s]);  // sum >= 1: max's term is 1
        }
      }
    } else if constexpr (M == RowMode::kSigmoidRow) {
      hd::sigmoid_n(v);  // the same bits as score_of, the chains interleaved
    } else if constexpr (M != RowMode::kLogitsRow) {
#pragma unroll
      for (int s = 0; s < kCap; ++s) v[s] = score_of<M>(v[s], 0.f, 0.f);
    }

    if constexpr (M == RowMode::kSoftmaxRow) {
      if (p.kind == RouterKind::kHash) {
        int32_t id = -1;
        float w = 0.f;
        bool bad = false;
        if (lane < k)
          hash_slot<T>(p, token, lane, [&](float x) { return score_of<M>(x, row_max, row_sum); }, &id, &w, &bad);
        finish_slots(p, token, lane, lane < k, bad ? -1 : id, w, bad, 32, ids_shared);
        return;
      }
    }

    route_stamp(trace, 0, hd::as_uint(v[0]));
    // Selection keys: softmax p | s (+ bias) | logits.
    uint32_t key[kCap];
#pragma unroll
    for (int i = 0; i < NV; ++i)
#pragma unroll
      for (int c = 0; c < VEC; ++c) {
        const int s = i * VEC + c;
        float b = v[s];
        if (use_bias && ((valid >> s) & 1u)) {
          if constexpr (kWide) b = hd::add(b, __ldg(p.bias + i * 32 * VEC + lane * VEC + c));
          else b = hd::add(b, bv[s]);
        }
        key[s] = hd::to_key(hd::canon(b));
      }
    uint32_t taken = ~valid;

    if (M != RowMode::kLogitsRow && grouped && kGroupRegs && group_regs_ok<VEC, NV>(p)) {
      taken |= ~group_eligible_regs<VEC, NV>(p, key, valid, lane);
    } else if (M != RowMode::kLogitsRow && grouped) {
      const int num_groups = p.n_group, group_size = p.group_size, lanes = p.lanes_per_group;
      const bool chunked = group_size % VEC == 0;
      __syncwarp();  // the previous token's readers are done
#pragma unroll
      for (int i = 0; i < NV; ++i)
#pragma unroll
        for (int c = 0; c < VEC; ++c)
          if ((valid >> (i * VEC + c)) & 1u) wsm[i * 32 * VEC + lane * VEC + c] = key[i * VEC + c];
      __syncwarp();
      // Group scores: `lanes` lanes per group, top-2 keys by a strided scan and an xor merge.
      for (int g0 = 0; g0 < num_groups; g0 += 32 / lanes) {
        const int g = g0 + lane / lanes, sub = lane & (lanes - 1);
        uint32_t t1 = 0, t2 = 0;
        if (g < num_groups) {
          for (int j = sub; j < group_size; j += lanes) {
            const uint32_t kk = wsm[g * group_size + j];
            if (kk > t1) {
              t2 = t1;
              t1 = kk;
            } else if (kk > t2) {
              t2 = kk;
            }
          }
        }
        for (int d = lanes >> 1; d >= 1; d >>= 1) {
          const uint32_t o1 = __shfl_xor_sync(kFull, t1, d), o2 = __shfl_xor_sync(kFull, t2, d);
          const uint32_t n2 = umax(umin(t1, o1), umax(t2, o2));
          t1 = umax(t1, o1);
          t2 = n2;
        }
        if (g < num_groups && sub == 0) {
          const float score = group_size == 1 ? hd::from_key(t1) : hd::add(hd::from_key(t1), hd::from_key(t2));
          wsm[num_experts + g] = hd::to_key(hd::canon(score));
        }
      }
      __syncwarp();
      // Keep topk_group groups: lane l caches the best of groups l, l+32, ...
      uint32_t gbest = 0, gidx = 0;
      auto rescan_groups = [&]() {
        gbest = 0;
        for (int g = lane; g < num_groups; g += 32) {
          const uint32_t kk = wsm[num_experts + g];
          if (kk > gbest) {
            gbest = kk;
            gidx = static_cast<uint32_t>(g);
          }
        }
      };
      rescan_groups();
      uint32_t eligible = 0;
      for (int r = 0; r < p.topk_group; ++r) {
        const uint32_t m = __reduce_max_sync(kFull, gbest);
        const uint32_t win = __reduce_min_sync(kFull, gbest == m ? gidx : 0xffffffffu);
        const int lo = static_cast<int>(win) * group_size, hi = lo + group_size;
#pragma unroll
        for (int i = 0; i < NV; ++i) {
          const int e0 = i * 32 * VEC + lane * VEC;
          if (chunked) {  // the lane's VEC experts of load i share one group
            if (e0 >= lo && e0 < hi) eligible |= ((1u << VEC) - 1u) << (i * VEC);
          } else {
#pragma unroll
            for (int c = 0; c < VEC; ++c)
              if (e0 + c >= lo && e0 + c < hi) eligible |= 1u << (i * VEC + c);
          }
        }
        if (static_cast<int>(win & 31u) == lane) {
          wsm[num_experts + win] = 0;
          rescan_groups();
        }
      }
      taken |= ~eligible;
    }

    route_stamp(trace, 1, taken);
    // k rounds of warp argmax (ties -> lower expert id). kCarry: the chosen experts' unbiased
    // scores come from the lanes' registers (see kWide): fetched after the sorted rounds, carried
    // along by the rescan ones.
    constexpr bool kCarry = !kWide && M != RowMode::kLogitsRow;
    // 2-8 slots per lane: each lane sorts its candidates once (untaken key, expert id; taken slots
    // key 0, expert ~0), then a round is two reductions over the lanes' heads and the winner pops
    // its head (a shift of predicated moves). The same order as the rescan below: the k best
    // (key desc, expert asc) of the warp, merged from sorted lists. The unbiased scores do not
    // travel through the network and the rounds: after the rounds, lane r < k reads its expert's
    // score from the lane that holds it (one shuffle per slot of a lane).
    constexpr bool kSorted = kCap >= 2 && kCap <= 8;
    int32_t my_id = -1;
    uint32_t my_key = 0;
    float my_val = 0.f;
    if constexpr (kSorted) {
      uint32_t sk[kCap], se[kCap];
#pragma unroll
      for (int i = 0; i < NV; ++i)
#pragma unroll
        for (int c = 0; c < VEC; ++c) {
          const int s = i * VEC + c;
          const bool free = !((taken >> s) & 1u);
          sk[s] = free ? key[s] : 0u;
          se[s] = free ? static_cast<uint32_t>(i * 32 * VEC + lane * VEC + c) : 0xffffffffu;
        }
      sort_candidates<kCap>(sk, se);
      route_stamp(trace, 2, sk[0]);
      if (heads != nullptr) {
        // Slots 1.. of the lane's sorted list in shared memory ([slot - 1][lane]: each lane reads
        // only its own entries, no barrier); the head stays in registers and the winner's pop is
        // one shared load instead of 2 x kCap predicated selects (the ALU pipe bounds this kernel
        // at large T: ncu, session 13).
#pragma unroll
        for (int s = 1; s < kCap; ++s) heads[(s - 1) * 32 + lane] = make_uint2(sk[s], se[s]);
        uint32_t hk = sk[0], he = se[0];
        int h = 0;
        for (int r = 0; r < k; ++r) {
          const uint32_t m = __reduce_max_sync(kFull, hk);
          const uint32_t win = __reduce_min_sync(kFull, hk == m ? he : 0xffffffffu);
          if (lane == r) {
            my_id = static_cast<int32_t>(win);
            my_key = m;
          }
          if (hk == m && he == win) {  // the winner (expert ids are unique) pops its head
            ++h;
            const uint2 nx = h < kCap ? heads[(h - 1) * 32 + lane] : make_uint2(0u, 0xffffffffu);
            hk = nx.x;
            he = nx.y;
          }
        }
      } else {
        for (int r = 0; r < k; ++r) {
          const uint32_t m = __reduce_max_sync(kFull, sk[0]);
          const uint32_t win = __reduce_min_sync(kFull, sk[0] == m ? se[0] : 0xffffffffu);
          if (lane == r) {
            my_id = static_cast<int32_t>(win);
            my_key = m;
          }
          const bool pop = sk[0] == m && se[0] == win;  // the winner (expert ids are unique)
#pragma unroll
          for (int s = 0; s + 1 < kCap; ++s) {
            sk[s] = pop ? sk[s + 1] : sk[s];
            se[s] = pop ? se[s + 1] : se[s];
          }
          sk[kCap - 1] = pop ? 0u : sk[kCap - 1];
          se[kCap - 1] = pop ? 0xffffffffu : se[kCap - 1];
        }
      }
      if constexpr (kCarry) {
        if (use_bias) {  // warp-uniform
          const uint32_t id = (lane < k && my_id >= 0) ? static_cast<uint32_t>(my_id) : 0u;
          const int src = static_cast<int>((id / VEC) & 31u);
          const int slot = static_cast<int>((id / (32 * VEC)) * VEC + (id & (VEC - 1)));
#pragma unroll
          for (int s = 0; s < kCap; ++s) {
            const float t = __shfl_sync(kFull, v[s], src);
            if (s == slot) my_val = t;
          }
        }
      }
    } else {
      uint32_t best_key, best_expert;
      float best_val = 0.f;
      local_best<VEC, NV, kCarry>(key, v, taken, lane, &best_key, &best_expert, &best_val);
      for (int r = 0; r < k; ++r) {
        const uint32_t m = __reduce_max_sync(kFull, best_key);
        const uint32_t win = __reduce_min_sync(kFull, best_key == m ? best_expert : 0xffffffffu);
        const int win_lane = static_cast<int>((win / VEC) & 31u);
        if constexpr (kCarry) {
          if (use_bias) {  // warp-uniform
            const float wv = __shfl_sync(kFull, best_val, win_lane);
            if (lane == r) my_val = wv;
          }
        }
        if (lane == r) {
          my_id = static_cast<int32_t>(win);
          my_key = m;
        }
        if (win_lane == lane) {
          const int slot = static_cast<int>((win / (32 * VEC)) * VEC + (win & (VEC - 1)));
          taken |= 1u << slot;
          local_best<VEC, NV, kCarry>(key, v, taken, lane, &best_key, &best_expert, &best_val);
        }
      }
    }

    route_stamp(trace, 3, my_key);
    // Weights (lane r < k: slot r).
    float w = 0.f;
    if (lane < k) {
      w = hd::from_key(my_key);
      if constexpr (M == RowMode::kLogitsRow) {
        if (p.kind == RouterKind::kSigmoidTop1) w = hd::sigmoid(w);
      } else if constexpr (kCarry) {
        if (use_bias) w = my_val;  // the unbiased s, as computed for the selection
      } else {
        if (use_bias) w = score_of<M>(load_logit(row + my_id), row_max, row_sum);  // the unbiased s
      }
    }
    if constexpr (M == RowMode::kLogitsRow) {
      if (p.kind == RouterKind::kTopKSoftmax) {  // softmax over the k chosen logits, slot order
        const float m = warp_max(lane < k ? w : hd::kNegInf);
        if (m == hd::kNegInf) {
          w = 0.f;
        } else {
          const float y = lane < k ? hd::expf(hd::sub(w, m)) : 0.f;
          w = hd::div(y, slot_sum(y, k, 32));
        }
      }
    }
    finish_slots(p, token, lane, lane < k, my_id, w, false, 32, ids_shared);
    route_stamp(trace, 4, hd::as_uint(w));
  }
}

template <typename T, int VEC, int NV, RowMode M>
__global__ void __launch_bounds__(kThreads, min_blocks_for_slots(VEC * NV)) router_topk_kernel(const Params p) {
  pdl_enter();  // kernels/common/pdl.cuh: first, before any global access
  extern __shared__ __align__(16) uint32_t smem[];
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int warp = static_cast<int>(threadIdx.x >> 5);
  uint32_t* wsm = smem + static_cast<int64_t>(warp) * p.wsm_words;  // grouped only
  // The sorted selection's lists after every warp's wsm (wsm_words * 16 bytes: 16-byte aligned).
  uint2* heads = heads_words(VEC * NV) > 0
                     ? reinterpret_cast<uint2*>(smem + kWarpsPerBlock * p.wsm_words) + warp * (heads_words(VEC * NV) / 2)
                     : nullptr;
  const uint32_t valid = valid_slots<VEC, NV>(lane, p.num_experts);
  const int64_t num_tokens = resolve_token_count(p.num_tokens, p.num_tokens_dev, p.owns_error_flag ? nullptr : p.error_flag);
  if (p.owns_error_flag && blockIdx.x == 0 && threadIdx.x == 0)
    write_token_count_flag(p.num_tokens, p.num_tokens_dev, p.error_flag);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  for (int64_t token = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp; token < num_tokens;
       token += stride)
    route_token<T, VEC, NV, M>(p, token, lane, wsm, valid, nullptr, nullptr, heads);
}

// ---- kPrecomputed and kHash without a row softmax: KP lanes per token ----
template <typename T>
__global__ void __launch_bounds__(kGatherThreads) router_gather_kernel(const Params p) {
  pdl_enter();  // kernels/common/pdl.cuh: first, before any global access
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int kp = 1 << p.kp_log2;
  const int r = lane & (kp - 1);
  const int tokens_per_warp = 32 >> p.kp_log2;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t num_warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  const int64_t num_tokens = resolve_token_count(p.num_tokens, p.num_tokens_dev, p.error_flag);
  for (int64_t base = warp * tokens_per_warp; base < num_tokens; base += num_warps * tokens_per_warp) {
    const int64_t token = base + (lane >> p.kp_log2);
    const bool active = token < num_tokens && r < p.k;
    int32_t id = -1;
    float w = 0.f;
    bool bad = false;
    if (active) {
      if (p.kind == RouterKind::kPrecomputed) {
        const int64_t i = token * p.k + r;
        id = p.ids_in[i];
        w = p.weights_in[i];
        if (id < 0 || id >= p.num_experts) {
          report_error(p.error_flag, kErrorIdOutOfRange, token, r, id);
          bad = true;
        }
      } else {
        if (p.score == ScoreFunction::kSigmoid)
          hash_slot<T>(p, token, r, [](float x) { return hd::sigmoid(x); }, &id, &w, &bad);
        else
          hash_slot<T>(p, token, r, [](float x) { return hd::sqrt_softplus(x); }, &id, &w, &bad);
      }
      if (bad) {
        id = -1;
        w = 0.f;
      }
    }
    finish_slots(p, token, r, active, id, w, bad, kp);
  }
}

// The checked parameters of one router call (router_launch.cu), shared with the fused front kernel.
struct RouterPrep {
  Params p;
  bool bf16 = false;
  bool row_kernel = true;        // router_topk_kernel (whole rows of logits) vs router_gather_kernel
  RowMode mode = RowMode::kSoftmaxRow;
  int vec = 1;
  size_t smem_per_warp = 0;      // grouped kBiasedTopK scratch (bytes per routing warp)
};

}  // namespace fusedmoe::kernels::router_detail

namespace fusedmoe::kernels {
// Checks the configuration and fills *prep (no launch). cudaErrorInvalidValue as launch_router.
cudaError_t prepare_router(const RouterArgs& args, router_detail::RouterPrep* prep);
}  // namespace fusedmoe::kernels
