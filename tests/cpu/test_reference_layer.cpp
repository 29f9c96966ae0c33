// The whole-layer reference: tiny problems checked by hand, and random problems of every weight
// format against a naive loop written independently from the documented semantics.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fusedmoe/reference.h"

namespace fm = fusedmoe;
namespace ref = fusedmoe::ref;

namespace {

// ---------------------------------------------------------------- layer inputs ----

// Host buffers of one layer call; tensors() views them.
struct LayerInputs {
  fm::MoeProblem p;
  int64_t x_stride = 0;
  std::vector<uint16_t> x;  // act_dtype bits, rows x_stride apart
  std::vector<float> logits, bias;
  std::vector<int32_t> topk_ids;
  std::vector<float> topk_weights;
  std::vector<int32_t> expert_map;
  std::vector<uint8_t> w1, w2, w1_scale, w2_scale;  // raw bytes in the weight / scale format
  std::vector<float> b1, b2;
  float act_scale = 0.f, act2_scale = 0.f;

  fm::MoeTensors tensors() const {
    fm::MoeTensors t;
    t.x = x.data();
    t.x_row_stride = x_stride;
    t.router_logits = logits.empty() ? nullptr : logits.data();
    t.correction_bias = bias.empty() ? nullptr : bias.data();
    t.topk_ids = topk_ids.empty() ? nullptr : topk_ids.data();
    t.topk_weights = topk_weights.empty() ? nullptr : topk_weights.data();
    t.expert_map = expert_map.empty() ? nullptr : expert_map.data();
    t.w1 = w1.data();
    t.w2 = w2.data();
    t.w1_scale = w1_scale.empty() ? nullptr : w1_scale.data();
    t.w2_scale = w2_scale.empty() ? nullptr : w2_scale.data();
    t.b1 = b1.empty() ? nullptr : b1.data();
    t.b2 = b2.empty() ? nullptr : b2.data();
    t.act_scale = &act_scale;
    t.act2_scale = &act2_scale;
    return t;
  }
};

uint16_t to_act(fm::DType t, float v) { return t == fm::DType::kFloat16 ? ref::float_to_fp16(v) : ref::float_to_bf16(v); }

template <typename T>
void append_bytes(std::vector<uint8_t>& out, T v) {
  uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.insert(out.end(), b, b + sizeof(T));
}

// Index of the scale of element (e, r, c) of the [experts, rows, cols] weights, per quant.h.
int64_t scale_index(const fm::WeightQuant& wq, int e, int rows, int cols, int r, int c) {
  switch (wq.granularity) {
    case fm::ScaleGranularity::kPerTensor: return e;
    case fm::ScaleGranularity::kPerChannel: return int64_t{e} * rows + r;
    case fm::ScaleGranularity::kBlock: {
      const int rb = (rows + wq.block_n - 1) / wq.block_n, cb = (cols + wq.block_k - 1) / wq.block_k;
      return (int64_t{e} * rb + r / wq.block_n) * cb + c / wq.block_k;
    }
    default: return 0;
  }
}

int64_t scale_count(const fm::WeightQuant& wq, int experts, int rows, int cols) {
  return scale_index(wq, experts - 1, rows, cols, rows - 1, cols - 1) + 1;
}

double weight_scale(const fm::WeightQuant& wq, const std::vector<uint8_t>& scales, int64_t i) {
  if (wq.scale_format == fm::ScaleFormat::kUE8M0) return ref::ue8m0_to_float(scales[i]);
  float s;
  std::memcpy(&s, &scales[i * 4], 4);
  return s;
}

// Stores real-valued weights [experts, rows, cols] in the scheme's format, scales from the
// absmax of each scale's elements.
void store_weights(const fm::WeightQuant& wq, const std::vector<float>& real, int experts, int rows, int cols,
                   std::vector<uint8_t>* bytes, std::vector<uint8_t>* scale_bytes) {
  bytes->clear();
  scale_bytes->clear();
  if (wq.format != fm::WeightFormat::kFP8E4M3) {
    for (float v : real) append_bytes(*bytes, wq.format == fm::WeightFormat::kFP16 ? ref::float_to_fp16(v) : ref::float_to_bf16(v));
    return;
  }
  std::vector<float> amax(static_cast<size_t>(scale_count(wq, experts, rows, cols)), 0.f);
  for (int e = 0; e < experts; ++e)
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        float& a = amax[scale_index(wq, e, rows, cols, r, c)];
        a = std::max(a, std::fabs(real[(int64_t{e} * rows + r) * cols + c]));
      }
  std::vector<float> scales;
  for (float a : amax) {
    const float s = ref::fp8_scale_from_amax(a, wq.scale_format);
    scales.push_back(s);
    if (wq.scale_format == fm::ScaleFormat::kUE8M0) scale_bytes->push_back(ref::float_to_ue8m0(s));
    else append_bytes(*scale_bytes, s);
  }
  for (int e = 0; e < experts; ++e)
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        const float s = scales[scale_index(wq, e, rows, cols, r, c)];
        bytes->push_back(ref::float_to_e4m3(real[(int64_t{e} * rows + r) * cols + c] * (1.0f / s)));
      }
}

// Random inputs for p (num_tokens set). Values are scaled so that every stage is O(1).
LayerInputs random_inputs(const fm::MoeProblem& p, std::mt19937& rng) {
  LayerInputs in;
  in.p = p;
  const int64_t t = p.num_tokens;
  const int k_dim = p.hidden, n_dim = p.intermediate, el = p.weight_experts(), r1 = p.gemm1_rows();
  std::normal_distribution<float> nd(0.f, 1.f);
  in.x_stride = k_dim + 3;  // a padded row stride
  in.x.assign(static_cast<size_t>(t * in.x_stride), 0);
  for (int64_t i = 0; i < t; ++i)
    for (int c = 0; c < k_dim; ++c) in.x[i * in.x_stride + c] = to_act(p.act_dtype, nd(rng));
  in.logits.resize(static_cast<size_t>(t * p.num_experts));
  for (float& v : in.logits) v = nd(rng);
  in.bias.resize(static_cast<size_t>(p.num_experts));
  for (float& v : in.bias) v = 0.1f * nd(rng);
  std::vector<float> w1(static_cast<size_t>(el) * r1 * k_dim), w2(static_cast<size_t>(el) * k_dim * n_dim);
  for (float& v : w1) v = nd(rng) / std::sqrt(static_cast<float>(k_dim));
  for (float& v : w2) v = nd(rng) / std::sqrt(static_cast<float>(n_dim));
  store_weights(p.quant.weight, w1, el, r1, k_dim, &in.w1, &in.w1_scale);
  store_weights(p.quant.weight, w2, el, k_dim, n_dim, &in.w2, &in.w2_scale);
  if (p.has_expert_bias) {
    in.b1.resize(static_cast<size_t>(el) * r1);
    in.b2.resize(static_cast<size_t>(el) * k_dim);
    for (float& v : in.b1) v = 0.1f * nd(rng);
    for (float& v : in.b2) v = 0.1f * nd(rng);
  }
  if (p.num_local_experts >= 0) {  // a random subset of the experts is local, in random order
    std::vector<int32_t> global(static_cast<size_t>(p.num_experts));
    for (int e = 0; e < p.num_experts; ++e) global[e] = e;
    std::shuffle(global.begin(), global.end(), rng);
    in.expert_map.assign(static_cast<size_t>(p.num_experts), -1);
    for (int l = 0; l < p.num_local_experts; ++l) in.expert_map[global[l]] = l;
  }
  in.act_scale = 3.5f / 448.f;  // static scales: x ~ N(0,1) clips a little, as calibrated ones do
  in.act2_scale = 1.5f / 448.f;
  return in;
}

// ---------------------------------------------------------------- the naive layer ----

// What a GEMM input row becomes through the scheme's activation quantisation.
std::vector<double> naive_act_quant(const fm::QuantScheme& q, const std::vector<double>& row, float tensor_scale) {
  const int64_t n = static_cast<int64_t>(row.size());
  if (q.act == fm::ActQuant::kNone) return row;
  std::vector<float> f(row.begin(), row.end());
  std::vector<uint8_t> bytes(row.size());
  std::vector<float> scale_of(row.size());
  if (q.act == fm::ActQuant::kPerToken) {
    float s = 0.f;
    ref::quantize_fp8_per_token(f.data(), 1, n, bytes.data(), &s);
    std::fill(scale_of.begin(), scale_of.end(), s);
  } else if (q.act == fm::ActQuant::kGroup128) {
    std::vector<float> s(static_cast<size_t>((n + 127) / 128));
    ref::quantize_fp8_groups(f.data(), 1, n, 128, q.act_scale_format, bytes.data(), s.data());
    for (int64_t i = 0; i < n; ++i) scale_of[i] = s[i / 128];
  } else {
    ref::quantize_fp8_per_tensor(f.data(), n, tensor_scale, bytes.data());
    std::fill(scale_of.begin(), scale_of.end(), tensor_scale);
  }
  std::vector<double> out(row.size());
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<double>(ref::e4m3_to_float(bytes[i])) * scale_of[i];
  return out;
}

float naive_tensor_scale(const fm::QuantScheme& q, const std::vector<std::vector<double>>& rows, float static_scale) {
  if (q.act == fm::ActQuant::kPerTensorStatic) return static_scale;
  float amax = 0.f;
  for (const auto& row : rows)
    for (double v : row) amax = std::max(amax, std::fabs(static_cast<float>(v)));
  return ref::fp8_scale_from_amax(amax, q.act_scale_format);
}

// out[T, K] by the textbook loop: for every token and slot, the expert's dequantised matrices
// applied to the (weighted, quantised) input, weighted and summed in slot order.
std::vector<double> naive_forward(const LayerInputs& in, const ref::Routing& routing) {
  const fm::MoeProblem& p = in.p;
  const fm::WeightQuant& wq = p.quant.weight;
  const int k_dim = p.hidden, n_dim = p.intermediate, el = p.weight_experts(), r1 = p.gemm1_rows();
  const int top_k = p.top_k();

  auto dequant = [&](const std::vector<uint8_t>& bytes, const std::vector<uint8_t>& scales, int rows, int cols) {
    std::vector<double> w(static_cast<size_t>(el) * rows * cols);
    for (int e = 0; e < el; ++e)
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
          const int64_t i = (int64_t{e} * rows + r) * cols + c;
          if (wq.format == fm::WeightFormat::kFP8E4M3) {
            w[i] = ref::e4m3_to_float(bytes[i]) * weight_scale(wq, scales, scale_index(wq, e, rows, cols, r, c));
          } else {
            uint16_t b;
            std::memcpy(&b, &bytes[i * 2], 2);
            w[i] = wq.format == fm::WeightFormat::kFP16 ? ref::fp16_to_float(b) : ref::bf16_to_float(b);
          }
        }
    return w;
  };
  const std::vector<double> w1 = dequant(in.w1, in.w1_scale, r1, k_dim);
  const std::vector<double> w2 = dequant(in.w2, in.w2_scale, k_dim, n_dim);

  struct Item {
    int64_t token;
    int expert;  // local weight index
    double weight;
    std::vector<double> input, h;
  };
  std::vector<Item> items;
  for (int64_t t = 0; t < p.num_tokens; ++t) {
    std::vector<double> x(static_cast<size_t>(k_dim));
    for (int c = 0; c < k_dim; ++c) {
      const uint16_t b = in.x[t * in.x_stride + c];
      x[c] = p.act_dtype == fm::DType::kFloat16 ? ref::fp16_to_float(b) : ref::bf16_to_float(b);
    }
    for (int s = 0; s < top_k; ++s) {
      const int global = routing.ids[t * top_k + s];
      const int local = in.expert_map.empty() ? global : in.expert_map[global];
      if (local < 0) continue;
      const double w = routing.weights[t * top_k + s];
      Item item{t, local, p.router.weight_on_input ? 1.0 : w, x, {}};
      if (p.router.weight_on_input)
        for (double& v : item.input) v *= w;
      items.push_back(std::move(item));
    }
    if (p.num_shared_experts == 1) items.push_back({t, p.local_experts(), p.shared_expert_scale, x, {}});
  }

  std::vector<std::vector<double>> inputs;
  for (const Item& it : items) inputs.push_back(it.input);
  const float s1 = naive_tensor_scale(p.quant, inputs, in.act_scale);
  for (Item& it : items) {
    const std::vector<double> a = naive_act_quant(p.quant, it.input, s1);
    auto gemm1 = [&](int row) {
      double acc = 0;
      for (int c = 0; c < k_dim; ++c) acc += w1[(int64_t{it.expert} * r1 + row) * k_dim + c] * a[c];
      return acc + (in.b1.empty() ? 0.0 : in.b1[int64_t{it.expert} * r1 + row]);
    };
    it.h.resize(static_cast<size_t>(n_dim));
    for (int j = 0; j < n_dim; ++j) {
      if (!p.activation.gated()) {
        it.h[j] = ref::activate(p.activation, gemm1(j), 0.0);
      } else if (p.activation.interleaved) {
        it.h[j] = ref::activate(p.activation, gemm1(2 * j), gemm1(2 * j + 1));
      } else {
        it.h[j] = ref::activate(p.activation, gemm1(j), gemm1(n_dim + j));
      }
      // quantised activations: H lives in act_dtype between the GEMMs (bf16 or fp16)
      if (p.quant.act != fm::ActQuant::kNone) {
        const float hf = static_cast<float>(it.h[j]);
        it.h[j] = p.act_dtype == fm::DType::kFloat16 ? ref::fp16_to_float(ref::float_to_fp16(hf))
                                                      : ref::bf16_to_float(ref::float_to_bf16(hf));
      }
    }
  }

  std::vector<std::vector<double>> hs;
  for (const Item& it : items) hs.push_back(it.h);
  const float s2 = naive_tensor_scale(p.quant, hs, in.act2_scale);
  std::vector<double> out(static_cast<size_t>(p.num_tokens * k_dim), 0.0);
  for (const Item& it : items) {
    const std::vector<double> hq = naive_act_quant(p.quant, it.h, s2);
    for (int c = 0; c < k_dim; ++c) {
      double y = 0;
      for (int j = 0; j < n_dim; ++j) y += w2[(int64_t{it.expert} * k_dim + c) * n_dim + j] * hq[j];
      y += in.b2.empty() ? 0.0 : in.b2[int64_t{it.expert} * k_dim + c];
      out[it.token * k_dim + c] += it.weight * y;
    }
  }
  return out;
}

// ---------------------------------------------------------------- random problems ----

struct Case {
  std::string name;
  fm::MoeProblem problem;
};

fm::MoeProblem base_problem() {
  fm::MoeProblem p;
  p.num_tokens = 9;
  p.max_tokens = 16;
  p.num_experts = 8;
  p.hidden = 200;        // 2 blocks / groups of 128, the second one partial
  p.intermediate = 72;   // W1 has 144 rows: 2 row blocks, the second partial
  p.router = fm::RouterConfig::softmax_topk(2, true);
  return p;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  auto add = [&](std::string name, auto&& edit) {
    fm::MoeProblem p = base_problem();
    edit(p);
    out.push_back({std::move(name), p});
  };
  add("bf16", [](fm::MoeProblem&) {});
  add("fp16", [](fm::MoeProblem& p) {
    p.act_dtype = fm::DType::kFloat16;
    p.quant = fm::QuantScheme::fp16();
  });
  add("fp8-per-tensor-static", [](fm::MoeProblem& p) { p.quant = fm::QuantScheme::fp8_per_tensor(false); });
  add("fp8-per-tensor-dynamic", [](fm::MoeProblem& p) { p.quant = fm::QuantScheme::fp8_per_tensor(true); });
  add("fp8-per-channel", [](fm::MoeProblem& p) { p.quant = fm::QuantScheme::fp8_per_channel(); });
  add("fp8-block128-f32", [](fm::MoeProblem& p) { p.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32); });
  add("fp8-block128-ue8m0", [](fm::MoeProblem& p) { p.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0); });
  add("fp8-block-32x128", [](fm::MoeProblem& p) {  // non-square blocks: rows and columns differ
    p.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);
    p.quant.weight.block_n = 32;
  });
  add("gpt-oss-bias-interleaved-swiglu-oai", [](fm::MoeProblem& p) {
    p.router = fm::RouterConfig::gpt_oss(2);
    p.activation = fm::Activation::swiglu_oai();
    p.has_expert_bias = true;
  });
  add("gpt-oss-fp8-block-bias", [](fm::MoeProblem& p) {
    p.router = fm::RouterConfig::gpt_oss(3);
    p.activation = fm::Activation::swiglu_oai();
    p.has_expert_bias = true;
    p.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);
  });
  add("llama4-weight-on-input-shared", [](fm::MoeProblem& p) {
    p.router = fm::RouterConfig::llama4();
    p.num_shared_experts = 1;
    p.shared_expert_scale = 0.75f;
  });
  add("llama4-weight-on-input-fp8-dynamic", [](fm::MoeProblem& p) {
    p.router = fm::RouterConfig::llama4();
    p.num_shared_experts = 1;
    p.quant = fm::QuantScheme::fp8_per_tensor(true);
  });
  add("deepseek-v3-shared-ue8m0", [](fm::MoeProblem& p) {
    p.router = fm::RouterConfig::deepseek_v3(3, 4, 2, 2.5f);
    p.num_shared_experts = 1;
    p.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0);
  });
  add("deepseek-v4-clamped-swiglu", [](fm::MoeProblem& p) {
    p.router = fm::RouterConfig::deepseek_v4(2, 1.5f);
    p.activation = fm::Activation::clamped_swiglu(1.f);  // a low limit, so that clamping happens
  });
  add("expert-parallel-shared", [](fm::MoeProblem& p) {
    p.num_local_experts = 3;
    p.num_shared_experts = 1;
    p.quant = fm::QuantScheme::fp8_per_channel();
  });
  add("expert-parallel", [](fm::MoeProblem& p) {
    p.num_local_experts = 4;
    p.router = fm::RouterConfig::softmax_topk(1, false);
    p.num_tokens = 16;
  });
  add("squared-relu", [](fm::MoeProblem& p) { p.activation = fm::Activation::squared_relu(); });
  add("gelu-tanh", [](fm::MoeProblem& p) { p.activation.kind = fm::ActivationKind::kGeluTanhGated; });
  return out;
}

TEST(ReferenceLayer, MatchesNaiveLoopOnRandomProblems) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937 rng(seed);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const LayerInputs in = random_inputs(c.problem, rng);
    ref::LayerResult res;
    const fm::Status st = ref::forward(in.p, in.tensors(), &res);
    ASSERT_TRUE(st.ok()) << st.to_string();

    ref::Routing routing;
    ASSERT_TRUE(ref::route(in.p, in.tensors(), &routing).ok());
    EXPECT_EQ(res.routing.ids, routing.ids);
    EXPECT_EQ(res.routing.weights, routing.weights);
    EXPECT_EQ(res.plan.slot_row,
              ref::plan_dispatch(in.p, routing, in.expert_map.empty() ? nullptr : in.expert_map.data(), 1).slot_row);

    const std::vector<double> expected = naive_forward(in, routing);
    ASSERT_EQ(res.out.size(), expected.size());
    double max_abs = 0;
    for (double v : expected) max_abs = std::max(max_abs, std::fabs(v));
    if (res.plan.num_rows() > 0) {
      EXPECT_GT(max_abs, 0.05) << "degenerate case: the output is ~0";
    }
    for (size_t i = 0; i < expected.size(); ++i)
      ASSERT_NEAR(res.out[i], expected[i], 1e-12 * (1 + max_abs)) << "element " << i;

    // Tokens with no local expert (and no shared one) get exactly 0.
    if (c.problem.num_local_experts >= 0 && c.problem.num_shared_experts == 0) {
      for (int64_t t = 0; t < in.p.num_tokens; ++t) {
        bool any_local = false;
        for (int s = 0; s < in.p.top_k(); ++s) any_local |= in.expert_map[routing.ids[t * in.p.top_k() + s]] >= 0;
        if (any_local) continue;
        for (int c2 = 0; c2 < in.p.hidden; ++c2) EXPECT_EQ(res.out[t * in.p.hidden + c2], 0.0);
      }
    }
  }
}

// The FP8 layer stays close to the unquantised one: a sanity check on the scales' layout (a
// wrong block or channel index would be far off).
TEST(ReferenceLayer, Fp8IsCloseToBf16) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  for (fm::QuantScheme q : {fm::QuantScheme::fp8_per_tensor(true), fm::QuantScheme::fp8_per_channel(),
                            fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32),
                            fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0)}) {
    SCOPED_TRACE(fm::to_string(q.weight.granularity));
    // The same real weights, drawn from the same seed, stored both ways.
    fm::MoeProblem p = base_problem();
    std::mt19937 rng_a(seed), rng_b(seed);
    const LayerInputs exact = random_inputs(p, rng_a);
    p.quant = q;
    const LayerInputs quant = random_inputs(p, rng_b);
    ref::LayerResult ra, rb;
    ASSERT_TRUE(ref::forward(exact.p, exact.tensors(), &ra).ok());
    ASSERT_TRUE(ref::forward(quant.p, quant.tensors(), &rb).ok());
    double err = 0, norm = 0;
    for (size_t i = 0; i < ra.out.size(); ++i) {
      err += (ra.out[i] - rb.out[i]) * (ra.out[i] - rb.out[i]);
      norm += ra.out[i] * ra.out[i];
    }
    EXPECT_LT(std::sqrt(err / norm), 0.1);  // e4m3 carries 3 mantissa bits: a few % expected
  }
}

// ---------------------------------------------------------------- by hand ----

// E = 2, k = 1, K = 2, N = 1, silu-gated, bf16, softmax top-1 without renormalisation.
//   W1[0] = [[1, 0], [0, 1]] (gate picks x0, up picks x1)     W2[0] = [[1], [-1]]
//   W1[1] = [[.5, .5], [1, -1]]                              W2[1] = [[2], [.5]]
//   token 0: x = [1, 2],    logits [1, 0] -> expert 0, w = 1/(1 + e^-1)
//            h = silu(1) * 2 = 1.4621171572600098;  out = w * [h, -h]
//   token 1: x = [-1, .5],  logits [0, 2] -> expert 1, w = 1/(1 + e^-2)
//            g = -.25, u = -1.5, h = silu(-.25) * -1.5 = 0.16418381...;  out = w * [2h, .5h]
// (tiny_by_hand builds it; the tests below check it.)
static LayerInputs tiny_by_hand() {
  LayerInputs in;
  fm::MoeProblem& p = in.p;
  p.num_tokens = 2;
  p.num_experts = 2;
  p.hidden = 2;
  p.intermediate = 1;
  p.router = fm::RouterConfig::softmax_topk(1, false);
  for (float v : {1.f, 2.f, -1.f, 0.5f}) in.x.push_back(ref::float_to_bf16(v));
  in.logits = {1, 0, 0, 2};
  for (float v : {1.f, 0.f, 0.f, 1.f, 0.5f, 0.5f, 1.f, -1.f}) append_bytes(in.w1, ref::float_to_bf16(v));
  for (float v : {1.f, -1.f, 2.f, 0.5f}) append_bytes(in.w2, ref::float_to_bf16(v));
  return in;
}

TEST(ReferenceLayer, TinyProblemByHand) {
  LayerInputs in = tiny_by_hand();
  const fm::MoeProblem& p = in.p;

  ref::LayerResult res;
  ASSERT_TRUE(ref::forward(p, in.tensors(), &res).ok());
  EXPECT_EQ(res.routing.ids, (std::vector<int32_t>{0, 1}));
  EXPECT_FLOAT_EQ(res.routing.weights[0], 0.7310585786300049f);
  EXPECT_FLOAT_EQ(res.routing.weights[1], 0.8807970779778823f);
  const double w0 = res.routing.weights[0], w1 = res.routing.weights[1];
  const double h0 = 1.4621171572600098, h1 = 0.375 / (1 + std::exp(0.25));
  EXPECT_NEAR(h1, 0.16418381, 1e-8);
  const std::vector<double> expected = {w0 * h0, -w0 * h0, w1 * 2 * h1, w1 * 0.5 * h1};
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(res.out[i], expected[i], 1e-15) << i;
}

// The reference's H (grouped rows in plan order) and GEMM2 from a given H (GEMM1 skipped): the same
// problem by hand.
// Row 0 is token 0's (expert 0), row 1 token 1's (expert 1). Its own H gives the same bits; H = [1, 4]
// gives out = w * W2 h.
TEST(ReferenceLayer, IntermediateOutAndOverride) {
  LayerInputs in = tiny_by_hand();
  const fm::MoeProblem& p = in.p;
  ref::LayerResult res, same, other;
  ASSERT_TRUE(ref::forward(p, in.tensors(), &res).ok());
  ASSERT_EQ(res.h.size(), 2u);
  EXPECT_NEAR(res.h[0], 1.4621171572600098, 1e-15);
  EXPECT_NEAR(res.h[1], 0.375 / (1 + std::exp(0.25)), 1e-15);
  ASSERT_TRUE(ref::forward(p, in.tensors(), &same, res.h.data()).ok());
  EXPECT_EQ(same.out, res.out);
  const std::vector<double> h = {1.0, 4.0};
  ASSERT_TRUE(ref::forward(p, in.tensors(), &other, h.data()).ok());
  EXPECT_TRUE(other.h.empty());  // GEMM1 skipped
  const double w0 = res.routing.weights[0], w1 = res.routing.weights[1];
  const std::vector<double> expected = {w0 * 1.0, -w0 * 1.0, w1 * 2 * 4.0, w1 * 0.5 * 4.0};
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(other.out[i], expected[i], 1e-15) << i;
  // GEMM2's rows (unweighted), in plan order: slot 0's row [1, -1], slot 1's [8, 2]
  EXPECT_TRUE(res.y.empty());
  ASSERT_EQ(other.y.size(), 4u);
  const int32_t r0 = other.plan.slot_row[0], r1 = other.plan.slot_row[1];
  EXPECT_EQ(other.y[2 * r0], 1.0);
  EXPECT_EQ(other.y[2 * r0 + 1], -1.0);
  EXPECT_EQ(other.y[2 * r1], 8.0);
  EXPECT_EQ(other.y[2 * r1 + 1], 2.0);
}

// Llama-4 style, squared-relu, with biases and a shared expert (scale 0.5); exact binary values.
//   x = [1, 2]; logits [0, 0] -> tie -> expert 0, w = sigmoid(0) = 0.5
//   expert 0: W1 [[1, 1]], b1 [.5];   W2 [[1], [2]], b2 [.25, -1]
//   shared:   W1 [[-1, 1]], b1 [0];   W2 [[3], [1]], b2 [0, .5]
//   weight on input:  (.5 + 1 + .5)^2 = 4 -> [4.25, 7];        shared: 1^2 = 1 -> [3, 1.5] * .5
//   weight on output: (1 + 2 + .5)^2 = 12.25 -> [12.5, 23.5] * .5;  shared the same
TEST(ReferenceLayer, WeightOnInputSharedExpertAndBiasesByHand) {
  LayerInputs in;
  fm::MoeProblem& p = in.p;
  p.num_tokens = 1;
  p.num_experts = 2;
  p.hidden = 2;
  p.intermediate = 1;
  p.router = fm::RouterConfig::llama4();
  p.activation = fm::Activation::squared_relu();
  p.num_shared_experts = 1;
  p.shared_expert_scale = 0.5f;
  p.has_expert_bias = true;
  for (float v : {1.f, 2.f}) in.x.push_back(ref::float_to_bf16(v));
  in.logits = {0, 0};
  for (float v : {1.f, 1.f, /**/ 5.f, 5.f, /**/ -1.f, 1.f}) append_bytes(in.w1, ref::float_to_bf16(v));
  for (float v : {1.f, 2.f, /**/ 9.f, 9.f, /**/ 3.f, 1.f}) append_bytes(in.w2, ref::float_to_bf16(v));
  in.b1 = {0.5f, 0.f, 0.f};
  in.b2 = {0.25f, -1.f, /**/ 0.f, 0.f, /**/ 0.f, 0.5f};

  ref::LayerResult res;
  ASSERT_TRUE(ref::forward(p, in.tensors(), &res).ok());
  EXPECT_EQ(res.routing.ids, (std::vector<int32_t>{0}));
  EXPECT_EQ(res.routing.weights, (std::vector<float>{0.5f}));
  EXPECT_EQ(res.plan.slot_row, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(res.out, (std::vector<double>{4.25 + 1.5, 7 + 0.75}));

  p.router.weight_on_input = false;
  ASSERT_TRUE(ref::forward(p, in.tensors(), &res).ok());
  EXPECT_EQ(res.out, (std::vector<double>{6.25 + 1.5, 11.75 + 0.75}));
}

TEST(ReferenceLayer, NonLocalExpertsContributeNothing) {
  // 4 experts, this rank holds 1 and 3; token 0 goes to 0 and 2 (both elsewhere): out = 0.
  LayerInputs in;
  fm::MoeProblem& p = in.p;
  p.num_tokens = 2;
  p.num_experts = 4;
  p.num_local_experts = 2;
  p.hidden = 2;
  p.intermediate = 1;
  p.router = fm::RouterConfig::precomputed(2);
  in.expert_map = {-1, 0, -1, 1};
  in.topk_ids = {0, 2, /**/ 2, 3};
  in.topk_weights = {0.5f, 0.5f, /**/ 0.25f, 2.f};
  for (float v : {1.f, 2.f, 1.f, 2.f}) in.x.push_back(ref::float_to_bf16(v));
  // Local experts 0 and 1: gate = x0 (1), up = x1 (2) -> h = 2 silu(1); W2 = [[1], [1]].
  for (int e = 0; e < 2; ++e)
    for (float v : {1.f, 0.f, 0.f, 1.f}) append_bytes(in.w1, ref::float_to_bf16(v));
  for (int e = 0; e < 2; ++e)
    for (float v : {1.f, 1.f}) append_bytes(in.w2, ref::float_to_bf16(v));
  ref::LayerResult res;
  ASSERT_TRUE(ref::forward(p, in.tensors(), &res).ok());
  EXPECT_EQ(res.plan.num_rows(), 1);
  EXPECT_EQ(res.out[0], 0.0);
  EXPECT_EQ(res.out[1], 0.0);
  EXPECT_NEAR(res.out[2], 2 * 1.4621171572600098, 1e-15);  // only global expert 3 (weight 2)
  EXPECT_NEAR(res.out[3], 2 * 1.4621171572600098, 1e-15);
}

TEST(ReferenceLayer, Errors) {
  std::mt19937 rng(1);
  fm::MoeProblem p = base_problem();
  LayerInputs in = random_inputs(p, rng);
  ref::LayerResult res;

  in.p.quant.weight.format = fm::WeightFormat::kMXFP4;
  EXPECT_EQ(ref::forward(in.p, in.tensors(), &res).code(), fm::StatusCode::kUnsupported);

  in.p = p;
  in.p.quant = fm::QuantScheme::fp8_per_tensor(false);
  in = random_inputs(in.p, rng);
  fm::MoeTensors t = in.tensors();
  t.act_scale = nullptr;
  EXPECT_EQ(ref::forward(in.p, t, &res).code(), fm::StatusCode::kInvalidArgument);

  in.p.num_local_experts = 4;  // an expert map is required
  EXPECT_EQ(ref::forward(in.p, in.tensors(), &res).code(), fm::StatusCode::kInvalidArgument);

  in = random_inputs(p, rng);
  in.p.router = fm::RouterConfig::precomputed(2);
  in.topk_ids.assign(static_cast<size_t>(p.num_tokens) * 2, 1);
  in.topk_weights.assign(in.topk_ids.size(), 0.5f);
  in.topk_ids[5] = p.num_experts;  // out of range: reported, nothing written
  EXPECT_EQ(ref::forward(in.p, in.tensors(), &res).code(), fm::StatusCode::kOutOfRange);

  in.p.num_tokens = 0;  // nothing to do is fine
  ASSERT_TRUE(ref::forward(in.p, in.tensors(), &res).ok());
  EXPECT_TRUE(res.out.empty());
}

}  // namespace
