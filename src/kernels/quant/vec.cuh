// vec.cuh — helpers shared by the row kernels (permute/quantise and combine): 16-byte vectors of
// bf16/f16, exact conversions, the "row team" launch shape and the SM count.
//
// A row team is TS threads that own one row of K elements, split into units of 8 (16 bytes of
// bf16/f16) or 16 elements; thread `lane` owns units lane + j * TS for j < VPT (coalesced per j).
// TS <= 32: several teams per 256-thread block (sub-warp teams, shuffle reductions);
// TS > 32: one team per block (blockDim = TS).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "kernels/common/launch.cuh"  // device_sm_count

namespace fusedmoe::kernels::vec {

// ---- bf16 / f16 <-> float, 8 elements in a uint4 ------------------------------------------------
template <class T>
struct Elem;

template <>
struct Elem<__nv_bfloat16> {
  __device__ __forceinline__ static float2 to_float2(uint32_t w) {
    return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xFFFF0000u));  // exact
  }
  __device__ __forceinline__ static uint32_t from_float2(float a, float b) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);  // low half = a
    return *reinterpret_cast<const uint32_t*>(&h);
  }
};

template <>
struct Elem<__half> {
  __device__ __forceinline__ static float2 to_float2(uint32_t w) {
    const __half2 h = *reinterpret_cast<const __half2*>(&w);
    return __half22float2(h);  // exact
  }
  __device__ __forceinline__ static uint32_t from_float2(float a, float b) {
    const __half2 h = __floats2half2_rn(a, b);  // low half = a
    return *reinterpret_cast<const uint32_t*>(&h);
  }
};

template <class T>
__device__ __forceinline__ void unpack8(const uint4& v, float* f) {
  const float2 a = Elem<T>::to_float2(v.x), b = Elem<T>::to_float2(v.y);
  const float2 c = Elem<T>::to_float2(v.z), d = Elem<T>::to_float2(v.w);
  f[0] = a.x; f[1] = a.y; f[2] = b.x; f[3] = b.y;
  f[4] = c.x; f[5] = c.y; f[6] = d.x; f[7] = d.y;
}

template <class T>
__device__ __forceinline__ uint4 pack8(const float* f) {
  uint4 v;
  v.x = Elem<T>::from_float2(f[0], f[1]);
  v.y = Elem<T>::from_float2(f[2], f[3]);
  v.z = Elem<T>::from_float2(f[4], f[5]);
  v.w = Elem<T>::from_float2(f[6], f[7]);
  return v;
}

// ---- launch shape -------------------------------------------------------------------------------
struct TeamShape {
  int ts = 0;         // threads per row team
  int vpt = 0;        // units per thread (1, 2, 4, 8)
  int block = 0;      // threads per block
  int teams = 0;      // teams per block
};

// `units` per row; teams of at most max_ts threads (a multiple of 32 above 32).
// Returns false when a row needs more than 1024 x 8 units.
inline bool pick_team_shape(int64_t units, int max_ts, TeamShape* s) {
  if (units <= 0) units = 1;
  if (units <= 32) {
    int ts = 8;
    while (ts < units) ts <<= 1;
    *s = TeamShape{ts, 1, 256, 256 / ts};
    return true;
  }
  int vpt = 1;
  while ((units + vpt - 1) / vpt > max_ts && vpt < 8) vpt <<= 1;
  const int64_t ts = ((units + vpt - 1) / vpt + 31) / 32 * 32;
  if (ts > 1024) return false;
  *s = TeamShape{static_cast<int>(ts), vpt, static_cast<int>(ts), 1};
  return true;
}

// Streaming multiprocessors of the current device (kernels/common/launch.cuh, cached per device).
inline int sm_count() { return device_sm_count(); }

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace fusedmoe::kernels::vec
