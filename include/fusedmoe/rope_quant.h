// fusedmoe/rope_quant.h — DeepSeek-V4's fused inverse RoPE + FP8 per-head quantisation: the
// attention-output step before the grouped output projection.
//
// Inputs (device pointers):
//   o          [T, H, 512] bf16, H = num_groups * heads_per_group, rows contiguous
//   positions  [T] int64
//   cache      [max_pos, 64] float32 per position: 32 cos values, then 32 sin values
// Per head, the last 64 dims (448..511) are rotated by -theta, pairs interleaved: for d in
// 448..511, i = (d - 448) / 2, c = cache[pos][i], s = cache[pos][32 + i]:
//   even d: y_d = x_d * c + x_{d+1} * s        odd d: y_d = x_d * c - x_{d-1} * s
// in float32 with each product rounded separately and one rounded add/sub (never an FMA), so
// that the CPU reference (ref::inv_rope_fp8_quant) and the GPU produce the same bits. Dims
// 0..447 pass through (the float value of the bf16).
// Each head is then quantised in 4 chunks of 128 dims: scale = 2^ceil(log2(max(amax, 1e-10) / 448))
// (UE8M0-style power of two, exactly ref::fp8_scale_from_amax(amax, ScaleFormat::kUE8M0); amax
// ignores NaN), q = e4m3(clamp(y * (1 / scale), -448, 448)) with round-to-nearest-even and NaN
// -> 0x7F (as ref::float_to_e4m3).
//
// Outputs (device pointers):
//   out_fp8    [G, T, d] e4m3, d = heads_per_group * 512, group-major: head h = g * hpg + j goes
//              to out[g][t][j * 512 .. j * 512 + 511]
//   out_scales float32 scales of logical shape [T, G, d / 128], stored token-fastest with T padded
//              to a multiple of 4 (DeepGEMM's TMA layout): physical [G][d / 128][T_pad4]; the scale
//              of token t, group g, chunk c (c = j * 4 + chunk of head j) is at
//              ((g * (d / 128)) + c) * T_pad4 + t; slots t in [T, T_pad4) are written as 0.
//              inv_rope_scales_elems() gives the element count (G * d / 128 * T_pad4).
//
// Positions outside [0, max_pos) are never used to read the cache: every output of that token
// (all heads: FP8 bytes and scales) is written as 0, and when error_flag (int32[4], nullable) is
// given, the first offender recorded wins an atomicCAS on error_flag[0] (0 -> 1) and writes
// [1] = token, [2] = position >> 32 (high 32 bits), [3] = position low 32 bits. "First" is the first
// to be recorded on the device, not necessarily the lowest token. The kernel never clears the
// flag: zero it (cudaMemsetAsync) before the call and read it after the stream work completes.
//
// inv_rope_fp8_quant() is one kernel launch: no allocation, no host synchronisation, no
// compilation (one sm_90a kernel serves every T), CUDA-graph capturable.
#pragma once
#include <cstdint>

#include "fusedmoe/status.h"
#include "fusedmoe/types.h"

namespace fusedmoe {

struct InvRopeQuantProblem {
  // Fields with the documented meaning (see above); T may change from call to call.
  int64_t num_tokens = 0;   // T >= 0 (at most 2^31 - 1: the error flag records tokens as int32)
  int num_groups = 0;       // G >= 1
  int heads_per_group = 0;  // >= 1; H = G * heads_per_group <= 1024
  int64_t max_pos = 0;      // rows of the cos/sin cache, >= 1

  // Runtime shape parameters; only the DeepSeek-V4 values are supported (kUnsupported otherwise).
  static constexpr int kHeadDim = 512;
  static constexpr int kRopeDim = 64;     // the last 64 dims of each head
  static constexpr int kQuantChunk = 128;
  int head_dim = kHeadDim;
  int rope_dim = kRopeDim;
  int quant_chunk = kQuantChunk;

  int64_t num_heads() const { return static_cast<int64_t>(num_groups) * heads_per_group; }
  int64_t group_dim() const { return static_cast<int64_t>(heads_per_group) * kHeadDim; }  // d
  int64_t tokens_pad4() const { return (num_tokens + 3) / 4 * 4; }
};

// Checks the descriptor alone (no pointers).
//   kInvalidArgument: T < 0 or > 2^31 - 1, G < 1, heads_per_group < 1, H > 1024, max_pos < 1 or
//                     max_pos * 256 bytes beyond int64, head_dim / rope_dim / quant_chunk not
//                     positive, rope_dim odd or > head_dim;
//   kUnsupported:     head_dim != 512, rope_dim != 64, quant_chunk != 128.
Status validate(const InvRopeQuantProblem& p);

// Elements of out_scales: G * (d / 128) * T_pad4 (0 for an invalid problem or T = 0).
int64_t inv_rope_scales_elems(const InvRopeQuantProblem& p);

// Runs the fused inverse RoPE + FP8 quantisation on `stream` (asynchronous).
// Checks, in order: validate(p); for T > 0 the pointers (o_bf16, positions, cos_sin_cache,
// out_fp8, out_scales non-null: kInvalidArgument; o_bf16, out_fp8, cos_sin_cache 16-byte aligned,
// positions 8-byte, out_scales and error_flag 4-byte: kMisaligned); the device (kNoDevice in a
// CPU-only build or without a GPU, kWrongArch off Hopper). T = 0 then returns Ok without a launch.
// A failed launch is kCudaError.
Status inv_rope_fp8_quant(const InvRopeQuantProblem& p, const void* o_bf16, const int64_t* positions,
                          const float* cos_sin_cache, void* out_fp8, float* out_scales,
                          int32_t* error_flag /*nullable*/, Stream stream);

}  // namespace fusedmoe
