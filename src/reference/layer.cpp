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

void gemm1_activation_row(const MoeProblem& p, const MoeTensors& t, int e, const double* x_row, double* h) {
  const int64_t k = p.hidden;
  const int n = p.intermediate;
  const int64_t r1 = p.gemm1_rows();
  const Activation& act = p.activation;
  std::vector<double> w(static_cast<size_t>(k));
  auto gemm1_output = [&](int64_t row) {
    load_weight_row(p.quant.weight, t.w1, t.w1_scale, e, r1, k, row, w.data());
    double acc = dot(w.data(), x_row, k);
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

void gemm2_row(const MoeProblem& p, const MoeTensors& t, int e, const double* h, double* y) {
  const int64_t k = p.hidden;
  const int64_t n = p.intermediate;
  std::vector<double> w(static_cast<size_t>(n));
  for (int64_t c = 0; c < k; ++c) {
    load_weight_row(p.quant.weight, t.w2, t.w2_scale, e, k, n, c, w.data());
    y[c] = dot(w.data(), h, n);
    if (p.has_expert_bias && t.b2 != nullptr) y[c] += t.b2[e * k + c];
  }
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

  std::vector<int> row_group(static_cast<size_t>(rows));
  for (int g = 0; g < plan.num_groups; ++g)
    for (int64_t row = plan.offsets[g]; row < plan.offsets[g + 1]; ++row) row_group[row] = g;

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

  // GEMM1 + activation. h stays float64 when activations are not quantised.
  // (rows in parallel: each writes only its own H row)
  std::vector<double> h(static_cast<size_t>(rows * n_dim));
  if (h_override != nullptr) std::copy(h_override, h_override + rows * n_dim, h.begin());  // no GEMM1
  else detail::parallel_for(rows, 4, [&](int64_t row) {
    std::vector<double> quantised_in(static_cast<size_t>(k_dim));
    fake_quantize_row(p.quant, &gemm1_in[row * k_dim], k_dim, act1_scale, quantised_in.data());
    gemm1_activation_row(p, t, row_group[row], quantised_in.data(), &h[row * n_dim]);
    if (p.quant.act != ActQuant::kNone) {
      // Quantised activations: H is stored in act_dtype between the GEMMs and quantised from
      // there (the GPU's GEMM1 writes bf16 H; its quantiser reads it), so the reference rounds too
      // (from float, as the GPU's epilogue converts its float result).
      for (int64_t c = 0; c < n_dim; ++c) {
        const float v = static_cast<float>(h[row * n_dim + c]);
        h[row * n_dim + c] = p.act_dtype == DType::kFloat16 ? fp16_to_float(float_to_fp16(v))
                                                             : bf16_to_float(float_to_bf16(v));
      }
    }
  });
  if (h_override == nullptr) result.h = h;  // the reference's own H (see reference.h)
  const float act2_scale = per_tensor_act_scale(p.quant, h.data(), rows * n_dim, t.act2_scale);

  // GEMM2, weighting and combine, in slot order per token (the shared expert's slot is last).
  // (tokens in parallel: each sums its own slots, in slot order, into its own output row)
  result.out.assign(static_cast<size_t>(num_tokens * k_dim), 0.0);
  if (h_override != nullptr) result.y.assign(static_cast<size_t>(rows * k_dim), 0.0);
  detail::parallel_for(num_tokens, 2, [&](int64_t token) {
    std::vector<double> quantised_h(static_cast<size_t>(n_dim));
    std::vector<double> y(static_cast<size_t>(k_dim));
    for (int slot = 0; slot < slots; ++slot) {
      const int32_t row = plan.slot_row[token * slots + slot];
      if (row < 0) continue;  // expert on another rank
      fake_quantize_row(p.quant, &h[row * n_dim], n_dim, act2_scale, quantised_h.data());
      gemm2_row(p, t, row_group[row], quantised_h.data(), y.data());
      if (h_override != nullptr) std::copy(y.begin(), y.end(), result.y.begin() + row * k_dim);  // own row
      double weight = p.shared_expert_scale;
      if (slot < top_k) weight = weight_on_input ? 1.0 : routing.weights[token * top_k + slot];
      double* out_row = &result.out[token * k_dim];
      for (int64_t c = 0; c < k_dim; ++c) out_row[c] += weight * y[c];
    }
  });
  *out = std::move(result);
  return Status::Ok();
}

}  // namespace fusedmoe::ref
