// The public front half (dispatch) and back half (combine) on the GPU, against the CPU reference:
// ids and row maps exact, FP8 rows and scales bit-identical, combine within 1 bf16 ulp; CUDA
// graph capture and replay; device-side input errors reported.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fusedmoe/fusedmoe.h"
#include "fusedmoe/reference.h"
#include "gpu_test_util.h"
#include "testing/layer_data.h"

namespace fm = fusedmoe;
using fm::gputest::DeviceBuffer;
using fm::gputest::to_device;
using fm::gputest::to_host;

namespace {

struct DeviceLayer {
  DeviceBuffer x, logits, bias, token_ids, hash_table, topk_ids, topk_weights, expert_map, dummy, act_scale;
  fm::MoeTensors t;
};

DeviceLayer upload(const fm::testing::LayerData& d) {
  DeviceLayer g;
  const fm::MoeProblem& p = d.problem;
  g.x = to_device(d.x);
  g.logits = p.router.logits_dtype == fm::DType::kBFloat16 ? to_device(d.logits_bf16) : to_device(d.logits_f32);
  g.bias = to_device(d.correction_bias);
  g.token_ids = to_device(d.token_ids);
  g.hash_table = to_device(d.hash_table);
  g.topk_ids = to_device(d.topk_ids);
  g.topk_weights = to_device(d.topk_weights);
  g.expert_map = to_device(d.expert_map);
  g.dummy.resize(256);
  g.act_scale = to_device(std::vector<float>{d.act_scale, d.act2_scale});
  fm::MoeTensors& t = g.t;
  t.x = g.x.get();
  t.router_logits = d.logits_f32.empty() ? nullptr : g.logits.get();
  t.correction_bias = d.correction_bias.empty() ? nullptr : g.bias.as<float>();
  t.token_ids = d.token_ids.empty() ? nullptr : g.token_ids.as<int64_t>();
  t.hash_table = d.hash_table.empty() ? nullptr : g.hash_table.as<int32_t>();
  t.hash_vocab = d.host_tensors().hash_vocab;
  t.topk_ids = d.topk_ids.empty() ? nullptr : g.topk_ids.as<int32_t>();
  t.topk_weights = d.topk_weights.empty() ? nullptr : g.topk_weights.as<float>();
  t.expert_map = g.expert_map.as<int32_t>();
  t.w1 = t.w2 = t.w1_scale = t.w2_scale = g.dummy.get();
  t.b1 = t.b2 = g.dummy.as<float>();
  t.act_scale = g.act_scale.as<float>();
  t.act2_scale = g.act_scale.as<float>() + 1;
  t.out = g.dummy.get();
  return g;
}

struct Case {
  std::string preset;
  int64_t tokens;
  fm::testing::Skew skew = fm::testing::Skew::kUniform;
  bool fold_map = false;  // expert map e -> e % local: every expert local, several per slot
  int64_t max_tokens = 0;  // the workspace's bound when above `tokens` (0: the same)
};

// Whether dispatch() should take the fused front kernel (kernels/front/front_launch.h).
bool expect_fused(const fm::MoeProblem& p, bool permute, bool fuse) {
  const fm::RouterKind k = p.router.kind;
  const bool row_router = k == fm::RouterKind::kSoftmaxTopK || k == fm::RouterKind::kBiasedTopK ||
                          k == fm::RouterKind::kTopKSoftmax || k == fm::RouterKind::kSigmoidTop1;
  (void)permute;  // route + plan fuse in both layouts; only the quantisation may run apart
  return fuse && (row_router || k == fm::RouterKind::kPrecomputed) && p.num_tokens >= 1 && p.num_tokens <= 256 &&
         p.num_tokens * p.slots_per_token() <= 256 * 17;
}

// Checks a dispatch result against the reference for p.num_tokens tokens of d (d may hold more).
void verify_dispatch(const fm::MoeProblem& p, const fm::testing::LayerData& d, const fm::DispatchResult& r, bool permute,
                     int tile_m) {
  const Case c{"", p.num_tokens};
  fm::ref::Routing rr;
  ASSERT_TRUE(fm::ref::route(p, d.host_tensors(), &rr).ok());
  const size_t tk = static_cast<size_t>(c.tokens) * p.top_k();
  ASSERT_EQ(to_host<int32_t>(r.topk_ids, tk), rr.ids);
  const auto w = to_host<float>(r.topk_weights, tk);
  for (size_t i = 0; i < tk; ++i) ASSERT_NEAR(w[i], rr.weights[i], 1e-6f * std::max(1.f, std::fabs(rr.weights[i]))) << i;

  const fm::ref::DispatchPlan plan = fm::ref::plan_dispatch(p, rr, p.num_local_experts >= 0 ? d.expert_map.data() : nullptr, tile_m);
  const int groups = p.weight_experts();
  ASSERT_EQ(r.num_groups, groups);
  ASSERT_EQ(to_host<int32_t>(r.counts, groups), plan.counts);
  const auto off = to_host<int32_t>(r.offsets, groups + 1);
  const auto poff = to_host<int32_t>(r.padded_offsets, groups + 1);
  for (int e = 0; e <= groups; ++e) {
    ASSERT_EQ(off[e], plan.offsets[e]) << e;
    ASSERT_EQ(poff[e], plan.padded_offsets[e]) << e;
  }
  const size_t rows = static_cast<size_t>(plan.num_rows());
  ASSERT_EQ(to_host<int32_t>(r.row_token, rows), plan.row_token);
  ASSERT_EQ(to_host<int32_t>(r.row_slot, rows), plan.row_slot);
  ASSERT_EQ(to_host<int32_t>(r.slot_row, static_cast<size_t>(c.tokens) * p.slots_per_token()), plan.slot_row);

  // Activations: every (token, slot) row where the layout puts it, bit-identical.
  const int kdim = p.hidden;
  const bool fp8 = p.quant.act != fm::ActQuant::kNone;
  const size_t esz = fp8 ? 1 : 2;
  const auto act = to_host<uint8_t>(r.act, static_cast<size_t>(r.act_rows) * kdim * esz);
  const int64_t rows4 = (r.act_rows + 3) / 4 * 4;
  const int kgroups = kdim / 128;
  // 1x128 scales in row order [K/128][rows4], or (DispatchOptions::group_scales_by_token) in token
  // order [T][stride], each token's once
  const bool by_token = r.act_scales_by_token != nullptr;
  if (by_token) {
    EXPECT_EQ(r.act_scales, nullptr);
    ASSERT_GE(r.act_scales_token_stride, kgroups);
  }
  std::vector<float> scales;
  if (fp8 && p.quant.act == fm::ActQuant::kGroup128)
    scales = by_token ? to_host<float>(r.act_scales_by_token, static_cast<size_t>(c.tokens) * r.act_scales_token_stride)
                      : to_host<float>(r.act_scales, static_cast<size_t>(kgroups) * rows4);
  std::vector<float> xrow(kdim);
  std::vector<uint8_t> q(kdim);
  std::vector<float> qs(kgroups > 0 ? kgroups : 1);
  for (int64_t tok = 0; tok < c.tokens; ++tok) {
    for (int j = 0; j < kdim; ++j) xrow[j] = fm::ref::bf16_to_float(d.x[tok * kdim + j]);
    if (fp8) fm::ref::quantize_fp8_groups(xrow.data(), 1, kdim, 128, p.quant.act_scale_format, q.data(), qs.data());
    for (int s = 0; s < p.slots_per_token(); ++s) {
      int64_t out_row = tok;
      if (permute) {
        const int32_t row = plan.slot_row[tok * p.slots_per_token() + s];
        if (row < 0) continue;
        int grp = 0;
        while (plan.offsets[grp + 1] <= row) ++grp;
        out_row = plan.padded_offsets[grp] + (row - plan.offsets[grp]);
      } else if (s > 0) {
        break;
      }
      ASSERT_LT(out_row, r.act_rows);
      if (fp8) {
        ASSERT_EQ(0, std::memcmp(act.data() + out_row * kdim, q.data(), kdim)) << "token " << tok << " slot " << s;
        for (int gk = 0; gk < kgroups; ++gk) {
          const size_t at = by_token ? static_cast<size_t>(tok) * r.act_scales_token_stride + gk
                                     : static_cast<size_t>(gk) * rows4 + out_row;
          ASSERT_EQ(scales[at], qs[gk]) << "token " << tok << " group " << gk;
        }
      } else if (p.router.weight_on_input && s < p.top_k()) {
        // Llama-4: the routed rows carry x * w (float32 product, rounded once to bf16).
        const float wt = rr.weights[tok * p.top_k() + s];
        for (int j = 0; j < kdim; ++j) {
          uint16_t got;
          std::memcpy(&got, act.data() + (out_row * kdim + j) * 2, 2);
          ASSERT_EQ(got, fm::ref::float_to_bf16(xrow[j] * wt)) << "token " << tok << " col " << j;
        }
      } else {
        ASSERT_EQ(0, std::memcmp(act.data() + out_row * kdim * 2, d.x.data() + tok * kdim, kdim * 2)) << "token " << tok;
      }
    }
  }
}

// dispatch() twice, each on a fresh poisoned workspace: the fused front (a: must fuse, report no
// device error) and the separate kernels (b). What both compute must be equal, bit for bit: ids,
// weights, counts, padded offsets, slot -> row and the rows' tokens and slots. The callers compare
// what else their case writes (activations, scales) and wrap the call in ASSERT_NO_FATAL_FAILURE.
struct FusedAndSeparate {
  DeviceBuffer ws_a, ws_b;
  fm::DispatchResult a, b;
};
void dispatch_fused_and_separate(const fm::MoeProblem& p, const DeviceLayer& g, fm::DispatchOptions o,
                                 FusedAndSeparate* r) {
  size_t bytes = 0;
  ASSERT_TRUE(fm::workspace_size(p, &bytes).ok());
  r->ws_a.resize(bytes);
  r->ws_b.resize(bytes);
  r->ws_a.poison();
  r->ws_b.poison();
  o.fuse_front = true;
  ASSERT_TRUE(fm::dispatch(p, g.t, r->ws_a.get(), bytes, nullptr, o, &r->a).ok());
  o.fuse_front = false;
  ASSERT_TRUE(fm::dispatch(p, g.t, r->ws_b.get(), bytes, nullptr, o, &r->b).ok());
  FM_CUDA_CHECK(cudaDeviceSynchronize());
  ASSERT_TRUE(fm::check_device_errors(p, r->ws_a.get(), nullptr).ok());
  ASSERT_TRUE(r->a.fused_front);
  ASSERT_FALSE(r->b.fused_front);
  const fm::DispatchResult &a = r->a, &b = r->b;
  const size_t tk = static_cast<size_t>(p.num_tokens) * p.top_k();
  const size_t ts = static_cast<size_t>(p.num_tokens) * p.slots_per_token();
  const int groups = a.num_groups;
  ASSERT_EQ(groups, b.num_groups);
  EXPECT_EQ(to_host<int32_t>(a.topk_ids, tk), to_host<int32_t>(b.topk_ids, tk));
  EXPECT_EQ(to_host<uint32_t>(a.topk_weights, tk), to_host<uint32_t>(b.topk_weights, tk));
  EXPECT_EQ(to_host<int32_t>(a.counts, groups), to_host<int32_t>(b.counts, groups));
  const auto off = to_host<int32_t>(a.offsets, groups + 1);
  EXPECT_EQ(off, to_host<int32_t>(b.offsets, groups + 1));
  EXPECT_EQ(to_host<int32_t>(a.padded_offsets, groups + 1), to_host<int32_t>(b.padded_offsets, groups + 1));
  EXPECT_EQ(to_host<int32_t>(a.slot_row, ts), to_host<int32_t>(b.slot_row, ts));
  const size_t rows = static_cast<size_t>(off[groups]);
  EXPECT_EQ(to_host<int32_t>(a.row_token, rows), to_host<int32_t>(b.row_token, rows));
  EXPECT_EQ(to_host<int32_t>(a.row_slot, rows), to_host<int32_t>(b.row_slot, rows));
}

// Layer data `d` of a precomputed-ids problem through the fused front and the separate kernels
// (equal, dispatch_fused_and_separate), the fused result against the reference.
void check_fused_precomputed(const fm::MoeProblem& p, const fm::testing::LayerData& d, bool permute) {
  DeviceLayer g = upload(d);
  fm::DispatchOptions o;
  o.permute = permute;
  o.tile_m = permute ? 64 : 1;
  FusedAndSeparate r;
  ASSERT_NO_FATAL_FAILURE(dispatch_fused_and_separate(p, g, o, &r));
  verify_dispatch(p, d, r.a, permute, o.tile_m);
}

void check_dispatch(const Case& c, bool permute, int tile_m, bool fuse = true, bool scales_by_token = false) {
  const uint64_t seed = fm::gputest::test_seed();
  SCOPED_TRACE(c.preset + " T=" + std::to_string(c.tokens) + " permute=" + std::to_string(permute) +
               " tile_m=" + std::to_string(tile_m) + " fuse=" + std::to_string(fuse) +
               " scales_by_token=" + std::to_string(scales_by_token) + " seed=" + std::to_string(seed));
  fm::MoeProblem p = fm::find_preset(c.preset)->problem;
  p.num_tokens = p.max_tokens = c.tokens;
  fm::testing::LayerData d;
  std::string why;
  ASSERT_TRUE(fm::testing::make_layer_data(p, seed, c.skew, &d, &why, false)) << why;
  p.max_tokens = std::max(c.tokens, c.max_tokens);  // the workspace is sized for the bound
  if (c.fold_map) {
    ASSERT_GT(p.num_local_experts, 0);
    for (size_t e = 0; e < d.expert_map.size(); ++e) d.expert_map[e] = static_cast<int32_t>(e % p.num_local_experts);
  }
  DeviceLayer g = upload(d);
  size_t bytes = 0;
  ASSERT_TRUE(fm::workspace_size(p, &bytes).ok());
  DeviceBuffer ws(bytes);
  ws.poison();
  fm::DispatchOptions o;
  o.permute = permute;
  o.tile_m = tile_m;
  o.fuse_front = fuse;
  o.group_scales_by_token = scales_by_token;
  fm::DispatchResult r;
  const fm::Status st = fm::dispatch(p, g.t, ws.get(), bytes, nullptr, o, &r);
  ASSERT_TRUE(st.ok()) << st.to_string();
  FM_CUDA_CHECK(cudaDeviceSynchronize());
  ASSERT_TRUE(fm::check_device_errors(p, ws.get(), nullptr).ok());
  EXPECT_EQ(r.fused_front, expect_fused(p, permute, fuse));
  verify_dispatch(p, d, r, permute, tile_m);
}

}  // namespace

TEST(DispatchApi, DeepSeekV3Fp8BlockPermuted) {
  for (int64_t t : {1, 3, 64, 255, 1000, 4096}) check_dispatch({"dsv3-tp8", t}, true, 128);
  check_dispatch({"dsv3-tp8", 4096, fm::testing::Skew::kOneHot}, true, 64);
  check_dispatch({"dsv3-tp8", 1000, fm::testing::Skew::kZipf}, true, 1);
  // the 1x128 scales kept in token order (forward()'s FP8 path): small and staged sizes, a hot
  // expert, a workspace bound above the count; token order (permute off) ignores the option
  for (int64_t t : {1, 17, 255, 4096}) check_dispatch({"dsv3-tp8", t}, true, 128, true, true);
  check_dispatch({"dsv3-tp8", 1000, fm::testing::Skew::kOneHot, false, 3000}, true, 64, true, true);
  check_dispatch({"dsv4f-tp4", 77}, true, 128, true, true);  // UE8M0 scales
  check_dispatch({"dsv3-tp8", 64}, false, 128, true, true);
}

TEST(DispatchApi, QwenBf16GatherAndPermuted) {
  for (int64_t t : {1, 17, 256, 16384}) check_dispatch({"qwen235-tp8", t}, false, 128);
  check_dispatch({"qwen235-tp8", 300, fm::testing::Skew::kZipf}, true, 64);
}

TEST(DispatchApi, SharedExpertExpertMapAndOtherRouters) {
  check_dispatch({"qwen3next-tp1", 200}, true, 128);   // shared expert, E512 k10
  check_dispatch({"dsv3-ep8", 513}, true, 128);        // expert map, 32 of 256 local
  check_dispatch({"dsv4f-tp4", 77}, true, 128);        // sqrt-softplus, UE8M0 group scales
  check_dispatch({"gptoss-tp1", 65}, false, 128);      // top-k then softmax
  check_dispatch({"llama4-scout", 33}, true, 8);       // sigmoid top-1 on the input + shared
  check_dispatch({"kimi-k2-tp8", 129}, true, 128);     // E384
}

TEST(DispatchApi, GraphCaptureReplaysTheSameResult) {
  fm::MoeProblem p = fm::find_preset("dsv3-tp8")->problem;
  for (int64_t t : {1, 16, 256, 2048}) {
    p.num_tokens = p.max_tokens = t;
    fm::testing::LayerData d;
    ASSERT_TRUE(fm::testing::make_layer_data(p, fm::gputest::test_seed(), fm::testing::Skew::kUniform, &d, nullptr, false));
    DeviceLayer g = upload(d);
    size_t bytes = 0;
    ASSERT_TRUE(fm::workspace_size(p, &bytes).ok());
    DeviceBuffer ws(bytes);
    cudaStream_t s;
    FM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    fm::DispatchResult r;
    ASSERT_TRUE(fm::dispatch(p, g.t, ws.get(), bytes, s, {}, &r).ok());
    FM_CUDA_CHECK(cudaStreamSynchronize(s));
    const size_t n = static_cast<size_t>(r.act_rows) * p.hidden;
    const auto rows0 = to_host<int32_t>(r.slot_row, static_cast<size_t>(t) * p.slots_per_token());
    // Only rows the layout fills are compared: tile padding stays untouched (poisoned below).
    const int groups = r.num_groups;
    const auto off = to_host<int32_t>(r.offsets, groups + 1);
    const auto poff = to_host<int32_t>(r.padded_offsets, groups + 1);
    auto valid_rows = [&](const std::vector<uint8_t>& act) {
      std::vector<uint8_t> v;
      for (int g = 0; g < groups; ++g)
        for (int64_t i = 0; i < off[g + 1] - off[g]; ++i) {
          const uint8_t* row = act.data() + (poff[g] + i) * p.hidden;
          v.insert(v.end(), row, row + p.hidden);
        }
      return v;
    };
    const auto act0 = valid_rows(to_host<uint8_t>(r.act, n));
    ws.poison();
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    FM_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    const fm::Status st = fm::dispatch(p, g.t, ws.get(), bytes, s, {}, &r);
    FM_CUDA_CHECK(cudaStreamEndCapture(s, &graph));
    ASSERT_TRUE(st.ok()) << st.to_string();
    FM_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int rep = 0; rep < 3; ++rep) FM_CUDA_CHECK(cudaGraphLaunch(exec, s));
    FM_CUDA_CHECK(cudaStreamSynchronize(s));
    EXPECT_EQ(to_host<int32_t>(r.slot_row, rows0.size()), rows0) << "T=" << t;
    EXPECT_EQ(valid_rows(to_host<uint8_t>(r.act, n)), act0) << "T=" << t;
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(s);
  }
}

// Bad precomputed ids: reported, never written; the separate kernels (300 tokens) and the fused
// front (up to 256 tokens: one routing block up to 16, a cluster of blocks at 50, a cooperative
// grid at 200; the first bad id in (token, slot) order is the one reported).
TEST(DispatchApi, PrecomputedIdsOutOfRangeAreReportedNotWritten) {
  for (int64_t t : {300, 200, 50, 16, 5, 1}) {
    SCOPED_TRACE("T=" + std::to_string(t));
    fm::MoeProblem p = fm::find_preset("qwen235-tp8")->problem;
    p.router = fm::RouterConfig::precomputed(8);
    p.num_tokens = p.max_tokens = t;
    fm::testing::LayerData d;
    ASSERT_TRUE(fm::testing::make_layer_data(p, fm::gputest::test_seed(), fm::testing::Skew::kUniform, &d, nullptr, false));
    const int64_t a = std::min<int64_t>(7, t - 1) * 8 + 3, b = std::min<int64_t>(20, t - 1) * 8 + 0;
    d.topk_ids[a] = 128;   // == E
    d.topk_ids[b] = 5000;  // far out
    DeviceLayer g = upload(d);
    size_t bytes = 0;
    ASSERT_TRUE(fm::workspace_size(p, &bytes).ok());
    DeviceBuffer ws(bytes);
    ws.poison();
    fm::DispatchResult r;
    ASSERT_TRUE(fm::dispatch(p, g.t, ws.get(), bytes, nullptr, {}, &r).ok());
    EXPECT_EQ(r.fused_front, t <= 256);
    const fm::Status st = fm::check_device_errors(p, ws.get(), nullptr);
    EXPECT_EQ(st.code(), fm::StatusCode::kOutOfRange) << st.to_string();
    EXPECT_NE(st.message().find("outside [0, 128)"), std::string::npos) << st.message();
    if (t <= 256) {  // the first in (token, slot) order
      const int64_t first = std::min(a, b);
      EXPECT_NE(st.message().find(a < b ? "routing id 128 " : "routing id 5000 "), std::string::npos) << st.message();
      EXPECT_NE(st.message().find("at token " + std::to_string(first / 8) + ", slot " + std::to_string(first % 8)),
                std::string::npos)
          << st.message();
    }
    const auto slot_row = to_host<int32_t>(r.slot_row, t * 8);
    EXPECT_EQ(slot_row[a], -1);
    EXPECT_EQ(slot_row[b], -1);
    const auto ids = to_host<int32_t>(r.topk_ids, t * 8);
    const auto w = to_host<float>(r.topk_weights, t * 8);
    EXPECT_EQ(ids[a], -1);
    EXPECT_EQ(ids[b], -1);
    EXPECT_EQ(w[a], 0.f);
    EXPECT_EQ(w[b], 0.f);
    const auto counts = to_host<int32_t>(r.counts, 128);
    int total = 0;
    for (int c : counts) total += c;
    EXPECT_EQ(total, t * 8 - (a == b ? 1 : 2));
  }
}

// Precomputed ids read from the output ids of an earlier call (the same workspace buffer): the
// fused front (3, 16, 50, 200 tokens) and the separate kernels (300) overwrite them with the
// sanitised ids, yet the error names the id as the caller gave it.
TEST(DispatchApi, PrecomputedIdsAliasingTheOutputIds) {
  for (int64_t t : {16, 3, 50, 200, 300}) {
    SCOPED_TRACE("T=" + std::to_string(t));
    fm::MoeProblem p = fm::find_preset("qwen235-tp8")->problem;
    p.router = fm::RouterConfig::precomputed(8);
    p.num_tokens = p.max_tokens = t;
    fm::testing::LayerData d;
    ASSERT_TRUE(fm::testing::make_layer_data(p, fm::gputest::test_seed(), fm::testing::Skew::kUniform, &d, nullptr, false));
    DeviceLayer g = upload(d);
    size_t bytes = 0;
    ASSERT_TRUE(fm::workspace_size(p, &bytes).ok());
    DeviceBuffer ws(bytes);
    ws.poison();
    fm::DispatchResult r;
    ASSERT_TRUE(fm::dispatch(p, g.t, ws.get(), bytes, nullptr, {}, &r).ok());
    ASSERT_TRUE(fm::check_device_errors(p, ws.get(), nullptr).ok());
    // the ids again, one out of range, written into the output ids; then dispatched from there
    std::vector<int32_t> ids = d.topk_ids;
    const int64_t a = (t - 1) * 8 + 5;
    ids[a] = 131;
    ASSERT_EQ(cudaMemcpy(const_cast<int32_t*>(r.topk_ids), ids.data(), ids.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    fm::MoeTensors tt = g.t;
    tt.topk_ids = r.topk_ids;
    fm::DispatchResult r2;
    ASSERT_TRUE(fm::dispatch(p, tt, ws.get(), bytes, nullptr, {}, &r2).ok());
    EXPECT_EQ(r2.topk_ids, r.topk_ids);
    EXPECT_EQ(r2.fused_front, t <= 256);
    const fm::Status st = fm::check_device_errors(p, ws.get(), nullptr);
    EXPECT_EQ(st.code(), fm::StatusCode::kOutOfRange) << st.to_string();
    EXPECT_NE(st.message().find("routing id 131 "), std::string::npos) << st.message();
    const auto out = to_host<int32_t>(r2.topk_ids, t * 8);
    EXPECT_EQ(out[a], -1);
    for (int64_t i = 0; i < t * 8; ++i)
      if (i != a) EXPECT_EQ(out[i], d.topk_ids[i]) << i;
  }
}

// Precomputed ids through the fused front (one routing block up to 16 tokens, a cluster of blocks
// at 17-72, a cooperative grid above): exact against the reference in both layouts, with and
// without renormalisation and scaling, a shared expert and an expert map; ids, weights (bits),
// counts and row maps equal to the separate kernels'.
TEST(DispatchApi, FusedFrontPrecomputedIds) {
  struct V {
    const char* preset;
    bool renormalize;
    float scaling;
  };
  for (const V& v : {V{"qwen235-tp8", false, 1.f}, V{"dsv3-tp8", true, 2.5f}, V{"dsv3-ep8", true, 1.f},
                     V{"mixtral-tp2", true, 1.f}, V{"qwen3next-tp1", true, 1.f}})  // (k = 10 + a shared expert)
    for (int64_t t : {1, 2, 3, 9, 16, 17, 48, 49, 73, 129, 256})
      for (bool permute : {false, true}) {
        const uint64_t seed = fm::gputest::test_seed();
        SCOPED_TRACE(std::string(v.preset) + " T=" + std::to_string(t) + " permute=" + std::to_string(permute) +
                     " seed=" + std::to_string(seed));
        fm::MoeProblem p = fm::find_preset(v.preset)->problem;
        p.router = fm::RouterConfig::precomputed(p.top_k());
        p.router.renormalize = v.renormalize;
        p.router.routed_scaling = v.scaling;
        p.num_tokens = p.max_tokens = t;
        fm::testing::LayerData d;
        std::string why;
        ASSERT_TRUE(fm::testing::make_layer_data(p, seed, fm::testing::Skew::kUniform, &d, &why, false)) << why;
        ASSERT_NO_FATAL_FAILURE(check_fused_precomputed(p, d, permute));
      }
}

// A token that names one expert twice (precomputed ids): the plan's fallback for duplicates, the
// fused front against the separate kernels and the reference.
TEST(DispatchApi, FusedFrontPrecomputedDuplicateIds) {
  for (int64_t t : {1, 5, 16, 40, 200})
    for (bool permute : {false, true}) {
      const uint64_t seed = fm::gputest::test_seed();
      SCOPED_TRACE("T=" + std::to_string(t) + " permute=" + std::to_string(permute) + " seed=" + std::to_string(seed));
      fm::MoeProblem p = fm::find_preset("qwen235-tp8")->problem;
      p.router = fm::RouterConfig::precomputed(8);
      p.num_tokens = p.max_tokens = t;
      fm::testing::LayerData d;
      ASSERT_TRUE(fm::testing::make_layer_data(p, seed, fm::testing::Skew::kUniform, &d, nullptr, false));
      const int64_t last = (t - 1) * 8;
      d.topk_ids[1] = d.topk_ids[0];            // token 0: slots 0 and 1 on one expert
      d.topk_ids[last + 7] = d.topk_ids[last + 3];  // the last token: slots 3 and 7
      ASSERT_NO_FATAL_FAILURE(check_fused_precomputed(p, d, permute));
    }
}

// One bound of DeviceTokenCountPrecomputedFusedFront: an id out of range at token `bad`, slot 2.
static void device_count_precomputed(int64_t bound, int64_t bad, const std::vector<int64_t>& counts) {
  fm::MoeProblem p = fm::find_preset("qwen235-tp8")->problem;
  p.router = fm::RouterConfig::precomputed(8);
  p.num_tokens = p.max_tokens = bound;
  const uint64_t seed = fm::gputest::test_seed();
  SCOPED_TRACE("bound " + std::to_string(bound) + " seed=" + std::to_string(seed));
  fm::testing::LayerData d;
  ASSERT_TRUE(fm::testing::make_layer_data(p, seed, fm::testing::Skew::kUniform, &d, nullptr, false));
  d.topk_ids[bad * 8 + 2] = 128;
  DeviceLayer g = upload(d);
  DeviceBuffer count(4);
  g.t.num_tokens_device = count.as<int32_t>();
  size_t bytes = 0;
  ASSERT_TRUE(fm::workspace_size(p, &bytes).ok());
  DeviceBuffer ws(bytes);
  cudaStream_t s;
  FM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  fm::DispatchOptions o;
  o.permute = false;  // token order (forward()'s gathered rows)
  o.tile_m = 1;
  fm::DispatchResult r;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  FM_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  const fm::Status st = fm::dispatch(p, g.t, ws.get(), bytes, s, o, &r);
  FM_CUDA_CHECK(cudaStreamEndCapture(s, &graph));
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_TRUE(r.fused_front);
  FM_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int64_t c : counts) {
    SCOPED_TRACE("device count " + std::to_string(c));
    const int32_t c32 = static_cast<int32_t>(c);
    ws.poison();
    FM_CUDA_CHECK(cudaDeviceSynchronize());  // poison runs on the legacy stream
    FM_CUDA_CHECK(cudaMemcpyAsync(count.get(), &c32, 4, cudaMemcpyHostToDevice, s));
    FM_CUDA_CHECK(cudaGraphLaunch(exec, s));
    FM_CUDA_CHECK(cudaStreamSynchronize(s));
    const fm::Status e = fm::check_device_errors(p, ws.get(), s);
    if (c <= bad) {
      ASSERT_TRUE(e.ok()) << e.to_string();
      fm::MoeProblem pc = p;
      pc.num_tokens = c;
      if (c > 0) verify_dispatch(pc, d, r, false, o.tile_m);
      else EXPECT_EQ(to_host<int32_t>(r.offsets, r.num_groups + 1).back(), 0);
    } else {
      EXPECT_EQ(e.code(), fm::StatusCode::kOutOfRange) << e.to_string();
      EXPECT_NE(e.message().find("routing id 128 at token " + std::to_string(bad) + ", slot 2"), std::string::npos)
          << e.message();
    }
    if (::testing::Test::HasFatalFailure()) break;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
}

// Precomputed ids in the fused front with the token count read on the device (one graph per bound:
// 16, one routing block; 64, a cluster of blocks; 200, a cooperative grid): an id out of range at
// token `bad` is reported only when the count reaches it.
TEST(DispatchApi, DeviceTokenCountPrecomputedFusedFront) {
  struct B {
    int64_t bound, bad;
    std::vector<int64_t> counts;
  };
  const std::vector<B> bounds = {B{16, 12, {12, 1, 0, 5, 13, 16}}, B{64, 37, {37, 1, 0, 20, 38, 64}},
                                 B{200, 150, {150, 1, 0, 99, 151, 200}}};
  for (const B& b : bounds) ASSERT_NO_FATAL_FAILURE(device_count_precomputed(b.bound, b.bad, b.counts));
}

TEST(CombineApi, WithinOneBf16UlpAndDeterministic) {
  for (const char* preset : {"dsv3-tp8", "qwen3next-tp1", "llama4-scout"}) {
    fm::MoeProblem p = fm::find_preset(preset)->problem;
    p.hidden = std::min(p.hidden, 2048);
    p.num_tokens = p.max_tokens = 777;
    const uint64_t seed = fm::gputest::test_seed();
    SCOPED_TRACE(std::string(preset) + " seed=" + std::to_string(seed));
    fm::testing::LayerData d;
    ASSERT_TRUE(fm::testing::make_layer_data(p, seed, fm::testing::Skew::kUniform, &d, nullptr, false));
    DeviceLayer g = upload(d);
    size_t bytes = 0;
    ASSERT_TRUE(fm::workspace_size(p, &bytes).ok());
    DeviceBuffer ws(bytes);
    fm::DispatchResult r;
    ASSERT_TRUE(fm::dispatch(p, g.t, ws.get(), bytes, nullptr, {}, &r).ok());
    FM_CUDA_CHECK(cudaDeviceSynchronize());
    const int slots = p.slots_per_token(), k = p.top_k(), kdim = p.hidden;
    const auto slot_row = to_host<int32_t>(r.slot_row, static_cast<size_t>(p.num_tokens) * slots);
    const auto wts = to_host<float>(r.topk_weights, static_cast<size_t>(p.num_tokens) * k);
    int rows = 0;
    for (int v : slot_row) rows = std::max(rows, v + 1);
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<uint16_t> eo(static_cast<size_t>(rows) * kdim);
    for (auto& v : eo) v = fm::ref::float_to_bf16(nd(rng));
    DeviceBuffer eo_d = to_device(eo), out(static_cast<size_t>(p.num_tokens) * kdim * 2);
    std::vector<uint16_t> first;
    for (int rep = 0; rep < 10; ++rep) {
      out.poison();
      ASSERT_TRUE(fm::combine(p, r, eo_d.get(), out.get(), 0, nullptr).ok());
      const auto got = to_host<uint16_t>(out.get(), static_cast<size_t>(p.num_tokens) * kdim);
      if (rep == 0) first = got;
      else ASSERT_EQ(got, first) << "combine is not deterministic";
    }
    for (int64_t t = 0; t < p.num_tokens; ++t)
      for (int j = 0; j < kdim; ++j) {
        double ref = 0.0;
        for (int s = 0; s < slots; ++s) {
          const int row = slot_row[t * slots + s];
          if (row < 0) continue;
          const double w = s < k ? (p.router.weight_on_input ? 1.0 : wts[t * k + s]) : p.shared_expert_scale;
          ref += w * fm::ref::bf16_to_float(eo[static_cast<size_t>(row) * kdim + j]);
        }
        const float got = fm::ref::bf16_to_float(first[t * kdim + j]);
        const float rb = fm::ref::bf16_to_float(fm::ref::float_to_bf16(static_cast<float>(ref)));
        int e2 = 0;
        std::frexp(rb, &e2);  // |rb| = m * 2^e2, m in [0.5, 1): bf16 ulp = 2^(e2 - 8)
        const double ulp = rb == 0.f ? 1e-30 : std::ldexp(1.0, e2 - 8);
        ASSERT_LE(std::fabs(got - ref), ulp) << "token " << t << " col " << j << " got " << got << " ref " << ref;
      }
  }
}

// The fused front kernel (route + plan (+ token-order FP8) in one launch) for every router that
// reads logits rows, every small token count, both layouts: exact against the reference.
TEST(DispatchApi, FusedFrontEveryRouterSmallTokenCounts) {
  for (const char* preset : {"dsv3-tp8", "qwen235-tp8", "dsv4f-tp4", "gptoss-tp1", "llama4-scout", "kimi-k2-tp8",
                             "qwen3next-tp1", "dsv3-ep8", "mixtral-tp2"})
    for (int64_t t : {1, 2, 3, 9, 13, 16, 17, 64, 255, 256})
      for (bool permute : {false, true}) check_dispatch({preset, t}, permute, permute ? 128 : 1);
  check_dispatch({"dsv3-tp8", 256, fm::testing::Skew::kOneHot}, true, 64);
  // One hot expert: every token's entries in one group, at the cooperative plan's block counts (248
  // tokens = 31 blocks of 8, 128 = 32 blocks of 4) and in clusters (40, 64: pushed counts).
  check_dispatch({"dsv3-tp8", 248, fm::testing::Skew::kOneHot}, true, 64);
  check_dispatch({"qwen235-tp8", 128, fm::testing::Skew::kOneHot}, false, 8);
  check_dispatch({"qwen235-tp8", 64, fm::testing::Skew::kOneHot}, false, 8);
  check_dispatch({"dsv3-tp8", 40, fm::testing::Skew::kOneHot}, true, 128);
  check_dispatch({"qwen235-tp8", 200, fm::testing::Skew::kZipf}, false, 8);
  check_dispatch({"dsv3-tp8", 100}, false, 128, /*fuse=*/false);  // the separate kernels, forced
  // An expert map sending several experts to one local slot: a token may reach a group twice, and
  // the fused front's plans (one routing block up to 16 tokens, several above) hand over to the general
  // single-block plan.
  for (int64_t t : {1, 5, 9, 16, 17, 32, 33, 70, 200}) check_dispatch({"dsv3-ep8", t, fm::testing::Skew::kUniform, true}, true, 64);
  // Clusters above 8 blocks (non-portable sizes, where the GPU has them): 45 tokens = 12 blocks of
  // 4, 70 = 9 blocks of 8.
  check_dispatch({"qwen235-tp8", 45}, false, 8);
  check_dispatch({"dsv3-tp8", 70}, true, 128);
  // A workspace sized for more tokens than the fused path takes: a call of 100 still fuses (the
  // front's block masks are reserved for every bound from 2 tokens).
  check_dispatch({"qwen235-tp8", 100, fm::testing::Skew::kUniform, false, 1000}, false, 1);
  check_dispatch({"dsv3-tp8", 40, fm::testing::Skew::kUniform, false, 5000}, true, 128);
}

// The cooperative front over many calls on one workspace that is never cleared between them: any
// first content (memset patterns), token counts that leave earlier launches' masks of more blocks
// behind in the scratch (256 -> 80 -> 200 ...); every call exact against the reference (graph
// replays of such counts: DeviceTokenCountOneGraphServesEveryCount). (Written for the tagged
// exchange, branch wip/tagged-exchange; it holds for the grid barrier as well.)
TEST(DispatchApi, FusedFrontAcrossCallsOnOneWorkspace) {
  for (const char* preset : {"qwen235-tp8", "dsv3-tp8"}) {
    fm::MoeProblem p = fm::find_preset(preset)->problem;
    p.num_tokens = p.max_tokens = 256;
    const uint64_t seed = fm::gputest::test_seed();
    SCOPED_TRACE(std::string(preset) + " seed=" + std::to_string(seed));
    fm::testing::LayerData d;
    ASSERT_TRUE(fm::testing::make_layer_data(p, seed, fm::testing::Skew::kUniform, &d, nullptr, false));
    DeviceLayer g = upload(d);
    size_t bytes = 0;
    ASSERT_TRUE(fm::workspace_size(p, &bytes).ok());
    DeviceBuffer ws(bytes);
    fm::DispatchOptions o;
    o.permute = false;
    o.tile_m = 8;
    for (int fill : {0x00, 0xFF, 0xA5}) {
      SCOPED_TRACE("workspace filled with " + std::to_string(fill));
      ws.poison(static_cast<uint8_t>(fill));
      for (int64_t c : {256, 80, 200, 256, 73, 129, 256, 100}) {
        SCOPED_TRACE("tokens " + std::to_string(c));
        fm::MoeProblem pc = p;
        pc.num_tokens = c;
        fm::DispatchResult r;
        ASSERT_TRUE(fm::dispatch(pc, g.t, ws.get(), bytes, nullptr, o, &r).ok());
        FM_CUDA_CHECK(cudaDeviceSynchronize());
        ASSERT_TRUE(r.fused_front);
        ASSERT_TRUE(fm::check_device_errors(pc, ws.get(), nullptr).ok());
        verify_dispatch(pc, d, r, false, o.tile_m);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// Fused and separate kernels give the same bytes for the other token-order quantisers
// (per-token, static per-tensor, f16 input) and bf16 / f32 logits.
TEST(DispatchApi, FusedFrontMatchesSeparateKernelsBitwise) {
  struct Q {
    fm::QuantScheme q;
    fm::DType act;
    fm::DType logits;
  };
  const std::vector<Q> schemes = {{fm::QuantScheme::fp8_per_channel(), fm::DType::kBFloat16, fm::DType::kFloat32},
                                  {fm::QuantScheme::fp8_per_tensor(false), fm::DType::kBFloat16, fm::DType::kBFloat16},
                                  {fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0), fm::DType::kFloat16,
                                   fm::DType::kFloat32}};
  // Block FP8 needs N % 128 == 0: qwen235-tp8 (N 192) with N 256 for that scheme.
  for (const Q& q : schemes)
    for (int64_t t : {1, 7, 9, 16, 17, 100, 256}) {
      fm::MoeProblem p = fm::find_preset("qwen235-tp8")->problem;
      p.quant = q.q;
      if (q.q.act == fm::ActQuant::kGroup128) p.intermediate = 256;
      p.act_dtype = q.act;
      p.router.logits_dtype = q.logits;
      p.num_tokens = p.max_tokens = t;
      const uint64_t seed = fm::gputest::test_seed();
      SCOPED_TRACE(std::string(fm::to_string(q.q.act)) + " T=" + std::to_string(t) + " seed=" + std::to_string(seed));
      fm::testing::LayerData d;
      std::string why;
      ASSERT_TRUE(fm::testing::make_layer_data(p, seed, fm::testing::Skew::kUniform, &d, &why, false)) << why;
      DeviceLayer g = upload(d);
      fm::DispatchOptions o;
      o.permute = false;
      FusedAndSeparate r;
      ASSERT_NO_FATAL_FAILURE(dispatch_fused_and_separate(p, g, o, &r));
      const fm::DispatchResult &ra = r.a, &rb = r.b;
      EXPECT_EQ(to_host<uint8_t>(ra.act, static_cast<size_t>(t) * p.hidden),
                to_host<uint8_t>(rb.act, static_cast<size_t>(t) * p.hidden));
      const int64_t rows4 = (t + 3) / 4 * 4;
      const size_t nsc = q.q.act == fm::ActQuant::kGroup128 ? static_cast<size_t>(p.hidden / 128) * rows4
                         : q.q.act == fm::ActQuant::kPerToken ? static_cast<size_t>(rows4)
                                                               : 1;
      EXPECT_EQ(to_host<uint32_t>(ra.act_scales, nsc), to_host<uint32_t>(rb.act_scales, nsc));
    }
}

// One captured graph per bound: the token count is read on the device. Every count from 0 to
// the bound replays the same graph; results equal the reference for that count. Covers the
// fused front (bound 256: a cooperative launch; 40: a cluster of 5 blocks), the single-block plan (bound 900 x 9)
// and the chunked plan (4096); first on a workspace poisoned before each replay, then on one left as
// the previous replay wrote it.
TEST(DispatchApi, DeviceTokenCountOneGraphServesEveryCount) {
  struct B {
    const char* preset;
    int64_t bound;
    bool permute;
  };
  for (const B& b : {B{"dsv3-tp8", 256, false}, B{"dsv3-tp8", 256, true}, B{"qwen235-tp8", 900, true},
                     B{"dsv3-tp8", 4096, true}, B{"qwen3next-tp1", 300, true},
                     B{"qwen235-tp8", 40, false}}) {
    fm::MoeProblem p = fm::find_preset(b.preset)->problem;
    p.num_tokens = p.max_tokens = b.bound;
    const uint64_t seed = fm::gputest::test_seed();
    SCOPED_TRACE(std::string(b.preset) + " bound=" + std::to_string(b.bound) + " permute=" + std::to_string(b.permute) +
                 " seed=" + std::to_string(seed));
    fm::testing::LayerData d;
    ASSERT_TRUE(fm::testing::make_layer_data(p, seed, fm::testing::Skew::kUniform, &d, nullptr, false));
    DeviceLayer g = upload(d);
    DeviceBuffer count(4);
    g.t.num_tokens_device = count.as<int32_t>();
    size_t bytes = 0;
    ASSERT_TRUE(fm::workspace_size(p, &bytes).ok());
    DeviceBuffer ws(bytes);
    cudaStream_t s;
    FM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    fm::DispatchOptions o;
    o.permute = b.permute;
    fm::DispatchResult r;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    FM_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    const fm::Status st = fm::dispatch(p, g.t, ws.get(), bytes, s, o, &r);
    FM_CUDA_CHECK(cudaStreamEndCapture(s, &graph));
    ASSERT_TRUE(st.ok()) << st.to_string();
    FM_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int64_t c : {b.bound, int64_t{1}, int64_t{0}, b.bound / 2 + 3, int64_t{5}, b.bound - 1}) {
      SCOPED_TRACE("device count " + std::to_string(c));
      const int32_t c32 = static_cast<int32_t>(c);
      ws.poison();
      FM_CUDA_CHECK(cudaDeviceSynchronize());  // poison runs on the legacy stream
      FM_CUDA_CHECK(cudaMemcpyAsync(count.get(), &c32, 4, cudaMemcpyHostToDevice, s));
      FM_CUDA_CHECK(cudaGraphLaunch(exec, s));
      FM_CUDA_CHECK(cudaStreamSynchronize(s));
      ASSERT_TRUE(fm::check_device_errors(p, ws.get(), s).ok());
      fm::MoeProblem pc = p;
      pc.num_tokens = c;
      if (c > 0) verify_dispatch(pc, d, r, b.permute, o.tile_m);
      else EXPECT_EQ(to_host<int32_t>(r.offsets, r.num_groups + 1).back(), 0);
      if (::testing::Test::HasFatalFailure()) break;
    }
    // A device count above the bound is clamped to the bound and reported.
    const int32_t bad = static_cast<int32_t>(b.bound + 5);
    FM_CUDA_CHECK(cudaMemcpyAsync(count.get(), &bad, 4, cudaMemcpyHostToDevice, s));
    FM_CUDA_CHECK(cudaGraphLaunch(exec, s));
    const fm::Status err = fm::check_device_errors(p, ws.get(), s);
    EXPECT_EQ(err.code(), fm::StatusCode::kOutOfRange) << err.to_string();
    EXPECT_NE(err.message().find("device token count"), std::string::npos) << err.message();
    verify_dispatch(p, d, r, b.permute, o.tile_m);
    // Replays on a workspace not cleared in between: what a replay with more tokens (routing
    // blocks) left behind must not reach the next.
    for (int64_t c : {b.bound, b.bound / 3 + 1, b.bound - 1, int64_t{1}, b.bound / 2 + 7, b.bound}) {
      SCOPED_TRACE("uncleared workspace, device count " + std::to_string(c));
      const int32_t c32 = static_cast<int32_t>(c);
      FM_CUDA_CHECK(cudaMemcpyAsync(count.get(), &c32, 4, cudaMemcpyHostToDevice, s));
      FM_CUDA_CHECK(cudaGraphLaunch(exec, s));
      FM_CUDA_CHECK(cudaStreamSynchronize(s));
      ASSERT_TRUE(fm::check_device_errors(p, ws.get(), s).ok());
      fm::MoeProblem pc = p;
      pc.num_tokens = c;
      verify_dispatch(pc, d, r, b.permute, o.tile_m);
      if (::testing::Test::HasFatalFailure()) break;
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(s);
  }
}
