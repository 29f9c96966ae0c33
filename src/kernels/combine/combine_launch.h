// Host launcher of the combine: out[t, :] = sum over slots s (in slot order, shared last) of
// w[t, s] * expert_out[slot_row[t, s], :], accumulated in float64, rounded once to act_dtype.
// Deterministic: the same bits every run (no atomics).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "fusedmoe/types.h"

namespace fusedmoe::kernels {

struct CombineArgs {
  const void* expert_out = nullptr;   // [R, K] act_dtype, row r of grouped (unpadded) order
  const int32_t* slot_row = nullptr;  // [T, slots]; -1 slots contribute nothing
  const float* topk_weights = nullptr;  // [T, k]; nullptr = weight 1 (weights applied earlier)
  float shared_scale = 1.f;           // weight of slot k when num_shared == 1
  int64_t num_tokens = 0;             // T, or its bound when num_tokens_dev is set
  const int32_t* num_tokens_dev = nullptr;  // optional device-side T (kernels/common/token_count.cuh)
  int top_k = 0;
  int num_shared = 0;
  int hidden = 0;
  DType act_dtype = DType::kBFloat16;
  void* out = nullptr;                // [T, K], rows out_row_stride elements apart
  int64_t out_row_stride = 0;         // 0 = K
  // The plan (slot_row, topk_weights) and num_tokens_dev were complete when this launch was made,
  // or, under PDL, some kernel strictly between their writer and this one waits for its own
  // predecessor before it triggers its dependents (forward(): the permute, or GEMM1 gathering its
  // rows): the kernel then reads them before griddepcontrol.wait.
  bool plan_ready = false;
  // Optional expert bias added to every slot's row before its weight (the CUTLASS GEMM2 has no bias
  // in its epilogue): bias [groups, K] f32 (4-byte aligned), row r's group g from the unpadded
  // group offsets, offsets[g] <= r < offsets[g + 1] ([groups + 1], device; groups <= 1088). bf16
  // rows only.
  const float* bias = nullptr;
  const int32_t* group_offsets = nullptr;
  int num_groups = 0;
};

// Name of the compiled kernel family (for the kernel registry / `fusedmoe info`).
const char* combine_kernel_name();

// K % 8 == 0; top_k + num_shared <= 17; out and expert_out 16-byte aligned; out_row_stride % 8 == 0.
// T == 0: no launch.
cudaError_t launch_combine(const CombineArgs& args, cudaStream_t stream);

}  // namespace fusedmoe::kernels
