// Host launcher of DeepSeek-V4's fused inverse RoPE + FP8 per-head quantisation (semantics and
// layouts in fusedmoe/rope_quant.h; bit-identical to ref::inv_rope_fp8_quant).
// One launch, no allocation, no host synchronisation; CUDA-graph capturable. One compiled kernel
// serves every token count.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace fusedmoe::kernels {

// Recorded in error_flag[0] (atomicCAS 0 -> code, first one wins) for a position outside
// [0, max_pos); [1] = token, [2] = position high 32 bits, [3] = position low 32 bits.
inline constexpr int kErrorPositionOutOfRange = 1;

struct InvRopeQuantArgs {
  const void* o = nullptr;              // [T, H, 512] bf16, 16-byte aligned
  const int64_t* positions = nullptr;   // [T]
  const float* cache = nullptr;         // [max_pos, 64] f32 (32 cos, 32 sin), 16-byte aligned
  void* out = nullptr;                  // [G, T, hpg * 512] e4m3, 16-byte aligned
  float* out_scales = nullptr;          // [G][hpg * 4][T_pad4] f32 (padding zeroed)
  int32_t* error_flag = nullptr;        // int32[4] or null; never cleared here
  int64_t num_tokens = 0;               // T in [0, 2^31 - 1]
  int num_groups = 0;                   // G >= 1
  int heads_per_group = 0;              // hpg >= 1, G * hpg <= 1024
  int64_t max_pos = 0;                  // >= 1
};

// Name of the compiled kernel (for the kernel registry / `fusedmoe info`).
const char* inv_rope_quant_kernel_name();

// cudaErrorInvalidValue for arguments outside the contract above (the public API checks them
// first with clear messages); T == 0 launches nothing.
cudaError_t launch_inv_rope_quant(const InvRopeQuantArgs& args, cudaStream_t stream);

}  // namespace fusedmoe::kernels
