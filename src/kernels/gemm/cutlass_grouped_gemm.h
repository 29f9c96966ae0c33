// cutlass_grouped_gemm.h — the CUTLASS grouped-GEMM backend of the layer (Backend::kCutlassGrouped):
// BF16 grouped GEMMs from CUTLASS 4.2's sm90 pointer-array kernels (TMA + WGMMA, persistent,
// warp-specialised; group shapes read on the device), plus the standalone activation kernel that
// sits between GEMM1 and GEMM2 on that path. Plain C++ header.
//
//   out[out_offsets[g] + i, :] = a[a_offsets[g] + i, :] . w[g, :, :]^T     i < counts[g]
//       a [rows, K] bf16 row-major, w [G, N, K] bf16 (K contiguous), out [rows, N] bf16
//
// Nothing is read on the host: a setup kernel writes each group's problem shape {counts[g], N, K},
// its three pointers and strides into `scratch`, and CUTLASS's group tile scheduler walks them on
// the device (empty groups have no tiles). Graph capturable; no allocation; the host builds the
// kernel parameters (TMA descriptor templates) per call, a few microseconds of CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "fusedmoe/activation.h"
#include "kernels/registry.h"

namespace fusedmoe::kernels {

// The compiled CUTLASS configurations (the tile a CTA computes and the kernel schedule).
enum class CutlassConfig : int {
  kAuto = 0,
  kCoop128x256 = 1,      // cooperative: two consumer warpgroups share one 128x256 tile (K-heavy GEMMs)
  kPingpong128x128 = 2,  // ping-pong: the two consumer warpgroups alternate 128x128 tiles (one's
                         // epilogue hides under the other's main loop: short-K GEMMs)
  kCoop128x256Cluster2 = 3,  // kCoop128x256 on 2x1 clusters: each weight tile multicast to 2 CTAs
  kCoop256x128 = 4,      // cooperative, 256 rows x 128 columns per tile (each warpgroup 128x128)
  kPingpong64x256 = 5,   // ping-pong, 64 rows x 256 columns per tile (an expert's last tile pads
                         // at most 63 rows: few rows per expert)
  kCoop128x256Cluster1x2 = 6,  // kCoop128x256 on 1x2 clusters: the two CTAs compute neighbouring N tiles
                               // of the same rows, each activation tile multicast to both (H200, session
                               // 47: layers 0.1-0.5 % slower than the default at 16384 tokens)
};
inline constexpr int kCutlassConfigs = 6;

struct CutlassGroupedArgs {
  const void* a = nullptr;            // [rows, K] bf16, 16-byte aligned
  const void* w = nullptr;            // [G, N, K] bf16, 16-byte aligned
  void* out = nullptr;                // [rows_out, N] bf16, 16-byte aligned
  const int32_t* counts = nullptr;    // [G] device: rows of each group
  const int32_t* a_offsets = nullptr; // [G] device: first row of group g in a
  const int32_t* out_offsets = nullptr;  // [G] device: first row of group g in out
  int num_groups = 0;                 // G >= 1
  int n = 0;                          // N: output columns (multiple of 8)
  int k = 0;                          // K: reduction (multiple of 8)
  CutlassConfig config = CutlassConfig::kAuto;  // kAuto: cutlass_grouped_auto_config(N, rows_hint, gemm2)
  int64_t rows_hint = 0;              // expected rows per group (host estimate, e.g. T * k / E); 0 = unknown
  bool gemm2 = false;                 // the layer's GEMM2 (its own rule in kAuto)
  void* scratch = nullptr;            // device, 256-byte aligned, >= cutlass_grouped_scratch_bytes(G)
  size_t scratch_bytes = 0;
};

// Scratch one launch needs for G groups: per-group shapes, pointers and strides plus CUTLASS's
// per-SM tensor-map workspace (sized for up to kCutlassMaxSms SMs; more is refused at launch).
inline constexpr int kCutlassMaxSms = 256;
size_t cutlass_grouped_scratch_bytes(int num_groups);

// Enqueue the setup kernel and the grouped GEMM on `stream`. cudaErrorInvalidValue for: N or K not
// a positive multiple of 8, G < 1, null or unaligned pointers, scratch too small, a device with
// more than kCutlassMaxSms SMs; other CUDA errors as the launch reports them.
cudaError_t launch_cutlass_grouped_gemm(const CutlassGroupedArgs& args, cudaStream_t stream);

// The configuration kAuto resolves to for N output columns and about rows_hint rows per group (of
// the layer's GEMM2 or not), and its instance name.
CutlassConfig cutlass_grouped_auto_config(int n, int64_t rows_hint, bool gemm2 = false);
const char* cutlass_grouped_gemm_name(CutlassConfig config);

// GEMM1's activation on the CUTLASS path (GEMM1 wrote the pre-activation rows in bf16):
//   out[r, c] = act(in[r, gate(c)] + b1[g, gate(c)], in[r, up(c)] + b1[g, up(c)])   (gated)
//   out[r, c] = act(in[r, c] + b1[g, c])                                              (squared ReLU)
// for every valid row r = padded_offsets[g] + i, i < counts[g] (padding rows are left untouched),
// fp32 math (kernels/common/activation_math.cuh), one rounding to bf16. in [rows, R1] with
// R1 = activation.gemm1_rows(N), out [rows, N], bias [G, R1] float (optional), same row order as
// W1 (interleaved gate/up when activation.interleaved).
struct ActivationArgs {
  const void* in = nullptr;
  void* out = nullptr;
  const float* bias = nullptr;
  const int32_t* counts = nullptr;          // [G] device
  const int32_t* padded_offsets = nullptr;  // [G + 1] device
  int num_groups = 0;
  int n = 0;                 // N (multiple of 8)
  Activation activation;
  int64_t max_rows = 0;      // host bound of padded_offsets[G]
};
cudaError_t launch_grouped_activation(const ActivationArgs& args, cudaStream_t stream);

// GEMM1 with the activation in its epilogue (cutlass_gated_epilogue.cuh): CUTLASS's cooperative
// 128x256x64 mainloop over W1 as given to it, and our epilogue, which adds b1, applies the
// activation to the fp32 accumulators and writes H (one bf16 rounding), for valid rows only:
//   out[out_offsets[g] + i, c] = act(gate(c) + b1[g, gate(c)], up(c) + b1[g, up(c)])   i < counts[g]
// with W1 per expert [gemm1_rows(N), K] in one of three row orders:
//   gated, activation.interleaved: g0, u0, g1, u1, ... (the checkpoint's own order);
//   gated, not interleaved: gate and up rows alternating in blocks of 8 (launch_gate_up_blocks8);
//   not gated: N rows.
// b1 [G, gemm1_rows(N)] float (optional) stays in the checkpoint's order (gate rows, then up rows).
struct CutlassGatedArgs {
  const void* a = nullptr;            // [rows, K] bf16, 16-byte aligned
  const void* w = nullptr;            // [G, gemm1_rows(N), K] bf16 in the order above, 16-byte aligned
  void* out = nullptr;                // H [rows_out, N] bf16, 16-byte aligned
  const float* bias = nullptr;        // [G, gemm1_rows(N)] or null
  const int32_t* counts = nullptr;    // [G] device
  const int32_t* a_offsets = nullptr; // [G] device: first row of group g in a
  const int32_t* out_offsets = nullptr;  // [G] device: first row of group g in out
  int num_groups = 0;
  int n = 0;                          // N: H columns (multiple of 8)
  int k = 0;                          // K (multiple of 8)
  Activation activation;
  void* scratch = nullptr;            // >= cutlass_grouped_scratch_bytes(G), 256-byte aligned
  size_t scratch_bytes = 0;
};
// cudaErrorInvalidValue for N or K not a positive multiple of 8, G < 1, null or unaligned pointers,
// scratch too small, more than kCutlassMaxSms SMs.
cudaError_t launch_cutlass_gated_gemm1(const CutlassGatedArgs& args, cudaStream_t stream);
const char* cutlass_gated_gemm1_name();

// W1 [experts, 2N, K] (gate rows, then up rows; elements of elem_bytes: 2 for bf16, 1 for e4m3) ->
// `out` (same size, not overlapping w): the rows alternating in blocks of 8 (out row 16b + q = gate
// row 8b + q for q < 8, up row 8b + q - 8 else). N a positive multiple of 8, K * elem_bytes a positive
// multiple of 16, both pointers 16-byte aligned; else cudaErrorInvalidValue.
cudaError_t launch_gate_up_blocks8(const void* w, void* out, int64_t experts, int n, int k, cudaStream_t stream,
                                   int elem_bytes = 2);

// Host check of the gated epilogue's assumption on CUTLASS's accumulator layout (every consumer
// thread of the tile, for the BF16 and the FP8 GEMM1's tiles); empty when it holds, else what
// failed. No GPU needed.
std::string cutlass_gated_layout_check();

// Registry (kernels/registry.h): the CUTLASS GEMM instances, their setup kernels and the activation.
void append_cutlass_grouped_instances(KernelList* out);

}  // namespace fusedmoe::kernels

namespace fusedmoe::kernels {

// The compiled configurations of the two CUTLASS FP8 GEMMs below (blockwise and row-scaled alike):
// the tile, the cluster and the kernel schedule. kAuto resolves to cutlass_fp8_auto_config(N).
enum class CutlassFp8Config : int {
  kAuto = 0,
  kCoop128x128 = 1,               // cooperative 128x128x128 on 1x1 clusters (sessions 10 and 19)
  kCoop128x128Cluster1x2 = 2,     // the same on 1x2 clusters: the two CTAs of a cluster compute neighbouring
                                  // N tiles of the same rows, each activation tile loaded once, multicast
  kPingpong64x128Cluster1x2 = 3,  // ping-pong 64x128x128 on 1x2 clusters: each consumer warpgroup its own
                                  // tile, one's epilogue under the other's main loop (short-K GEMM2s)
};
inline constexpr int kCutlassFp8Configs = 3;
// kAuto's choice for a GEMM of n output columns: the cooperative 128x128 on 1x2 clusters where the
// 128-wide N tiles pair up (n a multiple of 256), else on 1x1 clusters (an odd tile count would
// leave one CTA of a cluster computing nothing). Measured (H100, session 46, 16384 tokens, stages):
// the 1x2 clusters' GEMM1 5.6-9.6 % and GEMM2 0.2-3.4 % faster on the four block-FP8 cases, layers
// 3.5-8.9 % faster (dsv3-ep8-fp8b 2322 -> 2116 us); qwen235-tp8-fp8c's GEMM1 (2N = 384, 3 tiles)
// 23 % slower on them; ping-pong 64x128 slower everywhere. H200 (session 47, calls 2 and 6, one run
// each, 4096 / 16384 tokens): the 1x2 clusters' GEMM1 up to 6.9 % faster on the four block-FP8 cases
// (dsv3-ep8-fp8b 399.5 -> 371.8 us at 4096 tokens, 1158.7 -> 1120.5 at 16384; one point 0.4 % slower),
// the auto layers 0.9-7.8 % faster than 1x1 at 7 of 8 points (dsv3-ep8-fp8b at 4096 746.6 -> 688.7;
// qwen235-tp4-fp8b at 4096 1.3 % slower, inside the run's spread); qwen235-tp8's GEMM1 16-19 % slower
// on them (the rule keeps 1x1); ping-pong 64x128 slower (GEMM1 0.7-76 % at all 12 points).
CutlassFp8Config cutlass_fp8_auto_config(int n);
// Short name of a configuration ("coop 128x128", "coop 128x128 c1x2", "pingpong 64x128 c1x2";
// kAuto: its resolution for n columns).
const char* cutlass_fp8_config_brief(CutlassFp8Config config, int n);

// ---- FP8 e4m3 with 128x128 weight blocks and 1x128 activation groups (DeepSeek) ----
// CUTLASS's sm90 pointer-array blockwise-scaled grouped GEMM (scales applied per 128-K block in
// fp32 inside the main loop). Its scale layouts differ from ours, so the launch first rewrites them
// into scratch (a few MB at most, one small kernel):
//   activation scales: ours [K/128, a_scale_stride] floats, row r of the padded layout at column r
//     -> per group g, [K/128][counts[g]] packed (rows fastest) at (K/128) * a_offsets[g];
//   weight scales: ours [G, N/128, K/128] (float32, or UE8M0 exponent bytes) -> [G, K/128, N/128]
//     float32 (N blocks fastest).
struct CutlassFp8BlockArgs {
  const void* a = nullptr;             // [rows, K] e4m3, rows of group g from a_offsets[g] (padded layout)
  const float* a_scale = nullptr;      // [K/128, a_scale_stride] float, padded row order
  int64_t a_scale_stride = 0;
  const void* w = nullptr;             // [G, N, K] e4m3
  const void* w_scale = nullptr;       // [G, N/128, K/128] float32 or UE8M0 bytes
  bool w_scale_ue8m0 = false;
  void* out = nullptr;                 // [rows_out, N] bf16
  const int32_t* counts = nullptr;
  const int32_t* a_offsets = nullptr;  // [G + 1] padded offsets (a_offsets[G] bounds the rows)
  const int32_t* out_offsets = nullptr;
  int num_groups = 0;
  int n = 0;                           // multiple of 128
  int k = 0;                           // multiple of 128
  int64_t max_rows = 0;                // host bound of a_offsets[G]
  CutlassFp8Config config = CutlassFp8Config::kAuto;
  void* scratch = nullptr;             // >= cutlass_fp8_block_scratch_bytes(G, N, K, max_rows), 256-B aligned
  size_t scratch_bytes = 0;
};
// Scratch for any configuration.
size_t cutlass_fp8_block_scratch_bytes(int num_groups, int n, int k, int64_t max_rows);
// cudaErrorInvalidValue for: N or K not a positive multiple of 128, G < 1, a config out of range, null
// or unaligned pointers, a_scale_stride < max_rows, scratch too small.
cudaError_t launch_cutlass_fp8_block_gemm(const CutlassFp8BlockArgs& args, cudaStream_t stream);
const char* cutlass_fp8_block_gemm_name(CutlassFp8Config config, int n);  // (kAuto: for n columns)

// ---- FP8 e4m3, 128x128 blocks: GEMM1 with the activation in its epilogue ----
// CUTLASS's cooperative 128x128x128 blockwise mainloop over W1 in the epilogue's pairing order and
// the BF16 path's GatedEpilogue (cutlass_gated_epilogue.cuh): b1 added, the activation applied to the
// fp32 accumulators (whose block scales the mainloop has applied), H written in bf16 for valid rows:
//   out[out_offsets[g] + i, c] = act(gate(c) + b1[g, gate(c)], up(c) + b1[g, up(c)])   i < counts[g]
// W1's row orders as CutlassGatedArgs (split halves: in blocks of 8, launch_gate_up_blocks8 with
// 1-byte elements); w_scale stays the checkpoint's [G, gemm1_rows(N)/128, K/128] in the checkpoint's
// row order (float32 or UE8M0 bytes), re-laid per call to one scale per 8 rows. Activation scales as
// CutlassFp8BlockArgs (padded row order, [K/128, a_scale_stride]).
struct CutlassFp8GatedArgs {
  const void* a = nullptr;             // [rows, K] e4m3, rows of group g from a_offsets[g]
  const float* a_scale = nullptr;      // [K/128, a_scale_stride] float, padded row order
  int64_t a_scale_stride = 0;
  const void* w = nullptr;             // [G, gemm1_rows(N), K] e4m3 in the pairing order above
  const void* w_scale = nullptr;       // [G, gemm1_rows(N)/128, K/128] float32 or UE8M0 bytes
  bool w_scale_ue8m0 = false;
  void* out = nullptr;                 // H [rows_out, N] bf16, 16-byte aligned
  const float* bias = nullptr;         // [G, gemm1_rows(N)] or null (checkpoint order)
  const int32_t* counts = nullptr;
  const int32_t* a_offsets = nullptr;  // [G + 1] padded offsets
  const int32_t* out_offsets = nullptr;
  int num_groups = 0;
  int n = 0;                           // N: H columns (gemm1_rows(N) a multiple of 128)
  int k = 0;                           // multiple of 128
  Activation activation;
  int64_t max_rows = 0;                // host bound of a_offsets[G]
  void* scratch = nullptr;             // >= cutlass_fp8_gated_scratch_bytes(G, N, K, max_rows), 256-B aligned
  size_t scratch_bytes = 0;
};
size_t cutlass_fp8_gated_scratch_bytes(int num_groups, int n, int k, int64_t max_rows, const Activation& activation);
// Host check (no GPU) that CUTLASS's blockwise mainloop loads every activation and weight scale a
// tile needs, for every blockwise configuration and the GEMM1 above (its copy warp's lane t loads
// only below the tile's scale count); empty when it holds, else the blocks left out.
std::string cutlass_fp8_scale_load_check();
// cudaErrorInvalidValue for: gemm1_rows(N) or K not a positive multiple of 128, G < 1, null or
// unaligned pointers, a_scale_stride < max_rows, scratch too small.
cudaError_t launch_cutlass_fp8_gated_gemm1(const CutlassFp8GatedArgs& args, cudaStream_t stream);
const char* cutlass_fp8_gated_gemm1_name();

// ---- FP8 e4m3 with "row" scales: per-tensor / per-channel weights, per-tensor / per-token activations ----
// CUTLASS's sm90 pointer-array FP8 grouped GEMM (fp32 accumulation promoted every 128 K, as the
// grouped backend's FP8 kernels), cooperative 128x128x128 tiles, and an epilogue that applies
//   out[out_offsets[g] + i, c] = bf16( sa(a_offsets[g] + i) * (acc * sw(g, c)) )      i < counts[g]
// with the scales of sm90_fp8_grouped_gemm.h read in place through per-group pointers:
//   sa(r)    = a_scale[0]  (per tensor)   or a_scale[r] (a_scale_per_token: padded row order)
//   sw(g, c) = w_scale[g]  (per tensor)   or w_scale[g * N + c] (w_scale_per_channel)
struct CutlassFp8RowArgs {
  const void* a = nullptr;             // [rows, K] e4m3, 16-byte aligned
  const float* a_scale = nullptr;      // device, 4-byte aligned
  bool a_scale_per_token = false;
  const void* w = nullptr;             // [G, N, K] e4m3, 16-byte aligned
  const float* w_scale = nullptr;      // device, 4-byte aligned
  bool w_scale_per_channel = false;
  void* out = nullptr;                 // [rows_out, N] bf16, 16-byte aligned
  const int32_t* counts = nullptr;     // [G] device
  const int32_t* a_offsets = nullptr;  // [G] device: first row of group g in a (and in a_scale per token)
  const int32_t* out_offsets = nullptr;  // [G] device: first row of group g in out
  int num_groups = 0;                  // G >= 1
  int n = 0;                           // N: output columns (multiple of 16)
  int k = 0;                           // K: reduction (multiple of 16)
  int64_t max_rows = 0;                // host bound of the rows of a (0: nothing to do)
  CutlassFp8Config config = CutlassFp8Config::kAuto;
  void* scratch = nullptr;             // device, 256-byte aligned, >= cutlass_fp8_row_scratch_bytes(G)
  size_t scratch_bytes = 0;
};
// Scratch for any configuration.
size_t cutlass_fp8_row_scratch_bytes(int num_groups);
// cudaErrorInvalidValue for: N or K not a positive multiple of 16, G < 1, a config out of range,
// null or unaligned pointers, scratch too small; other CUDA errors as the launch reports them.
cudaError_t launch_cutlass_fp8_row_gemm(const CutlassFp8RowArgs& args, cudaStream_t stream);
const char* cutlass_fp8_row_gemm_name(CutlassFp8Config config, int n);  // (kAuto: for n columns)

}  // namespace fusedmoe::kernels
