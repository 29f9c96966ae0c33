// FP8 GEMM operands in the GPU layouts and a float64 grouped FP8 GEMM of the CPU reference.
//
// 1. Scale lookup: one function per operand maps (row, col) to the index its layout stores the
//    scale at (fusedmoe/reference.h spells the layouts out); dequantising is byte * scale.
// 2. Quantisers into the same layouts, built on quantize_fp8_groups / fp8_scale_from_amax so the
//    bytes equal what kernels/quant and fake_quantize_row produce.
// 3. The grouped GEMM: per output row, dequantise the activation row (float64, exact), then per
//    weight row and K block of constant weight scale sum deq(a) * byte(w) (each product exact in
//    float64: <= 24 + 4 significant bits times 4 bits) and multiply by the block's scale once.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "fusedmoe/reference.h"

namespace fusedmoe::ref {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Every e4m3 byte decoded once: the GEMM's inner loop reads weights through this table.
const std::array<double, 256>& e4m3_table() {
  static const std::array<double, 256> table = [] {
    std::array<double, 256> t{};
    for (int b = 0; b < 256; ++b) t[static_cast<size_t>(b)] = e4m3_to_float(static_cast<uint8_t>(b));
    return t;
  }();
  return table;
}

float abs_max(const float* x, int64_t n) {
  float amax = 0.f;
  for (int64_t i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(x[i]));  // NaN ignored
  return amax;
}

// Where the scale of element (row, col) of expert e's [rows, cols] weights is stored (fusedmoe/quant.h).
int64_t weight_scale_index(const WeightQuant& wq, int64_t e, int64_t rows, int64_t cols, int64_t row, int64_t col) {
  switch (wq.granularity) {
    case ScaleGranularity::kNone: break;
    case ScaleGranularity::kPerTensor: return e;
    case ScaleGranularity::kPerChannel: return e * rows + row;
    case ScaleGranularity::kBlock:
      return (e * ceil_div(rows, wq.block_n) + row / wq.block_n) * ceil_div(cols, wq.block_k) + col / wq.block_k;
    case ScaleGranularity::kGroup: return (e * rows + row) * ceil_div(cols, wq.block_k) + col / wq.block_k;
  }
  return 0;
}

// Columns sharing one weight scale along K: the whole row unless the scales are per block/group.
int64_t weight_scale_span(const WeightQuant& wq, int64_t cols) {
  if (wq.granularity == ScaleGranularity::kBlock || wq.granularity == ScaleGranularity::kGroup) return wq.block_k;
  return std::max<int64_t>(cols, 1);
}

template <typename T>
void dequantize_activations_impl(const Fp8Activations& a, int64_t cols, int64_t row_begin, int64_t row_end, T* out) {
  for (int64_t r = row_begin; r < row_end; ++r) {
    const uint8_t* q = a.q + r * cols;
    T* o = out + (r - row_begin) * cols;
    for (int64_t c = 0; c < cols; ++c)
      o[c] = static_cast<T>(static_cast<double>(e4m3_to_float(q[c])) * fp8_act_scale(a, r, c));
  }
}

template <typename T>
void dequantize_weights_impl(const Fp8Weights& w, int64_t num_groups, int64_t rows, int64_t cols, T* out) {
  for (int64_t e = 0; e < num_groups; ++e)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t base = (e * rows + r) * cols;
      for (int64_t c = 0; c < cols; ++c)
        out[base + c] = static_cast<T>(static_cast<double>(e4m3_to_float(w.q[base + c])) *
                                       fp8_weight_scale(w.quant, w.scales, e, rows, cols, r, c));
    }
}

// sum_j deq_a[j] * byte(w)[j] over the K blocks of constant weight scale, each block sum times its scale.
double scaled_dot(const Fp8GroupedGemm& g, int64_t e, int64_t w_row, const double* deq_a) {
  const auto& table = e4m3_table();
  const int64_t k = g.k;
  const int64_t span = weight_scale_span(g.w.quant, k);
  const uint8_t* w = g.w.q + (e * g.w_rows() + w_row) * k;
  double acc = 0.0;
  for (int64_t k0 = 0; k0 < k; k0 += span) {
    const int64_t k1 = std::min(k, k0 + span);
    // Four partial sums: the GPU tests run this over millions of outputs (one chain is add-latency bound).
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int64_t j = k0;
    for (; j + 4 <= k1; j += 4) {
      s0 += deq_a[j] * table[w[j]];
      s1 += deq_a[j + 1] * table[w[j + 1]];
      s2 += deq_a[j + 2] * table[w[j + 2]];
      s3 += deq_a[j + 3] * table[w[j + 3]];
    }
    for (; j < k1; ++j) s0 += deq_a[j] * table[w[j]];
    acc += ((s0 + s1) + (s2 + s3)) * fp8_weight_scale(g.w.quant, g.w.scales, e, g.w_rows(), k, w_row, k0);
  }
  if (g.bias != nullptr) acc += static_cast<double>(g.bias[e * g.w_rows() + w_row]);
  return acc;
}

}  // namespace

// ---- scales and dequantisation ----

double fp8_act_scale(const Fp8Activations& a, int64_t row, int64_t col) {
  switch (a.quant) {
    case ActQuant::kNone: return 1.0;
    case ActQuant::kPerTensorStatic:
    case ActQuant::kPerTensorDynamic: return a.scales[0];
    case ActQuant::kPerToken: return a.scales[row];
    case ActQuant::kGroup128: return a.scales[(col / kFp8ActGroup) * a.scale_stride + row];
  }
  return std::nan("");
}

double fp8_weight_scale(const WeightQuant& wq, const void* scales, int64_t e, int64_t rows, int64_t cols,
                        int64_t row, int64_t col) {
  if (wq.granularity == ScaleGranularity::kNone) return 1.0;
  const int64_t i = weight_scale_index(wq, e, rows, cols, row, col);
  if (wq.scale_format == ScaleFormat::kUE8M0) return ue8m0_to_float(static_cast<const uint8_t*>(scales)[i]);
  return static_cast<const float*>(scales)[i];
}

void dequantize_fp8_activations(const Fp8Activations& a, int64_t cols, int64_t row_begin, int64_t row_end,
                                double* out) {
  dequantize_activations_impl(a, cols, row_begin, row_end, out);
}
void dequantize_fp8_activations(const Fp8Activations& a, int64_t cols, int64_t row_begin, int64_t row_end,
                                float* out) {
  dequantize_activations_impl(a, cols, row_begin, row_end, out);
}
void dequantize_fp8_weights(const Fp8Weights& w, int64_t num_groups, int64_t rows, int64_t cols, double* out) {
  dequantize_weights_impl(w, num_groups, rows, cols, out);
}
void dequantize_fp8_weights(const Fp8Weights& w, int64_t num_groups, int64_t rows, int64_t cols, float* out) {
  dequantize_weights_impl(w, num_groups, rows, cols, out);
}

// ---- quantisers into the GPU layouts ----

void quantize_fp8_activations(ActQuant quant, ScaleFormat fmt, const float* x, int64_t rows, int64_t cols,
                              int64_t scale_stride, uint8_t* q, float* scales) {
  switch (quant) {
    case ActQuant::kNone: return;
    case ActQuant::kPerTensorDynamic:
      scales[0] = fp8_scale_from_amax(abs_max(x, rows * cols), fmt);
      [[fallthrough]];
    case ActQuant::kPerTensorStatic: quantize_fp8_per_tensor(x, rows * cols, scales[0], q); return;
    case ActQuant::kPerToken:
    case ActQuant::kGroup128: break;
  }
  const int64_t group = quant == ActQuant::kGroup128 ? kFp8ActGroup : std::max<int64_t>(cols, 1);
  const int64_t groups = ceil_div(cols, group);
  std::vector<float> row_scales(static_cast<size_t>(groups));
  for (int64_t r = 0; r < rows; ++r) {
    quantize_fp8_groups(x + r * cols, 1, cols, static_cast<int>(group), fmt, q + r * cols, row_scales.data());
    for (int64_t g = 0; g < groups; ++g) scales[g * scale_stride + r] = row_scales[static_cast<size_t>(g)];
  }
  // Padding slots [rows, scale_stride) are zero, as kernels/quant leaves them.
  for (int64_t g = 0; g < groups; ++g)
    std::fill(scales + g * scale_stride + rows, scales + (g + 1) * scale_stride, 0.f);
}

void quantize_fp8_weights(const WeightQuant& wq, const float* w, int64_t num_groups, int64_t rows, int64_t cols,
                          uint8_t* q, void* scales) {
  if (wq.granularity == ScaleGranularity::kNone) {
    quantize_fp8_per_tensor(w, num_groups * rows * cols, 1.f, q);
    return;
  }
  // One scale per (expert, row range, column range): the scaled sets of each granularity.
  int64_t row_span = rows, col_span = std::max<int64_t>(cols, 1);
  switch (wq.granularity) {
    case ScaleGranularity::kNone:
    case ScaleGranularity::kPerTensor: break;
    case ScaleGranularity::kPerChannel: row_span = 1; break;
    case ScaleGranularity::kBlock: row_span = wq.block_n; col_span = wq.block_k; break;
    case ScaleGranularity::kGroup: row_span = 1; col_span = wq.block_k; break;
  }
  row_span = std::max<int64_t>(row_span, 1);
  for (int64_t e = 0; e < num_groups; ++e)
    for (int64_t r0 = 0; r0 < rows; r0 += row_span)
      for (int64_t c0 = 0; c0 < cols; c0 += col_span) {
        const int64_t r1 = std::min(rows, r0 + row_span), c1 = std::min(cols, c0 + col_span);
        float amax = 0.f;
        for (int64_t r = r0; r < r1; ++r) amax = std::fmax(amax, abs_max(w + (e * rows + r) * cols + c0, c1 - c0));
        const float scale = fp8_scale_from_amax(amax, wq.scale_format);
        const int64_t slot = weight_scale_index(wq, e, rows, cols, r0, c0);  // the whole set shares it
        if (wq.scale_format == ScaleFormat::kUE8M0) static_cast<uint8_t*>(scales)[slot] = float_to_ue8m0(scale);
        else static_cast<float*>(scales)[slot] = scale;
        for (int64_t r = r0; r < r1; ++r)
          quantize_fp8_per_tensor(w + (e * rows + r) * cols + c0, c1 - c0, scale, q + (e * rows + r) * cols + c0);
      }
}

// ---- the grouped GEMM ----

int64_t Fp8GroupedGemm::num_rows() const {
  int64_t rows = 0;
  for (int e = 0; e < num_groups; ++e) rows += counts[e];
  return rows;
}

void fp8_grouped_gemm(const Fp8GroupedGemm& g, int64_t row_begin, int64_t row_end, double* out) {
  const bool gated = g.apply_activation && g.activation.gated();
  const bool interleaved = gated && g.activation.interleaved;
  std::vector<double> deq_a(static_cast<size_t>(g.k));
  int64_t expert_begin = 0;  // first output row of expert e
  for (int e = 0; e < g.num_groups && expert_begin < row_end; ++e) {
    const int64_t count = g.counts[e];
    const int64_t lo = std::max(row_begin, expert_begin), hi = std::min(row_end, expert_begin + count);
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t a_row = g.row_offsets[e] + (r - expert_begin);
      dequantize_fp8_activations(g.a, g.k, a_row, a_row + 1, deq_a.data());
      double* o = out + (r - row_begin) * g.n;
      for (int64_t c = 0; c < g.n; ++c) {
        if (!g.apply_activation) {
          o[c] = scaled_dot(g, e, c, deq_a.data());
        } else if (!gated) {
          o[c] = activate(g.activation, scaled_dot(g, e, c, deq_a.data()), 0.0);
        } else {
          const int64_t gate_row = interleaved ? 2 * c : c;
          const int64_t up_row = interleaved ? 2 * c + 1 : g.n + c;
          o[c] = activate(g.activation, scaled_dot(g, e, gate_row, deq_a.data()), scaled_dot(g, e, up_row, deq_a.data()));
        }
      }
    }
    expert_begin += count;
  }
}

}  // namespace fusedmoe::ref
