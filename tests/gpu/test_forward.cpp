// The whole layer through the public API (route -> plan -> permute -> GEMM1+act -> GEMM2 ->
// combine) against the float64 CPU reference: relative L2 error <= 1e-2 (bf16 weights and
// activations, bf16 intermediate), every output element written (poisoned before the run),
// both tile families forced, CUDA-graph replay.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <memory>
#include <vector>

#include "core/workspace.h"
#include "dispatch/oracle.h"
#include "fusedmoe/fusedmoe.h"
#include "fusedmoe/reference.h"
#include "gpu_test_util.h"
#include "kernels/gemm/cutlass_grouped_gemm.h"  // cutlass_gated_gemm1_name
#include "kernels/gemm/sm90_bf16_grouped_gemm.h"
#include "kernels/gemm/sm90_fp8_grouped_gemm.h"  // last_fp8_pair_tails
#include "testing/layer_data.h"

namespace fm = fusedmoe;
using fm::gputest::DeviceBuffer;
using fm::gputest::to_device;
using fm::gputest::to_host;

namespace {

constexpr double kTolerance = 1e-2;  // bf16 inputs/weights, bf16 intermediate and output
// FP8 layers against the float64 layer with unquantised activations (the same FP8 weights; x and H
// in float64): issue #5's 4e-2, unless the float64 layer of the quantised math is itself farther
// than that from it (two e4m3 roundings of 3 mantissa bits: 4.2-5.6e-2 on N(0,1) data, H200
// session 5), in which case the GPU may add at most kFp8OverQuantisedMath to that distance.
constexpr double kFp8LayerTol = 4e-2;
constexpr double kFp8OverQuantisedMath = 1e-2;
// FP8 activations, GEMM1 and GEMM2 checked apart (check_forward), relative L2 against the float64
// reference of the quantised math:
//   * GEMM2's rows (before the combine) against the reference's rows from the GPU's own H, rounded
//     to the stored dtype as the GPU rounds them: issue #5's 2e-3 per GEMM; unrounded: 5e-3 (the
//     bf16 rounding alone is ~1.1e-3);
//   * GEMM1's H (bf16, as stored) against the reference's H rounded to bf16: 3e-3. Both sides are
//     rounded, so the error is bf16 roundings that went the other way (the GPU's fp32 H is ~1e-4
//     from float64's): ~9e-4 over thousands of elements, up to 2.0e-3 in the 768 of one token
//     (H200, session 9);
//   * the layer's output from the GPU's H (the combine adds a rounding): 5e-3.
constexpr double kFp8PerGemmTol = 2e-3;
constexpr double kFp8HTol = 3e-3;
// The CUTLASS backend stores GEMM1's pre-activation rows in bf16 and applies the activation to those
// (kernels/gemm/cutlass_grouped_gemm.h), so its H carries one more bf16 rounding of g and u than the
// grouped backend's (fp32 accumulators straight into the activation): measured 3.3-4.4e-3 (H200,
// session 10, call 4), against 0.9-1.5e-3 on the grouped backend. GEMM2 and the output keep their bounds.
constexpr double kFp8HTolCutlass = 5e-3;
constexpr double kFp8PerGemmUnroundedTol = 5e-3;

// While set, upload() also packs the weights (pack_weights) into MoeTensors::w1_packed / w2_packed.
bool g_upload_packed = false;
// While set, upload() also writes MoeTensors::w1_gate_up_blocks (pack_gate_up_blocks) for BF16
// weights with a gated activation whose gate and up are W1's halves.
bool g_upload_gate_up_blocks = false;

struct Layer {
  fm::testing::LayerData data;
  DeviceBuffer x, logits, bias, token_ids, hash_table, topk_ids, topk_weights, expert_map, w1, w2, b1, b2, out, ws;
  DeviceBuffer w1_packed, w2_packed;  // (g_upload_packed)
  DeviceBuffer w1_blocks;              // (g_upload_gate_up_blocks)
  DeviceBuffer w1_scale, w2_scale, act_scales;  // FP8: weight scales; static activation scales [2]
  fm::MoeTensors t;
  size_t ws_bytes = 0;
};

void upload(const fm::MoeProblem& p, uint64_t seed, fm::testing::Skew skew, Layer* L) {
  std::string why;
  ASSERT_TRUE(fm::testing::make_layer_data(p, seed, skew, &L->data, &why)) << why;
  const fm::testing::LayerData& d = L->data;
  L->x = to_device(d.x);
  L->logits = p.router.logits_dtype == fm::DType::kBFloat16 ? to_device(d.logits_bf16) : to_device(d.logits_f32);
  L->bias = to_device(d.correction_bias);
  L->token_ids = to_device(d.token_ids);
  L->hash_table = to_device(d.hash_table);
  L->topk_ids = to_device(d.topk_ids);
  L->topk_weights = to_device(d.topk_weights);
  L->expert_map = to_device(d.expert_map);
  L->w1 = to_device(d.w1);
  L->w2 = to_device(d.w2);
  L->b1 = to_device(d.b1);
  L->b2 = to_device(d.b2);
  L->w1_scale = to_device(d.w1_scale);
  L->w2_scale = to_device(d.w2_scale);
  L->act_scales = to_device(std::vector<float>{d.act_scale, d.act2_scale});
  L->out.resize(static_cast<size_t>(p.num_tokens) * p.hidden * 2 + 16);
  ASSERT_TRUE(fm::workspace_size(p, &L->ws_bytes).ok());
  L->ws.resize(L->ws_bytes);
  fm::MoeTensors& t = L->t;
  const fm::MoeTensors h = d.host_tensors();
  t.x = L->x.get();
  t.router_logits = h.router_logits ? L->logits.get() : nullptr;
  t.correction_bias = h.correction_bias ? L->bias.as<float>() : nullptr;
  t.token_ids = h.token_ids ? L->token_ids.as<int64_t>() : nullptr;
  t.hash_table = h.hash_table ? L->hash_table.as<int32_t>() : nullptr;
  t.hash_vocab = h.hash_vocab;
  t.topk_ids = h.topk_ids ? L->topk_ids.as<int32_t>() : nullptr;
  t.topk_weights = h.topk_weights ? L->topk_weights.as<float>() : nullptr;
  t.expert_map = h.expert_map ? L->expert_map.as<int32_t>() : nullptr;
  t.w1 = L->w1.get();
  t.w2 = L->w2.get();
  t.b1 = h.b1 ? L->b1.as<float>() : nullptr;
  t.b2 = h.b2 ? L->b2.as<float>() : nullptr;
  t.w1_scale = h.w1_scale ? L->w1_scale.get() : nullptr;
  t.w2_scale = h.w2_scale ? L->w2_scale.get() : nullptr;
  t.act_scale = L->act_scales.as<float>();
  t.act2_scale = L->act_scales.as<float>() + 1;
  t.out = L->out.get();
  if (g_upload_packed) {
    size_t b1 = 0, b2 = 0;
    ASSERT_TRUE(fm::packed_weights_size(p, 1, &b1).ok());
    ASSERT_TRUE(fm::packed_weights_size(p, 2, &b2).ok());
    L->w1_packed.resize(b1);
    L->w2_packed.resize(b2);
    L->w1_packed.poison();
    L->w2_packed.poison();
    ASSERT_TRUE(fm::pack_weights(p, 1, t.w1, L->w1_packed.get(), nullptr).ok());
    ASSERT_TRUE(fm::pack_weights(p, 2, t.w2, L->w2_packed.get(), nullptr).ok());
    FM_CUDA_CHECK(cudaDeviceSynchronize());
    t.w1_packed = L->w1_packed.get();
    t.w2_packed = L->w2_packed.get();
  }
  const bool fp8_blocks = p.quant.weight.format == fm::WeightFormat::kFP8E4M3 &&
                          p.quant.weight.granularity == fm::ScaleGranularity::kBlock;
  if (g_upload_gate_up_blocks && (p.quant.weight.format == fm::WeightFormat::kBF16 || fp8_blocks) &&
      p.activation.gated() && !p.activation.interleaved) {
    L->w1_blocks.resize(static_cast<size_t>(p.weight_experts()) * 2 * p.intermediate * p.hidden * (fp8_blocks ? 1 : 2));
    L->w1_blocks.poison();
    ASSERT_TRUE(fm::pack_gate_up_blocks(p, t.w1, L->w1_blocks.get(), nullptr).ok());
    FM_CUDA_CHECK(cudaDeviceSynchronize());
    t.w1_gate_up_blocks = L->w1_blocks.get();
  }
}

// (bf16 / fp16 outputs against float64: testing::rel_l2_error, shared with `fusedmoe run`)
double rel_error(const fm::MoeProblem& p, const std::vector<uint16_t>& got, const std::vector<double>& ref,
                 int64_t* non_finite) {
  return fm::testing::rel_l2_error(p, got, ref, non_finite);
}

// Runs forward() with `opt` and checks every element against the reference (the float64 layer of
// the quantised math for FP8: same FP8 weights and scales, activations fake-quantised in the same
// scheme; `tol` relative L2). FP8 activations: GEMM1's H against the reference's, GEMM2's rows and
// the output against the reference run from the GPU's H, with the bounds above (`tol` is then not
// used).
void check_forward(fm::MoeProblem p, int64_t tokens, const fm::ForwardOptions& opt, const std::string& label,
                   fm::testing::Skew skew = fm::testing::Skew::kUniform, double tol = kTolerance,
                   uint8_t ws_poison = 0xFF) {
  p.num_tokens = p.max_tokens = tokens;
  const uint64_t seed = fm::gputest::test_seed();
  SCOPED_TRACE(label + " T=" + std::to_string(tokens) + " backend=" + fm::to_string(opt.backend) + " tiles=" +
               fm::to_string(opt.tiles) + "/" + std::to_string(opt.tokens_tile) + " seed=" + std::to_string(seed));
  Layer L;
  upload(p, seed, skew, &L);
  if (::testing::Test::HasFatalFailure()) return;
  fm::ref::LayerResult ref;
  ASSERT_TRUE(fm::ref::forward(p, L.data.host_tensors(), &ref).ok());
  L.out.poison();
  L.ws.poison(ws_poison);
  // The optional routing outputs (MoeTensors::out_topk_ids / out_topk_weights), poisoned: exactly
  // the reference's ids and weights.
  const size_t entries = static_cast<size_t>(tokens) * p.top_k();
  DeviceBuffer ids_out(entries * sizeof(int32_t)), weights_out(entries * sizeof(float));
  ids_out.poison();
  weights_out.poison();
  fm::MoeTensors t = L.t;
  t.out_topk_ids = static_cast<int32_t*>(ids_out.get());
  t.out_topk_weights = static_cast<float*>(weights_out.get());
  const fm::Status st = fm::forward(p, t, L.ws.get(), L.ws_bytes, nullptr, opt);
  ASSERT_TRUE(st.ok()) << st.to_string();
  FM_CUDA_CHECK(cudaDeviceSynchronize());
  const auto got = to_host<uint16_t>(L.out.get(), static_cast<size_t>(tokens) * p.hidden);
  {
    const auto ids = to_host<int32_t>(ids_out.get(), entries);
    const auto wts = to_host<float>(weights_out.get(), entries);
    ASSERT_EQ(ref.routing.ids.size(), entries);
    int64_t id_diff = 0, w_diff = 0;
    for (size_t i = 0; i < entries; ++i) {
      id_diff += ids[i] != ref.routing.ids[i];
      w_diff += std::memcmp(&wts[i], &ref.routing.weights[i], sizeof(float)) != 0;
    }
    EXPECT_EQ(id_diff, 0) << "out_topk_ids differ from the reference's routing";
    EXPECT_EQ(w_diff, 0) << "out_topk_weights differ (bitwise) from the reference's routing";
  }
  int64_t bad = 0;
  const double err = rel_error(p, got, ref.out, &bad);
  // FP8: also against the layer with unquantised activations (the same FP8 weights and scales, x
  // and H in float64): the error quantising the activations adds, issue #5's 4e-2 bound
  double err_unq = -1, quant_floor = 0;
  if (p.quant.weight.format == fm::WeightFormat::kFP8E4M3) {
    fm::MoeProblem pu = p;
    pu.quant.act = fm::ActQuant::kNone;
    fm::ref::LayerResult ru;
    EXPECT_TRUE(fm::ref::forward(pu, L.data.host_tensors(), &ru).ok());
    int64_t bad_u = 0;
    err_unq = rel_error(p, got, ru.out, &bad_u);
    quant_floor = fm::testing::rel_l2_distance(ref.out, ru.out);  // the quantised math's own distance
  }
  // FP8 activations: GEMM1 and GEMM2 apart. The layer re-quantises H with scales from H itself, so
  // where the GPU's bf16 H row max differs from the reference's by an ulp the whole row gets another
  // scale, and the whole-layer comparison can exceed its bound on correct results (seen at 1 token,
  // per-token scales, session 8). So: the GPU's H (read back from the workspace, grouped rows at
  // their padded positions) against the reference's, and the output against the reference layer
  // run from the GPU's H.
  double err_h = -1, err_g2 = -1, err_g2_r = -1, err_out = -1;
  if (p.quant.weight.format == fm::WeightFormat::kFP8E4M3 && p.quant.act != fm::ActQuant::kNone && !ref.h.empty()) {
    const fm::detail::WorkspaceLayout lay = fm::detail::WorkspaceLayout::plan(p);
    const auto* ws = static_cast<const uint8_t*>(L.ws.get());
    const int groups = ref.plan.num_groups;
    const auto offs = to_host<int32_t>(ws + lay.offsets.offset, static_cast<size_t>(groups) + 1);
    const auto pads = to_host<int32_t>(ws + lay.padded_offsets.offset, static_cast<size_t>(groups) + 1);
    const int64_t n = p.intermediate, rows = static_cast<int64_t>(ref.h.size()) / n;
    ASSERT_EQ(std::vector<int64_t>(offs.begin(), offs.end()), ref.plan.offsets) << "GPU plan offsets";
    const auto hq = to_host<uint16_t>(ws + lay.intermediate.offset, static_cast<size_t>(pads[groups]) * n);
    std::vector<double> h_gpu(static_cast<size_t>(rows * n));
    for (int g = 0; g < groups; ++g)
      for (int64_t r = offs[g]; r < offs[g + 1]; ++r)
        for (int64_t c = 0; c < n; ++c) {
          const uint16_t b = hq[static_cast<size_t>(pads[g] + (r - offs[g])) * n + c];
          h_gpu[r * n + c] = p.act_dtype == fm::DType::kFloat16 ? fm::ref::fp16_to_float(b) : fm::ref::bf16_to_float(b);
        }
    // Relative L2 of the GPU's values against the reference, unrounded and rounded to the dtype
    // the GPU stores (an fp32 value rounded to bf16 / fp16).
    const bool f16 = p.act_dtype == fm::DType::kFloat16;
    auto rounded = [](double v, bool half) {
      const float f = static_cast<float>(v);
      return half ? fm::ref::fp16_to_float(fm::ref::float_to_fp16(f)) : fm::ref::bf16_to_float(fm::ref::float_to_bf16(f));
    };
    auto rel2 = [&](const std::vector<double>& g, const std::vector<double>& r, bool round, bool half) {
      double num = 0, den = 0;
      for (size_t i = 0; i < g.size(); ++i) {
        const double ri = round ? rounded(r[i], half) : r[i];
        num += (g[i] - ri) * (g[i] - ri);
        den += ri * ri;
      }
      return std::sqrt(num / std::max(den, 1e-300));
    };
    err_h = rel2(h_gpu, ref.h, false, f16);
    fm::ref::LayerResult r2;
    ASSERT_TRUE(fm::ref::forward(p, L.data.host_tensors(), &r2, h_gpu.data()).ok());
    int64_t bad2 = 0;
    err_out = rel_error(p, got, r2.out, &bad2);
    // GEMM2's own rows (the workspace's expert_out, plan order, before the combine)
    const auto yq = to_host<uint16_t>(ws + lay.expert_out.offset, static_cast<size_t>(rows) * p.hidden);
    std::vector<double> y_gpu(yq.size());
    for (size_t i = 0; i < yq.size(); ++i) y_gpu[i] = f16 ? fm::ref::fp16_to_float(yq[i]) : fm::ref::bf16_to_float(yq[i]);
    ASSERT_EQ(r2.y.size(), y_gpu.size());
    // (the CUTLASS backend's GEMM2 rows hold no expert bias: the combine adds b2 there)
    if (p.has_expert_bias && fm::detail::decide(p, opt, false).chosen == fm::Backend::kCutlassGrouped) {
      const std::vector<float>& b2 = L.data.b2;
      for (int g = 0; g < groups; ++g)
        for (int64_t r = offs[g]; r < offs[g + 1]; ++r)
          for (int64_t c = 0; c < p.hidden; ++c) r2.y[r * p.hidden + c] -= b2[static_cast<size_t>(g) * p.hidden + c];
    }
    err_g2 = rel2(y_gpu, r2.y, false, f16);
    err_g2_r = rel2(y_gpu, r2.y, true, f16);
  }
  std::printf("[ forward  ] %-28s T=%-6lld %-8s tile %-3d rel_err %.3e", label.c_str(),
              static_cast<long long>(tokens),
              opt.backend == fm::Backend::kCutlassGrouped ? "cutlass" : fm::to_string(opt.tiles), opt.tokens_tile, err);
  if (err_unq >= 0)
    std::printf("  vs unquantised activations %.3e (the quantised math: %.3e)", err_unq, quant_floor);
  if (err_h >= 0)
    std::printf("  GEMM1: H %.3e; GEMM2 from the GPU's H: %.3e (vs rounded %.3e), output %.3e", err_h, err_g2, err_g2_r,
                err_out);
  std::printf("\n");
  EXPECT_EQ(bad, 0) << "non-finite (unwritten) outputs";
  if (err_h >= 0) {
    const bool cutlass = fm::detail::decide(p, opt, false).chosen == fm::Backend::kCutlassGrouped;
    EXPECT_LE(err_h, cutlass ? kFp8HTolCutlass : kFp8HTol)
        << "GEMM1 + activation (bf16 H) against the reference's H (rounded as stored)";
    EXPECT_LE(err_g2_r, kFp8PerGemmTol) << "GEMM2's rows against the reference's from the GPU's H, rounded as stored";
    EXPECT_LE(err_g2, kFp8PerGemmUnroundedTol) << "GEMM2's rows against the reference's from the GPU's H";
    EXPECT_LE(err_out, kFp8PerGemmUnroundedTol) << "the output against the reference layer run from the GPU's H";
  } else {
    EXPECT_LE(err, tol);
  }
  if (err_unq >= 0)
    EXPECT_LE(err_unq, std::max(kFp8LayerTol, quant_floor + kFp8OverQuantisedMath))
        << "vs the layer with unquantised activations";
}

fm::MoeProblem small_problem(int e, int k, int n, int kdim, fm::Activation act = fm::Activation::silu()) {
  fm::MoeProblem p;
  p.num_experts = e;
  p.router = fm::RouterConfig::softmax_topk(k, true);
  p.intermediate = n;
  p.hidden = kdim;
  p.activation = act;
  return p;
}

fm::ForwardOptions tiles(fm::TileFamily f, int tile = 0) {
  fm::ForwardOptions o;
  o.tiles = f;
  o.tokens_tile = tile;
  return o;
}

fm::ForwardOptions cutlass_backend() {
  fm::ForwardOptions o;
  o.backend = fm::Backend::kCutlassGrouped;
  return o;
}

// forward() captured on `s` into a CUDA graph and instantiated (destroyed with the object). A failed
// capture is a test failure and leaves exec null.
struct CapturedForward {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CapturedForward(const fm::MoeProblem& p, Layer& L, cudaStream_t s, const fm::ForwardOptions& o = {}) {
    EXPECT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    const fm::Status st = fm::forward(p, L.t, L.ws.get(), L.ws_bytes, s, o);
    EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (st.ok() && graph != nullptr) EXPECT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  }
  ~CapturedForward() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
  CapturedForward(const CapturedForward&) = delete;
  CapturedForward& operator=(const CapturedForward&) = delete;
};

}  // namespace

TEST(Forward, TokenCountsBothFamilies) {
  const fm::MoeProblem p = small_problem(16, 4, 192, 256);
  for (int64_t t : {1, 2, 3, 7, 8, 9, 63, 64, 65, 1000, 4096}) {
    check_forward(p, t, {}, "E16 k4 N192 K256 auto");
    if (t <= 65) check_forward(p, t, tiles(fm::TileFamily::kSwapAB, 8), "E16 k4 N192 K256");
    check_forward(p, t, tiles(fm::TileFamily::kNormal), "E16 k4 N192 K256");
  }
  // Many tokens with small experts keeps the float64 reference quick.
  check_forward(small_problem(8, 2, 64, 128), 65536, {}, "E8 k2 N64 K128 auto");
}

TEST(Forward, SwapAbTiles) {
  const fm::MoeProblem p = small_problem(32, 8, 256, 1024);
  for (int tile : {8, 16, 32, 64}) check_forward(p, 40, tiles(fm::TileFamily::kSwapAB, tile), "E32 k8 N256 K1024");
}

// ForwardOptions::gemm1_k_splits: GEMM1's tiles split over clusters, GEMM2 as the oracle says
// (or forced apart through k_splits), BF16 and FP8, gathered rows and permuted, gated and not,
// K = 1024 (16 steps: every split count divides or leaves a ragged last range).
TEST(Forward, Gemm1SplitKOnly) {
  const fm::MoeProblem p = small_problem(32, 8, 256, 1024);
  for (int splits : {2, 3, 5, 8}) {
    fm::ForwardOptions o = tiles(fm::TileFamily::kSwapAB, splits == 3 ? 16 : 8);
    o.gemm1_k_splits = splits;
    for (int64_t t : {1, 16, 40}) check_forward(p, t, o, "E32 k8 N256 K1024 gemm1 splits " + std::to_string(splits));
    o.gather_rows = fm::Toggle::kOn;
    check_forward(p, 16, o, "gathered, gemm1 splits " + std::to_string(splits));
    o.gather_rows = fm::Toggle::kOff;
    o.k_splits = 2;  // GEMM2 split too, apart
    check_forward(p, 9, o, "gemm1 splits " + std::to_string(splits) + ", gemm2 splits 2");
  }
  fm::MoeProblem q = small_problem(16, 4, 192, 512, fm::Activation::squared_relu());  // (not gated)
  fm::ForwardOptions o = tiles(fm::TileFamily::kSwapAB, 8);
  o.gemm1_k_splits = 4;
  check_forward(q, 7, o, "E16 k4 N192 K512 squared-relu gemm1 splits 4");
  q.quant = fm::QuantScheme::fp8_per_channel();
  check_forward(q, 7, o, "fp8 per-channel gemm1 splits 4");
  check_forward(q, 64, o, "fp8 per-channel gemm1 splits 4");
}

TEST(Forward, EveryActivation) {
  for (fm::Activation a : {fm::Activation::silu(), fm::Activation::gelu(), fm::Activation{fm::ActivationKind::kGeluTanhGated},
                           fm::Activation::clamped_swiglu(1.5f), fm::Activation::swiglu_oai(1.702f, 1.0f, true),
                           fm::Activation::swiglu_oai(1.702f, 7.f, false), fm::Activation::squared_relu()}) {
    fm::MoeProblem p = small_problem(8, 2, 136, 264, a);
    p.has_expert_bias = a.kind == fm::ActivationKind::kSwigluOai;
    const std::string label = std::string(fm::to_string(a.kind)) + (a.interleaved ? "-interleaved" : "");
    check_forward(p, 50, tiles(fm::TileFamily::kNormal), label);
    check_forward(p, 50, tiles(fm::TileFamily::kSwapAB, 16), label);
  }
}

TEST(Forward, BoundaryShapes) {
  for (int n : {64, 120, 136, 176, 360})
    for (int kdim : {128, 136, 2688, 2880}) {
      const fm::MoeProblem p = small_problem(8, 2, n, kdim);
      check_forward(p, 33, {}, "N" + std::to_string(n) + " K" + std::to_string(kdim));
    }
}

TEST(Forward, SkewedRoutingSharedExpertAndExpertMap) {
  fm::MoeProblem p = small_problem(16, 4, 128, 256);
  check_forward(p, 1000, {}, "one hot expert", fm::testing::Skew::kOneHot);
  check_forward(p, 1000, {}, "zipf", fm::testing::Skew::kZipf);
  fm::MoeProblem s = fm::find_preset("qwen3next-tp1")->problem;  // shared expert, E512 k10
  s.hidden = 256;
  s.intermediate = 64;
  check_forward(s, 300, {}, "qwen3-next-like shared");
  fm::MoeProblem ep = small_problem(64, 8, 128, 512);
  ep.router = fm::RouterConfig::deepseek_v3(8, 8, 4, 2.5f);
  ep.num_local_experts = 8;  // expert parallelism: partial sum of 8 local experts
  check_forward(ep, 500, {}, "dsv3-like EP 8 of 64 local");
  fm::MoeProblem l4 = fm::find_preset("llama4-scout")->problem;  // weight on input + shared
  l4.hidden = 512;
  l4.intermediate = 256;
  check_forward(l4, 100, {}, "llama4-like weight on input");
}

// Routing that does not come from logits: precomputed ids / weights (passed through) and hash
// routing (token id -> experts table, weights from the logits' scores): the layer and the
// routing outputs (check_forward) against the reference.
TEST(Forward, PrecomputedAndHashRouting) {
  fm::MoeProblem p = small_problem(32, 4, 192, 256);
  for (int64_t t : {1, 17, 300}) {
    p.router = fm::RouterConfig::precomputed(4);
    check_forward(p, t, {}, "precomputed k4");
    p.router = fm::RouterConfig::hash(4, fm::ScoreFunction::kSigmoid, 1.5f);
    check_forward(p, t, {}, "hash sigmoid k4");
    p.router = fm::RouterConfig::hash(4, fm::ScoreFunction::kSqrtSoftplus, 1.0f);
    check_forward(p, t, tiles(fm::TileFamily::kNormal), "hash sqrt-softplus k4 normal");
  }
  // Precomputed ids on the fused front's several routing blocks (session 57: a cluster at 17-72
  // tokens, a cooperative grid at 73-256), BF16 and row-scaled FP8 (GEMM1 gathering the front's
  // token-order e4m3 rows up to 128 tokens), each against the reference.
  p.router = fm::RouterConfig::precomputed(4);
  for (int64_t t : {64, 100, 256}) check_forward(p, t, {}, "precomputed k4, fused front on blocks");
  fm::MoeProblem q = p;
  q.quant = fm::QuantScheme::fp8_per_channel();
  for (int64_t t : {33, 128, 200}) check_forward(q, t, {}, "precomputed k4 fp8 per-channel/token");
}

TEST(Forward, SuiteShapesAtSmallBatch) {
  fm::MoeProblem q = fm::find_preset("qwen235-tp8")->problem;
  q.num_experts = 32;
  check_forward(q, 4, {}, "qwen235-tp8 (32 of 128 experts)");
  fm::MoeProblem g = fm::find_preset("gptoss-tp1")->problem;  // N=K=2880, biases, interleaved swiglu-oai
  g.num_experts = 8;
  check_forward(g, 5, {}, "gptoss-tp1 (8 of 128 experts)");
  fm::MoeProblem m = fm::find_preset("mixtral-tp2")->problem;
  m.num_experts = 2;
  m.router = fm::RouterConfig::softmax_topk(2, true);
  check_forward(m, 3, {}, "mixtral-tp2 (2 of 8 experts)");
  fm::MoeProblem q30 = fm::find_preset("qwen30-tp1")->problem;
  q30.num_experts = 16;
  check_forward(q30, 64, {}, "qwen30-tp1 (16 of 128 experts)");
}

// (The routing outputs, MoeTensors::out_topk_ids / out_topk_weights, are given too: the replay writes
// the same bits as the direct call.)
TEST(Forward, GraphReplayMatchesDirectCall) {
  fm::MoeProblem p = small_problem(32, 8, 256, 1024);
  for (int64_t t : {1, 16, 256}) {
    p.num_tokens = p.max_tokens = t;
    Layer L;
    upload(p, fm::gputest::test_seed(), fm::testing::Skew::kUniform, &L);
    const size_t entries = static_cast<size_t>(t) * p.top_k();
    DeviceBuffer ids_out(entries * sizeof(int32_t)), weights_out(entries * sizeof(float));
    ids_out.poison();
    weights_out.poison();
    L.t.out_topk_ids = ids_out.as<int32_t>();
    L.t.out_topk_weights = weights_out.as<float>();
    cudaStream_t s;
    FM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    ASSERT_TRUE(fm::forward(p, L.t, L.ws.get(), L.ws_bytes, s).ok());
    FM_CUDA_CHECK(cudaStreamSynchronize(s));
    const size_t n = static_cast<size_t>(t) * p.hidden;
    const auto direct = to_host<uint16_t>(L.out.get(), n);
    const auto direct_ids = to_host<int32_t>(ids_out.get(), entries);
    const auto direct_w = to_host<uint32_t>(weights_out.get(), entries);
    L.out.poison();
    L.ws.poison();
    ids_out.poison();
    weights_out.poison();
    {
      const CapturedForward cap(p, L, s);
      ASSERT_NE(cap.exec, nullptr);
      for (int r = 0; r < 3; ++r) FM_CUDA_CHECK(cudaGraphLaunch(cap.exec, s));
      FM_CUDA_CHECK(cudaStreamSynchronize(s));
      EXPECT_EQ(to_host<uint16_t>(L.out.get(), n), direct) << "T=" << t << ": graph replay differs from the direct call";
      EXPECT_EQ(to_host<int32_t>(ids_out.get(), entries), direct_ids) << "T=" << t << ": out_topk_ids differ in replay";
      EXPECT_EQ(to_host<uint32_t>(weights_out.get(), entries), direct_w) << "T=" << t << ": out_topk_weights differ in replay";
    }
    cudaStreamDestroy(s);
  }
}

// The balanced GEMM2 schedule in its dynamic form (BF16, GroupedGemmArgs::queue): CTAs take further
// chunks of the work from a counter in the workspace, which GEMM1 zeroes after its wait. Against the
// reference at the rule's sizes; then the same bits as the raster, call after call with the
// workspace (and so the counter) poisoned in between, and in graph replay; FP8 (static ranges in the
// layer) the same way.
TEST(Forward, BalancedGemm2Dynamic) {
  fm::MoeProblem p = small_problem(64, 4, 192, 512);
  fm::ForwardOptions on;
  on.balanced_gemm2 = fm::Toggle::kOn;
  for (int64_t t : {5, 12, 16}) {  // 20, 48, 64 rows on 64 experts
    check_forward(p, t, {}, "E64 k4 N192 K512 auto");
    check_forward(p, t, on, "E64 k4 N192 K512 balanced forced");
    EXPECT_EQ(fm::kernels::last_grouped_gemm_balanced(), 2) << "GEMM2 ran the dynamic schedule";
  }
  fm::ForwardOptions many = on;  // ~24 token tiles per expert: item runs of one weight tile, ~1 item per chunk
  many.tiles = fm::TileFamily::kSwapAB;
  many.tokens_tile = 32;
  check_forward(small_problem(8, 2, 192, 512), 3000, many, "E8 k2 N192 K512 swap-ab 32 balanced forced");
  EXPECT_EQ(fm::kernels::last_grouped_gemm_balanced(), 2);
  fm::MoeProblem f8c = small_problem(64, 4, 192, 512);
  f8c.quant = fm::QuantScheme::fp8_per_channel();
  fm::MoeProblem f8b = small_problem(64, 4, 256, 512);
  f8b.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0);
  for (const fm::MoeProblem& f8 : {f8c, f8b}) {  // FP8: the static ranges (the layer gives its kernel no counter)
    check_forward(f8, 12, on, "fp8 balanced forced");
    EXPECT_EQ(fm::kernels::last_grouped_gemm_balanced(), 1);
  }
  const fm::MoeProblem base = p;
  for (const int variant : {0, 1, 2})
  for (const int64_t t : {40, 300}) {
    if (variant == 2 && t > 64) continue;  // (FP8 blocks take normal tiles there: no balanced schedule)
    p = variant == 0 ? base : variant == 1 ? f8c : f8b;
    p.num_tokens = p.max_tokens = t;
    SCOPED_TRACE("T=" + std::to_string(t) + " variant " + std::to_string(variant));
    Layer L;
    upload(p, fm::gputest::test_seed(), fm::testing::Skew::kZipf, &L);
    if (::testing::Test::HasFatalFailure()) return;
    cudaStream_t s;
    FM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const size_t n = static_cast<size_t>(t) * p.hidden;
    fm::ForwardOptions off;
    off.balanced_gemm2 = fm::Toggle::kOff;
    off.backend = fm::Backend::kGrouped;
    on.backend = fm::Backend::kGrouped;
    ASSERT_TRUE(fm::forward(p, L.t, L.ws.get(), L.ws_bytes, s, off).ok());
    FM_CUDA_CHECK(cudaStreamSynchronize(s));
    const auto raster = to_host<uint16_t>(L.out.get(), n);
    for (int r = 0; r < 3; ++r) {
      L.out.poison();
      L.ws.poison();
      ASSERT_TRUE(fm::forward(p, L.t, L.ws.get(), L.ws_bytes, s, on).ok());
      EXPECT_EQ(fm::kernels::last_grouped_gemm_balanced(), variant == 0 ? 2 : 1);
      FM_CUDA_CHECK(cudaStreamSynchronize(s));
      EXPECT_EQ(to_host<uint16_t>(L.out.get(), n), raster) << "call " << r << ": dynamic differs from the raster";
    }
    L.out.poison();
    L.ws.poison();
    {
      const CapturedForward cap(p, L, s, on);
      ASSERT_NE(cap.exec, nullptr);
      for (int r = 0; r < 3; ++r) {
        FM_CUDA_CHECK(cudaGraphLaunch(cap.exec, s));
        FM_CUDA_CHECK(cudaStreamSynchronize(s));
        EXPECT_EQ(to_host<uint16_t>(L.out.get(), n), raster) << "graph replay " << r << " differs from the raster";
        L.out.poison();
      }
    }
    cudaStreamDestroy(s);
  }
}

// Runs `a`, then `b` on the same uploaded layer (output and workspace poisoned in between), and
// expects the same output bits.
void expect_same_bits(const fm::MoeProblem& p, Layer& L, const fm::ForwardOptions& a, const fm::ForwardOptions& b,
                      const char* what) {
  const size_t n = static_cast<size_t>(p.num_tokens) * p.hidden;
  ASSERT_TRUE(fm::forward(p, L.t, L.ws.get(), L.ws_bytes, nullptr, a).ok());
  FM_CUDA_CHECK(cudaDeviceSynchronize());
  const auto first = to_host<uint16_t>(L.out.get(), n);
  L.out.poison();
  L.ws.poison();
  ASSERT_TRUE(fm::forward(p, L.t, L.ws.get(), L.ws_bytes, nullptr, b).ok());
  FM_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(to_host<uint16_t>(L.out.get(), n), first) << what;
}

// FP8 GEMM1 on the balanced schedule's static ranges (ForwardOptions::balanced_gemm1): a CTA's
// range spans several token tiles, each with its own token-order block scales (UE8M0 and f32) or
// row scales. Against the reference with skewed loads, then the same bits as the raster.
TEST(Forward, BalancedGemm1Fp8) {
  fm::MoeProblem f8b = small_problem(64, 4, 256, 512);
  f8b.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0);
  fm::MoeProblem f8f = small_problem(32, 6, 128, 384);
  f8f.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);
  fm::MoeProblem f8c = small_problem(64, 4, 192, 512);
  f8c.quant = fm::QuantScheme::fp8_per_channel();
  fm::ForwardOptions on, off;
  on.balanced_gemm1 = fm::Toggle::kOn;
  off.balanced_gemm1 = fm::Toggle::kOff;
  on.backend = off.backend = fm::Backend::kGrouped;
  on.tiles = off.tiles = fm::TileFamily::kSwapAB;
  on.split_k = off.split_k = fm::Toggle::kOff;  // (split-K launches run the raster)
  int variant = 0;
  for (const fm::MoeProblem& base : {f8b, f8f, f8c}) {
    for (const int tile : {8, 16, 32}) {
      on.tokens_tile = off.tokens_tile = tile;
      for (const int64_t t : {3, 40, 200}) {
        const fm::testing::Skew skew = (variant++ % 2) ? fm::testing::Skew::kZipf : fm::testing::Skew::kUniform;
        check_forward(base, t, on, "fp8 gemm1 balanced, tile " + std::to_string(tile), skew);
        fm::MoeProblem p = base;
        p.num_tokens = p.max_tokens = t;
        SCOPED_TRACE("tile " + std::to_string(tile) + " T=" + std::to_string(t));
        Layer L;
        upload(p, fm::gputest::test_seed(), fm::testing::Skew::kZipf, &L);
        if (::testing::Test::HasFatalFailure()) return;
        expect_same_bits(p, L, off, on, "balanced GEMM1 differs from the raster");
        if (::testing::Test::HasFatalFailure()) return;
        fm::ForwardOptions g1 = on;  // GEMM1 alone: the launch that ran last is GEMM1's
        g1.stop_after = fm::Stage::kGemm1;
        ASSERT_TRUE(fm::forward(p, L.t, L.ws.get(), L.ws_bytes, nullptr, g1).ok());
        FM_CUDA_CHECK(cudaDeviceSynchronize());
        EXPECT_EQ(fm::kernels::last_grouped_gemm_balanced(), 1) << "GEMM1 ran the static balanced schedule";
      }
    }
  }
}

// A Swap-AB switch forced on (`on`) against forced off (`off`), both on the grouped backend without
// split-K (its split count follows the CTA slots): each base problem at token tiles 8 / 16 / 32 and
// 3 / 40 / 200 tokens, uniform and Zipf loads in turn, `on` against the reference and bitwise against
// `off`. tpc_at_40 > 0: both with that many weight tiles per CTA at 40 tokens.
void check_swapab_switch(const std::vector<fm::MoeProblem>& bases, fm::ForwardOptions on, fm::ForwardOptions off,
                         const std::string& label, const char* differ, int tpc_at_40 = 0) {
  on.backend = off.backend = fm::Backend::kGrouped;
  on.tiles = off.tiles = fm::TileFamily::kSwapAB;
  on.split_k = off.split_k = fm::Toggle::kOff;
  int variant = 0;
  for (const fm::MoeProblem& base : bases) {
    for (const int tile : {8, 16, 32}) {
      on.tokens_tile = off.tokens_tile = tile;
      for (const int64_t t : {3, 40, 200}) {
        const fm::testing::Skew skew = (variant++ % 2) ? fm::testing::Skew::kZipf : fm::testing::Skew::kUniform;
        on.weight_tiles_per_cta = off.weight_tiles_per_cta = (t == 40) ? tpc_at_40 : 0;
        check_forward(base, t, on, label + ", tile " + std::to_string(tile), skew);
        fm::MoeProblem p = base;
        p.num_tokens = p.max_tokens = t;
        SCOPED_TRACE("tile " + std::to_string(tile) + " T=" + std::to_string(t));
        Layer L;
        upload(p, fm::gputest::test_seed(), skew, &L);
        if (::testing::Test::HasFatalFailure()) return;
        expect_same_bits(p, L, off, on, differ);
      }
    }
  }
}

// GEMM2 on its own Swap-AB token tile (ForwardOptions::gemm2_tokens_tile, session 54) inside the
// rows padded to GEMM1's tile: against the reference and bitwise against GEMM2 on GEMM1's tile, for
// BF16 (64 -> 32 too), FP8 per-channel (H quantised by GEMM2 itself where it applies) and 128x128
// blocks with UE8M0 scales, at 3 / 40 / 200 tokens (uniform and Zipf); values that do not divide
// GEMM1's tile are refused before any launch.
TEST(Forward, Gemm2TokenTile) {
  fm::MoeProblem b16 = small_problem(64, 4, 256, 512);
  fm::MoeProblem f8c = small_problem(32, 6, 192, 448);
  f8c.quant = fm::QuantScheme::fp8_per_channel();
  fm::MoeProblem f8b = small_problem(64, 4, 256, 640);
  f8b.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0);
  int variant = 0;
  for (const fm::MoeProblem& base : {b16, f8c, f8b}) {
    const bool fp8 = base.quant.weight.format == fm::WeightFormat::kFP8E4M3;
    std::vector<std::pair<int, int>> tiles = {{32, 16}, {32, 8}, {16, 8}};
    if (!fp8) tiles.push_back({64, 32});
    for (const auto& [t1, t2] : tiles) {
      fm::ForwardOptions on, off;
      on.backend = off.backend = fm::Backend::kGrouped;
      on.tiles = off.tiles = fm::TileFamily::kSwapAB;
      on.split_k = off.split_k = fm::Toggle::kOff;
      on.tokens_tile = off.tokens_tile = t1;
      on.gemm2_tokens_tile = t2;
      for (const int64_t t : {3, 40, 200}) {
        const fm::testing::Skew skew = (variant++ % 2) ? fm::testing::Skew::kZipf : fm::testing::Skew::kUniform;
        const std::string label = std::string(fp8 ? "fp8" : "bf16") + " gemm1 tile " + std::to_string(t1) +
                                  ", gemm2 tile " + std::to_string(t2);
        check_forward(base, t, on, label, skew);
        fm::MoeProblem p = base;
        p.num_tokens = p.max_tokens = t;
        SCOPED_TRACE(label + " T=" + std::to_string(t));
        Layer L;
        upload(p, fm::gputest::test_seed(), skew, &L);
        if (::testing::Test::HasFatalFailure()) return;
        expect_same_bits(p, L, off, on, "GEMM2 on its own token tile differs from GEMM2 on GEMM1's");
      }
    }
  }
  fm::MoeProblem p = f8c;
  p.num_tokens = p.max_tokens = 40;
  Layer L;
  upload(p, fm::gputest::test_seed(), fm::testing::Skew::kUniform, &L);
  if (::testing::Test::HasFatalFailure()) return;
  for (const int bad : {32, 24, 64, -8}) {
    fm::ForwardOptions o;
    o.backend = fm::Backend::kGrouped;
    o.tiles = fm::TileFamily::kSwapAB;
    o.tokens_tile = 16;
    o.gemm2_tokens_tile = bad;
    const fm::Status st = fm::forward(p, L.t, L.ws.get(), L.ws_bytes, nullptr, o);
    EXPECT_EQ(st.code(), fm::StatusCode::kInvalidArgument) << bad << ": " << st.to_string();
    EXPECT_NE(st.to_string().find("gemm2_tokens_tile"), std::string::npos) << st.to_string();
  }
}

// The dense Swap-AB instances (ForwardOptions::dense_swapab: 3-4 CTAs per SM, fewer stages), BF16
// and FP8 (128x128 blocks with UE8M0 scales, per-channel): against the 2-CTA instances.
TEST(Forward, DenseSwapAb) {
  fm::MoeProblem b16 = small_problem(64, 4, 256, 512);
  fm::MoeProblem f8b = small_problem(64, 4, 256, 512);
  f8b.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0);
  fm::MoeProblem f8c = small_problem(32, 6, 192, 384);
  f8c.quant = fm::QuantScheme::fp8_per_channel();
  fm::ForwardOptions on, off;
  on.dense_swapab = fm::Toggle::kOn;
  off.dense_swapab = fm::Toggle::kOff;
  check_swapab_switch({b16, f8b, f8c}, on, off, "dense swap-ab", "the dense instances differ from the 2-CTA ones");
}

// The FP8 pair instances (ForwardOptions::fp8_pair_swapab: two 64-row weight tiles per stage), 128x128
// blocks with UE8M0 scales and per-channel (gated and plain GEMMs; odd counts of weight tiles, so
// that a segment can end on a stage with one tile; 3 weight tiles per CTA at 40 tokens): against the
// 2-CTA instances.
TEST(Forward, Fp8PairSwapAb) {
  fm::MoeProblem f8b = small_problem(64, 4, 256, 640);  // GEMM2: 10 weight tiles of 64 rows
  f8b.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0);
  fm::MoeProblem f8c = small_problem(32, 6, 192, 448);  // GEMM1: 6 tiles (gated), GEMM2: 7
  f8c.quant = fm::QuantScheme::fp8_per_channel();
  fm::ForwardOptions on, off;
  on.fp8_pair_swapab = fm::Toggle::kOn;
  off.fp8_pair_swapab = fm::Toggle::kOff;
  check_swapab_switch({f8b, f8c}, on, off, "fp8 pair swap-ab", "the pair instances differ from the 2-CTA ones", 3);
}

// GEMM1 gathering its e4m3 rows (ForwardOptions::gather_rows = kOn with FP8 weights, session 45): x
// quantised in token order (by the quantiser kernel up to 16 tokens, in the fused front above) and
// read through the plan by the producer warp's cp.async, its scales by token; against the permuted
// copy (bitwise) and the reference: 1x128 blocks with UE8M0 scales, per-channel weights with
// per-token scales (K = 448: a ragged last K block, zero-filled), static per-tensor scales; tiles 8 /
// 16 / 32, 3 / 40 / 200 tokens, 3 weight tiles per CTA at 40; H quantised in each of its three
// places; plain GEMM1 tiles (squared ReLU); GEMM1 on the balanced schedule; dynamic per-tensor
// scales; GEMM1 split over clusters of 2. The normal family has no gathered FP8 rows: there the
// permuted rows run (the same bits), and explain() says so.
TEST(Forward, Fp8GatherRows) {
  fm::MoeProblem f8b = small_problem(64, 4, 256, 640);
  f8b.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0);
  fm::MoeProblem f8c = small_problem(32, 6, 192, 448);
  f8c.quant = fm::QuantScheme::fp8_per_channel();
  fm::MoeProblem f8t = small_problem(32, 6, 192, 512);
  f8t.quant = fm::QuantScheme::fp8_per_tensor(false);
  fm::MoeProblem f8s = small_problem(32, 4, 384, 512, fm::Activation::squared_relu());  // plain GEMM1 tiles
  f8s.quant = fm::QuantScheme::fp8_per_channel();
  fm::ForwardOptions on, off;
  on.gather_rows = fm::Toggle::kOn;
  off.gather_rows = fm::Toggle::kOff;
  check_swapab_switch({f8b, f8c, f8t, f8s}, on, off, "fp8 gathered rows", "gathered e4m3 rows differ from the permuted ones", 3);
  // GEMM1 on the balanced schedule (the _balanced_gather instances, gated and plain)
  on.balanced_gemm1 = off.balanced_gemm1 = fm::Toggle::kOn;
  check_swapab_switch({f8b, f8s}, on, off, "fp8 gathered rows, balanced GEMM1", "gathered e4m3 rows differ (balanced GEMM1)", 3);
  on.balanced_gemm1 = off.balanced_gemm1 = fm::Toggle::kAuto;
  // H quantised by the separate pass (its row bound and scale stride are GEMM1's padded rows, not
  // x's token-order rows; the auto choices above quantise H in GEMM2 or GEMM1's epilogue)
  on.gemm2_quantises_h = off.gemm2_quantises_h = fm::Toggle::kOff;
  on.fused_h_quant = off.fused_h_quant = fm::Toggle::kOff;
  check_swapab_switch({f8b, f8c}, on, off, "fp8 gathered rows, H apart", "gathered e4m3 rows differ (H quantised apart)");
  on.gemm2_quantises_h = off.gemm2_quantises_h = fm::Toggle::kAuto;
  on.fused_h_quant = off.fused_h_quant = fm::Toggle::kOn;  // (1x128 and per-token H in GEMM1's epilogue)
  check_swapab_switch({f8b, f8c}, on, off, "fp8 gathered rows, H in GEMM1", "gathered e4m3 rows differ (H in GEMM1)");
  on.fused_h_quant = off.fused_h_quant = fm::Toggle::kAuto;
  // dynamic per-tensor scales (x's absmax first: the quantiser, after the router and plan, fused from
  // 17 tokens), and
  // GEMM1 split over clusters of 2 (the producer's K ranges)
  fm::MoeProblem f8d = small_problem(32, 6, 192, 512);
  f8d.quant = fm::QuantScheme::fp8_per_tensor(true);
  check_swapab_switch({f8d}, on, off, "fp8 gathered rows, dynamic per-tensor", "gathered e4m3 rows differ (dynamic)");
  on.gemm1_k_splits = off.gemm1_k_splits = 2;
  check_swapab_switch({f8c}, on, off, "fp8 gathered rows, GEMM1 split 2", "gathered e4m3 rows differ (GEMM1 split)");
  on.gemm1_k_splits = off.gemm1_k_splits = 0;
  fm::MoeProblem p = f8c;
  p.num_tokens = p.max_tokens = 40;
  Layer L;
  upload(p, fm::gputest::test_seed(), fm::testing::Skew::kUniform, &L);
  if (::testing::Test::HasFatalFailure()) return;
  fm::ForwardOptions normal = on, normal_off = off;
  normal.backend = normal_off.backend = fm::Backend::kGrouped;
  normal.tiles = normal_off.tiles = fm::TileFamily::kNormal;
  expect_same_bits(p, L, normal_off, normal, "normal tiles with gather_rows on differ from the permuted rows");
  EXPECT_NE(fm::explain(p, normal).find("not applicable on normal tiles"), std::string::npos) << fm::explain(p, normal);
  fm::MoeProblem q = f8c;
  q.num_tokens = q.max_tokens = 40;
  EXPECT_NE(fm::explain(q, on).find("GEMM1 gathers x's rows"), std::string::npos) << fm::explain(q, on);
}

// The problems of the two H-quantisation tests below, as {f8b, f8f, f8c, f8r}: 1x128 groups with
// UE8M0 (N = 256, gated) and f32 scales (N = 384, squared ReLU's plain tiles), per-token scales over
// a whole row (N = 192) and with a ragged last tile / K block (N = 208).
std::vector<fm::MoeProblem> h_quant_problems() {
  fm::MoeProblem f8b = small_problem(64, 4, 256, 640);
  f8b.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0);
  fm::MoeProblem f8f = small_problem(32, 4, 384, 512, fm::Activation::squared_relu());
  f8f.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);
  fm::MoeProblem f8c = small_problem(32, 6, 192, 448);
  f8c.quant = fm::QuantScheme::fp8_per_channel();
  fm::MoeProblem f8r = small_problem(16, 4, 208, 256);
  f8r.quant = fm::QuantScheme::fp8_per_channel();
  return {f8b, f8f, f8c, f8r};
}

// An H-quantisation switch (on vs off, bitwise) on the dense and the pair instances, with f8b and
// f8c of h_quant_problems().
void check_h_quant_instances(const std::vector<fm::MoeProblem>& ps, fm::ForwardOptions on, fm::ForwardOptions off,
                             const std::string& label) {
  const std::vector<fm::MoeProblem> two = {ps[0], ps[2]};
  on.dense_swapab = off.dense_swapab = fm::Toggle::kOn;
  check_swapab_switch(two, on, off, label + ", dense", (label + " differs (dense)").c_str());
  on.dense_swapab = off.dense_swapab = fm::Toggle::kAuto;
  on.fp8_pair_swapab = off.fp8_pair_swapab = fm::Toggle::kOn;
  check_swapab_switch(two, on, off, label + ", pairs", (label + " differs (pairs)").c_str(), 3);
}

// H re-quantised in GEMM1's epilogue (ForwardOptions::fused_h_quant): the last weight tile of each
// (token tile, scale group) to finish quantises the group's rows of H. Against the reference and
// bitwise against the separate quantiser (off): 1x128 groups with UE8M0 and f32 scales (gated, and
// squared ReLU's 64-column tiles), per-token scales over a whole row (N = 192: 6 tiles; N = 208: a
// last tile of 16 columns), static per-tensor; the 2-CTA, dense and pair instances, 3 weight tiles
// per CTA at 40 tokens. The workspace is poisoned before each run (the counters start as garbage:
// forward() clears them).
TEST(Forward, Fp8HQuantInGemm1) {
  std::vector<fm::MoeProblem> ps = h_quant_problems();
  const fm::MoeProblem f8c = ps[2];
  fm::MoeProblem f8t = small_problem(32, 6, 192, 512);
  f8t.quant = fm::QuantScheme::fp8_per_tensor(false);
  ps.push_back(f8t);
  fm::ForwardOptions on, off;
  on.fused_h_quant = fm::Toggle::kOn;
  off.fused_h_quant = fm::Toggle::kOff;
  off.gemm2_quantises_h = fm::Toggle::kOff;  // (the separate pass: auto would have GEMM2 quantise H)
  check_swapab_switch(ps, on, off, "H quantised in GEMM1", "H quantised in GEMM1 differs from the separate quantiser", 3);
  check_h_quant_instances(ps, on, off, "H quantised in GEMM1");
  // explain() says which way it went: auto on with static scales only (measured, session 36)
  fm::MoeProblem q = f8t;
  q.num_tokens = q.max_tokens = 16;
  EXPECT_NE(fm::explain(q).find("fused_h_quant: on"), std::string::npos) << fm::explain(q);
  q = f8c;
  q.num_tokens = q.max_tokens = 16;
  EXPECT_NE(fm::explain(q).find("fused_h_quant: off"), std::string::npos) << fm::explain(q);
  fm::MoeProblem d = f8c;
  d.quant = fm::QuantScheme::fp8_per_tensor(true);  // dynamic per-tensor: needs all of H first
  d.num_tokens = d.max_tokens = 16;
  EXPECT_NE(fm::explain(d).find("not applicable: dynamic per-tensor"), std::string::npos) << fm::explain(d);
}

// H quantised by GEMM2 itself (ForwardOptions::gemm2_quantises_h): each GEMM2 CTA reads its token
// tile's bf16 rows of H and writes their e4m3 values into its activation slots. Against the
// reference and bitwise against the separate quantiser (off): 1x128 groups with UE8M0 and f32
// scales over 2, 3 and 4 K blocks (N = 256, 384 plain squared ReLU, 512), per-token scales over a
// whole row (N = 192, and N = 208: a ragged last K block); the 2-CTA, dense and pair instances; 3
// weight tiles per CTA at 40 tokens (several segments per CTA on the balanced schedule elsewhere);
// GEMM2 split over clusters of 2 and 3 (added after session 40's device runs).
TEST(Forward, Fp8HQuantInGemm2) {
  std::vector<fm::MoeProblem> ps = h_quant_problems();
  const fm::MoeProblem f8b = ps[0], f8c = ps[2];
  fm::MoeProblem f8g = small_problem(16, 6, 512, 384);  // 4 K blocks of H: the most
  f8g.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);
  ps.push_back(f8g);
  fm::ForwardOptions on, off;
  on.gemm2_quantises_h = fm::Toggle::kOn;
  off.gemm2_quantises_h = fm::Toggle::kOff;
  on.fused_h_quant = off.fused_h_quant = fm::Toggle::kOff;
  check_swapab_switch(ps, on, off, "H quantised in GEMM2", "H quantised in GEMM2 differs from the separate quantiser", 3);
  check_h_quant_instances(ps, on, off, "H quantised in GEMM2");
  on.balanced_gemm2 = off.balanced_gemm2 = fm::Toggle::kOn;
  check_swapab_switch({f8b, f8c}, on, off, "H quantised in GEMM2, balanced", "H quantised in GEMM2 differs (balanced)");
  // GEMM2 split over a cluster (each rank quantises the whole rows, reads its own K blocks): 2 and 3
  // ranks over f8f's 3 K blocks of H, against the reference and bitwise against the separate pass
  on.balanced_gemm2 = off.balanced_gemm2 = fm::Toggle::kAuto;
  on.tiles = off.tiles = fm::TileFamily::kSwapAB;
  on.tokens_tile = off.tokens_tile = 8;
  on.split_k = off.split_k = fm::Toggle::kOn;
  for (const int splits : {2, 3}) {
    on.k_splits = off.k_splits = splits;
    on.gemm1_k_splits = off.gemm1_k_splits = 1;
    const std::string label = "H quantised in GEMM2, " + std::to_string(splits) + " K splits";
    check_forward(ps[1], 3, on, label);
    fm::MoeProblem p = ps[1];
    p.num_tokens = p.max_tokens = 3;
    Layer L;
    upload(p, fm::gputest::test_seed(), fm::testing::Skew::kUniform, &L);
    if (::testing::Test::HasFatalFailure()) return;
    expect_same_bits(p, L, off, on, "H quantised in GEMM2 differs (split K)");
  }
  // explain() names it; more than 4 K blocks of H: not applicable
  fm::MoeProblem q = f8c;
  q.num_tokens = q.max_tokens = 16;
  fm::ForwardOptions hs;
  hs.gemm2_quantises_h = fm::Toggle::kOn;
  EXPECT_NE(fm::explain(q, hs).find("gemm2_quantises_h: on"), std::string::npos) << fm::explain(q, hs);
  fm::MoeProblem wide = small_problem(16, 4, 640, 256);
  wide.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);
  wide.num_tokens = wide.max_tokens = 16;
  EXPECT_NE(fm::explain(wide, hs).find("not applicable: H has more than 4 K blocks"), std::string::npos)
      << fm::explain(wide, hs);
  check_forward(wide, 40, hs, "H wider than 4 K blocks: quantised apart", fm::testing::Skew::kUniform);
}

// The reduced set of the above for compute-sanitizer memcheck (session 40): H quantised by GEMM2,
// 1x128 groups over 2 K blocks and per-token scales with a ragged last K block, token tiles 8 and
// 32, 40 tokens.
TEST(Forward, Fp8HQuantInGemm2Reduced) {
  fm::MoeProblem f8b = small_problem(16, 4, 256, 256);
  f8b.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0);
  fm::MoeProblem f8r = small_problem(16, 4, 208, 256);
  f8r.quant = fm::QuantScheme::fp8_per_channel();
  fm::ForwardOptions on = tiles(fm::TileFamily::kSwapAB);
  on.gemm2_quantises_h = fm::Toggle::kOn;
  on.fused_h_quant = fm::Toggle::kOff;
  for (const fm::MoeProblem& p : {f8b, f8r})
    for (const int tile : {8, 32}) {
      on.tokens_tile = tile;
      check_forward(p, 40, on, "H quantised in GEMM2 (reduced), tile " + std::to_string(tile));
    }
}

// Packed weights (MoeTensors::w1_packed / w2_packed, pack_weights): the Swap-AB GEMMs stream the
// packed stage images; BF16 gated (silu), interleaved swiglu_oai with biases and a ragged N, a plain
// activation with a ragged K, FP8 128x128 blocks (UE8M0) and per-channel, on the 2-CTA and the pair
// instances; against the reference and bitwise against the 2D boxes (packed_weights off); then the
// whole layer on auto at 16 and 1000 tokens (normal tiles, which read w1 / w2); and the API's
// checks. Each problem packs at least one GEMM; a reduction that leaves its last K step ragged
// (squared ReLU's K = 392, GEMM2 of N = 136 and of FP8 N = 192) reads the boxes both ways.
TEST(Forward, PackedWeights) {
  struct Packed {  // (reset however the test ends)
    Packed() { g_upload_packed = true; }
    ~Packed() { g_upload_packed = false; }
  };
  auto packed = std::make_unique<Packed>();
  fm::MoeProblem oai = small_problem(16, 4, 136, 320, fm::Activation::swiglu_oai(1.702f, 7.f, true));
  oai.has_expert_bias = true;
  const fm::MoeProblem relu = small_problem(32, 6, 192, 392, fm::Activation::squared_relu());
  fm::ForwardOptions on, off;
  off.packed_weights = fm::Toggle::kOff;
  fm::MoeProblem f8b = small_problem(64, 4, 256, 640);  // FP8 blocks, UE8M0; GEMM2: 10 weight tiles
  f8b.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0);
  fm::MoeProblem f8c = small_problem(32, 6, 192, 512);  // FP8 per-channel; GEMM1 6 tiles, GEMM2 8
  f8c.quant = fm::QuantScheme::fp8_per_channel();
  check_swapab_switch({small_problem(64, 4, 256, 512), oai, relu, f8b, f8c}, on, off, "packed weights",
                      "the packed weights differ from the 2D weight boxes", 3);
  // FP8 pair instances (two tiles' images per stage)
  on.fp8_pair_swapab = off.fp8_pair_swapab = fm::Toggle::kOn;
  check_swapab_switch({f8b, f8c}, on, off, "packed weights, fp8 pairs", "the packed weights differ (pairs)", 3);
  check_forward(small_problem(64, 4, 256, 512), 1000, {}, "packed weights given, 1000 tokens (auto)");
  check_forward(small_problem(64, 8, 192, 512), 16, {}, "packed weights given, 16 tokens (auto)");
  packed.reset();
  // the API's checks
  fm::MoeProblem p = small_problem(64, 4, 256, 512);
  size_t bytes = 0;
  ASSERT_TRUE(fm::packed_weights_size(p, 1, &bytes).ok());
  EXPECT_EQ(bytes, size_t(64) * 512 * 512 * 2);  // N, K multiples of 64: the weights' own size
  ASSERT_TRUE(fm::packed_weights_size(p, 2, &bytes).ok());
  EXPECT_EQ(bytes, size_t(64) * 512 * 256 * 2);
  EXPECT_EQ(fm::packed_weights_size(p, 3, &bytes).code(), fm::StatusCode::kInvalidArgument);
  DeviceBuffer w(1024), out(1024);
  EXPECT_EQ(fm::pack_weights(p, 1, static_cast<const char*>(w.get()) + 8, out.get(), nullptr).code(),
            fm::StatusCode::kMisaligned);
  fm::MoeProblem f8 = p;
  f8.quant = fm::QuantScheme::fp8_per_channel();
  ASSERT_TRUE(fm::packed_weights_size(f8, 1, &bytes).ok());
  EXPECT_EQ(bytes, size_t(64) * 512 * 512);  // e4m3: one byte per weight

}

// The tail-pair instance (session 59; Config::kTailPairs): FP8 GEMM2 with a reduction of 129-192
// and packed weights, whose pair instances stream both tiles' last 64 K in one 8 KB image (token tile
// 32). With the pair instances forced, packed weights against the 2D boxes (the plain pair
// instances, bitwise) and the reference: per-channel N = 192 with 7 GEMM2 weight tiles (a last pair
// with one tile), static per-tensor N = 192 (H through TMA: quantised by GEMM1's epilogue),
// per-channel N = 144 (a last K step of 16); 1 / 3 / 40 / 200 / 700 tokens; 2 and 4 weight tiles per
// CTA forced; H quantised by GEMM2 (kHs) and apart; which instances ran (last_fp8_pair_tails: an odd
// forced count of weight tiles per CTA, and token tile 16, run the plain pairs). (The rule with the
// pairs on auto, tails up to 16 expected rows per expert: CPU test Fp8GroupedGemmArgs.TailPairsRule;
// these small layers' auto GEMM2 splits K or runs the plain tiles, never the pairs.)
TEST(Forward, Fp8TailPairs) {
  struct Packed {
    Packed() { g_upload_packed = true; }
    ~Packed() { g_upload_packed = false; }
  };
  const Packed packed;
  fm::MoeProblem f8c = small_problem(32, 6, 192, 448);
  f8c.quant = fm::QuantScheme::fp8_per_channel();
  fm::MoeProblem f8t = small_problem(32, 6, 192, 512);
  f8t.quant = fm::QuantScheme::fp8_per_tensor(false);
  fm::MoeProblem f8r = small_problem(16, 4, 144, 320);
  f8r.quant = fm::QuantScheme::fp8_per_channel();
  int variant = 0;
  for (const fm::MoeProblem& base : {f8c, f8t, f8r}) {
    for (const int tile : {16, 32}) {
      for (const int tpc : {0, 2, 4, 3}) {
        if (tile == 16 && tpc != 0) continue;
        for (const fm::Toggle hs : {fm::Toggle::kAuto, fm::Toggle::kOff}) {
          if (tile == 16 && hs != fm::Toggle::kAuto) continue;
          fm::ForwardOptions on, off;
          on.backend = off.backend = fm::Backend::kGrouped;
          on.tiles = off.tiles = fm::TileFamily::kSwapAB;
          on.split_k = off.split_k = fm::Toggle::kOff;
          on.fp8_pair_swapab = off.fp8_pair_swapab = fm::Toggle::kOn;
          on.tokens_tile = off.tokens_tile = tile;
          on.weight_tiles_per_cta = off.weight_tiles_per_cta = tpc;
          on.gemm2_quantises_h = off.gemm2_quantises_h = hs;
          off.packed_weights = fm::Toggle::kOff;
          for (const int64_t t : {1, 3, 40, 200, 700}) {
            if ((tpc == 3 || tile == 16) && t != 40) continue;
            if (hs == fm::Toggle::kOff && t != 40 && t != 200) continue;
            const fm::testing::Skew skew = (variant++ % 2) ? fm::testing::Skew::kZipf : fm::testing::Skew::kUniform;
            const std::string label = "fp8 tail pairs, tile " + std::to_string(tile) + ", tpc " + std::to_string(tpc) +
                                      (hs == fm::Toggle::kOff ? ", H apart" : "");
            check_forward(base, t, on, label, skew);
            fm::MoeProblem p = base;
            p.num_tokens = p.max_tokens = t;
            SCOPED_TRACE(label + " T=" + std::to_string(t));
            Layer L;
            upload(p, fm::gputest::test_seed(), skew, &L);
            if (::testing::Test::HasFatalFailure()) return;
            expect_same_bits(p, L, off, on, "the tail pairs differ from the pairs' 2D boxes");
            if (::testing::Test::HasFatalFailure()) return;
            ASSERT_TRUE(fm::forward(p, L.t, L.ws.get(), L.ws_bytes, nullptr, on).ok());
            FM_CUDA_CHECK(cudaDeviceSynchronize());
            EXPECT_EQ(fm::kernels::last_fp8_pair_tails(), tpc == 3 || tile == 16 ? 0 : 1) << "which pair instances ran GEMM2";
          }
        }
      }
    }
  }
}

// Programmatic dependent launch between the layer's kernels (ForwardOptions::overlap_launches), the
// staged GEMM epilogue (staged_epilogue) and gathered GEMM1 rows (gather_rows): the same bits as the
// plain path, called directly and (overlap) replayed from a captured graph, over the
// fused front (<= 256 tokens), the single-block and the chunked plan (4096 tokens), both tile
// families and an expert-parallel grouped router.
TEST(Forward, OverlappedLaunchesMatchPlainBitwise) {
  struct C {
    fm::MoeProblem p;
    int64_t t;
    fm::ForwardOptions o;
  };
  std::vector<C> cases;
  for (int64_t t : {1, 16, 256, 1000, 4096}) cases.push_back({small_problem(32, 8, 256, 1024), t, {}});
  cases.push_back({small_problem(16, 4, 192, 256), 65, tiles(fm::TileFamily::kNormal)});
  cases.push_back({small_problem(16, 4, 192, 256), 9, tiles(fm::TileFamily::kSwapAB, 8)});
  {
    fm::MoeProblem ep = small_problem(64, 8, 128, 512);
    ep.router = fm::RouterConfig::deepseek_v3(8, 8, 4, 2.5f);
    ep.num_local_experts = 8;
    cases.push_back({ep, 500, {}});
    fm::MoeProblem sh = fm::find_preset("qwen3next-tp1")->problem;  // shared expert, E512 k10
    sh.hidden = 256;
    sh.intermediate = 64;
    cases.push_back({sh, 300, {}});
    cases.push_back({sh, 3, tiles(fm::TileFamily::kSwapAB, 16)});
    cases.push_back({small_problem(8, 2, 136, 264, fm::Activation::swiglu_oai(1.702f, 7.f, true)), 50,
                     tiles(fm::TileFamily::kNormal)});  // K = 264: a ragged last K step
    // FP8 (per-channel / per-token and static per-tensor): the GEMMs' early weights under PDL
    fm::MoeProblem f8 = small_problem(16, 4, 192, 512);
    f8.quant = fm::QuantScheme::fp8_per_channel();
    cases.push_back({f8, 65, {}});
    cases.push_back({f8, 5, tiles(fm::TileFamily::kSwapAB, 8)});
    f8.quant = fm::QuantScheme::fp8_per_tensor(false);
    cases.push_back({f8, 300, {}});
    cases.push_back({f8, 2, tiles(fm::TileFamily::kSwapAB, 16)});
  }
  for (C& c : cases) {
    fm::MoeProblem p = c.p;
    p.num_tokens = p.max_tokens = c.t;
    // The grouped backend throughout: the switches below exist there only, and forcing one keeps
    // the oracle on it, while the plain call's auto choice may be CUTLASS (>= 512 tokens), whose
    // different summation order is not the point here.
    c.o.backend = fm::Backend::kGrouped;
    SCOPED_TRACE("T=" + std::to_string(c.t) + " tiles=" + fm::to_string(c.o.tiles));
    Layer L;
    upload(p, fm::gputest::test_seed(), fm::testing::Skew::kUniform, &L);
    if (::testing::Test::HasFatalFailure()) return;
    cudaStream_t s;
    FM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const size_t n = static_cast<size_t>(c.t) * p.hidden;
    fm::ForwardOptions plain_opt = c.o;
    plain_opt.overlap_launches = fm::Toggle::kOff;  // the baseline without PDL (auto would turn it on)
    ASSERT_TRUE(fm::forward(p, L.t, L.ws.get(), L.ws_bytes, s, plain_opt).ok());
    FM_CUDA_CHECK(cudaStreamSynchronize(s));
    const auto plain = to_host<uint16_t>(L.out.get(), n);
    fm::ForwardOptions ov = c.o;
    ov.overlap_launches = fm::Toggle::kOn;
    L.out.poison();
    L.ws.poison();
    const fm::Status st = fm::forward(p, L.t, L.ws.get(), L.ws_bytes, s, ov);
    ASSERT_TRUE(st.ok()) << st.to_string();
    FM_CUDA_CHECK(cudaStreamSynchronize(s));
    EXPECT_EQ(to_host<uint16_t>(L.out.get(), n), plain) << "direct call with overlapped launches differs";
    L.out.poison();
    L.ws.poison();
    {
      const CapturedForward cap(p, L, s, ov);
      ASSERT_NE(cap.exec, nullptr);
      for (int r = 0; r < 3; ++r) {
        FM_CUDA_CHECK(cudaGraphLaunch(cap.exec, s));
        FM_CUDA_CHECK(cudaStreamSynchronize(s));
        EXPECT_EQ(to_host<uint16_t>(L.out.get(), n), plain) << "graph replay " << r << " with overlapped launches differs";
        L.out.poison();
      }
    }
    // The staged GEMM epilogue (staged_epilogue) and GEMM1 gathering its rows from x through the
    // plan (gather_rows) compute the same values, alone and together.
    // variants: staged | staged + overlap | gather | gather + staged + overlap | gather + overlap,
    // and the same five with every switch flipped; the balanced GEMM2 grid (balanced_gemm2) forced
    // on in the even variants, off in the odd ones (session 16: added after the last GPU run)
    auto on = [](bool b) { return b ? fm::Toggle::kOn : fm::Toggle::kOff; };
    for (int variant = 0; variant < 10; ++variant) {
      fm::ForwardOptions so = c.o;
      const int v = variant % 5;
      const bool flip = variant >= 5;
      so.staged_epilogue = on((v <= 1 || v == 3) != flip);
      so.overlap_launches = on((v == 1 || v >= 3) != flip);
      so.gather_rows = on((v >= 2) != flip);
      so.balanced_gemm2 = on(variant % 2 == 0);
      // (session 24) the weights' L2 policy evict_first in every third variant, and GEMM2's early
      // weight stages cut to 2 in every fourth (by default they span the first run's tiles up to 64
      // tokens)
      so.weights_evict_first = on(variant % 3 == 0);
      so.gemm2_early_weight_stages = variant % 4 == 3 ? 2 : -1;
      L.out.poison();
      L.ws.poison();
      const fm::Status sst = fm::forward(p, L.t, L.ws.get(), L.ws_bytes, s, so);
      ASSERT_TRUE(sst.ok()) << sst.to_string();
      FM_CUDA_CHECK(cudaStreamSynchronize(s));
      EXPECT_EQ(to_host<uint16_t>(L.out.get(), n), plain)
          << "variant " << variant << " (staged " << fm::to_string(so.staged_epilogue) << ", overlap "
          << fm::to_string(so.overlap_launches) << ", gather " << fm::to_string(so.gather_rows) << ", balanced "
          << fm::to_string(so.balanced_gemm2) << ", evict-first " << fm::to_string(so.weights_evict_first) << ", gemm2 early "
          << so.gemm2_early_weight_stages << ") differs";
    }
    cudaStreamDestroy(s);
  }
}

// One captured graph of the whole layer serves every token count up to its bound: the count is
// read on the device (MoeTensors::num_tokens_device). Rows past the count stay untouched.
// Also block FP8 (x's 1x128 scales in token order, read through row_token): against the float64
// layer of the quantised math, the FP8 layer cases' whole-layer bound.
TEST(Forward, DeviceTokenCountOneGraph) {
  struct C {
    fm::MoeProblem p;
    int64_t bound;
    double tol;
    fm::ForwardOptions o;
  };
  fm::MoeProblem block = small_problem(16, 4, 256, 512);
  block.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);
  fm::ForwardOptions grouped, cutlass;
  grouped.backend = fm::Backend::kGrouped;
  cutlass.backend = fm::Backend::kCutlassGrouped;
  for (C cc : {C{small_problem(32, 8, 256, 1024), 64, kTolerance, {}},
               C{small_problem(32, 8, 256, 1024), 1000, kTolerance, grouped},
               C{small_problem(32, 8, 256, 1024), 1000, kTolerance, cutlass}, C{block, 64, 2e-2, {}}}) {
    fm::MoeProblem p = cc.p;
    const int64_t bound = cc.bound;
    p.num_tokens = p.max_tokens = bound;
    const uint64_t seed = fm::gputest::test_seed();
    SCOPED_TRACE("bound " + std::to_string(bound) + " " + std::string(fm::to_string(p.quant.weight.format)) + " " +
                 fm::to_string(cc.o.backend) + " seed " + std::to_string(seed));
    Layer L;
    upload(p, seed, fm::testing::Skew::kUniform, &L);
    if (::testing::Test::HasFatalFailure()) return;
    DeviceBuffer count(4);
    L.t.num_tokens_device = count.as<int32_t>();
    // The routing outputs too: the first count x k entries are the reference's routing (rows past
    // the count hold stale values, as documented, and are not checked).
    const size_t entries = static_cast<size_t>(bound) * p.top_k();
    DeviceBuffer ids_out(entries * sizeof(int32_t)), weights_out(entries * sizeof(float));
    L.t.out_topk_ids = ids_out.as<int32_t>();
    L.t.out_topk_weights = weights_out.as<float>();
    cudaStream_t s;
    FM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const CapturedForward cap(p, L, s, cc.o);
    ASSERT_NE(cap.exec, nullptr);
    for (int64_t c : {bound, int64_t{1}, bound / 3 + 1, int64_t{0}}) {
      const int32_t c32 = static_cast<int32_t>(c);
      L.out.poison();
      L.ws.poison();
      ids_out.poison();
      weights_out.poison();
      FM_CUDA_CHECK(cudaDeviceSynchronize());
      FM_CUDA_CHECK(cudaMemcpyAsync(count.get(), &c32, 4, cudaMemcpyHostToDevice, s));
      FM_CUDA_CHECK(cudaGraphLaunch(cap.exec, s));
      FM_CUDA_CHECK(cudaStreamSynchronize(s));
      const auto got = to_host<uint16_t>(L.out.get(), static_cast<size_t>(bound) * p.hidden);
      for (size_t i = static_cast<size_t>(c) * p.hidden; i < got.size(); ++i)
        ASSERT_EQ(got[i], 0xFFFF) << "count " << c << ": row " << i / p.hidden << " past the count was written";
      if (c == 0) continue;
      fm::MoeProblem pc = p;
      pc.num_tokens = c;
      fm::ref::LayerResult ref;
      ASSERT_TRUE(fm::ref::forward(pc, L.data.host_tensors(), &ref).ok());
      {
        const size_t used = static_cast<size_t>(c) * p.top_k();
        ASSERT_EQ(ref.routing.ids.size(), used);
        const auto ids = to_host<int32_t>(ids_out.get(), used);
        const auto wts = to_host<float>(weights_out.get(), used);
        EXPECT_EQ(ids, ref.routing.ids) << "count " << c << ": out_topk_ids";
        EXPECT_EQ(std::memcmp(wts.data(), ref.routing.weights.data(), used * sizeof(float)), 0)
            << "count " << c << ": out_topk_weights (bitwise)";
      }
      const std::vector<uint16_t> head(got.begin(), got.begin() + static_cast<size_t>(c) * p.hidden);
      int64_t bad = 0;
      const double err = rel_error(pc, head, ref.out, &bad);
      std::printf("[ forward  ] device count %lld of bound %lld: rel_err %.3e\n", static_cast<long long>(c),
                  static_cast<long long>(bound), err);
      EXPECT_EQ(bad, 0);
      EXPECT_LE(err, cc.tol) << "count " << c;
    }
    cudaStreamDestroy(s);
  }
}

// Block FP8 runs on the grouped backend; shapes the scheme cannot take are refused with the reason.
TEST(Forward, Fp8BlockScalesChosenOrRefusedWithReason) {
  fm::MoeProblem p = fm::find_preset("dsv3-tp8")->problem;
  p.num_tokens = p.max_tokens = 4;
  const std::string ex = fm::explain(p);
  EXPECT_NE(ex.find("chosen: grouped"), std::string::npos) << ex;
  EXPECT_NE(ex.find("swap-ab"), std::string::npos) << ex;  // 4 tokens x 8 / 256 experts: Swap-AB
  fm::MoeProblem q = p;
  q.intermediate = 192;  // not a multiple of 128
  const std::string eq = fm::explain(q);
  EXPECT_NE(eq.find("multiples of 128"), std::string::npos) << eq;
}

// W8A8 e4m3 through forward(): per-channel weights with per-token activations and per-tensor
// weights with a static activation scale, normal tiles (the only FP8 family so far), ragged and
// odd token counts, a shared expert, biases. The reference is the float64 layer of the quantised
// math (ref::forward quantises x and H in the same scheme, from unrounded values: the GPU
// quantises the bf16-rounded H, so a bf16 rounding of H separates them), with check_forward's
// per-GEMM bounds (kFp8PerGemmTol and the others above).
TEST(Forward, Fp8RowScaledLayers) {
  for (const bool per_channel : {true, false}) {
    fm::MoeProblem p = small_problem(16, 4, 192, 512);
    p.quant = per_channel ? fm::QuantScheme::fp8_per_channel() : fm::QuantScheme::fp8_per_tensor(false);
    const std::string label = per_channel ? "fp8 per-channel/token" : "fp8 per-tensor static";
    for (int64_t t : {1, 3, 65, 1000}) check_forward(p, t, {}, label, fm::testing::Skew::kUniform);
    fm::MoeProblem q = p;
    q.num_shared_experts = 1;
    q.has_expert_bias = true;
    check_forward(q, 64, {}, label + " shared+bias", fm::testing::Skew::kOneHot);
  }
  // qwen235-tp8's expert shape (N 192, K 4096, k 8) over 32 experts (all 128 take the CPU minutes
  // to generate and quantise) in per-channel FP8
  fm::MoeProblem qw = fm::find_preset("qwen235-tp8")->problem;
  qw.num_experts = 32;
  qw.quant = fm::QuantScheme::fp8_per_channel();
  check_forward(qw, 128, {}, "qwen235-like E32 fp8 per-channel", fm::testing::Skew::kUniform);
}

// Swap-AB split-K at decode: the heuristic's clusters all fit on the device at once (the split count
// is lowered until cudaOccupancyMaxActiveClusters holds them; the value depends on the chip's GPC
// layout and is printed), on qwen235-tp8's GEMM1 shape (N 192, K 4096, 32 of its experts), BF16
// and FP8 per-channel, 1-4 tokens; results against the reference.
TEST(Forward, SplitKClustersFitOneWave) {
  fm::MoeProblem qw = fm::find_preset("qwen235-tp8")->problem;
  qw.num_experts = 32;
  for (const bool fp8 : {false, true}) {
    if (fp8) qw.quant = fm::QuantScheme::fp8_per_channel();
    for (int64_t t : {1, 2, 4}) {
      const std::string label = std::string(fp8 ? "qwen235-like E32 fp8" : "qwen235-like E32 bf16") + " T=" + std::to_string(t);
      check_forward(qw, t, {}, label, fm::testing::Skew::kUniform);
      const fm::kernels::GroupedGemmSplits g1 = fm::kernels::last_grouped_gemm_splits(false);
      std::printf("[ splits   ] %-32s GEMM1 splits %d, clusters %lld, resident clusters of that size %d\n", label.c_str(),
                  g1.splits, static_cast<long long>(g1.clusters), g1.resident);
      EXPECT_GE(g1.splits, 1) << label;
      // (1 token: 48 weight tiles, 8 token tiles x 6 of 64 rows, on 2 x SMs slots, so the heuristic
      // splits (H200, call 4 of session 19: 4 splits, 48 clusters, 62 resident); without a split the
      // fit below would not be exercised)
      if (t == 1) EXPECT_GT(g1.splits, 1) << label << ": no split-K at 1 token";
      if (g1.splits > 1) {
        EXPECT_GT(g1.resident, 0) << label << ": the occupancy query failed";
        EXPECT_LE(g1.clusters, g1.resident) << label << ": a second wave of clusters";
      }
    }
  }
}

// FP8 layers at prefill token counts (issue #5's 4096 and 65536), on small experts so that the two
// float64 references stay quick: per-channel / per-token and 128x128 blocks (f32 and UE8M0),
// the oracle's tiles (normal at these counts) and forced Swap-AB at 4096.
TEST(Forward, Fp8LargeTokenCounts) {
  fm::MoeProblem pc = small_problem(8, 2, 64, 128);
  pc.quant = fm::QuantScheme::fp8_per_channel();
  fm::MoeProblem pb = small_problem(8, 2, 128, 128);
  pb.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);
  fm::MoeProblem pu = pb;
  pu.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0);
  for (int64_t t : {4096, 65536}) {
    check_forward(pc, t, {}, "fp8 per-channel E8 k2 N64 K128", fm::testing::Skew::kUniform);
    check_forward(pb, t, {}, "fp8 block f32 E8 k2 N128 K128", fm::testing::Skew::kZipf);  // auto: CUTLASS
    check_forward(pu, t, {}, "fp8 block ue8m0 E8 k2 N128 K128", fm::testing::Skew::kUniform);
  }
  fm::ForwardOptions grouped;  // the grouped backend's FP8 block GEMMs at a large count too
  grouped.backend = fm::Backend::kGrouped;
  check_forward(pb, 65536, grouped, "fp8 block f32 E8 k2 N128 K128 grouped", fm::testing::Skew::kZipf);
  check_forward(pc, 4096, tiles(fm::TileFamily::kSwapAB, 32), "fp8 per-channel swap-ab", fm::testing::Skew::kUniform);
}

// Per-tensor FP8 with dynamic activation scales (a global absmax of x, and of H's valid rows
// only): the workspace is poisoned with 0x7F bytes (bf16 3.4e38, finite), so stale padding rows of
// H entering the absmax would flush every H value to zero (validated on the H200 in session 6).
// Sessions 6-8 bounded this case at 4e-2 (not 2e-2 as for the other schemes): H's scale comes from its largest
// element, which the GPU (fp32 accumulation) and the reference (float64) can round to bf16 values
// one ulp apart; the whole tensor's scale then moves by 2^-8 and a few per cent of the e4m3
// roundings flip (seen once at T = 1: 2.4e-2). Since session 8 check_forward compares the output
// with the reference run from the GPU's own H, which removes that effect (measured 2.3e-3), with
// the per-GEMM bounds of every FP8 case.
TEST(Forward, Fp8DynamicPerTensor) {
  fm::MoeProblem p = small_problem(16, 4, 192, 512);
  p.quant = fm::QuantScheme::fp8_per_tensor(true);
  p.num_tokens = p.max_tokens = 4;
  for (int64_t t : {1, 3, 65, 1000})
    check_forward(p, t, {}, "fp8 per-tensor dynamic", fm::testing::Skew::kUniform, kTolerance, 0x7F);
  check_forward(p, 5, tiles(fm::TileFamily::kSwapAB, 8), "fp8 per-tensor dynamic swap-ab", fm::testing::Skew::kUniform, kTolerance, 0x7F);
  fm::MoeProblem q = p;
  q.num_shared_experts = 1;
  q.has_expert_bias = true;
  check_forward(q, 64, {}, "fp8 per-tensor dynamic shared+bias", fm::testing::Skew::kOneHot, kTolerance, 0x7F);
}

// DeepSeek-style FP8 (128x128 weight blocks, 1x128 activation groups, f32 and UE8M0 scales) through
// forward(), both families (validated on the H200 in session 5).
TEST(Forward, Fp8BlockScaledLayers) {
  fm::MoeProblem p = small_problem(16, 4, 256, 512);
  p.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);
  p.num_tokens = p.max_tokens = 4;
  for (const fm::ScaleFormat f : {fm::ScaleFormat::kFloat32, fm::ScaleFormat::kUE8M0}) {
    p.quant = fm::QuantScheme::fp8_block128(f);
    const std::string label = f == fm::ScaleFormat::kUE8M0 ? "fp8 block ue8m0" : "fp8 block f32";
    for (int64_t t : {1, 65, 1000}) check_forward(p, t, {}, label, fm::testing::Skew::kUniform);
    check_forward(p, 5, tiles(fm::TileFamily::kSwapAB, 8), label + " swap-ab", fm::testing::Skew::kUniform);
    // x's scales in token order (the default, ForwardOptions::scales_by_token) on the wider
    // Swap-AB tiles, and the row-order scales (off) on both families
    for (int tile : {16, 32})
      check_forward(p, 33, tiles(fm::TileFamily::kSwapAB, tile), label + " swap-ab", fm::testing::Skew::kZipf);
    for (const fm::ForwardOptions& o : {fm::ForwardOptions{}, tiles(fm::TileFamily::kSwapAB, 16)}) {
      fm::ForwardOptions off = o;
      off.scales_by_token = fm::Toggle::kOff;
      check_forward(p, 65, off, label + " row-order scales", fm::testing::Skew::kUniform);
    }
  }
  fm::MoeProblem d = fm::find_preset("tiny-dsv3")->problem;  // grouped router, shared expert, block FP8
  check_forward(d, 37, {}, "tiny-dsv3", fm::testing::Skew::kZipf);
}

// The FP8 Swap-AB tiles (forced, and the oracle's own choice at decode), per-channel
// and static per-tensor, ragged counts, a shared expert with biases.
TEST(Forward, Fp8SwapAbTiles) {
  for (const bool per_channel : {true, false}) {
    fm::MoeProblem p = small_problem(16, 4, 192, 512);
    p.quant = per_channel ? fm::QuantScheme::fp8_per_channel() : fm::QuantScheme::fp8_per_tensor(false);
    const std::string label = per_channel ? "fp8 swap-ab per-channel" : "fp8 swap-ab per-tensor";
    for (int tile : {8, 16, 32})
      for (int64_t t : {1, 5, 64}) check_forward(p, t, tiles(fm::TileFamily::kSwapAB, tile), label, fm::testing::Skew::kUniform);
    fm::MoeProblem q = p;
    q.num_shared_experts = 1;
    q.has_expert_bias = true;
    q.activation = fm::Activation::swiglu_oai(1.702f, 7.f, true);
    check_forward(q, 33, tiles(fm::TileFamily::kSwapAB, 16), label + " shared+bias+il", fm::testing::Skew::kZipf);
    // the oracle's own choice at decode (Swap-AB once enabled, with split-K where it pays)
    for (int64_t t : {1, 2, 16}) check_forward(p, t, {}, label + " auto", fm::testing::Skew::kUniform);
  }
  // qwen235-tp8's expert shape over 32 experts, auto tiles at 1 and 8 tokens (K = 4096: split-K)
  fm::MoeProblem qw = fm::find_preset("qwen235-tp8")->problem;
  qw.num_experts = 32;
  qw.quant = fm::QuantScheme::fp8_per_channel();
  for (int64_t t : {1, 8}) check_forward(qw, t, {}, "qwen235-like E32 fp8 auto", fm::testing::Skew::kUniform);
}

// Backend::kCutlassGrouped (kernels/gemm/cutlass_grouped_gemm.h): CUTLASS's sm90 persistent grouped
// GEMMs with the activation kernel between them, forced on the shapes and routings the grouped
// backend is tested on (the auto choice runs it from 512 tokens and 32 expected rows per expert, so
// the large token counts above already take it).
TEST(Forward, CutlassBackendTokenCountsAndShapes) {
  const fm::MoeProblem p = small_problem(16, 4, 192, 256);
  for (int64_t t : {1, 2, 3, 7, 8, 9, 63, 64, 65, 1000, 4096}) check_forward(p, t, cutlass_backend(), "E16 k4 N192 K256");
  for (int n : {64, 120, 136, 176, 360})
    for (int kdim : {128, 136, 2688, 2880})
      check_forward(small_problem(8, 2, n, kdim), 33, cutlass_backend(), "N" + std::to_string(n) + " K" + std::to_string(kdim));
  // Auto runs the cooperative 128x256 tile here on both GEMMs; every configuration is checked
  // apart in test_cutlass_grouped.cpp (the environment override is read once per process).
  check_forward(small_problem(32, 8, 256, 1024), 700, cutlass_backend(), "E32 k8 N256 K1024");
}

TEST(Forward, CutlassBackendActivationsAndRouting) {
  for (fm::Activation a : {fm::Activation::silu(), fm::Activation::gelu(), fm::Activation{fm::ActivationKind::kGeluTanhGated},
                           fm::Activation::clamped_swiglu(1.5f), fm::Activation::swiglu_oai(1.702f, 1.0f, true),
                           fm::Activation::swiglu_oai(1.702f, 7.f, false), fm::Activation::squared_relu()}) {
    const fm::MoeProblem p = small_problem(8, 2, 136, 264, a);
    check_forward(p, 50, cutlass_backend(), std::string(fm::to_string(a.kind)) + (a.interleaved ? "-interleaved" : ""));
  }
  fm::MoeProblem p = small_problem(16, 4, 128, 256);
  check_forward(p, 1000, cutlass_backend(), "one hot expert", fm::testing::Skew::kOneHot);
  check_forward(p, 1000, cutlass_backend(), "zipf", fm::testing::Skew::kZipf);
  fm::MoeProblem s = fm::find_preset("qwen3next-tp1")->problem;  // shared expert, E512 k10
  s.hidden = 256;
  s.intermediate = 64;
  check_forward(s, 300, cutlass_backend(), "qwen3-next-like shared");
  fm::MoeProblem ep = small_problem(64, 8, 128, 512);
  ep.router = fm::RouterConfig::deepseek_v3(8, 8, 4, 2.5f);
  ep.num_local_experts = 8;
  check_forward(ep, 500, cutlass_backend(), "dsv3-like EP 8 of 64 local");
  fm::MoeProblem l4 = fm::find_preset("llama4-scout")->problem;  // weight on input + shared
  l4.hidden = 512;
  l4.intermediate = 256;
  check_forward(l4, 100, cutlass_backend(), "llama4-like weight on input");
  fm::MoeProblem q = fm::find_preset("qwen235-tp8")->problem;  // a suite shape, E 128 k 8 N 192 K 4096
  check_forward(q, 1024, {}, "qwen235-tp8 auto (cutlass)");
}

// The layer of `p` (E32 k8 N256 K1024 at 600 tokens unless given) called directly with `o`, then
// captured into a CUDA graph and replayed `replays` times: every replay gives the direct call's bits
// (output and workspace poisoned before the capture).
static void expect_replays_match_direct(const fm::ForwardOptions& o, int replays) {
  fm::MoeProblem p = small_problem(32, 8, 256, 1024);
  p.num_tokens = p.max_tokens = 600;
  Layer L;
  upload(p, fm::gputest::test_seed(), fm::testing::Skew::kUniform, &L);
  if (::testing::Test::HasFatalFailure()) return;
  cudaStream_t s;
  FM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ASSERT_TRUE(fm::forward(p, L.t, L.ws.get(), L.ws_bytes, s, o).ok());
  FM_CUDA_CHECK(cudaStreamSynchronize(s));
  const size_t n = static_cast<size_t>(p.num_tokens) * p.hidden;
  const auto direct = to_host<uint16_t>(L.out.get(), n);
  L.out.poison();
  L.ws.poison();
  {
    const CapturedForward cap(p, L, s, o);
    ASSERT_NE(cap.exec, nullptr);
    for (int r = 0; r < replays; ++r) {
      FM_CUDA_CHECK(cudaGraphLaunch(cap.exec, s));
      FM_CUDA_CHECK(cudaStreamSynchronize(s));
      EXPECT_EQ(to_host<uint16_t>(L.out.get(), n), direct) << "replay " << r << " differs from the direct call";
    }
  }
  cudaStreamDestroy(s);
}

TEST(Forward, CutlassBackendGraphReplayIsBitwiseStable) { expect_replays_match_direct(cutlass_backend(), 3); }

// Expert biases on the CUTLASS backend (session 55): b1 in the activation kernel or GEMM1's fused
// epilogue, b2 added by the combine (CombineArgs::bias: each slot's group bias row, weighted like
// its row), since CUTLASS's GEMM2 epilogue has none. Forced, and auto from 64 expected rows per
// expert and 512 tokens (session 56). Every element against the float64 reference with the
// biases: BF16 with the GPT-OSS activation (interleaved and not), ragged token counts, a skewed and
// a one-hot routing, a shared expert, expert parallelism, GEMM2 on the ping-pong tiles (where the
// workspace holds 128-row padding) and the hybrid (GEMM1 grouped, GEMM2 CUTLASS), a wide K at few
// tokens (the combine's column chunks), FP8 per-channel and 128x128 blocks (their GEMM2 rows checked
// without b2, which the combine adds).
TEST(Forward, CutlassBackendExpertBias) {
  const fm::ForwardOptions c = cutlass_backend();
  fm::ForwardOptions ping = c;
  ping.pingpong_gemm2 = fm::Toggle::kOn;
  fm::ForwardOptions hybrid = c;
  hybrid.cutlass_gemm2 = fm::Toggle::kOn;
  for (const bool inter : {true, false}) {
    fm::MoeProblem b = small_problem(16, 4, 136, 264, fm::Activation::swiglu_oai(1.702f, 7.f, inter));
    b.has_expert_bias = true;
    const std::string name = std::string("cutlass biases swiglu-oai") + (inter ? "-interleaved" : "");
    EXPECT_EQ(fm::detail::decide([&] { fm::MoeProblem q = b; q.num_tokens = q.max_tokens = 1000; return q; }(), {}, false).chosen,
              fm::Backend::kCutlassGrouped);  // auto: 250 rows per expert
    EXPECT_EQ(fm::detail::decide([&] { fm::MoeProblem q = b; q.num_tokens = q.max_tokens = 255; return q; }(), {}, false).chosen,
              fm::Backend::kGrouped);  // auto: under 512 tokens
    for (int64_t t : {1, 3, 65, 1000}) check_forward(b, t, c, name);
    check_forward(b, 1000, {}, name + " auto");
    check_forward(b, 700, c, name + " zipf", fm::testing::Skew::kZipf);
    check_forward(b, 700, c, name + " one hot", fm::testing::Skew::kOneHot);
    check_forward(b, 300, ping, name + " ping-pong GEMM2");
    check_forward(b, 300, hybrid, name + " hybrid");
    if (inter) {  // b1 and the activation in CUTLASS's GEMM1 epilogue (forced; auto below)
      fm::ForwardOptions fa = c;
      fa.fused_activation = fm::Toggle::kOn;
      check_forward(b, 1000, fa, name + " fused activation");
      check_forward(b, 700, fa, name + " fused activation one hot", fm::testing::Skew::kOneHot);
    }
  }
  {
    // interleaved with 2N = 256 (whole 256-wide tiles): auto runs the activation in GEMM1 (session 56)
    fm::MoeProblem b = small_problem(16, 4, 128, 264, fm::Activation::swiglu_oai(1.702f, 7.f, true));
    b.has_expert_bias = true;
    b.num_tokens = b.max_tokens = 1000;
    const std::string ex = fm::explain(b);
    EXPECT_NE(ex.find(fm::kernels::cutlass_gated_gemm1_name()), std::string::npos) << ex;
    check_forward(b, 1000, {}, "cutlass biases interleaved, auto fused activation");
  }
  // K 2880 (GPT-OSS's hidden) at 1-3 tokens: the combine splits each row in column chunks
  fm::MoeProblem wide = small_problem(8, 4, 64, 2880, fm::Activation::swiglu_oai(1.702f, 7.f, true));
  wide.has_expert_bias = true;
  for (int64_t t : {1, 3}) check_forward(wide, t, c, "cutlass biases K2880");
  fm::MoeProblem s = fm::find_preset("qwen3next-tp1")->problem;  // shared expert, E512 k10
  s.hidden = 256;
  s.intermediate = 64;
  s.has_expert_bias = true;
  check_forward(s, 300, c, "cutlass biases qwen3-next-like shared");
  fm::MoeProblem ep = small_problem(64, 8, 128, 512);
  ep.router = fm::RouterConfig::deepseek_v3(8, 8, 4, 2.5f);
  ep.num_local_experts = 8;
  ep.has_expert_bias = true;
  check_forward(ep, 500, c, "cutlass biases dsv3-like EP 8 of 64 local");
  fm::MoeProblem f = small_problem(16, 4, 256, 512);
  f.has_expert_bias = true;
  f.quant = fm::QuantScheme::fp8_per_channel();
  check_forward(f, 1000, c, "cutlass biases fp8 per-channel");
  f.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0);
  check_forward(f, 1000, c, "cutlass biases fp8 128x128 blocks");
}

// ForwardOptions::cutlass_gemm2: where the CUTLASS backend runs the layer, GEMM1 on the grouped
// backend's normal tiles with x's rows gathered (no permute) and the activation in its epilogue,
// then CUTLASS's GEMM2 on that intermediate. Same tolerance as the layer tests; explain() must say
// so (the switch was honoured); ragged token counts, N/K that are not tile multiples, activations,
// skewed routing, a shared expert, expert parallelism, a graph replay bitwise equal to the direct
// call; refused (the plain CUTLASS layer) with weights on the input.
TEST(Forward, CutlassGemm2AfterGatheredGemm1) {
  fm::ForwardOptions o = cutlass_backend();
  o.cutlass_gemm2 = fm::Toggle::kOn;
  {
    fm::MoeProblem p = small_problem(16, 4, 192, 256);
    p.num_tokens = p.max_tokens = 1000;
    EXPECT_NE(fm::explain(p, o).find("GEMM1 on the grouped backend, GEMM2 on CUTLASS"), std::string::npos)
        << fm::explain(p, o);
  }
  for (int64_t t : {1, 3, 64, 65, 1000, 4096})
    check_forward(small_problem(16, 4, 192, 256), t, o, "hybrid E16 k4 N192 K256");
  for (int n : {64, 136, 360})
    for (int kdim : {136, 2688})
      check_forward(small_problem(8, 2, n, kdim), 129, o, "hybrid N" + std::to_string(n) + " K" + std::to_string(kdim));
  for (fm::Activation a : {fm::Activation::gelu(), fm::Activation::swiglu_oai(1.702f, 7.f, false),
                           fm::Activation::squared_relu()})
    check_forward(small_problem(8, 2, 136, 264, a), 300, o, std::string("hybrid ") + fm::to_string(a.kind));
  fm::MoeProblem p = small_problem(16, 4, 128, 256);
  check_forward(p, 1000, o, "hybrid one hot expert", fm::testing::Skew::kOneHot);
  check_forward(p, 1000, o, "hybrid zipf", fm::testing::Skew::kZipf);
  fm::MoeProblem s = fm::find_preset("qwen3next-tp1")->problem;  // shared expert, E512 k10
  s.hidden = 256;
  s.intermediate = 64;
  check_forward(s, 300, o, "hybrid qwen3-next-like shared");
  fm::MoeProblem ep = small_problem(64, 8, 128, 512);
  ep.router = fm::RouterConfig::deepseek_v3(8, 8, 4, 2.5f);
  ep.num_local_experts = 8;
  check_forward(ep, 500, o, "hybrid dsv3-like EP 8 of 64 local");
  fm::MoeProblem l4 = fm::find_preset("llama4-scout")->problem;  // weight on input: not applicable
  l4.hidden = 512;
  l4.intermediate = 256;
  l4.num_tokens = l4.max_tokens = 100;
  EXPECT_NE(fm::explain(l4, o).find("chosen: cutlass-grouped"), std::string::npos) << fm::explain(l4, o);
  EXPECT_EQ(fm::explain(l4, o).find("GEMM2 on CUTLASS"), std::string::npos) << fm::explain(l4, o);
  check_forward(l4, 100, o, "weight on input (plain CUTLASS layer)");
  fm::MoeProblem q = fm::find_preset("qwen235-tp8")->problem;  // a suite shape, E 128 k 8 N 192 K 4096
  check_forward(q, 1024, o, "hybrid qwen235-tp8");

  expect_replays_match_direct(o, 2);  // graph replay == direct call, bitwise
}

// ForwardOptions::fused_activation (session 43): the CUTLASS backend's GEMM1 applies b1 and the
// activation in its epilogue and writes H (split gate / up halves read MoeTensors::w1_gate_up_blocks,
// made by pack_gate_up_blocks(); interleaved and not-gated activations read w1). Every element against
// the float64 reference (check_forward), outputs and workspace poisoned: ragged token counts, N and K
// off the tiles, every activation, skewed routing, a shared expert, expert
// parallelism, weights on the input, a suite shape, with GEMM2 on the ping-pong tiles, a graph replay
// bitwise equal to the direct call; explain() names the kernel; forced on without the blocks it
// fails with kInvalidArgument before launching anything.
TEST(Forward, CutlassFusedActivation) {
  fm::ForwardOptions o = cutlass_backend();
  o.fused_activation = fm::Toggle::kOn;
  {
    fm::MoeProblem p = small_problem(16, 4, 192, 256);
    p.num_tokens = p.max_tokens = 1000;
    EXPECT_NE(fm::explain(p, o).find(fm::kernels::cutlass_gated_gemm1_name()), std::string::npos) << fm::explain(p, o);
    // forced without MoeTensors::w1_gate_up_blocks: refused, the output untouched
    Layer L;
    upload(p, fm::gputest::test_seed(), fm::testing::Skew::kUniform, &L);
    if (::testing::Test::HasFatalFailure()) return;
    L.out.poison();
    const fm::Status st = fm::forward(p, L.t, L.ws.get(), L.ws_bytes, nullptr, o);
    EXPECT_EQ(st.code(), fm::StatusCode::kInvalidArgument) << st.to_string();
    FM_CUDA_CHECK(cudaDeviceSynchronize());
    const auto out = to_host<uint16_t>(L.out.get(), static_cast<size_t>(p.num_tokens) * p.hidden);
    EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](uint16_t v) { return v == 0xFFFF; }));
  }
  struct Blocks {  // (reset however the test ends)
    Blocks() { g_upload_gate_up_blocks = true; }
    ~Blocks() { g_upload_gate_up_blocks = false; }
  } blocks_on;
  for (int64_t t : {1, 3, 64, 65, 1000, 4096})
    check_forward(small_problem(16, 4, 192, 256), t, o, "fused-act E16 k4 N192 K256");
  for (int n : {64, 136, 360})
    for (int kdim : {136, 2688})
      check_forward(small_problem(8, 2, n, kdim), 129, o, "fused-act N" + std::to_string(n) + " K" + std::to_string(kdim));
  for (fm::Activation a : {fm::Activation::silu(), fm::Activation::gelu(), fm::Activation{fm::ActivationKind::kGeluTanhGated},
                           fm::Activation::clamped_swiglu(1.5f), fm::Activation::swiglu_oai(1.702f, 1.0f, true),
                           fm::Activation::swiglu_oai(1.702f, 7.f, false), fm::Activation::squared_relu()}) {
    // (no expert biases here: with them Forward.CutlassBackendExpertBias; the GEMM1 kernel's b1 is
    // also tested in test_cutlass_grouped.cpp)
    const fm::MoeProblem p = small_problem(8, 2, 136, 264, a);
    check_forward(p, 300, o, std::string("fused-act ") + fm::to_string(a.kind) + (a.interleaved ? "-interleaved" : ""));
  }
  fm::MoeProblem p = small_problem(16, 4, 128, 256);
  check_forward(p, 1000, o, "fused-act one hot expert", fm::testing::Skew::kOneHot);
  check_forward(p, 1000, o, "fused-act zipf", fm::testing::Skew::kZipf);
  fm::MoeProblem s = fm::find_preset("qwen3next-tp1")->problem;  // shared expert, E512 k10
  s.hidden = 256;
  s.intermediate = 64;
  check_forward(s, 300, o, "fused-act qwen3-next-like shared");
  fm::MoeProblem ep = small_problem(64, 8, 128, 512);
  ep.router = fm::RouterConfig::deepseek_v3(8, 8, 4, 2.5f);
  ep.num_local_experts = 8;
  check_forward(ep, 500, o, "fused-act dsv3-like EP 8 of 64 local");
  fm::MoeProblem l4 = fm::find_preset("llama4-scout")->problem;  // weight on input + shared
  l4.hidden = 512;
  l4.intermediate = 256;
  check_forward(l4, 100, o, "fused-act llama4-like weight on input");
  fm::MoeProblem q = fm::find_preset("qwen235-tp8")->problem;  // a suite shape, E 128 k 8 N 192 K 4096
  check_forward(q, 1024, o, "fused-act qwen235-tp8");
  fm::ForwardOptions ping = o;
  ping.pingpong_gemm2 = fm::Toggle::kOn;
  check_forward(q, 1024, ping, "fused-act + ping-pong GEMM2 qwen235-tp8");
  expect_replays_match_direct(o, 2);  // (E32 k8 N256 K1024, silu: the blocks)
}

// ForwardOptions::pingpong_gemm2: BF16 GEMM2 on the normal tiles' ping-pong instance (the two
// consumer warpgroups take a CTA's weight tiles in turn). On the grouped backend (normal tiles
// forced) and, where the CUTLASS backend runs the layer, instead of CUTLASS's GEMM2 (the dispatch
// then pads each expert's rows to 128). Every element against the float64 reference (check_forward),
// outputs poisoned; ragged token counts, N (GEMM2's reduction) and K (its output columns) off the
// tile, expert biases, activations, skewed routing, a shared expert, expert parallelism, odd
// numbers of weight tiles per CTA, a graph replay bitwise equal to the direct call; explain() says
// so; not applicable to FP8 weights (the FP8 kernels run as before).
TEST(Forward, PingPongGemm2) {
  fm::ForwardOptions g = tiles(fm::TileFamily::kNormal, 128);
  g.pingpong_gemm2 = fm::Toggle::kOn;
  fm::ForwardOptions c = cutlass_backend();
  c.pingpong_gemm2 = fm::Toggle::kOn;
  {
    fm::MoeProblem p = small_problem(16, 4, 192, 256);
    p.num_tokens = p.max_tokens = 1000;
    EXPECT_NE(fm::explain(p, g).find("s4_pingpong"), std::string::npos) << fm::explain(p, g);
    // (the CUTLASS backend applies it where the workspace holds GEMM1's rows padded to 128:
    // detail::WorkspaceLayout::holds_cutlass_rows; here 2N = 384 against K = 256 over 16 experts it does not)
    EXPECT_NE(fm::explain(p, c).find("pingpong_gemm2: not applied on this backend"), std::string::npos)
        << fm::explain(p, c);
    fm::MoeProblem qw = fm::find_preset("qwen235-tp8")->problem;
    qw.num_tokens = qw.max_tokens = 1024;
    EXPECT_NE(fm::explain(qw, c).find("GEMM2 on the grouped backend's ping-pong tiles"), std::string::npos)
        << fm::explain(qw, c);
    fm::MoeProblem q = p;
    q.quant = fm::QuantScheme::fp8_per_channel();
    EXPECT_EQ(fm::explain(q, g).find("s4_pingpong"), std::string::npos) << fm::explain(q, g);
  }
  for (const auto& [o, name] : {std::pair{g, std::string("grouped")}, std::pair{c, std::string("cutlass")}}) {
    for (int64_t t : {1, 3, 64, 65, 1000, 4096})
      check_forward(small_problem(16, 4, 192, 256), t, o, name + " ping-pong E16 k4 N192 K256");
    for (int n : {64, 136, 360})
      for (int kdim : {136, 392, 2688})  // 392: 4 weight tiles of 128 (the last one ragged), 136: 2
        check_forward(small_problem(8, 2, n, kdim), 129, o, name + " ping-pong N" + std::to_string(n) + " K" + std::to_string(kdim));
    for (fm::Activation a : {fm::Activation::gelu(), fm::Activation::swiglu_oai(1.702f, 7.f, true),
                             fm::Activation::squared_relu()})
      check_forward(small_problem(8, 2, 136, 264, a), 300, o, name + " ping-pong " + fm::to_string(a.kind));
    fm::MoeProblem p = small_problem(16, 4, 128, 256);
    check_forward(p, 1000, o, name + " ping-pong one hot expert", fm::testing::Skew::kOneHot);
    check_forward(p, 1000, o, name + " ping-pong zipf", fm::testing::Skew::kZipf);
    fm::MoeProblem s = fm::find_preset("qwen3next-tp1")->problem;  // shared expert, E512 k10
    s.hidden = 256;
    s.intermediate = 64;
    check_forward(s, 300, o, name + " ping-pong qwen3-next-like shared");
    fm::MoeProblem ep = small_problem(64, 8, 128, 512);
    ep.router = fm::RouterConfig::deepseek_v3(8, 8, 4, 2.5f);
    ep.num_local_experts = 8;
    check_forward(ep, 500, o, name + " ping-pong dsv3-like EP 8 of 64 local");
  }
  // expert biases (b2 in the ping-pong epilogue): grouped backend only (CUTLASS takes no biases)
  fm::MoeProblem b = small_problem(8, 2, 136, 264, fm::Activation::swiglu_oai(1.702f, 7.f, true));
  b.has_expert_bias = true;
  check_forward(b, 300, g, "grouped ping-pong with expert biases");
  fm::MoeProblem q = fm::find_preset("qwen235-tp8")->problem;  // a suite shape, E 128 k 8 N 192 K 4096
  check_forward(q, 1024, c, "cutlass ping-pong qwen235-tp8");
  check_forward(q, 1024, g, "grouped ping-pong qwen235-tp8");
  // long reductions (8 and 5 K steps per tile, more than the ring's 4 stages) over many weight
  // tiles per CTA: the warpgroups' main loops must take turns (session 38's first run raced)
  for (const auto& [o, name] : {std::pair{g, std::string("grouped")}, std::pair{c, std::string("cutlass")}}) {
    check_forward(small_problem(8, 2, 512, 2688), 1000, o, name + " ping-pong N512 K2688");
    check_forward(small_problem(16, 4, 320, 1544), 700, o, name + " ping-pong N320 K1544");
  }
  expect_replays_match_direct(c, 2);  // graph replay == direct call, bitwise
  expect_replays_match_direct(g, 2);
}

// FP8 with 128x128 weight blocks on the CUTLASS backend (CUTLASS's blockwise-scaled grouped GEMM,
// scales re-laid per group): GEMM1 and GEMM2 checked apart against the float64 reference of the
// quantised math (check_forward: issue #5's 2e-3 per GEMM), float32 and UE8M0 scales, a
// DeepSeek-like layer with grouped routing and a shared expert, skewed routing, graph capture with a
// device-side token count.
TEST(Forward, CutlassBackendFp8BlockScaled) {
  fm::MoeProblem p = small_problem(16, 4, 256, 512);
  for (const fm::ScaleFormat f : {fm::ScaleFormat::kFloat32, fm::ScaleFormat::kUE8M0}) {
    p.quant = fm::QuantScheme::fp8_block128(f);
    const std::string label = f == fm::ScaleFormat::kUE8M0 ? "cutlass fp8 block ue8m0" : "cutlass fp8 block f32";
    for (int64_t t : {1, 3, 64, 65, 1000, 2100}) check_forward(p, t, cutlass_backend(), label);
    check_forward(p, 700, cutlass_backend(), label + " one hot", fm::testing::Skew::kOneHot);
  }
  fm::MoeProblem d = fm::find_preset("tiny-dsv3")->problem;  // grouped router, shared expert, block FP8
  check_forward(d, 300, cutlass_backend(), "cutlass tiny-dsv3", fm::testing::Skew::kZipf);
  fm::MoeProblem w = small_problem(8, 2, 384, 640);  // N, K odd multiples of 128
  w.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);
  check_forward(w, 200, cutlass_backend(), "cutlass fp8 N384 K640");
}

// ForwardOptions::fused_activation with FP8 128x128 blocks (session 46, forced only): CUTLASS's
// blockwise GEMM1 with b1 and the activation in its epilogue (W1 in blocks of 8 gate / up rows from
// pack_gate_up_blocks(), one weight scale per 8 rows re-laid from the checkpoint's blocks), H then
// quantised by the separate pass as before. GEMM1 (H) and GEMM2 checked apart against the float64
// reference of the quantised math (check_forward), float32 and UE8M0 scales, ragged token counts,
// one hot expert, a DeepSeek-like layer (grouped router, shared expert), N and K odd multiples of 128,
// interleaved gate / up (read from w1), expert parallelism; explain() names the kernel.
TEST(Forward, CutlassFp8FusedActivation) {
  fm::ForwardOptions o = cutlass_backend();
  o.fused_activation = fm::Toggle::kOn;
  struct Blocks {  // (reset however the test ends)
    Blocks() { g_upload_gate_up_blocks = true; }
    ~Blocks() { g_upload_gate_up_blocks = false; }
  } blocks_on;
  fm::MoeProblem p = small_problem(16, 4, 256, 512);
  for (const fm::ScaleFormat f : {fm::ScaleFormat::kFloat32, fm::ScaleFormat::kUE8M0}) {
    p.quant = fm::QuantScheme::fp8_block128(f);
    const std::string ex = fm::explain(p, o);
    EXPECT_NE(ex.find(fm::kernels::cutlass_fp8_gated_gemm1_name()), std::string::npos) << ex;
    const std::string label = f == fm::ScaleFormat::kUE8M0 ? "fp8 fused-act ue8m0" : "fp8 fused-act f32";
    for (int64_t t : {1, 3, 64, 65, 1000, 2100}) check_forward(p, t, o, label);
    check_forward(p, 700, o, label + " one hot", fm::testing::Skew::kOneHot);
  }
  fm::MoeProblem d = fm::find_preset("tiny-dsv3")->problem;  // grouped router, shared expert, block FP8
  check_forward(d, 300, o, "fp8 fused-act tiny-dsv3", fm::testing::Skew::kZipf);
  fm::MoeProblem w = small_problem(8, 2, 384, 640);  // N, K odd multiples of 128: 2N = 768, 6 tiles
  w.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);
  check_forward(w, 200, o, "fp8 fused-act N384 K640");
  fm::MoeProblem i = small_problem(8, 2, 128, 256, fm::Activation::swiglu_oai(1.702f, 7.f, true));  // interleaved
  i.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);
  check_forward(i, 300, o, "fp8 fused-act swiglu_oai interleaved");
  fm::MoeProblem ep = small_problem(64, 8, 128, 512);
  ep.router = fm::RouterConfig::deepseek_v3(8, 8, 4, 2.5f);
  ep.num_local_experts = 8;
  ep.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0);
  check_forward(ep, 500, o, "fp8 fused-act dsv3-like EP 8 of 64 local");
}

// FP8 with per-channel / per-tensor weight scales on the CUTLASS backend (session 19): CUTLASS's FP8
// grouped GEMM with the scales applied in its epilogue through per-group pointers. Per-channel weights
// with per-token activations, per-tensor weights with static and dynamic per-tensor activations;
// tokens 1-2100, one hot expert; 2N = 352, K = 208 (ragged N and K tiles in both GEMMs) and a layer of
// K = 2048, N = 1040; gated GELU and squared ReLU; the same bounds as the block path.
TEST(Forward, CutlassBackendFp8RowScaled) {
  const fm::QuantScheme schemes[] = {fm::QuantScheme::fp8_per_channel(), fm::QuantScheme::fp8_per_tensor(false),
                                     fm::QuantScheme::fp8_per_tensor(true)};
  const char* names[] = {"per-channel", "per-tensor static", "per-tensor dynamic"};
  for (int s = 0; s < 3; ++s) {
    fm::MoeProblem p = small_problem(16, 4, 256, 512);
    p.quant = schemes[s];
    const std::string label = std::string("cutlass fp8 ") + names[s];
    for (int64_t t : {1, 3, 64, 65, 1000, 2100}) check_forward(p, t, cutlass_backend(), label);
    check_forward(p, 700, cutlass_backend(), label + " one hot", fm::testing::Skew::kOneHot);
    fm::MoeProblem r = small_problem(8, 2, 176, 208, s == 1 ? fm::Activation::squared_relu() : fm::Activation::gelu());
    r.quant = schemes[s];
    check_forward(r, 300, cutlass_backend(), label + " N176 K208", fm::testing::Skew::kZipf);
  }
  fm::MoeProblem c = small_problem(8, 2, 1040, 2048);
  c.quant = fm::QuantScheme::fp8_per_channel();
  check_forward(c, 200, cutlass_backend(), "cutlass fp8 per-channel N1040 K2048");
}
