// inv_rope_quant_launch.cu — host side of the fused inverse RoPE + FP8 quantisation: argument
// checks and launch shape (device code in inv_rope_quant.cuh).
#include <algorithm>
#include <cstdint>

#include "kernels/rope/inv_rope_quant.cuh"
#include "kernels/rope/inv_rope_quant_launch.h"
#include "kernels/registry.h"

namespace fusedmoe::kernels {

namespace {
using namespace irq_detail;

// Grid cap: beyond 2^20 blocks (T * H > 2^24 items) the warps loop (grid stride). Far above the
// resident block count, so the last wave's imbalance stays negligible.
constexpr int64_t kMaxGrid = int64_t{1} << 20;

bool aligned(const void* p, uintptr_t bytes) { return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0; }
}  // namespace

const char* inv_rope_quant_kernel_name() { return "inv_rope_fp8_quant_dsv4_hd512_rope64_ue8m0x128"; }

cudaError_t launch_inv_rope_quant(const InvRopeQuantArgs& a, cudaStream_t stream) {
  if (a.num_tokens < 0 || a.num_tokens > INT32_MAX) return cudaErrorInvalidValue;
  if (a.num_groups < 1 || a.heads_per_group < 1) return cudaErrorInvalidValue;
  const int64_t heads = static_cast<int64_t>(a.num_groups) * a.heads_per_group;
  if (heads > 1024 || a.max_pos < 1) return cudaErrorInvalidValue;
  if (a.num_tokens == 0) return cudaSuccess;
  if (a.o == nullptr || a.positions == nullptr || a.cache == nullptr || a.out == nullptr || a.out_scales == nullptr)
    return cudaErrorInvalidValue;
  if (!aligned(a.o, 16) || !aligned(a.out, 16) || !aligned(a.cache, 16) || !aligned(a.positions, 8) ||
      !aligned(a.out_scales, 4) || !aligned(a.error_flag, 4))
    return cudaErrorInvalidValue;

  Params p{};
  p.o = static_cast<const uint4*>(a.o);
  p.positions = a.positions;
  p.cache = a.cache;
  p.out = static_cast<uint4*>(a.out);
  p.scales = a.out_scales;
  p.error_flag = a.error_flag;
  p.num_tokens = a.num_tokens;
  p.tokens_pad4 = (a.num_tokens + 3) / 4 * 4;
  p.max_pos = a.max_pos;
  p.num_heads = static_cast<int>(heads);
  p.heads_per_group = a.heads_per_group;

  const int64_t items = a.num_tokens * heads;
  const int64_t tasks = (items + kItems - 1) / kItems;
  const int64_t blocks = (tasks + kWarps - 1) / kWarps;
  const int grid = static_cast<int>(std::min(blocks, kMaxGrid));
  inv_rope_quant_kernel<<<grid, kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

void append_inv_rope_quant_instances(KernelList* out) {
  out->push_back({"inv_rope_quant", inv_rope_quant_kernel_name(), reinterpret_cast<const void*>(&inv_rope_quant_kernel)});
}

}  // namespace fusedmoe::kernels
