// Host launchers of activation movement and quantisation (one pass over the activations):
//   * quantise x [T, K] in token order (gather layout: GEMM1 reads rows through the plan), or
//   * permute x into expert order at padded rows (contiguous layout), optionally quantising
//     on the way and optionally scaling each row by its routing weight (weight_on_input).
// FP8 output is bit-identical to the reference quantisers (fusedmoe/reference.h).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "fusedmoe/quant.h"
#include "fusedmoe/types.h"

namespace fusedmoe::kernels {

struct PermuteQuantArgs {
  const void* x = nullptr;           // [T, K] act_dtype (bf16 | f16), rows x_row_stride elements apart
  int64_t x_row_stride = 0;          // elements; 0 = K
  DType act_dtype = DType::kBFloat16;
  int64_t num_tokens = 0;            // T, or its bound when num_tokens_dev is set
  const int32_t* num_tokens_dev = nullptr;  // optional device-side T (kernels/common/token_count.cuh)
  int hidden = 0;                    // K
  ActQuant quant = ActQuant::kNone;  // kNone: copy (contiguous layout) in act_dtype
  ScaleFormat scale_format = ScaleFormat::kFloat32;
  const float* static_scale = nullptr;  // kPerTensorStatic: device pointer to one float

  // Layout. permute == false: output rows are tokens [T, K]. permute == true: output row of
  // (token, slot) is padded_offsets[g] + (slot_row[t, s] - offsets[g]) for its group g, which
  // the kernel finds from the plan; rows with slot_row -1 are skipped.
  bool permute = false;
  int slots = 0;                        // k + shared
  int num_groups = 0;
  const int32_t* slot_row = nullptr;    // [T, slots]
  const int32_t* row_token = nullptr;   // [R]
  const int32_t* row_slot = nullptr;    // [R]
  const int32_t* offsets = nullptr;     // [G + 1]
  const int32_t* padded_offsets = nullptr;  // [G + 1]
  const float* row_weight = nullptr;    // [T, k] multiply rows by their routing weight (weight_on_input); shared slot unscaled
  int top_k = 0;

  void* out = nullptr;                  // [rows_out, K] e4m3 (quantised) or act_dtype
  // Scales: kPerTensor*: out_scales[0]; kPerToken: [rows_pad4]; kGroup128: [K/128, rows_pad4]
  // with the row index fastest and rows_pad4 = rows_out rounded up to 4 (DeepGEMM's TMA layout).
  float* out_scales = nullptr;          // f32 scales, or UE8M0 exponents stored as f32 powers of two
  int64_t rows_out = 0;                 // rows of `out` (T, or R_pad for permute)
  // kPerTensorDynamic over a padded grouped layout (the intermediate H between the GEMMs, rows
  // padded_offsets[g] + [0, counts[g]) valid, padding rows stale): only valid rows enter the absmax.
  // Null: every row below num_tokens (num_tokens_dev) counts.
  const int32_t* amax_group_counts = nullptr;          // [G]
  const int32_t* amax_group_padded_offsets = nullptr;  // [G + 1]
  int amax_groups = 0;
  void* scratch = nullptr;              // permute_quant_scratch_bytes()
  size_t scratch_bytes = 0;
  int* kernels_launched = nullptr;  // optional (host): kernels this call launches (1-3)
  // Token bound from which permuted 1x128 scales are staged and gathered (-1: the measured
  // default, 4096; tests set 0 to cover the path at any size).
  int64_t stage_min_tokens = -1;
  // kGroup128, permuted, no row_weight: keep the 1x128 scales in token order, each token's once, at
  // permute_quant_token_scales(scratch)[t * scale_stage_stride(K) + kb] (the stage), and write no
  // row-order scales (out_scales is not touched) and launch no gather: for a GEMM that reads each
  // row's scales through row_token (the FP8 grouped GEMM's a_scale_row_token). Needs the scratch
  // of permute_quant_scratch_bytes(num_tokens, K); any other scheme or layout: cudaErrorInvalidValue.
  bool scales_by_token = false;
};

// Stride (floats) of a token's 1x128 scales in the stage: ceil(K / 128) rounded up to 4.
int scale_stage_stride(int hidden);
// Where the stage lies in the scratch (PermuteQuantArgs::scales_by_token).
float* permute_quant_token_scales(void* scratch);

// Name of the compiled kernel family (for the kernel registry / `fusedmoe info`).
const char* permute_quant_kernel_name();

// Diagnostic timeline of the permute row kernel (bench --trace): while set, its blocks (the
// first 1024) write [entry, past the predecessor wait, done] (globaltimer ns) at buffer + 3 * block.
// nullptr (the default) turns it off.
void set_permute_trace(unsigned long long* buffer);

// Scratch: 4096 bytes for kPerTensorDynamic (per-block absmax partials), then max_tokens x
// ceil(K/128) (rounded up to 4) floats for the staged 1x128 scales of permuted rows (taken when
// row_token is given; with less scratch the scales are stored scattered, same values).
size_t permute_quant_scratch_bytes(int64_t max_tokens, int hidden);

// Notes on the contract (implementation in permute_quant_launch.cu):
//  * FP8 needs K % 16 == 0 (kNone: K % 8); x, out 16-byte aligned, x_row_stride % 8 == 0.
//    kGroup128 with K % 128 != 0 has a short last group (as ref::quantize_fp8_groups).
//  * kPerTensorDynamic: scale = fp8_scale_from_amax(absmax over all T x K elements of x, taken
//    before any routing weight, scale_format), written to out_scales[0]; two kernels (absmax
//    partials into scratch, then the quantiser). kPerTensorStatic: out_scales[0] = *static_scale.
//  * kPerToken / kGroup128 scales follow scale_format (f32, or UE8M0 as an f32 power of two);
//    scale slots of rows [rows_out, rows_pad4) are zeroed; with row_weight the scales are those
//    of the weighted row (x * w in f32).
//  * Permuted layout: rows of `out` (and their scales) that no (token, slot) maps to (the tile
//    padding of each group) are left untouched. Token layout: row_weight needs top_k == 1.
cudaError_t launch_permute_quant(const PermuteQuantArgs& args, cudaStream_t stream);

// Test-only entry points (device conversions exactly as the kernels use them).
// e4m3_out[i] = e4m3 of the float with bits start + i, ue8m0_out[i] = its UE8M0 byte
// (either output may be null), i < count.
cudaError_t debug_convert_all_e4m3(uint8_t* e4m3_out, uint8_t* ue8m0_out, uint32_t start, uint32_t count,
                                   cudaStream_t stream);
// For the float a with bits start + i (i < count): scale_out[i] = the kernels' fp8 scale of amax a
// (ref::fp8_scale_from_amax, f32 or UE8M0), inv_out[i] = the kernels' reciprocal of a (== 1.0f / a;
// NaN as the canonical 0x7FFFFFFF). Either output may be null.
cudaError_t debug_fp8_scale_bits(float* scale_out, float* inv_out, uint32_t start, uint32_t count, ScaleFormat fmt,
                                 cudaStream_t stream);

}  // namespace fusedmoe::kernels
