// Host side of the fused inverse RoPE + FP8 quantisation (fusedmoe/rope_quant.h): validation,
// pointer checks, device check, launch.
#include <cstdint>
#include <limits>

#include "core/check.h"
#include "fusedmoe/device.h"
#include "fusedmoe/rope_quant.h"
#if defined(FUSEDMOE_WITH_CUDA)
#include <cuda_runtime.h>

#include "kernels/rope/inv_rope_quant_launch.h"
#endif

namespace fusedmoe {

namespace {
constexpr int64_t kMaxTokens = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxHeads = 1024;
constexpr int64_t kCacheRowBytes = InvRopeQuantProblem::kRopeDim * static_cast<int64_t>(sizeof(float));

bool aligned(const void* ptr, uintptr_t bytes) { return (reinterpret_cast<uintptr_t>(ptr) & (bytes - 1)) == 0; }
}  // namespace

Status validate(const InvRopeQuantProblem& p) {
  FM_REQUIRE(p.num_tokens >= 0, kInvalidArgument, "inverse RoPE quant: num_tokens (" << p.num_tokens << ") < 0");
  FM_REQUIRE(p.num_tokens <= kMaxTokens, kInvalidArgument,
             "inverse RoPE quant: num_tokens (" << p.num_tokens << ") > " << kMaxTokens
                                                << " (the error flag records tokens as int32)");
  FM_REQUIRE(p.num_groups >= 1, kInvalidArgument, "inverse RoPE quant: num_groups (" << p.num_groups << ") < 1");
  FM_REQUIRE(p.heads_per_group >= 1, kInvalidArgument,
             "inverse RoPE quant: heads_per_group (" << p.heads_per_group << ") < 1");
  FM_REQUIRE(p.num_heads() <= kMaxHeads, kInvalidArgument,
             "inverse RoPE quant: num_groups * heads_per_group (" << p.num_groups << " * " << p.heads_per_group
                                                                  << " = " << p.num_heads() << ") > " << kMaxHeads);
  FM_REQUIRE(p.max_pos >= 1, kInvalidArgument, "inverse RoPE quant: max_pos (" << p.max_pos << ") < 1");
  FM_REQUIRE(p.max_pos <= std::numeric_limits<int64_t>::max() / kCacheRowBytes, kInvalidArgument,
             "inverse RoPE quant: max_pos (" << p.max_pos << ") too large: the cache ("
                                             << kCacheRowBytes << " bytes a row) would not be addressable");
  FM_REQUIRE(p.head_dim > 0 && p.rope_dim > 0 && p.quant_chunk > 0, kInvalidArgument,
             "inverse RoPE quant: head_dim (" << p.head_dim << "), rope_dim (" << p.rope_dim << ") and quant_chunk ("
                                              << p.quant_chunk << ") must be positive");
  FM_REQUIRE(p.rope_dim % 2 == 0, kInvalidArgument,
             "inverse RoPE quant: rope_dim (" << p.rope_dim << ") must be even (interleaved pairs)");
  FM_REQUIRE(p.rope_dim <= p.head_dim, kInvalidArgument,
             "inverse RoPE quant: rope_dim (" << p.rope_dim << ") > head_dim (" << p.head_dim << ")");
  FM_REQUIRE(p.head_dim == InvRopeQuantProblem::kHeadDim, kUnsupported,
             "inverse RoPE quant: head_dim " << p.head_dim << " is not supported (only "
                                             << InvRopeQuantProblem::kHeadDim << ", DeepSeek-V4)");
  FM_REQUIRE(p.rope_dim == InvRopeQuantProblem::kRopeDim, kUnsupported,
             "inverse RoPE quant: rope_dim " << p.rope_dim << " is not supported (only the last "
                                             << InvRopeQuantProblem::kRopeDim << " dims, DeepSeek-V4)");
  FM_REQUIRE(p.quant_chunk == InvRopeQuantProblem::kQuantChunk, kUnsupported,
             "inverse RoPE quant: quant_chunk " << p.quant_chunk << " is not supported (only "
                                                << InvRopeQuantProblem::kQuantChunk << ")");
  return Status::Ok();
}

int64_t inv_rope_scales_elems(const InvRopeQuantProblem& p) {
  if (!validate(p).ok()) return 0;
  return p.num_heads() * (InvRopeQuantProblem::kHeadDim / InvRopeQuantProblem::kQuantChunk) * p.tokens_pad4();
}

Status inv_rope_fp8_quant(const InvRopeQuantProblem& p, const void* o_bf16, const int64_t* positions,
                          const float* cos_sin_cache, void* out_fp8, float* out_scales, int32_t* error_flag,
                          Stream stream) {
  FM_TRY(validate(p));
  if (p.num_tokens > 0) {
    FM_REQUIRE(o_bf16 != nullptr, kInvalidArgument, "inverse RoPE quant: o (bf16 input) is null");
    FM_REQUIRE(positions != nullptr, kInvalidArgument, "inverse RoPE quant: positions is null");
    FM_REQUIRE(cos_sin_cache != nullptr, kInvalidArgument, "inverse RoPE quant: cos_sin_cache is null");
    FM_REQUIRE(out_fp8 != nullptr, kInvalidArgument, "inverse RoPE quant: out (fp8 output) is null");
    FM_REQUIRE(out_scales != nullptr, kInvalidArgument, "inverse RoPE quant: out_scales is null");
    FM_REQUIRE(aligned(o_bf16, 16), kMisaligned, "inverse RoPE quant: o (bf16 input) must be 16-byte aligned");
    FM_REQUIRE(aligned(out_fp8, 16), kMisaligned, "inverse RoPE quant: out (fp8 output) must be 16-byte aligned");
    FM_REQUIRE(aligned(cos_sin_cache, 16), kMisaligned, "inverse RoPE quant: cos_sin_cache must be 16-byte aligned");
    FM_REQUIRE(aligned(positions, 8), kMisaligned, "inverse RoPE quant: positions (int64) must be 8-byte aligned");
    FM_REQUIRE(aligned(out_scales, 4), kMisaligned, "inverse RoPE quant: out_scales (f32) must be 4-byte aligned");
    FM_REQUIRE(aligned(error_flag, 4), kMisaligned, "inverse RoPE quant: error_flag (int32[4]) must be 4-byte aligned");
  }
#if !defined(FUSEDMOE_WITH_CUDA)
  (void)stream;
  return Status(StatusCode::kNoDevice, "inverse RoPE quant: built without CUDA kernels");
#else
  int device = 0;
  FM_TRY(current_device(&device));
  FM_TRY(check_device_supported(device));
  if (p.num_tokens == 0) return Status::Ok();
  kernels::InvRopeQuantArgs a;
  a.o = o_bf16;
  a.positions = positions;
  a.cache = cos_sin_cache;
  a.out = out_fp8;
  a.out_scales = out_scales;
  a.error_flag = error_flag;
  a.num_tokens = p.num_tokens;
  a.num_groups = p.num_groups;
  a.heads_per_group = p.heads_per_group;
  a.max_pos = p.max_pos;
  const cudaError_t e = kernels::launch_inv_rope_quant(a, stream);
  FM_REQUIRE(e == cudaSuccess, kCudaError, "inverse RoPE quant: launch failed: " << cudaGetErrorString(e));
  return Status::Ok();
#endif
}

}  // namespace fusedmoe
