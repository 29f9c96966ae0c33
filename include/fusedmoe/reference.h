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

// MoeTensors::w1_gate_up_blocks (pack_gate_up_blocks()): W1 [experts, 2N, K] of 16-bit elements
// (gate rows, then up rows) with the rows of each expert alternating in blocks of 8: out row
// 16b + q = gate row 8b + q (q < 8), up row 8b + q - 8 (q >= 8). N a multiple of 8.
void gate_up_blocks8(const uint16_t* w1, int64_t experts, int64_t n, int64_t k, uint16_t* out);

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

// The one scale of the per-tensor schemes for a whole GEMM input x [n] (float64 values, read as
// the float32 the GPU quantises): *static_scale for kPerTensorStatic; fp8_scale_from_amax(absmax,
// act_scale_format) for kPerTensorDynamic (NaN ignored); 1 for the other schemes (unused there).
float per_tensor_act_scale(const QuantScheme& q, const double* x, int64_t n, const float* static_scale);

// ---- FP8 GEMM operands in the GPU layouts (fp8_gemm.cpp) ----
// The per-GEMM GPU tests check the kernels against these on the very bytes and scales the GPU read.
//
// Activations: e4m3 bytes [rows, cols] row-major (rows of the contiguous layout, padding rows
// included), scales in the layout kernels/quant writes and the FP8 GEMMs read (all f32; UE8M0
// scales are already expanded to f32 powers of two):
//   kNone                      no scale (1)
//   kPerTensorStatic/Dynamic   scales[0]
//   kPerToken                  scales[row]                          ([scale_stride] = [rows_pad4])
//   kGroup128                  scales[(col / 128) * scale_stride + row]   ([cols/128][rows_pad4],
//                              the row index fastest: DeepGEMM's TMA layout)
// Weights: e4m3 bytes [G, rows, cols] with the scales of fusedmoe/quant.h (f32, or UE8M0 bytes when
// scale_format is kUE8M0; decoded with ue8m0_to_float: 0 -> 2^-127, 0xFF -> NaN):
//   kNone 1;  kPerTensor scales[e];  kPerChannel scales[e * rows + row];
//   kBlock scales[(e * ceil(rows/block_n) + row/block_n) * ceil(cols/block_k) + col/block_k];
//   kGroup scales[(e * rows + row) * ceil(cols/block_k) + col/block_k].
// Dequantised value = e4m3_to_float(byte) * scale (exact in float64; rounded once into float).
constexpr int64_t kFp8ActGroup = 128;  // columns per kGroup128 activation scale
// The scale row stride of the per-token and 1x128 activation-scale tensors: rows rounded up to 4.
inline int64_t fp8_rows_pad4(int64_t rows) { return (rows + 3) / 4 * 4; }

struct Fp8Activations {
  const uint8_t* q = nullptr;     // [rows, cols] e4m3
  const float* scales = nullptr;  // see above (may be null for kNone)
  ActQuant quant = ActQuant::kPerTensorStatic;
  int64_t scale_stride = 0;       // kGroup128: row stride of `scales` (>= rows, rows_pad4 on the GPU)
};
struct Fp8Weights {
  const uint8_t* q = nullptr;     // [G, rows, cols] e4m3
  const void* scales = nullptr;   // float or (kUE8M0) uint8_t, layout of fusedmoe/quant.h
  WeightQuant quant;              // granularity, scale_format, block_n/block_k (format not read)
};

// Scale of element (row, col) of the activations.
double fp8_act_scale(const Fp8Activations& a, int64_t row, int64_t col);
// Scale of element (row, col) of expert e's [rows, cols] weight matrix.
double fp8_weight_scale(const WeightQuant& wq, const void* scales, int64_t e, int64_t rows, int64_t cols,
                        int64_t row, int64_t col);
// Rows [row_begin, row_end) of the activations -> out[(r - row_begin) * cols + c].
void dequantize_fp8_activations(const Fp8Activations& a, int64_t cols, int64_t row_begin, int64_t row_end,
                                double* out);
void dequantize_fp8_activations(const Fp8Activations& a, int64_t cols, int64_t row_begin, int64_t row_end,
                                float* out);
// All G weight matrices -> out [G, rows, cols].
void dequantize_fp8_weights(const Fp8Weights& w, int64_t num_groups, int64_t rows, int64_t cols, double* out);
void dequantize_fp8_weights(const Fp8Weights& w, int64_t num_groups, int64_t rows, int64_t cols, float* out);

// Quantisers into those layouts (test inputs of the FP8 GEMMs). Activations x [rows, cols]:
// kPerTensorStatic uses scales[0] as given; kPerTensorDynamic writes scales[0] =
// fp8_scale_from_amax(absmax of all of x, fmt); kPerToken / kGroup128 compute each row's (1 x
// cols or 1 x 128) scale exactly as quantize_fp8_groups (so fake_quantize_row and the GPU
// quantiser agree bit for bit) and zero the slots of rows [rows, scale_stride). kNone: invalid.
void quantize_fp8_activations(ActQuant quant, ScaleFormat fmt, const float* x, int64_t rows, int64_t cols,
                              int64_t scale_stride, uint8_t* q, float* scales);
// Weights w [G, rows, cols] with the granularity of wq: scale = fp8_scale_from_amax(absmax of the
// scaled set, wq.scale_format), stored as float or (kUE8M0) its exponent byte; q = e4m3(x / scale)
// as in quantize_fp8_per_tensor. kNone: q = e4m3(x), no scales written.
void quantize_fp8_weights(const WeightQuant& wq, const float* w, int64_t num_groups, int64_t rows, int64_t cols,
                          uint8_t* q, void* scales);

// One grouped FP8 GEMM as the kernels compute it, in float64 (the "quantised math"):
//   y[e, i, j] = sum_k deq(a)[row_offsets[e] + i, k] * deq(w)[e, j, k] + bias[e, j]
// for i < counts[e], weight rows j < w_rows(); then, with apply_activation (GEMM1),
//   out = activate(activation, y[gate(n)], y[up(n)])   (gate/up rows as in fusedmoe/activation.h)
// for output columns n < n; without (GEMM2), out = y (n = w_rows). Output rows are the valid rows
// in grouped order, unpadded: expert e's row i is out row offsets[e] + i with offsets the exclusive
// prefix sum of counts. row_offsets give where each expert's rows start in `a`: the kernels'
// padded_offsets (or the unpadded offsets for a dense layout). Padding rows are never read.
// Products are exact in float64 (deq(a) * byte(w)); weight scales are applied per K block.
struct Fp8GroupedGemm {
  int num_groups = 0;
  const int32_t* counts = nullptr;       // [G] rows of each expert (0 allowed)
  const int32_t* row_offsets = nullptr;  // [G] first row of expert e in a.q
  int64_t n = 0;                         // output columns
  int64_t k = 0;                         // reduction length (cols of a and w)
  Fp8Activations a;
  Fp8Weights w;                          // [G, w_rows(), k]
  const float* bias = nullptr;           // [G, w_rows()] real units, added after the scales; optional
  bool apply_activation = false;         // GEMM1: gated/plain activation; GEMM2: none
  Activation activation;
  int64_t w_rows() const { return apply_activation ? activation.gemm1_rows(static_cast<int>(n)) : n; }
  int64_t num_rows() const;              // sum of counts
};
// Output rows [row_begin, row_end) of the grouped order -> out[(r - row_begin) * n + c]; callers
// split the range to run in parallel or to check a sample of rows.
void fp8_grouped_gemm(const Fp8GroupedGemm& g, int64_t row_begin, int64_t row_end, double* out);

// ---- the whole layer ----
struct LayerResult {
  Routing routing;
  DispatchPlan plan;
  std::vector<double> h;    // [R, N] GEMM1 + activation of the grouped rows (plan order), rounded
                            // to act_dtype when activations are quantised (as the layer stores H)
  std::vector<double> out;  // [T, K]
  std::vector<double> y;    // [R, K] GEMM2 of every grouped row (plan order; expert bias added, not
                            // weighted: what the layer's GEMM2 writes for the combine), only when
                            // run from an h_override
};
// route -> plan -> GEMM1+act -> GEMM2 -> weight -> combine, in float64 from the given inputs.
// Inputs are read as the layer reads them (x in act_dtype, weights in their format + scales);
// with FP8 activations the GEMM inputs pass through fake_quantize_row.
// h_override: optional [R, N] intermediate in plan order (e.g. a GPU's H, read back): GEMM1 is
// skipped and GEMM2 and the combine run from it (quantised as the layer would quantise it), so a
// test can check GEMM2 apart from GEMM1; out->h is then left empty and out->y is filled.
Status forward(const MoeProblem& p, const MoeTensors& t, LayerResult* out, const double* h_override = nullptr);

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
