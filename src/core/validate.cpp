// Precondition checks of the public API. Every rule here has a test in tests/cpu/test_validate.cpp
// that it is rejected with a message naming the offending value.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>

#include "core/check.h"
#include "core/stages.h"
#include "fusedmoe/moe.h"

namespace fusedmoe {
namespace {

constexpr int kMaxHidden = 16384;


Status validate_router(const MoeProblem& p) {
  const RouterConfig& r = p.router;
  const int e = p.num_experts;
  FM_REQUIRE(r.top_k >= 1 && r.top_k <= kMaxTopK, kInvalidArgument,
             "top_k (" << r.top_k << ") must be in [1, " << kMaxTopK << "]");
  FM_REQUIRE(r.top_k <= e, kInvalidArgument, "top_k (" << r.top_k << ") > num_experts (" << e << ")");
  FM_REQUIRE(r.logits_dtype == DType::kFloat32 || r.logits_dtype == DType::kBFloat16, kUnsupported,
             "router logits must be f32 or bf16, got " << to_string(r.logits_dtype));
  FM_REQUIRE(std::isfinite(r.routed_scaling) && r.routed_scaling > 0.f, kInvalidArgument,
             "routed_scaling (" << r.routed_scaling << ") must be finite and > 0");
  FM_REQUIRE(r.n_group >= 1, kInvalidArgument, "n_group (" << r.n_group << ") must be >= 1");
  if (r.n_group > 1 || r.topk_group != 1) {
    FM_REQUIRE(r.kind == RouterKind::kBiasedTopK, kInvalidArgument,
               "expert groups (n_group " << r.n_group << ", topk_group " << r.topk_group
                                         << ") apply only to the biased-topk router, not " << to_string(r.kind));
  }
  FM_REQUIRE(e % r.n_group == 0, kInvalidArgument,
             "n_group (" << r.n_group << ") does not divide num_experts (" << e << ")");
  FM_REQUIRE(r.topk_group >= 1 && r.topk_group <= r.n_group, kInvalidArgument,
             "topk_group (" << r.topk_group << ") must be in [1, n_group = " << r.n_group << "]");
  const int eligible = r.topk_group * (e / r.n_group);
  FM_REQUIRE(r.top_k <= eligible, kInvalidArgument,
             "top_k (" << r.top_k << ") > experts in the kept groups (topk_group " << r.topk_group << " x "
                       << e / r.n_group << " experts per group = " << eligible << ")");
  FM_REQUIRE(!r.use_correction_bias || r.kind == RouterKind::kBiasedTopK, kInvalidArgument,
             "a correction bias applies only to the biased-topk router, not " << to_string(r.kind));
  if (r.kind == RouterKind::kSigmoidTop1)
    FM_REQUIRE(r.top_k == 1, kInvalidArgument, "the sigmoid-top1 router needs top_k = 1, got " << r.top_k);
  FM_REQUIRE(!r.weight_on_input || r.top_k == 1, kInvalidArgument,
             "weight_on_input needs top_k = 1 (one routing weight per token), got " << r.top_k);
  return Status::Ok();
}

Status validate_quant(const MoeProblem& p) {
  const QuantScheme& q = p.quant;
  const WeightQuant& w = q.weight;
  FM_REQUIRE(p.act_dtype == DType::kBFloat16 || p.act_dtype == DType::kFloat16, kUnsupported,
             "act_dtype (input/output) must be bf16 or f16, got " << to_string(p.act_dtype));
  switch (w.format) {
    case WeightFormat::kBF16:
    case WeightFormat::kFP16: {
      const DType wt = w.format == WeightFormat::kBF16 ? DType::kBFloat16 : DType::kFloat16;
      FM_REQUIRE(wt == p.act_dtype, kUnsupported,
                 to_string(w.format) << " weights need " << to_string(wt) << " activations, got "
                                     << to_string(p.act_dtype));
      FM_REQUIRE(w.granularity == ScaleGranularity::kNone && q.act == ActQuant::kNone, kUnsupported,
                 to_string(w.format) << " weights take no scales and no activation quantisation (got "
                                     << to_string(w.granularity) << " / " << to_string(q.act) << ")");
      break;
    }
    case WeightFormat::kFP8E4M3: {
      const ScaleGranularity g = w.granularity;
      const bool pt = g == ScaleGranularity::kPerTensor &&
                      (q.act == ActQuant::kPerTensorStatic || q.act == ActQuant::kPerTensorDynamic);
      const bool pc = g == ScaleGranularity::kPerChannel && q.act == ActQuant::kPerToken;
      const bool blk = g == ScaleGranularity::kBlock && q.act == ActQuant::kGroup128;
      FM_REQUIRE(pt || pc || blk, kUnsupported,
                 "fp8 weights support per-tensor W + per-tensor A, per-channel W + per-token A, or block W + "
                 "1x128-group A; got "
                     << to_string(g) << " W + " << to_string(q.act) << " A");
      if (blk) {
        FM_REQUIRE(w.block_n == 128 && w.block_k == 128, kUnsupported,
                   "fp8 block scales must be 128x128, got " << w.block_n << "x" << w.block_k);
        FM_REQUIRE(p.hidden % 128 == 0 && p.intermediate % 128 == 0, kUnsupported,
                   "fp8 128x128 blocks need K and N multiples of 128, got K=" << p.hidden << " N="
                                                                             << p.intermediate);
        FM_REQUIRE(q.act_scale_format == w.scale_format, kUnsupported,
                   "block fp8: activation scales (" << to_string(q.act_scale_format) << ") and weight scales ("
                                                    << to_string(w.scale_format) << ") must share a format");
      } else {
        FM_REQUIRE(w.scale_format == ScaleFormat::kFloat32 && q.act_scale_format == ScaleFormat::kFloat32,
                   kUnsupported, "UE8M0 scales are supported only with 128x128 block fp8");
        FM_REQUIRE(p.hidden % 16 == 0 && p.intermediate % 16 == 0, kUnsupported,
                   "per-tensor / per-channel fp8 needs K and N multiples of 16, got K=" << p.hidden << " N="
                                                                                       << p.intermediate);
      }
      break;
    }
    case WeightFormat::kMXFP4:
    case WeightFormat::kInt4:
      return Status(StatusCode::kUnsupported,
                    std::string(to_string(w.format)) + " weights are part of the API but have no kernel yet");
  }
  return Status::Ok();
}

}  // namespace

Status validate(const MoeProblem& p) {
  FM_REQUIRE(p.num_experts >= 1 && p.num_experts <= kMaxExperts, kInvalidArgument,
             "num_experts (" << p.num_experts << ") must be in [1, " << kMaxExperts << "]");
  FM_REQUIRE(p.num_local_experts >= -1 && p.num_local_experts <= p.num_experts, kInvalidArgument,
             "num_local_experts (" << p.num_local_experts << ") must be -1 (all) or in [0, num_experts = "
                                   << p.num_experts << "]");
  FM_REQUIRE(std::isfinite(p.expected_local_slots) && p.expected_local_slots >= 0.f &&
                 p.expected_local_slots <= float(std::max(p.router.top_k, 0)),
             kInvalidArgument,
             "expected_local_slots (" << p.expected_local_slots << ") must be 0 (uniform routing) or in (0, top_k = "
                                      << p.router.top_k << "]");
  FM_REQUIRE(p.num_shared_experts == 0 || p.num_shared_experts == 1, kInvalidArgument,
             "num_shared_experts (" << p.num_shared_experts << ") must be 0 or 1");
  FM_REQUIRE(std::isfinite(p.shared_expert_scale), kInvalidArgument, "shared_expert_scale must be finite");
  FM_REQUIRE(p.hidden > 0 && p.hidden % 8 == 0, kInvalidArgument,
             "hidden K (" << p.hidden << ") must be a positive multiple of 8 (16-byte rows)");
  FM_REQUIRE(p.hidden <= kMaxHidden, kUnsupported,
             "hidden K (" << p.hidden << ") above " << kMaxHidden << " is not supported (the combine's row team)");
  FM_REQUIRE(p.intermediate > 0 && p.intermediate % 8 == 0, kInvalidArgument,
             "intermediate N (" << p.intermediate << ") must be a positive multiple of 8 (16-byte rows)");
  FM_REQUIRE(p.num_tokens >= 0, kInvalidArgument, "num_tokens (" << p.num_tokens << ") must be >= 0");
  FM_REQUIRE(p.max_tokens >= 0, kInvalidArgument, "max_tokens (" << p.max_tokens << ") must be >= 0");
  FM_REQUIRE(p.num_tokens <= p.max_tokens, kOutOfRange,
             "num_tokens (" << p.num_tokens << ") exceeds the planned max_tokens (" << p.max_tokens
                            << "); size the workspace for a larger maximum");
  // Grouped rows are addressed with int32 indices.
  const int64_t max_rows = p.max_tokens * (int64_t{kMaxTopK} + 1);
  FM_REQUIRE(max_rows <= INT32_MAX, kInvalidArgument,
             "max_tokens (" << p.max_tokens << ") too large: at most " << INT32_MAX / (kMaxTopK + 1) << " tokens");
  const Activation& a = p.activation;
  if (a.kind == ActivationKind::kClampedSwiglu || a.kind == ActivationKind::kSwigluOai)
    FM_REQUIRE(std::isfinite(a.limit) && a.limit > 0.f, kInvalidArgument,
               to_string(a.kind) << " needs a finite limit > 0, got " << a.limit);
  if (a.kind == ActivationKind::kSwigluOai)
    FM_REQUIRE(std::isfinite(a.alpha), kInvalidArgument, "swiglu-oai alpha must be finite");
  FM_REQUIRE(!a.interleaved || a.gated(), kInvalidArgument,
             "interleaved gate/up rows need a gated activation, not " << to_string(a.kind));
  FM_TRY(validate_router(p));
  FM_TRY(validate_quant(p));
  return Status::Ok();
}

namespace {

Status check_ptr(const void* ptr, const char* name, size_t align) {
  FM_REQUIRE(ptr != nullptr, kInvalidArgument, name << " is null");
  FM_REQUIRE(reinterpret_cast<uintptr_t>(ptr) % align == 0, kMisaligned,
             name << " (" << ptr << ") must be " << align << "-byte aligned");
  return Status::Ok();
}

// A row stride in elements: 0 (dense rows) or a multiple of 8 that is >= K.
Status check_row_stride(int64_t stride, const char* name, int64_t hidden) {
  FM_REQUIRE(stride == 0 || (stride >= hidden && stride % 8 == 0), kMisaligned,
             name << " (" << stride << ") must be 0 or a multiple of 8 that is >= K (" << hidden << ")");
  return Status::Ok();
}

}  // namespace

namespace detail {

// The inputs of the layer's front (route -> plan -> permute / quantise): what dispatch() reads.
Status validate_front(const MoeProblem& p, const MoeTensors& t) {
  FM_TRY(validate(p));
  const RouterConfig& r = p.router;
  if (p.num_tokens > 0) {
    FM_TRY(check_ptr(t.x, "x", 16));
    // (optional outputs: checked for alignment where given)
    if (t.out_topk_ids != nullptr) FM_TRY(check_ptr(t.out_topk_ids, "out_topk_ids", 4));
    if (t.out_topk_weights != nullptr) FM_TRY(check_ptr(t.out_topk_weights, "out_topk_weights", 4));
    FM_TRY(check_row_stride(t.x_row_stride, "x_row_stride", p.hidden));
    switch (r.kind) {
      case RouterKind::kPrecomputed:
        FM_TRY(check_ptr(t.topk_ids, "topk_ids", 4));
        FM_TRY(check_ptr(t.topk_weights, "topk_weights", 4));
        break;
      case RouterKind::kHash:
        FM_TRY(check_ptr(t.token_ids, "token_ids", 8));
        FM_TRY(check_ptr(t.hash_table, "hash_table", 4));
        FM_REQUIRE(t.hash_vocab > 0, kInvalidArgument, "hash_vocab (" << t.hash_vocab << ") must be > 0");
        if (t.router_logits) FM_TRY(check_ptr(t.router_logits, "router_logits", dtype_bytes(r.logits_dtype)));
        break;
      default:
        FM_TRY(check_ptr(t.router_logits, "router_logits", dtype_bytes(r.logits_dtype)));
    }
    if (r.use_correction_bias) FM_TRY(check_ptr(t.correction_bias, "correction_bias", 4));
  }
  if (p.num_local_experts >= 0) FM_TRY(check_ptr(t.expert_map, "expert_map (num_local_experts >= 0)", 4));
  if (t.num_tokens_device != nullptr) {
    FM_TRY(check_ptr(t.num_tokens_device, "num_tokens_device", 4));
    FM_REQUIRE(p.num_tokens <= 0x7fffffff, kOutOfRange,
               "num_tokens (" << p.num_tokens << ") is the bound of an int32 device count: at most 2^31 - 1");
  }
  if (p.quant.weight.format == WeightFormat::kFP8E4M3 && p.quant.act == ActQuant::kPerTensorStatic)
    FM_TRY(check_ptr(t.act_scale, "act_scale (static per-tensor)", 4));
  return Status::Ok();
}

}  // namespace detail

Status validate(const MoeProblem& p, const MoeTensors& t) {
  FM_TRY(detail::validate_front(p, t));
  const bool fp8 = p.quant.weight.format == WeightFormat::kFP8E4M3;
  if (p.num_tokens > 0) {
    FM_TRY(check_ptr(t.out, "out", 16));
    FM_TRY(check_row_stride(t.out_row_stride, "out_row_stride", p.hidden));
  }
  FM_TRY(check_ptr(t.w1, "w1", 16));
  FM_TRY(check_ptr(t.w2, "w2", 16));
  if (t.w1_gate_up_blocks != nullptr) {
    const bool formats = p.quant.weight.format == WeightFormat::kBF16 ||
                         (p.quant.weight.format == WeightFormat::kFP8E4M3 &&
                          p.quant.weight.granularity == ScaleGranularity::kBlock);
    FM_REQUIRE(formats && p.activation.gated() && !p.activation.interleaved, kUnsupported,
               "w1_gate_up_blocks: for BF16 or FP8 128x128-block weights with a gated activation whose gate and up "
               "are W1's halves (pack_gate_up_blocks)");
    FM_TRY(check_ptr(t.w1_gate_up_blocks, "w1_gate_up_blocks", 16));
  }
  if (t.w1_packed != nullptr || t.w2_packed != nullptr) {
    FM_REQUIRE(p.quant.weight.format == WeightFormat::kBF16 || p.quant.weight.format == WeightFormat::kFP8E4M3,
               kUnsupported, "w1_packed / w2_packed: packed weights exist for BF16 and FP8 e4m3 weights (pack_weights)");
    if (t.w1_packed != nullptr) FM_TRY(check_ptr(t.w1_packed, "w1_packed", 16));
    if (t.w2_packed != nullptr) FM_TRY(check_ptr(t.w2_packed, "w2_packed", 16));
  }
  if (fp8) {
    const size_t sa = p.quant.weight.scale_format == ScaleFormat::kUE8M0 ? 1 : 4;
    FM_TRY(check_ptr(t.w1_scale, "w1_scale", sa));
    FM_TRY(check_ptr(t.w2_scale, "w2_scale", sa));
    if (p.quant.act == ActQuant::kPerTensorStatic) {
      FM_TRY(check_ptr(t.act2_scale, "act2_scale (static per-tensor)", 4));  // (act_scale: validate_front)
    }
  }
  if (p.has_expert_bias) {
    FM_TRY(check_ptr(t.b1, "b1 (has_expert_bias)", 4));
    FM_TRY(check_ptr(t.b2, "b2 (has_expert_bias)", 4));
  }
  return Status::Ok();
}

}  // namespace fusedmoe
