// combine_launch.cu — host side of the weighted combine: checks, launch shape, launch.
#include <algorithm>

#include "kernels/combine/combine.cuh"
#include "kernels/combine/combine_launch.h"
#include "kernels/common/launch.cuh"
#include "kernels/registry.h"

namespace fusedmoe::kernels {

namespace {

using namespace combine_detail;

template <class T>
cudaError_t launch_typed(const CombineParams& p, int vpt, dim3 grid, int block, cudaStream_t stream) {
  switch (vpt) {
    case 1: return launch_chain(combine_kernel<T, 1>, dim3(grid), dim3(block), 0, stream, p);
    case 2: return launch_chain(combine_kernel<T, 2>, dim3(grid), dim3(block), 0, stream, p);
    case 4: return launch_chain(combine_kernel<T, 4>, dim3(grid), dim3(block), 0, stream, p);
    case 8: return launch_chain(combine_kernel<T, 8>, dim3(grid), dim3(block), 0, stream, p);
    default: return cudaErrorInvalidValue;
  }
}

// The staged kernel's launch: one block per (token, column chunk); a chunk's slot rows take at
// most kStagedBytes of shared memory (several blocks per SM keep rows in flight), and few tokens
// split their rows further so that about every SM has a block.
constexpr int kStagedBytes = 32 * 1024;

template <class T>
cudaError_t launch_staged(CombineParams p, cudaStream_t stream) {
  const int64_t sms = vec::sm_count();
  int chunk = std::max(1, kStagedBytes / (16 * std::max(1, p.slots)));
  int chunks = (p.units + chunk - 1) / chunk;
  if (p.num_tokens * chunks < sms) {  // decode: spread a row over more blocks (>= 32 units each)
    const int64_t want = std::min<int64_t>((sms + p.num_tokens - 1) / p.num_tokens, (p.units + 31) / 32);
    chunks = static_cast<int>(std::max<int64_t>(chunks, want));
  }
  chunk = (p.units + chunks - 1) / chunks;
  chunks = (p.units + chunk - 1) / chunk;
  p.chunk_units = chunk;
  const size_t smem = size_t(p.slots) * size_t(chunk) * 16;
  if (p.num_tokens > 0x7fffffff || chunks > 65535) return cudaErrorInvalidValue;
  return launch_chain(combine_staged_kernel<T>, dim3(static_cast<unsigned>(p.num_tokens), static_cast<unsigned>(chunks)),
                      dim3(kStagedThreads), smem, stream, p);
}

}  // namespace

bool combine_uses_staged(int64_t num_tokens, int hidden, int slots) {
  (void)num_tokens;
  (void)hidden;
  return slots <= kStagedMaxSlots;
}

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
  if (a.out == nullptr || !vec::aligned16(a.out)) return cudaErrorInvalidValue;
  if (slots > 0 && (a.slot_row == nullptr || a.expert_out == nullptr || !vec::aligned16(a.expert_out)))
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
  if (a.method < 0 || a.method > 2) return cudaErrorInvalidValue;
  const bool staged = a.method == 2 || (a.method == 0 && combine_uses_staged(a.num_tokens, a.hidden, slots));
  if (staged && slots <= kStagedMaxSlots) {
    if (a.act_dtype == DType::kBFloat16) return launch_staged<__nv_bfloat16>(p, stream);
    return launch_staged<__half>(p, stream);
  }
  if (staged) return cudaErrorInvalidValue;

  vec::TeamShape shape;
  if (!vec::pick_team_shape(p.units, 256, &shape) || shape.block > combine_max_block(shape.vpt))
    return cudaErrorInvalidValue;
  int64_t blocks_needed = (a.num_tokens + shape.teams - 1) / shape.teams;
  // Few tokens (decode): split rows into column chunks of >= 64 units (1 KB of bf16) so that about
  // every SM streams a part (H200, qwen235-tp8 at 1 token: one 256-thread block took ~5 us).
  const int64_t sms = vec::sm_count();
  int chunks = 1;
  p.chunk_units = p.units;
  if (2 * blocks_needed <= sms && p.units >= 128) {
    chunks = static_cast<int>(std::min<int64_t>(p.units / 64, sms / blocks_needed));
    p.chunk_units = (p.units + chunks - 1) / chunks;
    chunks = (p.units + p.chunk_units - 1) / p.chunk_units;
    if (!vec::pick_team_shape(p.chunk_units, 256, &shape) || shape.block > combine_max_block(shape.vpt))
      return cudaErrorInvalidValue;
    blocks_needed = (a.num_tokens + shape.teams - 1) / shape.teams;
  }
  p.ts = shape.ts;
  p.teams = shape.teams;
  const int64_t resident = sms * std::max(1, 2048 / shape.block);
  const dim3 grid(static_cast<unsigned>(std::min(blocks_needed, resident)), static_cast<unsigned>(chunks));
  if (a.act_dtype == DType::kBFloat16) return launch_typed<__nv_bfloat16>(p, shape.vpt, grid, shape.block, stream);
  return launch_typed<__half>(p, shape.vpt, grid, shape.block, stream);
}

}  // namespace fusedmoe::kernels

namespace fusedmoe::kernels {
// The combine's instances (kernels/registry.h): the dtypes x values-per-thread of launch_typed.
void append_combine_instances(KernelList* out) {
  using combine_detail::combine_kernel;
  const auto add = [out](const char* name, const void* fn) { out->push_back({"combine", name, fn}); };
  add("combine<bf16,vpt1>", reinterpret_cast<const void*>(&combine_kernel<__nv_bfloat16, 1>));
  add("combine<bf16,vpt2>", reinterpret_cast<const void*>(&combine_kernel<__nv_bfloat16, 2>));
  add("combine<bf16,vpt4>", reinterpret_cast<const void*>(&combine_kernel<__nv_bfloat16, 4>));
  add("combine<bf16,vpt8>", reinterpret_cast<const void*>(&combine_kernel<__nv_bfloat16, 8>));
  add("combine<f16,vpt1>", reinterpret_cast<const void*>(&combine_kernel<__half, 1>));
  add("combine<f16,vpt2>", reinterpret_cast<const void*>(&combine_kernel<__half, 2>));
  add("combine<f16,vpt4>", reinterpret_cast<const void*>(&combine_kernel<__half, 4>));
  add("combine<f16,vpt8>", reinterpret_cast<const void*>(&combine_kernel<__half, 8>));
  add("combine_staged<bf16>", reinterpret_cast<const void*>(&combine_detail::combine_staged_kernel<__nv_bfloat16>));
  add("combine_staged<f16>", reinterpret_cast<const void*>(&combine_detail::combine_staged_kernel<__half>));
}
}  // namespace fusedmoe::kernels
