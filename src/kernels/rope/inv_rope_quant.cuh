// inv_rope_quant.cuh — device code of DeepSeek-V4's fused inverse RoPE + FP8 per-head
// quantisation (contract: fusedmoe/rope_quant.h, kernels/rope/inv_rope_quant_launch.h).
//
// Bit-exact with ref::inv_rope_fp8_quant (src/reference/rope_quant.cpp):
//   * rotation as separately rounded products and one add/sub, never contracted into an FMA:
//       even d: __fadd_rn(__fmul_rn(x_d, c), __fmul_rn(x_{d+1}, s))
//       odd d:  __fsub_rn(__fmul_rn(x_d, c), __fmul_rn(x_{d-1}, s))
//     (the reference computes the same with plain float operators; g++ in ISO C++ mode does not
//     contract, and hd_math.h forbids it explicitly for -mfma builds);
//   * amax = fmaxf over |y| (NaN ignored, as std::fmax), exact whatever the reduction order;
//   * scale = UE8M0(max(amax, 1e-10) / 448) as a float power of two: the division is correctly
//     rounded (div448_rn, as in kernels/quant/permute_quant.cuh) and the exponent is taken from
//     the bits, so it equals ref::fp8_scale_from_amax(amax, kUE8M0); 1 / scale is built from the
//     exponent bits (exact: a power of two, as the reference's 1.0f / scale);
//   * q = e4m3(__fmul_rn(y, 1 / scale)) with cvt.rn.satfinite.e4m3x2.f32 (= __nv_cvt_float_to_fp8
//     (v, __NV_SATFINITE, __NV_E4M3) per element, checked against ref::float_to_e4m3 on all 2^32
//     floats). The reference's clamp to +-448 before the cast is not repeated here: SATFINITE
//     already maps every float beyond +-448 (inf included) to +-448 and keeps NaN a NaN (0x7F),
//     so e4m3(clamp(v)) == e4m3(v) for every v (tests/cpu/test_reference_rope_quant.cpp checks
//     this identity on the reference conversion).
//
// Work split: one (token, head) item = 512 bf16 (1 KiB in, 512 B of e4m3 out) per warp; lane L
// owns dims 16L .. 16L + 15 (two 16-byte loads, one 16-byte store), so a 128-dim chunk is 8 lanes
// (amax by 3 xor-shuffles) and the rotated dims 448..511 are lanes 28..31. The cache row of the
// item's position (64 floats) is read once per item by the whole warp (8 bytes per lane, one
// coalesced 256-byte request) and the rotation lanes take their 8 cos + 8 sin values by shuffles.
// Each warp task is kItems consecutive items (heads fastest, so the heads of a token are
// neighbours and a token's cache row comes from L2 after its first read); the loads of a task
// are written before its math. Blocks of 8 warps; a grid-stride loop only for huge T * H.
// Occupancy (63 registers, no spills: 4 blocks, 32 warps per SM, 2 KiB of loads per warp task) keeps
// several times the bytes in flight that HBM needs; ptxas does put the position checks between
// the loads, so a task pays the position latency before most of its activation loads.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace fusedmoe::kernels::irq_detail {

inline constexpr int kThreads = 256;
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kItems = 2;                                 // (token, head) items per warp task
inline constexpr int kHeadDim = 512;
inline constexpr int kRopeDim = 64;
inline constexpr int kChunk = 128;
inline constexpr int kChunksPerHead = kHeadDim / kChunk;         // 4
inline constexpr int kCacheRow = 64;                             // floats per position: 32 cos, 32 sin
inline constexpr int kRopePairs = kRopeDim / 2;                  // 32
inline constexpr int kLaneElems = kHeadDim / 32;                 // 16
inline constexpr int kInVecPerHead = kHeadDim * 2 / 16;          // 64 uint4 of bf16
inline constexpr int kOutVecPerHead = kHeadDim / 16;             // 32 uint4 of e4m3
inline constexpr int kFirstRopeLane = (kHeadDim - kRopeDim) / kLaneElems;  // 28
inline constexpr float kAmaxFloor = 1e-10f;
inline constexpr unsigned kFull = 0xffffffffu;

static_assert(kLaneElems == 16 && kChunk / kLaneElems == 8, "a chunk is 8 lanes of 16 dims");
static_assert(kFirstRopeLane == 28 && kRopeDim / kLaneElems == 4, "rotated dims are lanes 28..31");
static_assert(kCacheRow / 2 == 32, "one float2 of the cache row per lane");

struct Params {
  const uint4* o;            // [T * H * 64] bf16 as 16-byte vectors
  const int64_t* positions;  // [T]
  const float* cache;        // [max_pos, 64]
  uint4* out;                // [G, T, hpg * 512] e4m3 as 16-byte vectors
  float* scales;             // [G * hpg * 4][T_pad4]
  int32_t* error_flag;       // int32[4] or null
  int64_t num_tokens;        // T
  int64_t tokens_pad4;       // T rounded up to 4
  int64_t max_pos;
  int num_heads;             // H = G * hpg
  int heads_per_group;
};

// Correctly rounded a / 448 for a in [1e-10, FLT_MAX] or +inf (kernels/quant/permute_quant.cuh,
// pq_detail::div448_rn, where the argument is spelled out): a / 448 = (a / 7) * 2^-6, a / 7 is
// never a float rounding midpoint and lies >= 2^-27.8 (relative) away from one, while the double
// product is within 2^-52 of a / 448, so its rounding to float is RN_f(a / 448).
__device__ __forceinline__ float div448_rn(float a) {
  return __double2float_rn(__dmul_rn(static_cast<double>(a), 1.0 / 448.0));
}

// ref::fp8_scale_from_amax(amax, kUE8M0) and its exact reciprocal. s = max(amax, 1e-10) / 448 is
// a positive normal float (>= 2.2e-13) or +inf (amax = inf), never NaN (fmaxf drops NaN), so the
// UE8M0 exponent is e = ceil(log2 s) = biased_exp - 127 + (mantissa != 0), clamped to <= 127
// (inf and s > 2^127 give 2^127, as ref::float_to_ue8m0), and e >= -42. scale = 2^e (bits
// (e + 127) << 23); 1 / scale = 2^-e: normal for e <= 126, the subnormal 2^-127 (0x00400000) for
// e = 127.
__device__ __forceinline__ void ue8m0_scale(float amax, float* scale, float* inv) {
  const uint32_t a = __float_as_uint(div448_rn(fmaxf(amax, kAmaxFloor)));
  int e = static_cast<int>(a >> 23) - 127 + ((a & 0x007FFFFFu) != 0u ? 1 : 0);
  e = e > 127 ? 127 : e;  // also +inf (biased exponent 255)
  *scale = __uint_as_float(static_cast<uint32_t>(e + 127) << 23);
  *inv = __uint_as_float(e < 127 ? static_cast<uint32_t>(127 - e) << 23 : 0x00400000u);
}

// Two floats -> two e4m3 bytes (low byte = a): RNE, SATFINITE, NaN -> 0x7F.
__device__ __forceinline__ uint32_t cvt_e4m3x2(float a, float b) {
  return static_cast<uint32_t>(__nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3));
}

// 8 bf16 in a uint4 -> 8 floats (exact).
__device__ __forceinline__ void unpack_bf16x8(const uint4& v, float* f) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
  }
}

// Rotation by -theta of one interleaved pair (x_even, x_odd) with c = cos, s = sin; never an FMA.
__device__ __forceinline__ void rotate_pair(float& xe, float& xo, float c, float s) {
  const float ye = __fadd_rn(__fmul_rn(xe, c), __fmul_rn(xo, s));
  const float yo = __fsub_rn(__fmul_rn(xo, c), __fmul_rn(xe, s));
  xe = ye;
  xo = yo;
}

__device__ __forceinline__ void report_bad_position(int32_t* flag, int64_t token, int64_t pos) {
  if (flag == nullptr) return;
  if (atomicCAS(flag, 0, 1) == 0) {  // kErrorPositionOutOfRange; the first recorded one wins
    flag[1] = static_cast<int32_t>(token);
    flag[2] = static_cast<int32_t>(static_cast<uint64_t>(pos) >> 32);
    flag[3] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(pos)));
  }
}

__global__ void __launch_bounds__(kThreads) inv_rope_quant_kernel(const Params p) {
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int warp = static_cast<int>(threadIdx.x >> 5);
  const int H = p.num_heads;
  const int64_t T = p.num_tokens;

  // Scale slots of the padding tokens [T, T_pad4) of every (group, chunk) row: zero.
  if (blockIdx.x == 0 && p.tokens_pad4 > T) {
    const int pad = static_cast<int>(p.tokens_pad4 - T);
    const int n = kChunksPerHead * H * pad;
    for (int i = static_cast<int>(threadIdx.x); i < n; i += kThreads)
      p.scales[static_cast<int64_t>(i / pad) * p.tokens_pad4 + T + i % pad] = 0.f;
  }

  const int64_t items = T * H;
  // First item of this warp's first task and the grid stride, both as (token, head): one
  // division each, then incremental updates (no 64-bit division in the loop).
  int64_t item0 = (static_cast<int64_t>(blockIdx.x) * kWarps + warp) * kItems;
  if (item0 >= items) return;
  int64_t tok0 = item0 / H;
  int head0 = static_cast<int>(item0 - tok0 * H);
  const int64_t step = static_cast<int64_t>(gridDim.x) * kWarps * kItems;
  const int64_t step_tok = step / H;
  const int step_head = static_cast<int>(step - step_tok * H);

  for (; item0 < items; item0 += step) {
    int64_t tok[kItems];
    int head[kItems];
    bool live[kItems];
    tok[0] = tok0;
    head[0] = head0;
#pragma unroll
    for (int k = 1; k < kItems; ++k) {
      head[k] = head[k - 1] + 1;
      tok[k] = tok[k - 1];
      if (head[k] == H) {
        head[k] = 0;
        ++tok[k];
      }
    }

    // ---- all loads of the task: positions and activations, then the cache rows ----
    // Unpredicated: an item past the end (only possible in the very last task) re-reads item0's
    // data, so there is no branch for the compiler to sink the loads into.
    int64_t pos[kItems];
    uint4 raw[kItems][2];
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      live[k] = k == 0 || item0 + k < items;  // warp-uniform; item0 < items in the loop
      pos[k] = __ldg(p.positions + (live[k] ? tok[k] : tok[0]));
      const uint4* src = p.o + (live[k] ? item0 + k : item0) * kInVecPerHead + 2 * lane;
      raw[k][0] = __ldg(src);
      raw[k][1] = __ldg(src + 1);
    }
    bool valid[kItems];
    float2 cs[kItems];  // lane L: cache[pos][2L], cache[pos][2L + 1]
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      valid[k] = live[k] && pos[k] >= 0 && pos[k] < p.max_pos;  // warp-uniform
      // An out-of-range position is never used as an address: row 0 is read instead (max_pos
      // >= 1) and the item's outputs are zeros.
      cs[k] = __ldg(reinterpret_cast<const float2*>(p.cache + (valid[k] ? pos[k] : 0) * kCacheRow) + lane);
    }

    // ---- math and stores, item by item ----
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      // No branch before the stores (a dead item computes on item0's data): the loads above
      // stay where they are instead of being sunk into a conditional block.
      float y[kLaneElems];
      unpack_bf16x8(raw[k][0], y);
      unpack_bf16x8(raw[k][1], y + 8);

      // Lanes 28..31 own dims 448 + 16r .. 448 + 16r + 15 (r = lane - 28): pairs i = 8r + e,
      // e < 8, with elements 2e, 2e + 1. cos[i] = cache[i] is held by lane i / 2 (.x for even
      // i, .y for odd), sin[i] = cache[32 + i] by lane 16 + i / 2. For q < 4: pair e = 2q takes
      // the .x values of lanes 4r + q (cos) and 16 + 4r + q (sin), pair e = 2q + 1 their .y.
      // Every lane shuffles (full mask); only the rotation lanes use the values.
      const int r = lane & 3;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float c0 = __shfl_sync(kFull, cs[k].x, 4 * r + q);
        const float c1 = __shfl_sync(kFull, cs[k].y, 4 * r + q);
        const float s0 = __shfl_sync(kFull, cs[k].x, 16 + 4 * r + q);
        const float s1 = __shfl_sync(kFull, cs[k].y, 16 + 4 * r + q);
        if (lane >= kFirstRopeLane) {
          rotate_pair(y[4 * q], y[4 * q + 1], c0, s0);
          rotate_pair(y[4 * q + 2], y[4 * q + 3], c1, s1);
        }
      }

      // Chunk amax over the 8 lanes of the chunk (lanes 8c .. 8c + 7).
      float m = 0.f;
#pragma unroll
      for (int e = 0; e < kLaneElems; ++e) m = fmaxf(m, fabsf(y[e]));
#pragma unroll
      for (int o = 1; o < 8; o <<= 1) m = fmaxf(m, __shfl_xor_sync(kFull, m, o));
      float scale, inv;
      ue8m0_scale(m, &scale, &inv);

      uint4 q8 = make_uint4(0u, 0u, 0u, 0u);
      if (valid[k]) {
        uint32_t w[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          w[i] = cvt_e4m3x2(__fmul_rn(y[4 * i], inv), __fmul_rn(y[4 * i + 1], inv)) |
                 (cvt_e4m3x2(__fmul_rn(y[4 * i + 2], inv), __fmul_rn(y[4 * i + 3], inv)) << 16);
        }
        q8 = make_uint4(w[0], w[1], w[2], w[3]);
      } else {
        scale = 0.f;  // the whole token reads as zeros
      }

      if (!live[k]) continue;  // warp-uniform
      const int g = head[k] / p.heads_per_group;
      const int j = head[k] - g * p.heads_per_group;
      const int64_t out_row = (static_cast<int64_t>(g) * T + tok[k]) * p.heads_per_group + j;
      p.out[out_row * kOutVecPerHead + lane] = q8;
      if ((lane & 7) == 0)
        p.scales[(static_cast<int64_t>(kChunksPerHead) * head[k] + (lane >> 3)) * p.tokens_pad4 + tok[k]] = scale;
      if (!valid[k] && head[k] == 0 && lane == 0) report_bad_position(p.error_flag, tok[k], pos[k]);
    }

    tok0 += step_tok;
    head0 += step_head;
    if (head0 >= H) {
      head0 -= H;
      ++tok0;
    }
  }
}

}  // namespace fusedmoe::kernels::irq_detail
