// Expert GEMMs and the whole layer of the CPU reference, accumulated in float64.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fusedmoe/reference.h"
#include "reference/parallel.h"

namespace fusedmoe::ref {
namespace {

Status invalid(std::string message) { return {StatusCode::kInvalidArgument, std::move(message)}; }

// Row `row` of expert e's [rows, cols] weight matrix, dequantised: real = stored * scale.
void load_weight_row(const WeightQuant& wq, const void* w, const void* scale, int e, int64_t rows,
                     int64_t cols, int64_t row, double* out) {
  const int64_t base = (e * rows + row) * cols;
  switch (wq.format) {
    case WeightFormat::kBF16:
      for (int64_t c = 0; c < cols; ++c) out[c] = load_as_double(w, DType::kBFloat16, base + c);
      return;
    case WeightFormat::kFP16:
      for (int64_t c = 0; c < cols; ++c) out[c] = load_as_double(w, DType::kFloat16, base + c);
      return;
    case WeightFormat::kFP8E4M3: break;
    case WeightFormat::kMXFP4:
    case WeightFormat::kInt4:
      // forward() reports these as unsupported; a direct caller gets NaN rather than garbage.
      std::fill(out, out + cols, std::numeric_limits<double>::quiet_NaN());
      return;
  }
  for (int64_t c = 0; c < cols; ++c)
    out[c] = load_as_double(w, DType::kFloat8E4M3, base + c) * fp8_weight_scale(wq, scale, e, rows, cols, row, c);
}

double dot(const double* a, const double* b, int64_t n) {
  double acc = 0.0;
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

Status check_layer(const MoeProblem& p, const MoeTensors& t) {
  if (p.num_tokens < 0) return invalid("num_tokens must not be negative");
  if (p.hidden <= 0 || p.intermediate <= 0) return invalid("hidden and intermediate must be positive");
  if (p.act_dtype != DType::kBFloat16 && p.act_dtype != DType::kFloat16)
    return invalid("act_dtype must be bf16 or fp16");
  if (p.num_shared_experts != 0 && p.num_shared_experts != 1) return invalid("num_shared_experts must be 0 or 1");
  if (p.num_local_experts > p.num_experts) return invalid("num_local_experts exceeds num_experts");
  const WeightQuant& wq = p.quant.weight;
  if (wq.format == WeightFormat::kMXFP4 || wq.format == WeightFormat::kInt4)
    return {StatusCode::kUnsupported, std::string("the reference has no ") + to_string(wq.format) + " weights"};
  if (wq.format == WeightFormat::kFP8E4M3 && wq.granularity != ScaleGranularity::kNone) {
    if (t.w1_scale == nullptr || t.w2_scale == nullptr) return invalid("FP8 weights need w1_scale and w2_scale");
    if (wq.block_n <= 0 || wq.block_k <= 0) return invalid("block_n and block_k must be positive");
  }
  if (p.quant.act == ActQuant::kPerTensorStatic && (t.act_scale == nullptr || t.act2_scale == nullptr))
    return invalid("kPerTensorStatic needs act_scale and act2_scale");
  if (p.has_expert_bias && (t.b1 == nullptr || t.b2 == nullptr)) return invalid("has_expert_bias needs b1 and b2");
  if (p.num_local_experts >= 0) {
    if (t.expert_map == nullptr) return invalid("num_local_experts is set but expert_map is null");
    for (int e = 0; e < p.num_experts; ++e)
      if (t.expert_map[e] < -1 || t.expert_map[e] >= p.num_local_experts)
        return invalid("expert_map[" + std::to_string(e) + "] = " + std::to_string(t.expert_map[e]) +
                       " outside [-1, num_local_experts)");
  }
  if (p.num_tokens > 0 && (t.x == nullptr || t.w1 == nullptr || t.w2 == nullptr))
    return invalid("x, w1 and w2 are required");
  return Status::Ok();
}

}  // namespace

namespace {

// Expert e's [rows, cols] weight matrix dequantised once (rows in parallel): what load_weight_row
// gives row by row, so every product below is the one the row-wise form computed.
void dequantize_expert(const WeightQuant& wq, const void* w, const void* scale, int e, int64_t rows, int64_t cols,
                       std::vector<double>* out) {
  out->resize(static_cast<size_t>(rows * cols));
  detail::parallel_for(rows, 16, [&](int64_t r) { load_weight_row(wq, w, scale, e, rows, cols, r, out->data() + r * cols); });
}

// For each non-empty group g of the plan: expert g's [rows, cols] weights dequantised once into
// *wbuf, then f(g, row) for its grouped rows in parallel (each writes only its own row).
template <class F>
void per_expert_rows(const DispatchPlan& plan, const WeightQuant& wq, const void* w, const void* scale, int64_t rows,
                     int64_t cols, std::vector<double>* wbuf, F&& f) {
  for (int g = 0; g < plan.num_groups; ++g) {
    const int64_t r0 = plan.offsets[g], r_end = plan.offsets[g + 1];
    if (r0 == r_end) continue;
    dequantize_expert(wq, w, scale, g, rows, cols, wbuf);
    detail::parallel_for(r_end - r0, 4, [&](int64_t i) { f(g, r0 + i); });
  }
}

// GEMM1 + activation of one row from expert e's dequantised W1 [R1, K].
void gemm1_activation_row_w(const MoeProblem& p, const MoeTensors& t, int e, const double* w1, const double* x_row,
                            double* h) {
  const int64_t k = p.hidden;
  const int n = p.intermediate;
  const int64_t r1 = p.gemm1_rows();
  const Activation& act = p.activation;
  auto gemm1_output = [&](int64_t row) {
    double acc = dot(w1 + row * k, x_row, k);
    if (p.has_expert_bias && t.b1 != nullptr) acc += t.b1[e * r1 + row];
    return acc;
  };
  for (int j = 0; j < n; ++j) {
    if (!act.gated()) {
      h[j] = activate(act, gemm1_output(j), 0.0);
      continue;
    }
    const int64_t gate_row = act.interleaved ? 2 * j : j;
    const int64_t up_row = act.interleaved ? 2 * j + 1 : n + j;
    h[j] = activate(act, gemm1_output(gate_row), gemm1_output(up_row));
  }
}

// GEMM2 of one row from expert e's dequantised W2 [K, N].
void gemm2_row_w(const MoeProblem& p, const MoeTensors& t, int e, const double* w2, const double* h, double* y) {
  const int64_t k = p.hidden;
  const int64_t n = p.intermediate;
  for (int64_t c = 0; c < k; ++c) {
    y[c] = dot(w2 + c * n, h, n);
    if (p.has_expert_bias && t.b2 != nullptr) y[c] += t.b2[e * k + c];
  }
}

}  // namespace

void gemm1_activation_row(const MoeProblem& p, const MoeTensors& t, int e, const double* x_row, double* h) {
  std::vector<double> w1;
  dequantize_expert(p.quant.weight, t.w1, t.w1_scale, e, p.gemm1_rows(), p.hidden, &w1);
  gemm1_activation_row_w(p, t, e, w1.data(), x_row, h);
}

void gemm2_row(const MoeProblem& p, const MoeTensors& t, int e, const double* h, double* y) {
  std::vector<double> w2;
  dequantize_expert(p.quant.weight, t.w2, t.w2_scale, e, p.hidden, p.intermediate, &w2);
  gemm2_row_w(p, t, e, w2.data(), h, y);
}

Status forward(const MoeProblem& p, const MoeTensors& t, LayerResult* out, const double* h_override) {
  if (Status s = check_layer(p, t); !s.ok()) return s;
  LayerResult result;
  if (Status s = route(p, t, &result.routing); !s.ok()) return s;
  // The reference needs no tile padding: tile_m = 1.
  result.plan = plan_dispatch(p, result.routing, p.num_local_experts >= 0 ? t.expert_map : nullptr, 1);
  const DispatchPlan& plan = result.plan;
  const Routing& routing = result.routing;

  const int64_t num_tokens = p.num_tokens;
  const int64_t k_dim = p.hidden;
  const int64_t n_dim = p.intermediate;
  const int top_k = p.top_k();
  const int slots = p.slots_per_token();
  const int64_t rows = plan.num_rows();
  const int64_t x_stride = t.x_row_stride > 0 ? t.x_row_stride : k_dim;
  const bool weight_on_input = p.router.weight_on_input;

  // GEMM1 input of every grouped row, as the GEMM reads it before act quantisation. With
  // weight_on_input the routed rows carry the routing weight (the shared expert's do not).
  std::vector<double> gemm1_in(static_cast<size_t>(rows * k_dim));
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t token = plan.row_token[row];
    const int slot = plan.row_slot[row];
    const double w = (weight_on_input && slot < top_k) ? routing.weights[token * top_k + slot] : 1.0;
    for (int64_t c = 0; c < k_dim; ++c)
      gemm1_in[row * k_dim + c] = load_as_double(t.x, p.act_dtype, token * x_stride + c) * w;
  }
  const float act1_scale = per_tensor_act_scale(p.quant, gemm1_in.data(), rows * k_dim, t.act_scale);

  // GEMM1 + activation, one expert (group) at a time: its weights dequantised once, then its rows
  // in parallel (each writes only its own H row). h stays float64 when activations are not
  // quantised. (Dequantising per row instead, as before session 21, made the FP8 references of the
  // GPU tests take minutes at 65536 tokens.)
  std::vector<double> h(static_cast<size_t>(rows * n_dim));
  std::vector<double> wbuf;
  if (h_override != nullptr) {
    std::copy(h_override, h_override + rows * n_dim, h.begin());  // no GEMM1
  } else {
    per_expert_rows(plan, p.quant.weight, t.w1, t.w1_scale, p.gemm1_rows(), k_dim, &wbuf, [&](int g, int64_t row) {
      std::vector<double> quantised_in(static_cast<size_t>(k_dim));
      fake_quantize_row(p.quant, &gemm1_in[row * k_dim], k_dim, act1_scale, quantised_in.data());
      gemm1_activation_row_w(p, t, g, wbuf.data(), quantised_in.data(), &h[row * n_dim]);
      if (p.quant.act != ActQuant::kNone) {
        // Quantised activations: H is stored in act_dtype between the GEMMs and quantised from
        // there (the GPU's GEMM1 writes bf16 H; its quantiser reads it), so the reference rounds
        // too (from float, as the GPU's epilogue converts its float result).
        for (int64_t c = 0; c < n_dim; ++c) {
          const float v = static_cast<float>(h[row * n_dim + c]);
          h[row * n_dim + c] = p.act_dtype == DType::kFloat16 ? fp16_to_float(float_to_fp16(v))
                                                               : bf16_to_float(float_to_bf16(v));
        }
      }
    });
  }
  std::vector<double>().swap(gemm1_in);  // (not needed past GEMM1: keeps the peak at one [R, K] array)
  if (h_override == nullptr) result.h = h;  // the reference's own H (see reference.h)
  const float act2_scale = per_tensor_act_scale(p.quant, h.data(), rows * n_dim, t.act2_scale);

  // GEMM2 of every grouped row, one expert at a time as GEMM1 (each row its own Y row).
  std::vector<double> y_all(static_cast<size_t>(rows * k_dim));
  per_expert_rows(plan, p.quant.weight, t.w2, t.w2_scale, k_dim, n_dim, &wbuf, [&](int g, int64_t row) {
    std::vector<double> quantised_h(static_cast<size_t>(n_dim));
    fake_quantize_row(p.quant, &h[row * n_dim], n_dim, act2_scale, quantised_h.data());
    gemm2_row_w(p, t, g, wbuf.data(), quantised_h.data(), &y_all[row * k_dim]);
  });
  // Weighting and combine, in slot order per token (the shared expert's slot is last).
  // (tokens in parallel: each sums its own slots, in slot order, into its own output row)
  result.out.assign(static_cast<size_t>(num_tokens * k_dim), 0.0);
  detail::parallel_for(num_tokens, 2, [&](int64_t token) {
    for (int slot = 0; slot < slots; ++slot) {
      const int32_t row = plan.slot_row[token * slots + slot];
      if (row < 0) continue;  // expert on another rank
      const double* y = &y_all[row * k_dim];
      double weight = p.shared_expert_scale;
      if (slot < top_k) weight = weight_on_input ? 1.0 : routing.weights[token * top_k + slot];
      double* out_row = &result.out[token * k_dim];
      for (int64_t c = 0; c < k_dim; ++c) out_row[c] += weight * y[c];
    }
  });
  if (h_override != nullptr) result.y = std::move(y_all);
  *out = std::move(result);
  return Status::Ok();
}

}  // namespace fusedmoe::ref
