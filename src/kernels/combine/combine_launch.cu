// combine_launch.cu — host side of the weighted combine: checks, launch shape, launch.
#include <algorithm>

#include "kernels/combine/combine.cuh"
#include "kernels/combine/combine_launch.h"
#include "kernels/common/launch.cuh"
#include "kernels/registry.h"
#include "fusedmoe/router.h"  // kMaxExperts

namespace fusedmoe::kernels {

namespace {

using namespace combine_detail;

// every layer's groups (local experts + a shared one) fit the bias kernels' staged offsets
static_assert(kMaxBiasGroups >= kMaxExperts + 1, "combine: bias groups below the experts' bound");

// Slots loaded per batch (combine.cuh): 12-16 loads in flight per thread for VPT <= 2 (12 slots of
// one unit: 16 spill the row addresses), 8 for VPT 4-8 (their float64 accumulators fill the
// registers). Session 35 (bench/results/2026-12-03_h200_session35, call 2) against session 34's
// batches (8 loads in flight) with the plan read after the PDL wait: the kernel alone 2.85 vs
// 3.03 us at 1 token, 3.17 vs 3.32 at 16 (K 7168, k 8 + 1), level at 256-16384 tokens and in
// the layers (the time ratio over 42 decode points: geometric mean 1.0015, within the noise).
template <class T, bool kBias = false>
cudaError_t launch_typed(const CombineParams& p, int vpt, dim3 grid, int block, cudaStream_t stream) {
  switch (vpt) {
    case 1: return launch_chain(combine_kernel<T, 1, 12, kBias>, dim3(grid), dim3(block), 0, stream, p);
    case 2: return launch_chain(combine_kernel<T, 2, 8, kBias>, dim3(grid), dim3(block), 0, stream, p);
    case 4: return launch_chain(combine_kernel<T, 4, 2, kBias>, dim3(grid), dim3(block), 0, stream, p);
    case 8: return launch_chain(combine_kernel<T, 8, 1, kBias>, dim3(grid), dim3(block), 0, stream, p);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

const char* combine_kernel_name() { return "combine_rowteam_f64acc_x8"; }

cudaError_t launch_combine(const CombineArgs& a, cudaStream_t stream) {
  if (a.act_dtype != DType::kBFloat16 && a.act_dtype != DType::kFloat16) return cudaErrorInvalidValue;
  if (a.num_tokens < 0 || a.hidden <= 0 || a.hidden % 8 != 0 || a.top_k < 0 || a.num_shared < 0 ||
      a.num_shared > 1)
    return cudaErrorInvalidValue;
  const int64_t stride = a.out_row_stride > 0 ? a.out_row_stride : a.hidden;
  if (stride < a.hidden || stride % 8 != 0) return cudaErrorInvalidValue;
  if (a.num_tokens == 0) return cudaSuccess;
  const int slots = a.top_k + a.num_shared;
  if (slots > kMaxSlots) return cudaErrorInvalidValue;
  if (a.out == nullptr || !vec::aligned16(a.out)) return cudaErrorInvalidValue;
  if (slots > 0 && (a.slot_row == nullptr || a.expert_out == nullptr || !vec::aligned16(a.expert_out)))
    return cudaErrorInvalidValue;
  // the expert bias: bf16 rows, a 4-byte aligned [groups, K] f32 array and the group offsets
  if (a.bias != nullptr && (a.act_dtype != DType::kBFloat16 || (reinterpret_cast<uintptr_t>(a.bias) & 3) != 0 ||
                            a.group_offsets == nullptr || a.num_groups < 1 || a.num_groups > kMaxBiasGroups))
    return cudaErrorInvalidValue;

  CombineParams p{};
  p.expert_out = a.expert_out;
  p.slot_row = a.slot_row;
  p.weights = a.topk_weights;
  p.shared_scale = a.shared_scale;
  p.num_tokens = a.num_tokens;
  p.num_tokens_dev = a.num_tokens_dev;
  p.top_k = a.top_k;
  p.slots = slots;
  p.hidden = a.hidden;
  p.units = a.hidden / 8;
  p.out = a.out;
  p.out_stride = stride;
  p.plan_ready = a.plan_ready ? 1 : 0;
  p.bias = a.bias;
  p.group_offsets = a.group_offsets;
  p.num_groups = a.num_groups;
  p.bias_vec4 = (reinterpret_cast<uintptr_t>(a.bias) & 15) == 0 ? 1 : 0;

  vec::TeamShape shape;
  if (!vec::pick_team_shape(p.units, 256, &shape) || shape.block > combine_max_block(shape.vpt, a.bias != nullptr))
    return cudaErrorInvalidValue;
  int64_t blocks_needed = (a.num_tokens + shape.teams - 1) / shape.teams;
  // Few tokens (decode): split rows into column chunks of >= 64 units (1 KB of bf16) so that about
  // every SM streams a part (H200, qwen235-tp8 at 1 token: one 256-thread block took ~5 us), and
  // at least two blocks per SM up to one block per SM: with one team per token, 67-132 tokens on
  // 132 SMs take 2 chunks (H100, session 60 call 2, qwen235-tp8-fp8c at 128 tokens: the combine
  // stage 8.8-9.1 -> 7.1-7.4 us with 2 or 4 chunks, two runs each; at 256 tokens, two blocks per
  // SM already, 1 chunk measured faster there: 6.3-6.6 against 7.1-7.6 us).
  const int64_t sms = vec::sm_count();
  int chunks = 1;
  p.chunk_units = p.units;
  // FUSEDMOE_COMBINE_CHUNKS=n (read once; a tuning override, unset by default): n column chunks
  // of every token's row (at most one per 32 units), whatever the token count.
  static const int forced_chunks = env_int("FUSEDMOE_COMBINE_CHUNKS").value_or(0);
  if (forced_chunks > 0 && p.units >= 64) {
    chunks = std::min(forced_chunks, p.units / 32);
  } else if (blocks_needed <= sms && p.units >= 128) {
    chunks = static_cast<int>(std::max<int64_t>(2, std::min<int64_t>(p.units / 64, sms / blocks_needed)));
  }
  if (chunks > 1) {
    p.chunk_units = (p.units + chunks - 1) / chunks;
    chunks = (p.units + p.chunk_units - 1) / p.chunk_units;
    if (!vec::pick_team_shape(p.chunk_units, 256, &shape) || shape.block > combine_max_block(shape.vpt, a.bias != nullptr))
      return cudaErrorInvalidValue;
    blocks_needed = (a.num_tokens + shape.teams - 1) / shape.teams;
  }
  p.ts = shape.ts;
  p.teams = shape.teams;
  const int64_t resident = sms * std::max(1, 2048 / shape.block);
  const dim3 grid(static_cast<unsigned>(std::min(blocks_needed, resident)), static_cast<unsigned>(chunks));
  if (a.bias != nullptr) return launch_typed<__nv_bfloat16, true>(p, shape.vpt, grid, shape.block, stream);
  if (a.act_dtype == DType::kBFloat16) return launch_typed<__nv_bfloat16>(p, shape.vpt, grid, shape.block, stream);
  return launch_typed<__half>(p, shape.vpt, grid, shape.block, stream);
}

}  // namespace fusedmoe::kernels

namespace fusedmoe::kernels {
// The combine's instances (kernels/registry.h): the dtypes x values-per-thread of launch_typed.
void append_combine_instances(KernelList* out) {
  using combine_detail::combine_kernel;
  const auto add = [out](const char* name, const void* fn) { out->push_back({"combine", name, fn}); };
  add("combine<bf16,vpt1,batch12>", reinterpret_cast<const void*>(&combine_kernel<__nv_bfloat16, 1, 12>));
  add("combine<bf16,vpt2,batch8>", reinterpret_cast<const void*>(&combine_kernel<__nv_bfloat16, 2, 8>));
  add("combine<bf16,vpt4,batch2>", reinterpret_cast<const void*>(&combine_kernel<__nv_bfloat16, 4, 2>));
  add("combine<bf16,vpt8,batch1>", reinterpret_cast<const void*>(&combine_kernel<__nv_bfloat16, 8, 1>));
  // with the expert bias (CombineArgs::bias: the CUTLASS backend's GEMM2 biases), bf16
  add("combine<bf16,vpt1,batch12,bias>", reinterpret_cast<const void*>(&combine_kernel<__nv_bfloat16, 1, 12, true>));
  add("combine<bf16,vpt2,batch8,bias>", reinterpret_cast<const void*>(&combine_kernel<__nv_bfloat16, 2, 8, true>));
  add("combine<bf16,vpt4,batch2,bias>", reinterpret_cast<const void*>(&combine_kernel<__nv_bfloat16, 4, 2, true>));
  add("combine<bf16,vpt8,batch1,bias>", reinterpret_cast<const void*>(&combine_kernel<__nv_bfloat16, 8, 1, true>));
  add("combine<f16,vpt1,batch12>", reinterpret_cast<const void*>(&combine_kernel<__half, 1, 12>));
  add("combine<f16,vpt2,batch8>", reinterpret_cast<const void*>(&combine_kernel<__half, 2, 8>));
  add("combine<f16,vpt4,batch2>", reinterpret_cast<const void*>(&combine_kernel<__half, 4, 2>));
  add("combine<f16,vpt8,batch1>", reinterpret_cast<const void*>(&combine_kernel<__half, 8, 1>));
}
}  // namespace fusedmoe::kernels
