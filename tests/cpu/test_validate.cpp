// Every documented precondition of the API is rejected with a clear message.
#include <cstdlib>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "fusedmoe/fusedmoe.h"

namespace fm = fusedmoe;

namespace {

fm::MoeProblem base_problem() {
  fm::MoeProblem p = fm::find_preset("qwen235-tp8")->problem;
  p.num_tokens = 16;
  p.max_tokens = 64;
  return p;
}

fm::MoeProblem block_fp8_problem() {
  fm::MoeProblem p = fm::find_preset("dsv3-tp8")->problem;
  p.num_tokens = 16;
  p.max_tokens = 64;
  return p;
}

// Aligned fake device pointers: validate() never dereferences them.
alignas(256) unsigned char g_buf[4096];  // 16 aligned fake pointers
const void* ptr(int i = 0) { return g_buf + 256 * i; }

fm::MoeTensors good_tensors(const fm::MoeProblem& p) {
  fm::MoeTensors t;
  t.x = ptr(0);
  t.out = const_cast<void*>(ptr(1));
  t.router_logits = ptr(2);
  t.correction_bias = static_cast<const float*>(ptr(3));
  t.w1 = ptr(4);
  t.w2 = ptr(5);
  if (p.quant.weight.format == fm::WeightFormat::kFP8E4M3) {
    t.w1_scale = ptr(6);
    t.w2_scale = ptr(7);
    t.act_scale = static_cast<const float*>(ptr(8));
    t.act2_scale = static_cast<const float*>(ptr(9));
  }
  return t;
}

void expect_rejected(const fm::Status& st, fm::StatusCode code, const std::string& words) {
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), code) << st.to_string();
  EXPECT_NE(st.message().find(words), std::string::npos) << "message '" << st.message() << "' lacks '" << words << "'";
}

void expect_problem_rejected(std::function<void(fm::MoeProblem&)> edit, fm::StatusCode code, const std::string& words,
                             fm::MoeProblem p = base_problem()) {
  edit(p);
  expect_rejected(fm::validate(p), code, words);
  size_t bytes = 0;
  expect_rejected(fm::workspace_size(p, &bytes), code, words);
}

}  // namespace

TEST(Validate, AllPresetsAreValid) {
  for (const auto& pr : fm::presets()) {
    fm::MoeProblem p = pr.problem;
    p.num_tokens = p.max_tokens = 256;
    EXPECT_TRUE(fm::validate(p).ok()) << pr.name << ": " << fm::validate(p).to_string();
    fm::MoeTensors t = good_tensors(p);
    t.expert_map = static_cast<const int32_t*>(ptr(10));
    t.b1 = static_cast<const float*>(ptr(11));
    t.b2 = static_cast<const float*>(ptr(12));
    EXPECT_TRUE(fm::validate(p, t).ok()) << pr.name << ": " << fm::validate(p, t).to_string();
  }
}

TEST(Validate, ShapeErrors) {
  expect_problem_rejected([](auto& p) { p.num_experts = 0; }, fm::StatusCode::kInvalidArgument, "num_experts (0)");
  expect_problem_rejected([](auto& p) { p.num_experts = 1025; }, fm::StatusCode::kInvalidArgument, "num_experts (1025)");
  expect_problem_rejected([](auto& p) { p.hidden = 4100; }, fm::StatusCode::kInvalidArgument, "hidden K (4100)");
  expect_problem_rejected([](auto& p) { p.hidden = 0; }, fm::StatusCode::kInvalidArgument, "hidden K (0)");
  expect_problem_rejected([](auto& p) { p.hidden = 16392; }, fm::StatusCode::kUnsupported, "above 16384");
  expect_problem_rejected([](auto& p) { p.intermediate = 190; }, fm::StatusCode::kInvalidArgument, "intermediate N (190)");
  expect_problem_rejected([](auto& p) { p.num_tokens = -1; }, fm::StatusCode::kInvalidArgument, "num_tokens (-1)");
  expect_problem_rejected([](auto& p) { p.num_local_experts = 129; }, fm::StatusCode::kInvalidArgument, "num_local_experts");
  expect_problem_rejected([](auto& p) { p.num_shared_experts = 2; }, fm::StatusCode::kInvalidArgument, "num_shared_experts");
  expect_problem_rejected([](auto& p) { p.max_tokens = p.num_tokens = int64_t{1} << 30; }, fm::StatusCode::kInvalidArgument,
                          "too large");
}

TEST(Validate, TokensBeyondPlannedMaximum) {
  expect_problem_rejected([](auto& p) { p.num_tokens = 65; }, fm::StatusCode::kOutOfRange, "exceeds the planned max_tokens (64)");
}

TEST(Validate, RouterErrors) {
  using fm::StatusCode;
  expect_problem_rejected([](auto& p) { p.router.top_k = 0; }, StatusCode::kInvalidArgument, "top_k (0)");
  expect_problem_rejected([](auto& p) { p.router.top_k = 17; }, StatusCode::kInvalidArgument, "top_k (17)");
  expect_problem_rejected([](auto& p) { p.num_experts = 8; p.router.top_k = 9; }, StatusCode::kInvalidArgument,
                          "top_k (9) > num_experts (8)");
  expect_problem_rejected([](auto& p) { p.router.logits_dtype = fm::DType::kFloat16; }, StatusCode::kUnsupported,
                          "router logits must be f32 or bf16");
  expect_problem_rejected([](auto& p) { p.router.routed_scaling = 0.f; }, StatusCode::kInvalidArgument, "routed_scaling");
  // groups: only for the biased router, must divide E, topk_group in range, enough experts kept
  expect_problem_rejected([](auto& p) { p.router.n_group = 8; }, StatusCode::kInvalidArgument, "only to the biased-topk");
  fm::MoeProblem ds = block_fp8_problem();
  expect_problem_rejected([](auto& p) { p.router.n_group = 7; }, StatusCode::kInvalidArgument,
                          "n_group (7) does not divide num_experts (256)", ds);
  expect_problem_rejected([](auto& p) { p.router.topk_group = 9; }, StatusCode::kInvalidArgument, "topk_group (9)", ds);
  expect_problem_rejected([](auto& p) { p.router.topk_group = 0; }, StatusCode::kInvalidArgument, "topk_group (0)", ds);
  expect_problem_rejected([](auto& p) { p.router.n_group = 64; p.router.topk_group = 1; }, StatusCode::kInvalidArgument,
                          "experts in the kept groups", ds);
  expect_problem_rejected([](auto& p) { p.router.n_group = 0; }, StatusCode::kInvalidArgument, "n_group (0)", ds);
  expect_problem_rejected([](auto& p) { p.router.use_correction_bias = true; }, StatusCode::kInvalidArgument,
                          "correction bias applies only");
  expect_problem_rejected([](auto& p) { p.router = fm::RouterConfig::llama4(); p.router.top_k = 2; },
                          StatusCode::kInvalidArgument, "sigmoid-top1 router needs top_k = 1");
  expect_problem_rejected([](auto& p) { p.router.weight_on_input = true; }, StatusCode::kInvalidArgument,
                          "weight_on_input needs top_k = 1");
}

TEST(Validate, FormatCombinations) {
  using fm::StatusCode;
  expect_problem_rejected([](auto& p) { p.act_dtype = fm::DType::kFloat32; }, StatusCode::kUnsupported, "act_dtype");
  expect_problem_rejected([](auto& p) { p.act_dtype = fm::DType::kFloat16; }, StatusCode::kUnsupported,
                          "bf16 weights need bf16 activations");
  expect_problem_rejected([](auto& p) { p.quant.act = fm::ActQuant::kPerToken; }, StatusCode::kUnsupported,
                          "take no scales");
  expect_problem_rejected([](auto& p) { p.quant.weight.format = fm::WeightFormat::kMXFP4; }, StatusCode::kUnsupported,
                          "mxfp4 weights are part of the API but have no kernel yet");
  expect_problem_rejected([](auto& p) { p.quant.weight.format = fm::WeightFormat::kInt4; }, StatusCode::kUnsupported,
                          "no kernel yet");
  expect_problem_rejected([](auto& p) { p.quant = fm::QuantScheme::fp8_per_tensor(true); p.quant.act = fm::ActQuant::kGroup128; },
                          StatusCode::kUnsupported, "per-tensor W + group128 A");
  expect_problem_rejected([](auto& p) { p.quant = fm::QuantScheme::fp8_per_channel(); p.intermediate = 200; },
                          StatusCode::kUnsupported, "multiples of 16");
  expect_problem_rejected([](auto& p) { p.quant = fm::QuantScheme::fp8_per_channel(); p.quant.weight.scale_format = fm::ScaleFormat::kUE8M0; },
                          StatusCode::kUnsupported, "UE8M0 scales are supported only");
  fm::MoeProblem ds = block_fp8_problem();
  expect_problem_rejected([](auto& p) { p.intermediate = 192; }, StatusCode::kUnsupported,
                          "need K and N multiples of 128", ds);
  expect_problem_rejected([](auto& p) { p.quant.weight.block_n = 64; }, StatusCode::kUnsupported, "must be 128x128", ds);
  expect_problem_rejected([](auto& p) { p.quant.act_scale_format = fm::ScaleFormat::kUE8M0; }, StatusCode::kUnsupported,
                          "must share a format", ds);
}

TEST(Validate, ActivationErrors) {
  using fm::StatusCode;
  expect_problem_rejected([](auto& p) { p.activation = fm::Activation::clamped_swiglu(0.f); }, StatusCode::kInvalidArgument,
                          "needs a finite limit > 0");
  expect_problem_rejected([](auto& p) { p.activation = fm::Activation::swiglu_oai(NAN, 7.f); }, StatusCode::kInvalidArgument,
                          "alpha must be finite");
  expect_problem_rejected([](auto& p) { p.activation = fm::Activation::squared_relu(); p.activation.interleaved = true; },
                          StatusCode::kInvalidArgument, "interleaved gate/up rows need a gated activation");
}

TEST(Validate, TensorErrors) {
  using fm::StatusCode;
  const fm::MoeProblem p = base_problem();
  auto reject = [&](std::function<void(fm::MoeTensors&)> edit, StatusCode code, const std::string& words,
                    fm::MoeProblem q = base_problem()) {
    fm::MoeTensors t = good_tensors(q);
    edit(t);
    expect_rejected(fm::validate(q, t), code, words);
  };
  EXPECT_TRUE(fm::validate(p, good_tensors(p)).ok()) << fm::validate(p, good_tensors(p)).to_string();
  reject([](auto& t) { t.x = nullptr; }, StatusCode::kInvalidArgument, "x is null");
  reject([](auto& t) { t.x = g_buf + 2; }, StatusCode::kMisaligned, "x (");
  reject([](auto& t) { t.out = g_buf + 8; }, StatusCode::kMisaligned, "16-byte aligned");
  reject([](auto& t) { t.w1 = g_buf + 4; }, StatusCode::kMisaligned, "w1");
  reject([](auto& t) { t.w2 = nullptr; }, StatusCode::kInvalidArgument, "w2 is null");
  reject([](auto& t) { t.router_logits = nullptr; }, StatusCode::kInvalidArgument, "router_logits is null");
  reject([](auto& t) { t.x_row_stride = 4100; }, StatusCode::kMisaligned, "x_row_stride (4100)");
  reject([](auto& t) { t.out_row_stride = 8; }, StatusCode::kMisaligned, "out_row_stride (8)");
  reject([](auto& t) { t.num_tokens_device = reinterpret_cast<const int32_t*>(g_buf + 2); }, StatusCode::kMisaligned,
         "num_tokens_device");
  {
    fm::MoeTensors t = good_tensors(p);
    t.num_tokens_device = reinterpret_cast<const int32_t*>(g_buf + 4);
    EXPECT_TRUE(fm::validate(p, t).ok()) << "a 4-byte aligned device token count is accepted";
  }
  fm::MoeProblem ds = block_fp8_problem();
  reject([](auto& t) { t.correction_bias = nullptr; }, StatusCode::kInvalidArgument, "correction_bias is null", ds);
  reject([](auto& t) { t.w1_scale = nullptr; }, StatusCode::kInvalidArgument, "w1_scale is null", ds);
  fm::MoeProblem ep = ds;
  ep.num_local_experts = 32;
  reject([](auto&) {}, StatusCode::kInvalidArgument, "expert_map", ep);
  fm::MoeProblem pre = p;
  pre.router = fm::RouterConfig::precomputed(8);
  reject([](auto&) {}, StatusCode::kInvalidArgument, "topk_ids is null", pre);
  fm::MoeProblem hash = p;
  hash.router = fm::RouterConfig::hash(8, fm::ScoreFunction::kSqrtSoftplus, 1.5f);
  reject([](auto&) {}, StatusCode::kInvalidArgument, "token_ids is null", hash);
  fm::MoeProblem st = p;
  st.quant = fm::QuantScheme::fp8_per_tensor(false);
  reject([](auto& t) { t.act_scale = nullptr; }, StatusCode::kInvalidArgument, "act_scale", st);
  fm::MoeProblem bias = p;
  bias.has_expert_bias = true;
  reject([](auto&) {}, StatusCode::kInvalidArgument, "b1", bias);
  // No tokens: x/out/logits need not be given.
  fm::MoeProblem empty = p;
  empty.num_tokens = 0;
  fm::MoeTensors t = good_tensors(empty);
  t.x = nullptr;
  t.out = nullptr;
  t.router_logits = nullptr;
  EXPECT_TRUE(fm::validate(empty, t).ok());
}

TEST(Workspace, SizedForMaxTokensAndMonotonic) {
  fm::MoeProblem p = base_problem();
  size_t prev = 0;
  for (int64_t m : {1, 64, 1024, 65536, 262144}) {
    p.num_tokens = 1;
    p.max_tokens = m;
    size_t bytes = 0;
    ASSERT_TRUE(fm::workspace_size(p, &bytes).ok());
    EXPECT_GT(bytes, prev);
    EXPECT_EQ(bytes % 256, 0u);
    prev = bytes;
  }
  expect_rejected(fm::workspace_size(p, nullptr), fm::StatusCode::kInvalidArgument, "bytes is null");
}

TEST(Forward, RejectsBadCallsBeforeTouchingTheDevice) {
  fm::MoeProblem p = base_problem();
  size_t bytes = 0;
  ASSERT_TRUE(fm::workspace_size(p, &bytes).ok());
  const fm::MoeTensors t = good_tensors(p);
  alignas(256) static unsigned char ws[256];
  expect_rejected(fm::forward(p, t, ws, bytes - 1, nullptr), fm::StatusCode::kWorkspaceTooSmall, "needs");
  expect_rejected(fm::forward(p, t, nullptr, bytes, nullptr), fm::StatusCode::kInvalidArgument, "workspace is null");
  expect_rejected(fm::forward(p, t, ws + 16, bytes, nullptr), fm::StatusCode::kMisaligned, "workspace must be 256-byte");
  fm::MoeProblem big = p;
  big.num_tokens = 100;
  expect_rejected(fm::forward(big, t, ws, bytes, nullptr), fm::StatusCode::kOutOfRange, "planned max_tokens");
}

// No tokens: forward() and dispatch() launch nothing, and check_device_errors() reads nothing (the
// workspace's flag was not written by this call; session 58 found it reporting an earlier value).
TEST(Forward, ZeroTokensRunAndCheckNothing) {
  fm::MoeProblem p = base_problem();
  p.num_tokens = 0;
  size_t bytes = 0;
  ASSERT_TRUE(fm::workspace_size(p, &bytes).ok());
  void* ws = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);  // (host memory: never touched)
  ASSERT_NE(ws, nullptr);
  // forward(): Ok on a GPU (nothing launched); without one it says so first
  const fm::Status fst = fm::forward(p, good_tensors(p), ws, bytes, nullptr);
  EXPECT_TRUE(fst.ok() || fst.code() == fm::StatusCode::kNoDevice || fst.code() == fm::StatusCode::kWrongArch)
      << fst.to_string();
  EXPECT_TRUE(fm::check_device_errors(p, ws, nullptr).ok());  // (no device call on this machine either)
  expect_rejected(fm::check_device_errors(p, nullptr, nullptr), fm::StatusCode::kInvalidArgument, "workspace is null");
  std::free(ws);
}

TEST(Forward, NoGpuOrWrongArchIsAClearError) {
  fm::MoeProblem p = base_problem();
  size_t bytes = 0;
  ASSERT_TRUE(fm::workspace_size(p, &bytes).ok());
  int dev = 0;
  const fm::Status have = fm::current_device(&dev);
  if (have.ok() && fm::check_device_supported(dev).ok()) GTEST_SKIP() << "a supported GPU is present";
  // A valid call on a machine without a (Hopper) GPU says so.
  const fm::Status st = fm::forward(p, good_tensors(p), g_buf, bytes + 1 > sizeof(g_buf) ? bytes : bytes, nullptr);
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(st.code() == fm::StatusCode::kNoDevice || st.code() == fm::StatusCode::kWrongArch) << st.to_string();
  fm::SelfTestResult r;
  const fm::Status s2 = fm::self_test(64, 64, 64, &r);
  EXPECT_TRUE(s2.code() == fm::StatusCode::kNoDevice || s2.code() == fm::StatusCode::kWrongArch) << s2.to_string();
}

// dispatch() checks the front's inputs only (engines with their own expert GEMMs pass no out and
// no weights; session 53's Python GPU test found it asking for out): a call without them gets past
// validation (on this machine to the device check), one without x or logits is refused.
TEST(Dispatch, NeedsOnlyTheFrontsInputs) {
  fm::MoeProblem p = base_problem();
  size_t bytes = 0;
  ASSERT_TRUE(fm::workspace_size(p, &bytes).ok());
  fm::MoeTensors t = good_tensors(p);
  t.out = nullptr;
  t.w1 = t.w2 = nullptr;
  t.w1_scale = t.w2_scale = nullptr;
  t.b1 = t.b2 = nullptr;
  fm::DispatchResult r;
  int dev = 0;
  const fm::Status have = fm::current_device(&dev);
  if (!(have.ok() && fm::check_device_supported(dev).ok())) {  // (with a GPU it would run on fake pointers)
    const fm::Status st = fm::dispatch(p, t, g_buf, bytes, nullptr, {}, &r);
    EXPECT_TRUE(st.code() == fm::StatusCode::kNoDevice || st.code() == fm::StatusCode::kWrongArch) << st.to_string();
  }
  expect_rejected(fm::forward(p, t, g_buf, bytes, nullptr), fm::StatusCode::kInvalidArgument, "out is null");
  fm::MoeTensors nox = t;
  nox.x = nullptr;
  expect_rejected(fm::dispatch(p, nox, g_buf, bytes, nullptr, {}, &r), fm::StatusCode::kInvalidArgument, "x is null");
  fm::MoeTensors nologits = t;
  nologits.router_logits = nullptr;
  expect_rejected(fm::dispatch(p, nologits, g_buf, bytes, nullptr, {}, &r), fm::StatusCode::kInvalidArgument,
                  "router_logits is null");
  // FP8 with a static per-tensor activation scale: the front quantises x with act_scale, so that one
  // is required; the weights' scales and GEMM2's act2_scale are not.
  fm::MoeProblem f = p;
  f.quant = fm::QuantScheme::fp8_per_tensor(/*dynamic_act_scale=*/false);
  ASSERT_EQ(f.quant.act, fm::ActQuant::kPerTensorStatic);
  ASSERT_TRUE(fm::workspace_size(f, &bytes).ok());
  fm::MoeTensors ft = good_tensors(f);
  ft.out = nullptr;
  ft.w1 = ft.w2 = ft.w1_scale = ft.w2_scale = nullptr;
  ft.act2_scale = nullptr;
  fm::MoeTensors noscale = ft;
  noscale.act_scale = nullptr;
  expect_rejected(fm::dispatch(f, noscale, g_buf, bytes, nullptr, {}, &r), fm::StatusCode::kInvalidArgument,
                  "act_scale (static per-tensor) is null");
  expect_rejected(fm::forward(f, ft, g_buf, bytes, nullptr), fm::StatusCode::kInvalidArgument, "out is null");
  if (!(have.ok() && fm::check_device_supported(dev).ok())) {
    const fm::Status st = fm::dispatch(f, ft, g_buf, bytes, nullptr, {}, &r);
    EXPECT_TRUE(st.code() == fm::StatusCode::kNoDevice || st.code() == fm::StatusCode::kWrongArch) << st.to_string();
  }
}

TEST(Explain, NamesProblemAndBackends) {
  fm::MoeProblem p = block_fp8_problem();
  const std::string s = fm::explain(p);
  EXPECT_NE(s.find("E=256"), std::string::npos) << s;
  EXPECT_NE(s.find("groups=8/4"), std::string::npos) << s;
  EXPECT_NE(s.find("fused"), std::string::npos) << s;
  fm::ForwardOptions o;
  o.backend = fm::Backend::kCutlassGrouped;
  EXPECT_NE(fm::explain(p, o).find("override: cutlass-grouped"), std::string::npos);
  p.router.n_group = 7;
  EXPECT_NE(fm::explain(p).find("invalid"), std::string::npos);
}

TEST(Names, EnumsHaveNames) {
  EXPECT_STREQ(fm::to_string(fm::DType::kFloat8E4M3), "e4m3");
  EXPECT_STREQ(fm::to_string(fm::ActivationKind::kSwigluOai), "swiglu-oai");
  EXPECT_STREQ(fm::to_string(fm::RouterKind::kBiasedTopK), "biased-topk");
  EXPECT_EQ(fm::Status(fm::StatusCode::kMisaligned, "x").to_string(), "misaligned: x");
  EXPECT_EQ(fm::dtype_bytes(fm::DType::kBFloat16), 2u);
  EXPECT_EQ(fm::element_bits(fm::DType::kPackedFP4), 4);
}
