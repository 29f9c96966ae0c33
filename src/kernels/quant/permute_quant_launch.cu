// permute_quant_launch.cu — host side of activation permutation / quantisation: checks, launch
// shape, the per-tensor-dynamic absmax pass, and the test entry points.
#include <algorithm>
#include <atomic>

#define FUSEDMOE_PQ_KERNELS 1
#include "kernels/quant/permute_quant.cuh"
#include "kernels/quant/permute_quant_launch.h"
#include "kernels/common/launch.cuh"

namespace fusedmoe::kernels {

namespace {

// Most threads of a row team (launch_permute_quant): 256; when permuting from 8192 tokens 64 (more
// units per thread, more rows in flight per SM). Measured on the H200 (session 14, call 4,
// dispatch bench at 16384 tokens): dsv3 FP8 contiguous with token-order scales 386.3 -> 374.5 us,
// qwen3 BF16 copy 366.0 -> 357.8 us; at 4096 tokens level for dsv3 (106.5 / 106.9 us).
// FUSEDMOE_PQ_TEAM=n (32..256, read once) sets the cap for every call, for measurement.
int max_row_team(bool permute, int64_t tokens) {
  static const int forced = [] {
    const std::optional<int> e = env_int("FUSEDMOE_PQ_TEAM");
    return e && *e >= 32 && *e <= 256 ? *e : 0;
  }();
  if (forced > 0) return forced;
  return permute && tokens >= 8192 ? 64 : 256;
}

using namespace pq_detail;

constexpr size_t kScratchBytes = 4096;  // absmax partials (<= 1024 floats)
constexpr int64_t kStageMinTokens = 4096;    // staged 1x128 scales from this bound (see launch_permute_quant)

// One wave of resident blocks (grid-stride over the rows): blocks per SM from the occupancy
// calculator (registers bound it, e.g. 4 blocks of 224 threads at 64 registers), not from the
// thread count alone, so that no partial last wave idles most of the GPU.
template <class Kernel>
int resident_grid(Kernel kernel, int block, int64_t blocks_needed, size_t smem = 0) {
  int per_sm = resident_blocks_per_sm(reinterpret_cast<const void*>(kernel), block, smem);
  if (per_sm < 1) per_sm = std::max(1, 2048 / block);
  const int64_t resident = static_cast<int64_t>(vec::sm_count()) * per_sm;
  return static_cast<int>(std::max<int64_t>(1, std::min(blocks_needed, resident)));
}

std::atomic<unsigned long long*> g_pq_trace{nullptr};

template <class TIn, bool kFp8>
cudaError_t launch_rows(const PQParams& p0, int vpt, int64_t blocks_needed, int block, cudaStream_t stream) {
  PQParams p = p0;
  p.trace = g_pq_trace.load(std::memory_order_relaxed);
  auto go = [&](auto kernel) {
    return launch_chain(kernel, dim3(resident_grid(kernel, block, blocks_needed)), dim3(block), 0, stream, p);
  };
  switch (vpt) {
    case 1: return go(permute_quant_kernel<TIn, kFp8, 1>);
    case 2: return go(permute_quant_kernel<TIn, kFp8, 2>);
    case 4: return go(permute_quant_kernel<TIn, kFp8, 4>);
    case 8: return go(permute_quant_kernel<TIn, kFp8, 8>);
    default: return cudaErrorInvalidValue;
  }
}

template <class TIn>
cudaError_t launch_typed(const PQParams& p, bool fp8, int vpt, int64_t grid, int block, int amax_grid,
                         float* partials, cudaStream_t stream) {
  if (p.scheme == kDynamic) {
    const cudaError_t e = launch_chain(absmax_partials_kernel<TIn>, dim3(amax_grid), dim3(256), 0, stream,
                                       static_cast<const TIn*>(p.x), p.x_stride, p.num_tokens, p.num_tokens_dev,
                                       p.hidden / 8, partials, AmaxRowMask{p.amax_counts, p.amax_padded_offsets, p.amax_groups});
    if (e != cudaSuccess) return e;
  }
  const cudaError_t e = fp8 ? launch_rows<TIn, true>(p, vpt, grid, block, stream) : launch_rows<TIn, false>(p, vpt, grid, block, stream);
  if (e != cudaSuccess || p.scale_stage == nullptr || p.stage_only) return e;
  const int64_t rows_bound = p.num_tokens * p.slots;
  return launch_chain(scale_gather_kernel, dim3(resident_grid(scale_gather_kernel, kScaleGatherThreads, (rows_bound + kGatherRows - 1) / kGatherRows)),
                      dim3(kScaleGatherThreads), 0, stream, p);
}

}  // namespace

void set_permute_trace(unsigned long long* buffer) { g_pq_trace.store(buffer, std::memory_order_relaxed); }

const char* permute_quant_kernel_name() { return "permute_quant_rowteam_e4m3x16_bf16x8"; }

// Stride (floats) of a token's staged 1x128 scales.
int scale_stage_stride(int hidden) { return ((hidden + 127) / 128 + 3) / 4 * 4; }

float* permute_quant_token_scales(void* scratch) {
  return reinterpret_cast<float*>(static_cast<unsigned char*>(scratch) + kScratchBytes);
}

size_t permute_quant_scratch_bytes(int64_t max_tokens, int hidden) {
  return kScratchBytes + static_cast<size_t>(std::max<int64_t>(0, max_tokens)) * scale_stage_stride(hidden) * sizeof(float);
}

cudaError_t launch_permute_quant(const PermuteQuantArgs& a, cudaStream_t stream) {
  if (a.act_dtype != DType::kBFloat16 && a.act_dtype != DType::kFloat16) return cudaErrorInvalidValue;
  if (a.num_tokens < 0 || a.hidden <= 0) return cudaErrorInvalidValue;
  const bool fp8 = a.quant != ActQuant::kNone;
  const int unit = fp8 ? 16 : 8;
  if (a.hidden % unit != 0) return cudaErrorInvalidValue;
  const int64_t stride = a.x_row_stride > 0 ? a.x_row_stride : a.hidden;
  if (stride < a.hidden || stride % 8 != 0) return cudaErrorInvalidValue;
  if (a.num_tokens == 0) return cudaSuccess;
  if (a.x == nullptr || a.out == nullptr || !vec::aligned16(a.x) || !vec::aligned16(a.out)) return cudaErrorInvalidValue;
  if (a.rows_out < 0) return cudaErrorInvalidValue;
  if (a.permute) {
    if (a.slots < 1 || a.slots > kMaxSlots || a.num_groups < 1 || a.slot_row == nullptr || a.offsets == nullptr ||
        a.padded_offsets == nullptr || a.top_k < 0 || a.top_k > a.slots)
      return cudaErrorInvalidValue;
  } else {
    if (a.rows_out < a.num_tokens) return cudaErrorInvalidValue;
    if (a.row_weight != nullptr && a.top_k != 1) return cudaErrorInvalidValue;  // one weight per token row
  }
  if (a.quant == ActQuant::kPerTensorStatic && a.static_scale == nullptr) return cudaErrorInvalidValue;

  PQParams p{};
  p.x = a.x;
  p.x_stride = stride;
  p.num_tokens = a.num_tokens;
  p.num_tokens_dev = a.num_tokens_dev;
  p.amax_counts = a.amax_group_counts;
  p.amax_padded_offsets = a.amax_group_padded_offsets;
  p.amax_groups = a.amax_groups;
  p.hidden = a.hidden;
  p.units = a.hidden / unit;
  switch (a.quant) {
    case ActQuant::kNone: p.scheme = kNone; break;
    case ActQuant::kPerTensorStatic: p.scheme = kStatic; break;
    case ActQuant::kPerTensorDynamic: p.scheme = kDynamic; break;
    case ActQuant::kPerToken: p.scheme = kToken; break;
    case ActQuant::kGroup128: p.scheme = kGroup; break;
    default: return cudaErrorInvalidValue;
  }
  p.ue8m0 = a.scale_format == ScaleFormat::kUE8M0;
  p.static_scale = a.static_scale;
  p.permute = a.permute;
  p.slots = a.permute ? a.slots : 1;
  p.num_groups = a.num_groups;
  p.slot_row = a.slot_row;
  p.offsets = a.offsets;
  p.padded_offsets = a.padded_offsets;
  p.row_weight = a.row_weight;
  p.top_k = a.top_k;
  p.out = a.out;
  p.out_scales = fp8 ? a.out_scales : nullptr;
  p.rows_out = a.rows_out;
  p.rows_pad4 = (a.rows_out + 3) / 4 * 4;

  vec::TeamShape shape;
  if (!vec::pick_team_shape(p.units, max_row_team(p.permute, a.num_tokens), &shape) || shape.block > max_block_for_vpt(shape.vpt))
    return cudaErrorInvalidValue;
  p.ts = shape.ts;
  p.teams = shape.teams;
  p.warp_dest = p.permute && p.ts % 32 == 0;
  // Staged 1x128 scales (PQParams::scale_stage): permuted unweighted rows with row_token,
  // scratch for T tokens' scales and a bound of at least kStageMinTokens (else the row kernel
  // stores them scattered, as before). Measured on the H200 (dsv3 routing, K 7168, session 6):
  // route + plan + quantise at 16384 tokens 581 -> 420 us, 4096: 145 -> 126 us, but 1024: 61 ->
  // 66 us and 256: 24 -> 30 us (the gather's launch costs more than the scattered stores save).
  p.row_token = a.row_token;
  p.stage_stride = scale_stage_stride(a.hidden);
  const size_t stage_bytes = static_cast<size_t>(a.num_tokens) * p.stage_stride * sizeof(float);
  if (p.scheme == kGroup && p.permute && a.row_weight == nullptr && a.row_token != nullptr &&
      a.num_tokens >= (a.stage_min_tokens >= 0 ? a.stage_min_tokens : kStageMinTokens) &&
      p.out_scales != nullptr && a.scratch != nullptr && vec::aligned16(a.scratch) &&
      a.scratch_bytes >= kScratchBytes + stage_bytes)
    p.scale_stage = permute_quant_token_scales(a.scratch);
  if (a.scales_by_token) {
    // The stage is the result: no row-order scales, no gather (see the header).
    if (p.scheme != kGroup || !p.permute || a.row_weight != nullptr || a.scratch == nullptr || !vec::aligned16(a.scratch) ||
        a.scratch_bytes < kScratchBytes + stage_bytes)
      return cudaErrorInvalidValue;
    p.scale_stage = permute_quant_token_scales(a.scratch);
    p.out_scales = nullptr;
    p.stage_only = 1;
  }
  if (a.kernels_launched != nullptr)
    *a.kernels_launched = 1 + (p.scheme == kDynamic) + (p.scale_stage != nullptr && !p.stage_only);

  const int sms = vec::sm_count();
  const int64_t grid = (a.num_tokens + shape.teams - 1) / shape.teams;  // blocks needed; launch_rows caps it

  int amax_grid = 0;
  float* partials = nullptr;
  if (a.amax_group_counts != nullptr &&
      (a.amax_group_padded_offsets == nullptr || a.amax_groups < 1 || a.permute))  // the row mask's contract
    return cudaErrorInvalidValue;
  if (p.scheme == kDynamic) {
    if (a.scratch == nullptr || !vec::aligned16(a.scratch) || a.scratch_bytes < sizeof(float)) return cudaErrorInvalidValue;
    const int64_t units8 = a.hidden / 8;
    const int64_t want = (a.num_tokens * units8 + 255) / 256;
    const int64_t cap = std::min<int64_t>({static_cast<int64_t>(sms) * 4, 1024,
                                           static_cast<int64_t>(a.scratch_bytes / sizeof(float))});
    amax_grid = static_cast<int>(std::max<int64_t>(1, std::min(want, cap)));
    partials = static_cast<float*>(a.scratch);
    p.partials = partials;
    p.num_partials = amax_grid;
  }

  if (a.act_dtype == DType::kBFloat16)
    return launch_typed<__nv_bfloat16>(p, fp8, shape.vpt, grid, shape.block, amax_grid, partials, stream);
  return launch_typed<__half>(p, fp8, shape.vpt, grid, shape.block, amax_grid, partials, stream);
}

cudaError_t debug_convert_all_e4m3(uint8_t* e4m3_out, uint8_t* ue8m0_out, uint32_t start, uint32_t count,
                                   cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  const uint32_t pairs = count / 2 + (count & 1u);
  const uint32_t blocks = (pairs + 255u) / 256u;
  debug_convert_kernel<<<blocks, 256, 0, stream>>>(e4m3_out, ue8m0_out, start, count);
  return cudaGetLastError();
}

cudaError_t debug_fp8_scale_bits(float* scale_out, float* inv_out, uint32_t start, uint32_t count, ScaleFormat fmt,
                                 cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  debug_scale_kernel<<<(count + 255u) / 256u, 256, 0, stream>>>(scale_out, inv_out, start, count,
                                                                 fmt == ScaleFormat::kUE8M0);
  return cudaGetLastError();
}

}  // namespace fusedmoe::kernels
