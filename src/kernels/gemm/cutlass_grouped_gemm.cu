// Host side of the CUTLASS grouped-GEMM backend (cutlass_grouped_gemm.h): validation, the choice of
// configuration, the SM count, the activation kernel between the GEMMs and the registry listing.
// The CUTLASS kernels themselves live in cutlass_grouped_gemm_{coop,coop_c2,coop_c12,coop256,pingpong,pingpong64}.cu and
// cutlass_fp8_{block,row}_gemm*.cu.
#include <cuda_bf16.h>

#include <algorithm>
#include <utility>
#include <cstdint>

#include "kernels/common/activation_math.cuh"
#include "kernels/gemm/cutlass_grouped_gemm.h"
#include "kernels/gemm/cutlass_grouped_gemm_internal.h"

namespace fusedmoe::kernels {

namespace cutlass_grouped {

int device_sm_count() {
  constexpr int kMaxDevices = 64;
  static int cache[kMaxDevices] = {};  // 0: not queried yet (races write the same value)
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 0;
  if (dev >= 0 && dev < kMaxDevices && cache[dev] > 0) return cache[dev];
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) return 0;
  if (dev >= 0 && dev < kMaxDevices) cache[dev] = sms;
  return sms;
}

namespace {

constexpr const char* kCoopName = "cutlass_sm90_bf16_grouped_gemm_coop_128x256x64";
constexpr const char* kCoopSetup = "cutlass_grouped_setup<coop_128x256x64>";
constexpr const char* kPingName = "cutlass_sm90_bf16_grouped_gemm_pingpong_128x128x64";
constexpr const char* kPingSetup = "cutlass_grouped_setup<pingpong_128x128x64>";
constexpr const char* kCoopC2Name = "cutlass_sm90_bf16_grouped_gemm_coop_128x256x64_c2x1";
constexpr const char* kCoopC2Setup = "cutlass_grouped_setup<coop_128x256x64_c2x1>";
constexpr const char* kCoopC12Name = "cutlass_sm90_bf16_grouped_gemm_coop_128x256x64_c1x2";
constexpr const char* kCoopC12Setup = "cutlass_grouped_setup<coop_128x256x64_c1x2>";
constexpr const char* kCoop256Name = "cutlass_sm90_bf16_grouped_gemm_coop_256x128x64";
constexpr const char* kCoop256Setup = "cutlass_grouped_setup<coop_256x128x64>";
constexpr const char* kPing64Name = "cutlass_sm90_bf16_grouped_gemm_pingpong_64x256x64";
constexpr const char* kPing64Setup = "cutlass_grouped_setup<pingpong_64x256x64>";
// FP8, per CutlassFp8Config (index = config - 1)
constexpr const char* kFp8Names[kCutlassFp8Configs] = {
    "cutlass_sm90_fp8e4m3_blockwise_grouped_gemm_coop_128x128x128",
    "cutlass_sm90_fp8e4m3_blockwise_grouped_gemm_coop_128x128x128_c1x2",
    "cutlass_sm90_fp8e4m3_blockwise_grouped_gemm_pingpong_64x128x128_c1x2"};
constexpr const char* kFp8RowNames[kCutlassFp8Configs] = {
    "cutlass_sm90_fp8e4m3_rowscaled_grouped_gemm_coop_128x128x128",
    "cutlass_sm90_fp8e4m3_rowscaled_grouped_gemm_coop_128x128x128_c1x2",
    "cutlass_sm90_fp8e4m3_rowscaled_grouped_gemm_pingpong_64x128x128_c1x2"};
constexpr const char* kFp8Briefs[kCutlassFp8Configs] = {"coop 128x128", "coop 128x128 c1x2", "pingpong 64x128 c1x2"};

// kAuto resolved for n columns; -1 for a value out of range.
int fp8_config_index(CutlassFp8Config c, int n) {
  if (c == CutlassFp8Config::kAuto) c = cutlass_fp8_auto_config(n);
  const int i = static_cast<int>(c) - 1;
  return i >= 0 && i < kCutlassFp8Configs ? i : -1;
}
constexpr const char* kActName = "grouped_activation<bf16>";
constexpr const char* kGatedName = "cutlass_sm90_bf16_grouped_gemm1_act_coop_128x256x64";
constexpr const char* kFp8GatedName = "cutlass_sm90_fp8e4m3_blockwise_grouped_gemm1_act_coop_128x128x128";
constexpr const char* kGatedSetup = "cutlass_grouped_setup<gemm1_act_coop_128x256x64>";

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// ---- the activation between the GEMMs ----
struct ActParams {
  const __nv_bfloat16* in;
  __nv_bfloat16* out;
  const float* bias;
  const int32_t* counts;
  const int32_t* padded_offsets;
  int groups;
  int n;
  int units;  // N / 8
  int in_cols;
  int kind;
  bool gated;
  bool interleaved;
  float alpha;
  float limit;
  int64_t max_rows;
};

// Group of padded row r: the last g with padded_offsets[g] <= r (empty groups share their start
// with the next one; the last such g is the one whose rows contain r).
__device__ __forceinline__ int group_of_row(const int32_t* po, int groups, int64_t r) {
  int lo = 0, hi = groups;  // invariant: po[lo] <= r < po[hi]
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (po[mid] <= r) lo = mid;
    else hi = mid;
  }
  return lo;
}

// One thread: 8 output columns (16 bytes) of one row.
template <bool kGated>
__global__ void __launch_bounds__(256) grouped_activation_kernel(ActParams p) {
  const int64_t end = __ldg(p.padded_offsets + p.groups);
  const int64_t total = std::min<int64_t>(end, p.max_rows) * p.units;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const int64_t r = i / p.units;
    const int c0 = static_cast<int>(i - r * p.units) * 8;
    const int g = group_of_row(p.padded_offsets, p.groups, r);
    if (r - __ldg(p.padded_offsets + g) >= __ldg(p.counts + g)) continue;  // padding row
    const __nv_bfloat16* row = p.in + r * p.in_cols;
    const float* b = p.bias != nullptr ? p.bias + static_cast<int64_t>(g) * p.in_cols : nullptr;
    float gv[8], uv[8];
    if (kGated && p.interleaved) {
      uint4 v[2];
      v[0] = *reinterpret_cast<const uint4*>(row + 2 * c0);
      v[1] = *reinterpret_cast<const uint4*>(row + 2 * c0 + 8);
      const __nv_bfloat16* h = reinterpret_cast<const __nv_bfloat16*>(v);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        gv[j] = __bfloat162float(h[2 * j]) + (b ? b[2 * (c0 + j)] : 0.f);
        uv[j] = __bfloat162float(h[2 * j + 1]) + (b ? b[2 * (c0 + j) + 1] : 0.f);
      }
    } else {
      const uint4 vg = *reinterpret_cast<const uint4*>(row + c0);
      const __nv_bfloat16* hg = reinterpret_cast<const __nv_bfloat16*>(&vg);
#pragma unroll
      for (int j = 0; j < 8; ++j) gv[j] = __bfloat162float(hg[j]) + (b ? b[c0 + j] : 0.f);
      if (kGated) {
        const uint4 vu = *reinterpret_cast<const uint4*>(row + p.n + c0);
        const __nv_bfloat16* hu = reinterpret_cast<const __nv_bfloat16*>(&vu);
#pragma unroll
        for (int j = 0; j < 8; ++j) uv[j] = __bfloat162float(hu[j]) + (b ? b[p.n + c0 + j] : 0.f);
      } else {
#pragma unroll
        for (int j = 0; j < 8; ++j) uv[j] = 0.f;
      }
    }
    alignas(16) __nv_bfloat16 o[8];
    sm90_grouped::with_activation<kGated>(p.kind, [&](auto kind) {
      constexpr int kK = decltype(kind)::value;
#pragma unroll
      for (int j = 0; j < 8; ++j) o[j] = __float2bfloat16_rn(sm90_grouped::activate_ct<kK>(gv[j], uv[j], p.alpha, p.limit));
    });
    *reinterpret_cast<uint4*>(p.out + r * p.n + c0) = *reinterpret_cast<const uint4*>(o);
  }
}

}  // namespace
}  // namespace cutlass_grouped

size_t cutlass_grouped_scratch_bytes(int num_groups) {
  if (num_groups < 1) num_groups = 1;
  using namespace cutlass_grouped;
  return std::max({scratch_coop128x256(num_groups), scratch_pingpong128x128(num_groups),
                   scratch_coop128x256c2(num_groups), scratch_coop256x128(num_groups),
                   scratch_pingpong64x256(num_groups), scratch_coop128x256c12(num_groups), scratch_gated(num_groups)});
}

// Measured on the H200 (bench/results/2026-11-30_h200_session10, call 2: each configuration forced
// on both GEMMs of 7 BF16 suite cases at 4096 and 16384 tokens, per-stage times): the cooperative
// 128x256 tile is fastest or level on every GEMM1 and GEMM2 (ping-pong 128x128 was 0-30 % slower
// even on the short-K GEMM2s, the 2x1 cluster 0-27 %), except GEMM1 with N not a multiple of 256
// (qwen235-tp8: 2N = 384, the last 256-wide tile half empty) and long groups (1024 rows per expert:
// 256x128 tiles 714 us against 898 us); at 256 rows per expert 128x256 still won (258 vs 280 us).
// GEMM2 with up to 128 expected rows per group: ping-pong 64x256 (an expert's last, partial tile pads
// at most 63 rows instead of 127). Measured on the H200 (bench/results/2026-12-04_h200_session39,
// calls 6-7, alternated runs, the GEMM2 stage forced each way): 32-128 rows per expert 0.86-0.99x
// the cooperative 128x256's time on all six cases tried (dsv3-tp8 64 rows 394 -> 354 us, dsv4f-tp4
// 48 rows 370 -> 318, qwen235-tp4 / qwen30-tp1 / dsv3-ep8 3-6 % faster, qwen235-tp8 at 128 rows
// 1.6 %); above, level or slower (qwen235-tp8 256 / 1024 rows 1.01 / 1.03x, dsv3-tp8 512 rows 1.03x;
// dsv4f-tp4 384 rows 0.95x). GEMM1 (long reductions) on it: level or slower (qwen235-tp8 1.14-1.83x).
CutlassConfig cutlass_grouped_auto_config(int n, int64_t rows_hint, bool gemm2) {
  if (gemm2 && rows_hint > 0 && rows_hint <= 128) return CutlassConfig::kPingpong64x256;
  if (n % 256 != 0 && n < 2048 && rows_hint >= 512) return CutlassConfig::kCoop256x128;
  return CutlassConfig::kCoop128x256;
}

const char* cutlass_grouped_gemm_name(CutlassConfig config) {
  switch (config) {
    case CutlassConfig::kCoop128x256: return cutlass_grouped::kCoopName;
    case CutlassConfig::kPingpong128x128: return cutlass_grouped::kPingName;
    case CutlassConfig::kCoop128x256Cluster2: return cutlass_grouped::kCoopC2Name;
    case CutlassConfig::kCoop256x128: return cutlass_grouped::kCoop256Name;
    case CutlassConfig::kPingpong64x256: return cutlass_grouped::kPing64Name;
    case CutlassConfig::kCoop128x256Cluster1x2: return cutlass_grouped::kCoopC12Name;
    default: return nullptr;
  }
}

cudaError_t launch_cutlass_grouped_gemm(const CutlassGroupedArgs& a, cudaStream_t stream) {
  using namespace cutlass_grouped;
  if (a.num_groups < 1 || a.n <= 0 || a.k <= 0 || a.n % 8 != 0 || a.k % 8 != 0) return cudaErrorInvalidValue;
  if (a.a == nullptr || a.w == nullptr || a.out == nullptr || a.counts == nullptr || a.a_offsets == nullptr ||
      a.out_offsets == nullptr || a.scratch == nullptr)
    return cudaErrorInvalidValue;
  if (!aligned16(a.a) || !aligned16(a.w) || !aligned16(a.out) || (reinterpret_cast<uintptr_t>(a.scratch) & 255u) != 0)
    return cudaErrorInvalidValue;
  if (a.scratch_bytes < cutlass_grouped_scratch_bytes(a.num_groups)) return cudaErrorInvalidValue;
  const CutlassConfig c = a.config == CutlassConfig::kAuto ? cutlass_grouped_auto_config(a.n, a.rows_hint, a.gemm2) : a.config;
  switch (c) {
    case CutlassConfig::kCoop128x256: return run_coop128x256(a, stream);
    case CutlassConfig::kPingpong128x128: return run_pingpong128x128(a, stream);
    case CutlassConfig::kCoop128x256Cluster2: return run_coop128x256c2(a, stream);
    case CutlassConfig::kCoop256x128: return run_coop256x128(a, stream);
    case CutlassConfig::kPingpong64x256: return run_pingpong64x256(a, stream);
    case CutlassConfig::kCoop128x256Cluster1x2: return run_coop128x256c12(a, stream);
    default: return cudaErrorInvalidValue;
  }
}

const char* cutlass_gated_gemm1_name() { return cutlass_grouped::kGatedName; }

cudaError_t launch_cutlass_gated_gemm1(const CutlassGatedArgs& a, cudaStream_t stream) {
  using namespace cutlass_grouped;
  if (a.num_groups < 1 || a.n <= 0 || a.k <= 0 || a.n % 8 != 0 || a.k % 8 != 0) return cudaErrorInvalidValue;
  if (a.a == nullptr || a.w == nullptr || a.out == nullptr || a.counts == nullptr || a.a_offsets == nullptr ||
      a.out_offsets == nullptr || a.scratch == nullptr)
    return cudaErrorInvalidValue;
  if (!aligned16(a.a) || !aligned16(a.w) || !aligned16(a.out) || (reinterpret_cast<uintptr_t>(a.scratch) & 255u) != 0 ||
      (reinterpret_cast<uintptr_t>(a.bias) & 3u) != 0)
    return cudaErrorInvalidValue;
  if (a.scratch_bytes < cutlass_grouped_scratch_bytes(a.num_groups)) return cudaErrorInvalidValue;
  return run_gated(a, stream);
}

cudaError_t launch_gate_up_blocks8(const void* w, void* out, int64_t experts, int n, int k, cudaStream_t stream,
                                   int elem_bytes) {
  using namespace cutlass_grouped;
  if (experts < 1 || n <= 0 || k <= 0 || n % 8 != 0 || (elem_bytes != 1 && elem_bytes != 2) ||
      (static_cast<int64_t>(k) * elem_bytes) % 16 != 0 || w == nullptr || out == nullptr || !aligned16(w) ||
      !aligned16(out))
    return cudaErrorInvalidValue;
  const uintptr_t wb = reinterpret_cast<uintptr_t>(w), ob = reinterpret_cast<uintptr_t>(out);
  const uintptr_t bytes = static_cast<uintptr_t>(experts) * 2 * n * k * elem_bytes;
  if (wb < ob + bytes && ob < wb + bytes) return cudaErrorInvalidValue;  // overlapping
  return run_gate_up_blocks8(w, out, experts, n, static_cast<int>(static_cast<int64_t>(k) * elem_bytes / 16), stream);
}

std::string cutlass_gated_layout_check() {
  const std::string bf16 = cutlass_grouped::gated_layout_check();
  if (!bf16.empty()) return "BF16 128x256 tile: " + bf16;
  const std::string fp8 = cutlass_grouped::fp8_gated_layout_check();
  return fp8.empty() ? fp8 : "FP8 128x128 tile: " + fp8;
}

std::string cutlass_fp8_scale_load_check() {
  using namespace cutlass_grouped;
  const std::pair<const char*, std::string> checks[] = {
      {kFp8Names[0], fp8_block_scale_check()},
      {kFp8Names[1], fp8_block_scale_check_c12()},
      {kFp8Names[2], fp8_block_scale_check_pp64c12()},
      {kFp8GatedName, fp8_gated_scale_check()}};
  std::string err;
  for (const auto& [name, missing] : checks)
    if (!missing.empty()) err += std::string(err.empty() ? "" : "; ") + name + ": " + missing + " not loaded";
  return err;
}

size_t cutlass_fp8_gated_scratch_bytes(int num_groups, int n, int k, int64_t max_rows, const Activation& activation) {
  return cutlass_grouped::scratch_fp8_gated(std::max(num_groups, 1), std::max(activation.gemm1_rows(n), 128), k,
                                            std::max<int64_t>(max_rows, 1));
}

const char* cutlass_fp8_gated_gemm1_name() { return cutlass_grouped::kFp8GatedName; }

cudaError_t launch_cutlass_fp8_gated_gemm1(const CutlassFp8GatedArgs& a, cudaStream_t stream) {
  using namespace cutlass_grouped;
  const int n_w = a.activation.gemm1_rows(a.n);
  if (a.num_groups < 1 || a.n <= 0 || a.k <= 0 || n_w % 128 != 0 || a.k % 128 != 0 || a.max_rows < 0)
    return cudaErrorInvalidValue;
  if (a.a == nullptr || a.a_scale == nullptr || a.w == nullptr || a.w_scale == nullptr || a.out == nullptr ||
      a.counts == nullptr || a.a_offsets == nullptr || a.out_offsets == nullptr || a.scratch == nullptr ||
      a.a_scale_stride < a.max_rows)
    return cudaErrorInvalidValue;
  if (!aligned16(a.a) || !aligned16(a.w) || !aligned16(a.out) || (reinterpret_cast<uintptr_t>(a.scratch) & 255u) != 0 ||
      (reinterpret_cast<uintptr_t>(a.bias) & 3u) != 0)
    return cudaErrorInvalidValue;
  if (a.scratch_bytes < cutlass_fp8_gated_scratch_bytes(a.num_groups, a.n, a.k, a.max_rows, a.activation))
    return cudaErrorInvalidValue;
  if (a.max_rows == 0) return cudaSuccess;
  return run_fp8_gated(a, stream);
}

cudaError_t launch_grouped_activation(const ActivationArgs& a, cudaStream_t stream) {
  using namespace cutlass_grouped;
  if (a.num_groups < 1 || a.n <= 0 || a.n % 8 != 0 || a.in == nullptr || a.out == nullptr || a.counts == nullptr ||
      a.padded_offsets == nullptr || !aligned16(a.in) || !aligned16(a.out))
    return cudaErrorInvalidValue;
  if (a.max_rows <= 0) return cudaSuccess;
  ActParams p;
  p.in = static_cast<const __nv_bfloat16*>(a.in);
  p.out = static_cast<__nv_bfloat16*>(a.out);
  p.bias = a.bias;
  p.counts = a.counts;
  p.padded_offsets = a.padded_offsets;
  p.groups = a.num_groups;
  p.n = a.n;
  p.units = a.n / 8;
  p.gated = a.activation.gated();
  p.interleaved = p.gated && a.activation.interleaved;
  p.in_cols = a.activation.gemm1_rows(a.n);
  p.kind = static_cast<int>(a.activation.kind);
  p.alpha = a.activation.alpha;
  p.limit = a.activation.limit;
  p.max_rows = a.max_rows;
  const int sms = device_sm_count();
  const int64_t work = (a.max_rows * p.units + 255) / 256;
  const int grid = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(work, int64_t(std::max(sms, 1)) * 8)));
  if (p.gated) grouped_activation_kernel<true><<<grid, 256, 0, stream>>>(p);
  else grouped_activation_kernel<false><<<grid, 256, 0, stream>>>(p);
  return cudaGetLastError();
}

CutlassFp8Config cutlass_fp8_auto_config(int n) {
  return n > 0 && n % 256 == 0 ? CutlassFp8Config::kCoop128x128Cluster1x2 : CutlassFp8Config::kCoop128x128;
}

const char* cutlass_fp8_config_brief(CutlassFp8Config config, int n) {
  const int i = cutlass_grouped::fp8_config_index(config, n);
  return i < 0 ? "?" : cutlass_grouped::kFp8Briefs[i];
}

size_t cutlass_fp8_block_scratch_bytes(int num_groups, int n, int k, int64_t max_rows) {
  using namespace cutlass_grouped;
  const int g = std::max(num_groups, 1);
  const int64_t r = std::max<int64_t>(max_rows, 1);
  return std::max({scratch_fp8_block(g, n, k, r), scratch_fp8_block_c12(g, n, k, r), scratch_fp8_block_pp64c12(g, n, k, r)});
}

const char* cutlass_fp8_block_gemm_name(CutlassFp8Config config, int n) {
  const int i = cutlass_grouped::fp8_config_index(config, n);
  return i < 0 ? "?" : cutlass_grouped::kFp8Names[i];
}

cudaError_t launch_cutlass_fp8_block_gemm(const CutlassFp8BlockArgs& a, cudaStream_t stream) {
  using namespace cutlass_grouped;
  const int cfg = fp8_config_index(a.config, a.n);
  if (cfg < 0 || a.num_groups < 1 || a.n <= 0 || a.k <= 0 || a.n % 128 != 0 || a.k % 128 != 0 || a.max_rows < 0)
    return cudaErrorInvalidValue;
  if (a.a == nullptr || a.a_scale == nullptr || a.w == nullptr || a.w_scale == nullptr || a.out == nullptr ||
      a.counts == nullptr || a.a_offsets == nullptr || a.out_offsets == nullptr || a.scratch == nullptr ||
      a.a_scale_stride < a.max_rows)
    return cudaErrorInvalidValue;
  if (!aligned16(a.a) || !aligned16(a.w) || !aligned16(a.out) || (reinterpret_cast<uintptr_t>(a.scratch) & 255u) != 0)
    return cudaErrorInvalidValue;
  if (a.scratch_bytes < cutlass_fp8_block_scratch_bytes(a.num_groups, a.n, a.k, a.max_rows)) return cudaErrorInvalidValue;
  if (a.max_rows == 0) return cudaSuccess;
  switch (cfg) {
    case 1: return run_fp8_block_c12(a, stream);
    case 2: return run_fp8_block_pp64c12(a, stream);
    default: return run_fp8_block(a, stream);
  }
}

size_t cutlass_fp8_row_scratch_bytes(int num_groups) {
  using namespace cutlass_grouped;
  const int g = std::max(num_groups, 1);
  return std::max({scratch_fp8_row(g), scratch_fp8_row_c12(g), scratch_fp8_row_pp64c12(g)});
}

const char* cutlass_fp8_row_gemm_name(CutlassFp8Config config, int n) {
  const int i = cutlass_grouped::fp8_config_index(config, n);
  return i < 0 ? "?" : cutlass_grouped::kFp8RowNames[i];
}

cudaError_t launch_cutlass_fp8_row_gemm(const CutlassFp8RowArgs& a, cudaStream_t stream) {
  using namespace cutlass_grouped;
  const int cfg = fp8_config_index(a.config, a.n);
  if (cfg < 0 || a.num_groups < 1 || a.n <= 0 || a.k <= 0 || a.n % 16 != 0 || a.k % 16 != 0 || a.max_rows < 0)
    return cudaErrorInvalidValue;
  if (a.a == nullptr || a.a_scale == nullptr || a.w == nullptr || a.w_scale == nullptr || a.out == nullptr ||
      a.counts == nullptr || a.a_offsets == nullptr || a.out_offsets == nullptr || a.scratch == nullptr)
    return cudaErrorInvalidValue;
  if (!aligned16(a.a) || !aligned16(a.w) || !aligned16(a.out) || (reinterpret_cast<uintptr_t>(a.scratch) & 255u) != 0 ||
      (reinterpret_cast<uintptr_t>(a.a_scale) & 3u) != 0 || (reinterpret_cast<uintptr_t>(a.w_scale) & 3u) != 0)
    return cudaErrorInvalidValue;
  if (a.scratch_bytes < cutlass_fp8_row_scratch_bytes(a.num_groups)) return cudaErrorInvalidValue;
  if (a.max_rows == 0) return cudaSuccess;
  switch (cfg) {
    case 1: return run_fp8_row_c12(a, stream);
    case 2: return run_fp8_row_pp64c12(a, stream);
    default: return run_fp8_row(a, stream);
  }
}

void append_cutlass_grouped_instances(KernelList* out) {
  using namespace cutlass_grouped;
  append_coop128x256(out, kCoopName, kCoopSetup);
  append_pingpong128x128(out, kPingName, kPingSetup);
  append_coop128x256c2(out, kCoopC2Name, kCoopC2Setup);
  append_coop256x128(out, kCoop256Name, kCoop256Setup);
  append_pingpong64x256(out, kPing64Name, kPing64Setup);
  append_coop128x256c12(out, kCoopC12Name, kCoopC12Setup);
  append_gated(out, kGatedName, kGatedSetup);
  append_fp8_block(out, kFp8Names[0]);
  append_fp8_block_c12(out, kFp8Names[1]);
  append_fp8_block_pp64c12(out, kFp8Names[2]);
  out->push_back({"cutlass_grouped", "cutlass_fp8_block_scales", fp8_scales_kernel_ptr()});
  append_fp8_gated(out, kFp8GatedName);
  append_fp8_row(out, kFp8RowNames[0]);
  append_fp8_row_c12(out, kFp8RowNames[1]);
  append_fp8_row_pp64c12(out, kFp8RowNames[2]);
  out->push_back({"cutlass_grouped", std::string(kActName) + "<gated>",
                  reinterpret_cast<const void*>(&grouped_activation_kernel<true>)});
  out->push_back({"cutlass_grouped", std::string(kActName) + "<plain>",
                  reinterpret_cast<const void*>(&grouped_activation_kernel<false>)});
}

}  // namespace fusedmoe::kernels
