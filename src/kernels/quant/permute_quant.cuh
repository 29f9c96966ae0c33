// permute_quant.cuh — device code of activation permutation / FP8 quantisation (contract in
// permute_quant_launch.h). Bit-exact with the reference quantisers of src/reference/fp8.cpp:
//   scale = max(amax, 1e-10) / 448 (f32, correctly rounded: div448_rn); UE8M0: 2^ceil(log2(scale))
//   from the bits; inv = 1 / scale (correctly rounded: rcp_rn); q = e4m3(x * inv) (__fmul_rn,
//   cvt.rn.satfinite.e4m3x2.f32). No contraction: every float op is an explicit _rn intrinsic.
// With a routing weight w: v = x * w (__fmul_rn) is quantised; the amax of the weighted set is
// fl(amax(|x|) * |w|), which equals max |fl(x * w)| because rounding is monotone (and NaN
// products, ignored by the reference's fmax, map to 0).
//
// One pass over the activations: a team of threads loads a token row into registers once, reduces
// its amax (per row or per 128-group) and writes the row to every destination (token order: row t;
// permuted: the padded row of each (token, slot)). Per-tensor dynamic: a first kernel writes
// per-block absmax partials over all T x K elements of x (unweighted) to scratch; every block of
// the main kernel folds them (fmaxf is order-independent: deterministic).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/pdl.cuh"
#include "kernels/common/timer.cuh"
#include "kernels/common/token_count.cuh"
#include "kernels/quant/vec.cuh"

namespace fusedmoe::kernels::pq_detail {

inline constexpr int kMaxSlots = 32;
inline constexpr int kMaxPairs = 256 / 8 * kMaxSlots;  // teams per block (<= 32) x slots
inline constexpr float kFp8Max = 448.0f;
inline constexpr float kAmaxFloor = 1e-10f;

// ---- exact scalar helpers (also used by the test entry points) ---------------------------------

// ref::float_to_ue8m0: NaN -> 0xFF; 0 -> 0; inf -> 0xFE; else clamp(ceil(log2|x|), -127, 127) + 127.
__device__ __forceinline__ uint32_t float_to_ue8m0(float x) {
  const uint32_t a = __float_as_uint(x) & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return 0xFFu;
  if (a == 0u) return 0u;
  if (a == 0x7F800000u) return 0xFEu;
  const int be = static_cast<int>(a >> 23);
  const uint32_t man = a & 0x007FFFFFu;
  int c;
  if (be == 0) {
    c = (32 - __clz(man - 1u)) - 149;  // subnormal: man * 2^-149, ceil(log2(man)) exact
  } else {
    c = be - 127 + (man != 0u ? 1 : 0);
  }
  c = c < -127 ? -127 : (c > 127 ? 127 : c);
  return static_cast<uint32_t>(c + 127);
}

__device__ __forceinline__ float ue8m0_to_float(uint32_t b) {
  if (b == 0xFFu) return __uint_as_float(0x7FFF0000u);
  if (b == 0u) return __uint_as_float(0x00400000u);  // 2^-127
  return __uint_as_float(b << 23);
}

// Correctly rounded float division a / 448 for a in [1e-10, FLT_MAX] or +inf, without the
// division slow-path subroutine (whose ABI call made ptxas spill). a / 448 = (a / 7) * 2^-6; a / 7
// is never a rounding midpoint of float (m / 7 would need >= 25 significant bits for a 24-bit m),
// and its relative distance to the nearest midpoint is >= 2^-24 / 14 ~ 2^-27.8, while the double
// product a * RN(1/448) is within 2^-52 relative of a / 448: rounding it to float gives
// RN_f(a / 448) = __fdiv_rn(a, 448.f) exactly. Checked against the reference in the tests.
__device__ __forceinline__ float div448_rn(float a) {
  return __double2float_rn(__dmul_rn(static_cast<double>(a), 1.0 / 448.0));
}

// Correctly rounded float reciprocal (== __fdiv_rn(1.f, s) for every float s) without the slow
// path: three Newton steps in double from rcp.approx (relative error < 2^-52 whatever the start
// accuracy above 2^-8), then one rounding to float. 1/s (24-bit s) is never a float midpoint and
// lies >= 2^-48 (relative) away from one, so that rounding is RN_f(1/s). Specials handled first.
__device__ __forceinline__ float rcp_rn(float s) {
  const uint32_t a = __float_as_uint(s) & 0x7FFFFFFFu;
  if (a == 0u) return __uint_as_float((__float_as_uint(s) & 0x80000000u) | 0x7F800000u);  // +-inf
  if (a >= 0x7F800000u) return a == 0x7F800000u ? __uint_as_float(__float_as_uint(s) & 0x80000000u)  // +-0
                                                : __uint_as_float(0x7FFFFFFFu);                     // NaN
  const double d = static_cast<double>(s);
  double y;
  asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(y) : "d"(d));
#pragma unroll
  for (int i = 0; i < 3; ++i) {
    const double e = __fma_rn(-d, y, 1.0);
    y = __fma_rn(y, e, y);
  }
  return __double2float_rn(y);
}

// ref::fp8_scale_from_amax: max(amax, 1e-10) / 448 in float (NaN amax -> the floor, as fmax).
__device__ __forceinline__ float fp8_scale_from_amax(float amax, bool ue8m0) {
  const float s = div448_rn(fmaxf(amax, kAmaxFloor));
  return ue8m0 ? ue8m0_to_float(float_to_ue8m0(s)) : s;
}

// Two floats -> two e4m3 bytes (low byte = a), RNE, satfinite; == __nv_cvt_float_to_fp8 each.
__device__ __forceinline__ uint32_t cvt_e4m3x2(float a, float b) {
  return static_cast<uint32_t>(__nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3));
}

// One unit of 16 elements (two uint4 of TIn): its amax, and its 16 e4m3 bytes of x * inv
// (__fmul_rn, then RNE satfinite), packed in element order. Shared by this kernel and the fused
// front's token-order quantiser (front.cuh), so both stay bit-identical.
template <class TIn>
__device__ __forceinline__ float unit_amax(const uint4 (&raw)[2]) {
  float m = 0.f;
#pragma unroll
  for (int l = 0; l < 2; ++l) {
    float v[8];
    vec::unpack8<TIn>(raw[l], v);
#pragma unroll
    for (int e = 0; e < 8; ++e) m = fmaxf(m, fabsf(v[e]));
  }
  return m;
}

template <class TIn>
__device__ __forceinline__ uint4 quantize_unit(const uint4 (&raw)[2], float inv) {
  uint32_t packed[4];
#pragma unroll
  for (int l = 0; l < 2; ++l) {
    float v[8];
    vec::unpack8<TIn>(raw[l], v);
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = __fmul_rn(v[e], inv);
    packed[2 * l] = cvt_e4m3x2(v[0], v[1]) | (cvt_e4m3x2(v[2], v[3]) << 16);
    packed[2 * l + 1] = cvt_e4m3x2(v[4], v[5]) | (cvt_e4m3x2(v[6], v[7]) << 16);
  }
  return make_uint4(packed[0], packed[1], packed[2], packed[3]);
}

// ---- reductions ------------------------------------------------------------------------------
// Max over a team of TS lanes (TS <= 32, aligned within the warp). Every lane of the warp calls.
__device__ __forceinline__ float team_max_subwarp(float v, int ts) {
  for (int o = 1; o < ts; o <<= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Max over the whole block (every thread calls; red has >= 33 floats).
__device__ __forceinline__ float block_max(float v, float* red) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();  // red may still be read by a previous call
  if (lane == 0) red[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < nw ? red[lane] : 0.f;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) w = fmaxf(w, __shfl_xor_sync(0xffffffffu, w, o));
    if (lane == 0) red[32] = w;
  }
  __syncthreads();
  return red[32];
}

// ---- parameters ------------------------------------------------------------------------------
enum Scheme : int { kNone = 0, kStatic = 1, kDynamic = 2, kToken = 3, kGroup = 4 };

struct PQParams {
  // Diagnostic timeline (set_permute_trace; nullptr in production): the row kernel's blocks write
  // [entry, past the predecessor wait, done] (globaltimer ns) at trace + 3 * blockIdx.x (< 1024).
  unsigned long long* trace;
  const void* x;
  int64_t x_stride;  // elements
  int64_t num_tokens;  // bound when num_tokens_dev is set
  const int32_t* num_tokens_dev;
  int hidden;        // K
  int units;         // units per row (K / 8 or K / 16)
  int scheme;
  bool ue8m0;
  const float* static_scale;
  bool permute;
  int slots;         // destinations per token considered (1 in token order)
  int num_groups;
  const int32_t* slot_row;
  const int32_t* offsets;
  const int32_t* padded_offsets;
  const float* row_weight;
  int top_k;
  void* out;
  float* out_scales;
  int64_t rows_out;
  int64_t rows_pad4;
  const float* partials;  // kDynamic
  int num_partials;
  const int32_t* amax_counts;  // kDynamic over a padded grouped layout (AmaxRowMask), else null
  const int32_t* amax_padded_offsets;
  int amax_groups;
  int ts;      // team size
  int teams;   // teams per block
  // Permuted rows with whole-warp teams (ts % 32 == 0): each warp finds its token's
  // destinations itself (lane s < slots: destination s, broadcast by shuffle) and loads those of
  // its next row while the current one is stored, so the row loop has no block barrier.
  bool warp_dest;
  // Permuted, unweighted 1x128 scales with row_token given: the row kernel writes each
  // token's scales once, in token order, to scale_stage[t * stage_stride + kb] (scratch), and
  // scale_gather_kernel then stores them in row order into [K/128][rows_pad4]: coalesced stores
  // instead of 4-byte pieces scattered over the permuted layout (measured at 16384 tokens of
  // K 7168: 555 us with the scattered stores, 337 us without any scale store).
  float* scale_stage;
  int stage_stride;  // ceil(K / 128) rounded up to 4
  int stage_only;    // PermuteQuantArgs::scales_by_token: the stage is the result (no gather; out_scales null)
  const int32_t* row_token;
};

// Largest g in [0, G) with offsets[g] <= r (the group holding grouped row r). `offsets` may be
// global (read through the read-only path) or the block's shared copy.
template <bool kShared>
__device__ __forceinline__ int group_of_row(const int32_t* offsets, int G, int32_t r) {
  int lo = 0, hi = G - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    const int32_t o = kShared ? offsets[mid] : __ldcg(offsets + mid);
    if (o <= r) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// Groups whose offsets the row kernel keeps in shared memory (the binary search of every
// destination then costs no dependent global loads); more groups search global memory.
inline constexpr int kSmemGroups = 1056;

// Row of the padded layout of grouped row r >= 0: padded_offsets[g] + r - offsets[g] for its group
// g, from the block's shared copies when `in_smem`, else from global memory.
__device__ __forceinline__ int64_t padded_row(const int32_t* offsets, const int32_t* padded_offsets, const int32_t* s_off,
                                              const int32_t* s_poff, bool in_smem, int G, int32_t r) {
  if (in_smem) {
    const int g = group_of_row<true>(s_off, G, r);
    return static_cast<int64_t>(s_poff[g]) + (r - s_off[g]);
  }
  const int g = group_of_row<false>(offsets, G, r);
  return static_cast<int64_t>(__ldcg(padded_offsets + g)) + (r - __ldcg(offsets + g));
}

// ---- per-tensor dynamic: absmax partials ------------------------------------------------------
// Rows of a padded grouped layout (group_counts != nullptr: the intermediate H between the GEMMs):
// only rows padded_offsets[g] + [0, counts[g]) count, padding rows hold stale data. Each thread
// keeps the group of its current row (rows only grow per thread) and searches again when it leaves.
struct AmaxRowMask {
  const int32_t* counts;
  const int32_t* padded_offsets;
  int groups;
  int64_t lo = 0, hi = 0, count = 0;
  __device__ __forceinline__ bool valid(int64_t r) {
    if (counts == nullptr) return true;
    if (r < lo || r >= hi) {
      int a = 0, b = groups - 1;  // the last group starting at or before r (an empty group before it
      while (a < b) {             // starts there too; r < padded_offsets[G] keeps it in range)
        const int mid = (a + b + 1) >> 1;
        if (__ldcg(padded_offsets + mid) <= r) a = mid; else b = mid - 1;
      }
      lo = __ldcg(padded_offsets + a);
      hi = __ldcg(padded_offsets + a + 1);
      count = __ldcg(counts + a);
    }
    return r - lo < count;
  }
};

template <class TIn>
__global__ void __launch_bounds__(256) absmax_partials_kernel(const TIn* __restrict__ x, int64_t stride,
                                                              int64_t max_rows, const int32_t* rows_dev, int units8,
                                                              float* partials, AmaxRowMask mask) {
  pdl_enter();  // kernels/common/pdl.cuh: first, before any global access
  __shared__ float red[33];
  float m = 0.f;
  const int64_t rows = resolve_token_count(max_rows, rows_dev, nullptr);
  const int64_t total = rows * units8;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < total) {
    int64_t row = idx / units8;
    int u = static_cast<int>(idx - row * units8);
    const int64_t step_rows = step / units8;
    const int step_u = static_cast<int>(step - step_rows * units8);
    for (; idx < total; idx += step) {
      if (mask.valid(row)) {
        const uint4 v = __ldcg(reinterpret_cast<const uint4*>(x + row * stride) + u);
        float f[8];
        vec::unpack8<TIn>(v, f);
#pragma unroll
        for (int e = 0; e < 8; ++e) m = fmaxf(m, fabsf(f[e]));
      }
      row += step_rows;
      u += step_u;
      if (u >= units8) { u -= units8; ++row; }
    }
  }
  m = block_max(m, red);
  if (threadIdx.x == 0) partials[blockIdx.x] = m;
}

// ---- the row kernel -----------------------------------------------------------------------------
// kFp8: units of 16 elements (2 x 16 B in, 16 B of e4m3 out); else units of 8 (16 B in/out).
// Threads per block a VPT instance is built for (the host never launches more).
__host__ __device__ constexpr int max_block_for_vpt(int vpt) { return vpt < 8 ? 256 : 512; }

// Blocks per SM the register budget is set for: 3 for VPT <= 2 (at most 85 registers, so that
// three 224-thread blocks fit: the FP8 row of K = 7168 at prefill), else 1.
__host__ __device__ constexpr int min_blocks_for_vpt(int vpt) { return vpt <= 2 ? 3 : 1; }

__device__ __forceinline__ void pq_stamp(unsigned long long* trace, int slot) {
  if (trace == nullptr || threadIdx.x != 0 || blockIdx.x >= 1024) return;
  trace[3 * blockIdx.x + slot] = globaltimer_ns();
}

template <class TIn, bool kFp8, int VPT>
__global__ void __launch_bounds__(max_block_for_vpt(VPT), min_blocks_for_vpt(VPT)) permute_quant_kernel(PQParams p) {
  pq_stamp(p.trace, 0);
  pdl_enter();  // kernels/common/pdl.cuh: first, before any global access
  pq_stamp(p.trace, 1);
  constexpr int kLoads = kFp8 ? 2 : 1;  // uint4 per unit
  __shared__ float red[33];
  __shared__ int32_t s_dest[kMaxPairs];
  __shared__ float s_w[kMaxPairs];
  __shared__ int32_t s_off[kSmemGroups];   // offsets / padded offsets of the groups (permute)
  __shared__ int32_t s_poff[kSmemGroups];
  // The next row of this block is loaded while the current one is stored (software pipeline),
  // when the two register copies fit (VPT * kLoads <= 8 uint4; the wide-row instances would spill).
  constexpr bool kPrefetch = VPT * kLoads <= 8;

  const int tid = threadIdx.x;
  const int team = tid / p.ts;
  const int lane = tid - team * p.ts;
  const bool subwarp = p.ts <= 32;
  const int G = p.num_groups;
  const int nslot = p.slots;

  // Per-tensor scale (uniform).
  float t_scale = 1.f, t_inv = 1.f;
  if (p.scheme == kStatic || p.scheme == kDynamic) {
    if (p.scheme == kStatic) {
      t_scale = __ldg(p.static_scale);
    } else {
      float m = 0.f;
      for (int i = tid; i < p.num_partials; i += blockDim.x) m = fmaxf(m, __ldcg(p.partials + i));
      m = block_max(m, red);
      t_scale = fp8_scale_from_amax(m, p.ue8m0);
    }
    t_inv = rcp_rn(t_scale);
    if (blockIdx.x == 0 && tid == 0 && p.out_scales != nullptr) p.out_scales[0] = t_scale;
  }
  // Zero the scale slots of rows [rows_out, rows_pad4) (DeepGEMM's TMA padding).
  if (blockIdx.x == 0 && p.out_scales != nullptr && (p.scheme == kToken || p.scheme == kGroup)) {
    const int pad = static_cast<int>(p.rows_pad4 - p.rows_out);
    const int kb = p.scheme == kGroup ? (p.hidden + 127) / 128 : 1;
    for (int i = tid; i < kb * pad; i += blockDim.x)
      p.out_scales[static_cast<int64_t>(i / pad) * p.rows_pad4 + p.rows_out + i % pad] = 0.f;
  }

  const TIn* __restrict__ x = static_cast<const TIn*>(p.x);
  const int64_t num_tokens = resolve_token_count(p.num_tokens, p.num_tokens_dev, nullptr);
  const int64_t rows_step = static_cast<int64_t>(gridDim.x) * p.teams;
  // Row loads (VPT units per thread) of the team's token in the row batch starting at r0.
  auto load_row = [&](int64_t r0, uint4 (&dst)[VPT][kLoads]) {
    const int64_t token = r0 + team;
    const bool active = token < num_tokens;
    const TIn* xrow = x + (active ? token : 0) * p.x_stride;
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
      const int u = lane + j * p.ts;
      if (active && u < p.units) {
        const uint4* src = reinterpret_cast<const uint4*>(xrow) + static_cast<int64_t>(u) * kLoads;
#pragma unroll
        for (int l = 0; l < kLoads; ++l) dst[j][l] = __ldcg(src + l);
      } else {
#pragma unroll
        for (int l = 0; l < kLoads; ++l) dst[j][l] = make_uint4(0, 0, 0, 0);
      }
    }
  };
  const bool smem_groups = p.permute && G <= kSmemGroups;
  // Per-warp destinations need registers the widest rows do not have (they would spill).
  const bool warp_dest = VPT * kLoads <= 8 && p.warp_dest;
  // Destination of a grouped row r (slot_row value; -1: none).
  auto dest_of_row = [&](int32_t r) -> int32_t {
    if (r < 0) return -1;
    const int64_t dd = padded_row(p.offsets, p.padded_offsets, s_off, s_poff, smem_groups, G, r);
    return dd < p.rows_out ? static_cast<int32_t>(dd) : -1;
  };
  // warp_dest: lane wl < nslot holds slot wl of the warp's token (raw slot_row and weight, the
  // next row's prefetched); dest(s) / weight(s) broadcast them.
  const int wl = tid & 31;
  auto load_slot = [&](int64_t r0, int32_t* r, float* w) {
    const int64_t tok = r0 + team;
    *r = -1;
    *w = 1.f;
    if (wl < nslot && tok < num_tokens) {
      *r = __ldcg(p.slot_row + tok * p.slots + wl);
      if (p.row_weight != nullptr && wl < p.top_k) *w = __ldcg(p.row_weight + tok * p.top_k + wl);
    }
  };
  int32_t lane_r = -1, lane_d = -1;
  float lane_w = 1.f, lane_wd = 1.f;
  auto dest = [&](int s) -> int32_t {
    return warp_dest ? __shfl_sync(0xffffffffu, lane_d, s) : s_dest[team * nslot + s];
  };
  auto weight = [&](int s) -> float {
    return warp_dest ? __shfl_sync(0xffffffffu, lane_wd, s) : s_w[team * nslot + s];
  };
  uint4 raw[VPT][kLoads];
  int64_t row0 = static_cast<int64_t>(blockIdx.x) * p.teams;
  // The first row is issued before the group offsets are staged, so both latencies overlap (the
  // loop's first barrier publishes s_off / s_poff).
  if (row0 < num_tokens) load_row(row0, raw);
  if (warp_dest) load_slot(row0, &lane_r, &lane_w);
  if (smem_groups)
    for (int g = tid; g < G; g += blockDim.x) {
      s_off[g] = __ldcg(p.offsets + g);
      s_poff[g] = __ldcg(p.padded_offsets + g);
    }
  if (warp_dest) __syncthreads();  // s_off / s_poff (the loop itself has no barrier then)
  for (; row0 < num_tokens; row0 += rows_step) {
    if (!kPrefetch && row0 != static_cast<int64_t>(blockIdx.x) * p.teams) load_row(row0, raw);

    if (warp_dest) {
      lane_d = dest_of_row(lane_r);
      lane_wd = lane_w;
      if (row0 + rows_step < num_tokens) load_slot(row0 + rows_step, &lane_r, &lane_w);
    } else {
    // Destinations and weights of this block's (token, slot) pairs.
    __syncthreads();
    for (int q = tid; q < p.teams * nslot; q += blockDim.x) {
      const int tm = q / nslot;
      const int s = q - tm * nslot;
      const int64_t tok = row0 + tm;
      int32_t d = -1;
      float w = 1.f;
      if (tok < num_tokens) {
        if (p.permute) {
          d = dest_of_row(__ldcg(p.slot_row + tok * p.slots + s));
          if (p.row_weight != nullptr && s < p.top_k) w = __ldcg(p.row_weight + tok * p.top_k + s);
        } else {
          d = static_cast<int32_t>(tok);
          if (p.row_weight != nullptr) w = __ldcg(p.row_weight + tok);
        }
      }
      s_dest[q] = d;
      s_w[q] = w;
    }
    __syncthreads();
    }
    // Next row batch in flight while this one is quantised and stored.
    uint4 nxt[kPrefetch ? VPT : 1][kLoads];
    if constexpr (kPrefetch) {
      if (row0 + rows_step < num_tokens) load_row(row0 + rows_step, nxt);
    }

    if constexpr (!kFp8) {
      // Copy / permute (optionally weighted) in the input dtype.
      for (int s = 0; s < nslot; ++s) {
        const int32_t d = dest(s);
        if (d < 0) continue;
        const bool has_w = p.row_weight != nullptr && (!p.permute || s < p.top_k);
        const float w = weight(s);
        uint4* dst = reinterpret_cast<uint4*>(static_cast<TIn*>(p.out) + static_cast<int64_t>(d) * p.hidden);
#pragma unroll
        for (int j = 0; j < VPT; ++j) {
          const int u = lane + j * p.ts;
          if (u >= p.units) continue;
          uint4 v = raw[j][0];
          if (has_w) {
            float f[8];
            vec::unpack8<TIn>(v, f);
#pragma unroll
            for (int e = 0; e < 8; ++e) f[e] = __fmul_rn(f[e], w);
            v = vec::pack8<TIn>(f);
          }
          dst[u] = v;
        }
      }
    } else {
      // Amax: per unit (16 elements), then per 128-group (8 lanes) or per row (team).
      float amax[VPT];
#pragma unroll
      for (int j = 0; j < VPT; ++j) amax[j] = unit_amax<TIn>(raw[j]);
      if (p.scheme == kGroup) {
#pragma unroll
        for (int j = 0; j < VPT; ++j)
#pragma unroll
          for (int o = 1; o < 8; o <<= 1) amax[j] = fmaxf(amax[j], __shfl_xor_sync(0xffffffffu, amax[j], o));
      } else if (p.scheme == kToken) {
        float m = amax[0];
#pragma unroll
        for (int j = 1; j < VPT; ++j) m = fmaxf(m, amax[j]);
        m = subwarp ? team_max_subwarp(m, p.ts) : block_max(m, red);
#pragma unroll
        for (int j = 0; j < VPT; ++j) amax[j] = m;
      }

      if (p.row_weight == nullptr) {
        // No routing weight on the input: every destination gets the same bytes and scales, so
        // quantise once and store the result to each (the pass is then bound by the stores).
        uint4 q[VPT];
        float qs[VPT];
#pragma unroll
        for (int j = 0; j < VPT; ++j) {
          float scale = t_scale, inv = t_inv;
          if (p.scheme == kToken || p.scheme == kGroup) {
            scale = fp8_scale_from_amax(amax[j], p.ue8m0);
            inv = rcp_rn(scale);
          }
          qs[j] = scale;
          q[j] = quantize_unit<TIn>(raw[j], inv);
        }
        const bool staged = p.scale_stage != nullptr;
        if (staged && row0 + team < num_tokens) {
#pragma unroll
          for (int j = 0; j < VPT; ++j) {
            const int u = lane + j * p.ts;
            if (u < p.units && (u & 7) == 0) p.scale_stage[(row0 + team) * p.stage_stride + (u >> 3)] = qs[j];
          }
        }
        for (int s = 0; s < nslot; ++s) {
          const int32_t d = dest(s);
          if (d < 0) continue;
          uint4* dst = reinterpret_cast<uint4*>(static_cast<uint8_t*>(p.out) + static_cast<int64_t>(d) * p.hidden);
#pragma unroll
          for (int j = 0; j < VPT; ++j) {
            const int u = lane + j * p.ts;
            if (u >= p.units) continue;
            if (p.out_scales != nullptr && !staged) {
              if (p.scheme == kToken) {
                if (lane == 0 && j == 0) p.out_scales[d] = qs[j];
              } else if (p.scheme == kGroup && (u & 7) == 0) {
                p.out_scales[static_cast<int64_t>(u >> 3) * p.rows_pad4 + d] = qs[j];
              }
            }
            dst[u] = q[j];
          }
        }
      } else {
      for (int s = 0; s < nslot; ++s) {
        const int32_t d = dest(s);
        if (d < 0) continue;
        const bool has_w = p.row_weight != nullptr && (!p.permute || s < p.top_k);
        const float w = weight(s);
        uint4* dst = reinterpret_cast<uint4*>(static_cast<uint8_t*>(p.out) + static_cast<int64_t>(d) * p.hidden);
#pragma unroll
        for (int j = 0; j < VPT; ++j) {
          const int u = lane + j * p.ts;
          if (u >= p.units) continue;
          float scale = t_scale, inv = t_inv;
          if (p.scheme == kToken || p.scheme == kGroup) {
            const float a = has_w ? fmaxf(0.f, __fmul_rn(amax[j], fabsf(w))) : amax[j];
            scale = fp8_scale_from_amax(a, p.ue8m0);
            inv = rcp_rn(scale);
            if (p.out_scales != nullptr) {
              if (p.scheme == kToken) {
                if (lane == 0 && j == 0) p.out_scales[d] = scale;
              } else if ((u & 7) == 0) {
                p.out_scales[static_cast<int64_t>(u >> 3) * p.rows_pad4 + d] = scale;
              }
            }
          }
          uint32_t packed[4];
#pragma unroll
          for (int l = 0; l < 2; ++l) {
            float f[8];
            vec::unpack8<TIn>(raw[j][l], f);
            if (has_w) {
#pragma unroll
              for (int e = 0; e < 8; ++e) f[e] = __fmul_rn(f[e], w);
            }
#pragma unroll
            for (int e = 0; e < 8; ++e) f[e] = __fmul_rn(f[e], inv);
            packed[2 * l] = cvt_e4m3x2(f[0], f[1]) | (cvt_e4m3x2(f[2], f[3]) << 16);
            packed[2 * l + 1] = cvt_e4m3x2(f[4], f[5]) | (cvt_e4m3x2(f[6], f[7]) << 16);
          }
          dst[u] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
        }
      }
      }
    }
    if constexpr (kPrefetch) {
#pragma unroll
      for (int j = 0; j < VPT; ++j)
#pragma unroll
        for (int l = 0; l < kLoads; ++l) raw[j][l] = nxt[j][l];
    }
  }
  pq_stamp(p.trace, 2);
}

// Non-template kernels: defined in permute_quant_launch.cu only (FUSEDMOE_PQ_KERNELS).
#if defined(FUSEDMOE_PQ_KERNELS)
// ---- staged 1x128 scales -> [K/128][rows_pad4] in row order (PQParams::scale_stage) ------------
// A transpose through shared memory, a tile of kGatherRows grouped rows at a time (grid-stride):
//   1. the tile's destinations d = padded_offsets[g] + r - offsets[g] and tokens t = row_token[r];
//   2. each token's staged scales (a contiguous row of stage_stride floats) are read as float4,
//      a row by a few consecutive lanes (coalesced), into s_tile[row][k] (odd row stride: the
//      column reads of step 3 hit 32 different banks);
//   3. column k of the tile is stored at [k][d]: a warp's 32 consecutive rows are consecutive d
//      within a group, so each store instruction covers whole lines.
// Up to kGatherCols k-blocks per pass (K <= 8192 in one pass), every load of a pass issued before
// its stores. Replaced (session 7) a thread-per-row version whose float4 loads touched 32 tokens'
// rows per instruction (24 us at 16384 tokens of K 7168, L2-bound).
inline constexpr int kScaleGatherThreads = 256;
inline constexpr int kGatherRows = 64;
inline constexpr int kGatherCols = 64;  // floats per row and pass (a multiple of 4)
__global__ void __launch_bounds__(kScaleGatherThreads) scale_gather_kernel(PQParams p) {
  pdl_enter();  // kernels/common/pdl.cuh: first, before any global access
  __shared__ int32_t s_off[kSmemGroups];
  __shared__ int32_t s_poff[kSmemGroups];
  __shared__ float s_tile[kGatherRows][kGatherCols + 1];
  __shared__ int64_t s_dst[kGatherRows];
  __shared__ int64_t s_tok[kGatherRows];
  const int G = p.num_groups;
  const bool smem_groups = G <= kSmemGroups;
  if (smem_groups) {
    for (int g = threadIdx.x; g < G; g += blockDim.x) {
      s_off[g] = __ldcg(p.offsets + g);
      s_poff[g] = __ldcg(p.padded_offsets + g);
    }
    __syncthreads();
  }
  const int64_t rows = __ldcg(p.offsets + G);
  const int kb = (p.hidden + 127) / 128;
  const int tid = static_cast<int>(threadIdx.x);
  for (int64_t r0 = static_cast<int64_t>(blockIdx.x) * kGatherRows; r0 < rows; r0 += static_cast<int64_t>(gridDim.x) * kGatherRows) {
    const int nrows = static_cast<int>(rows - r0 < kGatherRows ? rows - r0 : kGatherRows);
    if (tid < nrows) {
      const int32_t r = static_cast<int32_t>(r0 + tid);
      const int64_t d = padded_row(p.offsets, p.padded_offsets, s_off, s_poff, smem_groups, G, r);
      s_dst[tid] = d < p.rows_out ? d : -1;
      s_tok[tid] = __ldcg(p.row_token + r);
    }
    __syncthreads();
    for (int k0 = 0; k0 < kb; k0 += kGatherCols) {
      const int cols = kb - k0 < kGatherCols ? kb - k0 : kGatherCols;
      const int q = (cols + 3) / 4;  // float4 per row in this pass (stage rows are padded to 4)
      constexpr int kPer = kGatherRows * (kGatherCols / 4) / kScaleGatherThreads;
      float4 v[kPer];
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        const int item = tid + j * kScaleGatherThreads;
        const int row = item / q, c = item - row * q;
        if (row < nrows) v[j] = __ldcg(reinterpret_cast<const float4*>(p.scale_stage + s_tok[row] * p.stage_stride + k0) + c);
      }
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        const int item = tid + j * kScaleGatherThreads;
        const int row = item / q, c = item - row * q;
        if (row < nrows) {
          s_tile[row][4 * c] = v[j].x;
          s_tile[row][4 * c + 1] = v[j].y;
          s_tile[row][4 * c + 2] = v[j].z;
          s_tile[row][4 * c + 3] = v[j].w;
        }
      }
      __syncthreads();
      for (int item = tid; item < cols * kGatherRows; item += kScaleGatherThreads) {
        const int k = item / kGatherRows, row = item - k * kGatherRows;
        if (row < nrows && s_dst[row] >= 0) p.out_scales[static_cast<int64_t>(k0 + k) * p.rows_pad4 + s_dst[row]] = s_tile[row][k];
      }
      __syncthreads();
    }
  }
}

// ---- test entry points ------------------------------------------------------------------------
// Every float bit pattern start + i (i < count): e4m3 through the kernels' pair conversion and
// UE8M0 through float_to_ue8m0.
__global__ void debug_convert_kernel(uint8_t* e4m3, uint8_t* ue8m0, uint32_t start, uint32_t count) {
  const uint32_t i = (blockIdx.x * blockDim.x + threadIdx.x) * 2u;
  if (i >= count) return;
  const float a = __uint_as_float(start + i);
  const float b = __uint_as_float(start + i + 1u);  // wraps harmlessly past 2^32 - 1
  const uint32_t q = cvt_e4m3x2(a, b);
  if (e4m3 != nullptr) {
    e4m3[i] = static_cast<uint8_t>(q & 0xFFu);
    if (i + 1 < count) e4m3[i + 1] = static_cast<uint8_t>(q >> 8);
  }
  if (ue8m0 != nullptr) {
    ue8m0[i] = static_cast<uint8_t>(float_to_ue8m0(a));
    if (i + 1 < count) ue8m0[i + 1] = static_cast<uint8_t>(float_to_ue8m0(b));
  }
}

// For the float a with bits start + i: scale[i] = fp8_scale_from_amax(a), inv[i] = rcp_rn(a)
// (the reciprocal used for static and computed scales).
__global__ void debug_scale_kernel(float* scale, float* inv, uint32_t start, uint32_t count, bool ue8m0) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const float a = __uint_as_float(start + i);
  if (scale != nullptr) scale[i] = fp8_scale_from_amax(a, ue8m0);
  if (inv != nullptr) inv[i] = rcp_rn(a);
}

#endif  // FUSEDMOE_PQ_KERNELS

}  // namespace fusedmoe::kernels::pq_detail
