// CPU reference of DeepSeek-V4's fused inverse RoPE + FP8 per-head quantisation
// (fusedmoe/rope_quant.h). The GPU kernel (src/kernels/rope/inv_rope_quant.cuh) must match it bit
// for bit, so the float32 arithmetic is spelled out operation by operation:
//   even d: y = add(mul(x_d, c), mul(x_{d+1}, s))      odd d: y = sub(mul(x_d, c), mul(x_{d-1}, s))
// hd::add / hd::sub / hd::mul are the plain float operators on the host (correctly rounded SSE
// arithmetic; g++ in ISO C++ mode does not contract a * b + c into an FMA, and hd_math.h turns
// contraction off explicitly for -mfma builds) and __fadd_rn / __fsub_rn / __fmul_rn on the device,
// which are never contracted either.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "fusedmoe/reference.h"
#include "kernels/common/hd_math.h"

namespace fusedmoe::ref {

namespace {
constexpr float kFp8Max = 448.0f;
constexpr int kHeadDim = InvRopeQuantProblem::kHeadDim;
constexpr int kRopeDim = InvRopeQuantProblem::kRopeDim;
constexpr int kChunk = InvRopeQuantProblem::kQuantChunk;
constexpr int kChunks = kHeadDim / kChunk;
constexpr int kRopeBegin = kHeadDim - kRopeDim;  // 448
constexpr int kHalf = kRopeDim / 2;              // 32 cos values, then 32 sin values

// Clamp to [-448, 448] that keeps NaN a NaN (both comparisons are false for NaN).
float clamp_fp8(float v) { return v > kFp8Max ? kFp8Max : (v < -kFp8Max ? -kFp8Max : v); }
}  // namespace

void inv_rope_fp8_quant(const InvRopeQuantProblem& p, const uint16_t* o_bf16, const int64_t* positions,
                        const float* cache, uint8_t* out_fp8, float* out_scales) {
  if (!validate(p).ok()) return;
  const int64_t T = p.num_tokens;
  const int64_t H = p.num_heads();
  const int64_t hpg = p.heads_per_group;
  const int64_t T4 = p.tokens_pad4();

  // Scale padding: tokens [T, T_pad4) of every (group, chunk) row.
  for (int64_t row = 0; row < H * kChunks; ++row)
    for (int64_t t = T; t < T4; ++t) out_scales[row * T4 + t] = 0.f;

  float y[kHeadDim];
  for (int64_t t = 0; t < T; ++t) {
    const int64_t pos = positions[t];
    const bool valid = pos >= 0 && pos < p.max_pos;
    const float* row = valid ? cache + pos * kRopeDim : nullptr;
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / hpg, j = h % hpg;
      uint8_t* q = out_fp8 + ((g * T + t) * hpg + j) * kHeadDim;
      // Chunk c of head h = g * hpg + j is scale row g * (hpg * 4) + j * 4 + c = 4h + c.
      float* scale_slot = out_scales + (h * kChunks) * T4 + t;
      if (!valid) {
        std::memset(q, 0, kHeadDim);
        for (int c = 0; c < kChunks; ++c) scale_slot[c * T4] = 0.f;
        continue;
      }
      const uint16_t* x = o_bf16 + (t * H + h) * kHeadDim;
      for (int d = 0; d < kRopeBegin; ++d) y[d] = bf16_to_float(x[d]);
      for (int d = kRopeBegin; d < kHeadDim; d += 2) {
        const int i = (d - kRopeBegin) / 2;
        const float c = row[i], s = row[kHalf + i];
        const float xe = bf16_to_float(x[d]), xo = bf16_to_float(x[d + 1]);
        y[d] = hd::add(hd::mul(xe, c), hd::mul(xo, s));      // even d: x_d c + x_{d+1} s
        y[d + 1] = hd::sub(hd::mul(xo, c), hd::mul(xe, s));  // odd d:  x_d c - x_{d-1} s
      }
      for (int c = 0; c < kChunks; ++c) {
        const float* v = y + c * kChunk;
        float amax = 0.f;  // NaN ignored, as fmaxf on the device
        for (int e = 0; e < kChunk; ++e) amax = std::fmax(amax, std::fabs(v[e]));
        const float scale = fp8_scale_from_amax(amax, ScaleFormat::kUE8M0);
        const float inv = 1.0f / scale;  // exact: scale is a power of two in [2^-42, 2^127]
        for (int e = 0; e < kChunk; ++e) q[c * kChunk + e] = float_to_e4m3(clamp_fp8(hd::mul(v[e], inv)));
        scale_slot[c * T4] = scale;
      }
    }
  }
}

}  // namespace fusedmoe::ref
