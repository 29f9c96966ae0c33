// fusedmoe/reference.h — CPU reference of every stage and of the whole layer.
//
// Used by the tests, by `fusedmoe check` and by `fusedmoe run` on machines without a GPU.
// Arithmetic: routers in float32 exactly as the GPU kernels compute them (selection is exact,
// ties to the lower expert index); quantisers bit-exact with the CUDA conversion intrinsics;
// GEMMs and combine accumulate in float64. All pointers are HOST pointers.
#pragma once
#include <cstdint>
#include <vector>

#include "fusedmoe/moe.h"

namespace fusedmoe::ref {

// ---- scalar conversions (bit-exact with cuda_fp8.h / cuda_bf16.h host+device intrinsics) ----
// float -> e4m3: round to nearest even; finite values beyond 448 and +-inf saturate to +-448
// (__NV_SATFINITE); NaN of either sign and any payload -> 0x7F (the positive NaN: the input's
// sign is dropped), as the host emulation and sm_90's cvt.rn.satfinite.e4m3x2.f32 both do.
uint8_t float_to_e4m3(float x);
float e4m3_to_float(uint8_t bits);
// UE8M0: value 2^(bits-127); 0xFF = NaN. float_to_ue8m0 rounds UP to a power of two
// (the scale never shrinks the range), clamps to [2^-127, 2^127].
uint8_t float_to_ue8m0(float x);
float ue8m0_to_float(uint8_t bits);
uint16_t float_to_bf16(float x);  // round to nearest even, NaN kept quiet
float bf16_to_float(uint16_t bits);
uint16_t float_to_fp16(float x);  // round to nearest even
float fp16_to_float(uint16_t bits);
// Reads element i of an array of dtype t as double (bf16/fp16/fp32/fp64/e4m3).
double load_as_double(const void* p, DType t, int64_t i);

// ---- activation quantisation (the GPU quantisers must match these bit for bit) ----
// Every scheme: scale = amax / 448 (float32 division), amax = max(|x|) over the scaled set,
// floored at 1e-10; with UE8M0 scales the scale becomes 2^ceil(log2(amax / 448)).
// q = e4m3(x * (1 / scale)) where 1/scale is a float32 division.
float fp8_scale_from_amax(float amax, ScaleFormat fmt);
// Per-tensor with the given scale.
void quantize_fp8_per_tensor(const float* x, int64_t n, float scale, uint8_t* q);
// Per-row: scales[rows].
void quantize_fp8_per_token(const float* x, int64_t rows, int64_t cols, uint8_t* q, float* scales);
// Per 1 x group along the row: scales[rows, ceil(cols/group)] (row-major here; the GPU layouts
// with token index fastest are produced by the dispatch kernels).
void quantize_fp8_groups(const float* x, int64_t rows, int64_t cols, int group, ScaleFormat fmt,
                         uint8_t* q, float* scales);

// ---- activation functions (float64) ----
// g, u: gate and up values (u ignored when not gated). Spelled out in fusedmoe/activation.h.
double activate(const Activation& a, double g, double u);

// ---- routing ----
struct Routing {
  int64_t num_tokens = 0;
  int top_k = 0;
  std::vector<int32_t> ids;      // [T, k] global expert ids, in selection order (best first)
  std::vector<float> weights;    // [T, k] combine weights (float32, as the GPU computes them)
};
// Routes with p.router; reads from t: router_logits, correction_bias, token_ids, hash_table,
// topk_ids, topk_weights. kOutOfRange when a precomputed or hashed id is outside [0, E).
Status route(const MoeProblem& p, const MoeTensors& t, Routing* out);

// ---- dispatch plan (grouping of (token, slot) rows by local expert) ----
struct DispatchPlan {
  int num_groups = 0;                 // local experts + shared experts
  std::vector<int32_t> counts;        // [num_groups] rows per expert
  std::vector<int64_t> offsets;       // [num_groups + 1] exclusive prefix sum of counts
  std::vector<int64_t> padded_offsets;  // [num_groups + 1] prefix sum of counts rounded up to tile_m
  std::vector<int32_t> row_token;     // [rows] token of each grouped row (expert-major, token asc.)
  std::vector<int32_t> row_slot;      // [rows] slot 0..k-1 (shared expert: slot k)
  std::vector<int32_t> slot_row;      // [T, k + shared] grouped row of each (token, slot), -1 if
                                      //   the expert is not local
  int64_t num_rows() const { return offsets.empty() ? 0 : offsets.back(); }
};
// Rows of one expert are ordered by (token, slot) ascending; experts in local-index order.
// expert_map: [E] global -> local or -1 (nullptr: identity).
DispatchPlan plan_dispatch(const MoeProblem& p, const Routing& r, const int32_t* expert_map, int tile_m);

// ---- expert GEMMs (float64) ----
// One row of GEMM1 + activation for local expert `e`: x_row [K] (already dequantised as the GPU
// sees it) -> h [N]. Dequantises W1 with its scales, adds b1.
void gemm1_activation_row(const MoeProblem& p, const MoeTensors& t, int e, const double* x_row, double* h);
// One row of GEMM2 for local expert `e`: h [N] -> y [K] (adds b2, no routing weight).
void gemm2_row(const MoeProblem& p, const MoeTensors& t, int e, const double* h, double* y);
// What a quantised path sees of an activation row: quantise with the scheme's act quantisation
// (kNone: identity) and dequantise. `static_scale` for kPerTensorStatic; for kPerTensorDynamic
// pass the scale computed over the whole tensor.
void fake_quantize_row(const QuantScheme& q, const double* x, int64_t n, float static_scale, double* out);

// ---- the whole layer ----
struct LayerResult {
  Routing routing;
  DispatchPlan plan;
  std::vector<double> out;  // [T, K]
};
// route -> plan -> GEMM1+act -> GEMM2 -> weight -> combine, in float64 from the given inputs.
// Inputs are read as the layer reads them (x in act_dtype, weights in their format + scales);
// with FP8 activations the GEMM inputs pass through fake_quantize_row.
Status forward(const MoeProblem& p, const MoeTensors& t, LayerResult* out);

}  // namespace fusedmoe::ref

// ---- DeepSeek-V4 inverse RoPE + FP8 per-head quantisation (fusedmoe/rope_quant.h) ----
#include "fusedmoe/rope_quant.h"

namespace fusedmoe::ref {

// The semantics of fusedmoe::inv_rope_fp8_quant, in float32 exactly as the kernel computes them:
// rotated dims as mul/mul/add (even) and mul/mul/sub (odd) with every operation rounded on its own
// (no FMA contraction), scales from fp8_scale_from_amax(amax, kUE8M0), q = float_to_e4m3(clamp(y *
// (1 / scale), -448, 448)) with NaN kept NaN by the clamp. Layouts as in rope_quant.h:
// out_fp8 [G, T, hpg * 512], out_scales [G][hpg * 4][T_pad4] including the zeroed padding.
// Tokens with a position outside [0, max_pos) get all-zero bytes and scales (the cache is not read).
// Host pointers; `p` must pass validate(p) (otherwise nothing is written).
void inv_rope_fp8_quant(const InvRopeQuantProblem& p, const uint16_t* o_bf16, const int64_t* positions,
                        const float* cache, uint8_t* out_fp8, float* out_scales);

}  // namespace fusedmoe::ref
