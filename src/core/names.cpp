// Names of the API's enums and the presets of its small config structs.
#include <ostream>

#include "fusedmoe/activation.h"
#include "fusedmoe/moe.h"
#include "fusedmoe/problem.h"
#include "fusedmoe/quant.h"
#include "fusedmoe/router.h"
#include "fusedmoe/status.h"
#include "fusedmoe/types.h"

namespace fusedmoe {

const char* to_string(StatusCode c) {
  switch (c) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kMisaligned: return "misaligned";
    case StatusCode::kWorkspaceTooSmall: return "workspace too small";
    case StatusCode::kOutOfRange: return "out of range";
    case StatusCode::kNoDevice: return "no device";
    case StatusCode::kWrongArch: return "wrong GPU architecture";
    case StatusCode::kCudaError: return "CUDA error";
    case StatusCode::kInternal: return "internal error";
  }
  return "?";
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return std::string(fusedmoe::to_string(code_)) + ": " + message_;
}

const char* to_string(DType t) {
  switch (t) {
    case DType::kFloat32: return "f32";
    case DType::kFloat64: return "f64";
    case DType::kBFloat16: return "bf16";
    case DType::kFloat16: return "f16";
    case DType::kFloat8E4M3: return "e4m3";
    case DType::kUE8M0: return "ue8m0";
    case DType::kInt32: return "i32";
    case DType::kInt64: return "i64";
    case DType::kPackedInt4: return "int4x2";
    case DType::kPackedFP4: return "e2m1x2";
  }
  return "?";
}

size_t dtype_bytes(DType t) {
  switch (t) {
    case DType::kFloat64: case DType::kInt64: return 8;
    case DType::kFloat32: case DType::kInt32: return 4;
    case DType::kBFloat16: case DType::kFloat16: return 2;
    default: return 1;
  }
}

int element_bits(DType t) {
  if (t == DType::kPackedInt4 || t == DType::kPackedFP4) return 4;
  return static_cast<int>(dtype_bytes(t)) * 8;
}

const char* to_string(WeightFormat f) {
  switch (f) {
    case WeightFormat::kBF16: return "bf16";
    case WeightFormat::kFP16: return "f16";
    case WeightFormat::kFP8E4M3: return "fp8e4m3";
    case WeightFormat::kMXFP4: return "mxfp4";
    case WeightFormat::kInt4: return "int4";
  }
  return "?";
}
const char* to_string(ScaleGranularity g) {
  switch (g) {
    case ScaleGranularity::kNone: return "none";
    case ScaleGranularity::kPerTensor: return "per-tensor";
    case ScaleGranularity::kPerChannel: return "per-channel";
    case ScaleGranularity::kBlock: return "block";
    case ScaleGranularity::kGroup: return "group";
  }
  return "?";
}
const char* to_string(ScaleFormat f) { return f == ScaleFormat::kUE8M0 ? "ue8m0" : "f32"; }
const char* to_string(ActQuant a) {
  switch (a) {
    case ActQuant::kNone: return "none";
    case ActQuant::kPerTensorStatic: return "per-tensor-static";
    case ActQuant::kPerTensorDynamic: return "per-tensor-dynamic";
    case ActQuant::kPerToken: return "per-token";
    case ActQuant::kGroup128: return "group128";
  }
  return "?";
}
const char* to_string(ActivationKind k) {
  switch (k) {
    case ActivationKind::kSiluGated: return "silu-gated";
    case ActivationKind::kGeluGated: return "gelu-gated";
    case ActivationKind::kGeluTanhGated: return "gelu-tanh-gated";
    case ActivationKind::kClampedSwiglu: return "clamped-swiglu";
    case ActivationKind::kSwigluOai: return "swiglu-oai";
    case ActivationKind::kSquaredRelu: return "squared-relu";
  }
  return "?";
}
const char* to_string(RouterKind k) {
  switch (k) {
    case RouterKind::kSoftmaxTopK: return "softmax-topk";
    case RouterKind::kBiasedTopK: return "biased-topk";
    case RouterKind::kTopKSoftmax: return "topk-softmax";
    case RouterKind::kSigmoidTop1: return "sigmoid-top1";
    case RouterKind::kHash: return "hash";
    case RouterKind::kPrecomputed: return "precomputed";
  }
  return "?";
}
const char* to_string(ScoreFunction f) {
  switch (f) {
    case ScoreFunction::kSoftmax: return "softmax";
    case ScoreFunction::kSigmoid: return "sigmoid";
    case ScoreFunction::kSqrtSoftplus: return "sqrt-softplus";
  }
  return "?";
}
const char* to_string(Backend b) {
  switch (b) {
    case Backend::kAuto: return "auto";
    case Backend::kGrouped: return "grouped";
    case Backend::kFused: return "fused";
    case Backend::kCutlassGrouped: return "cutlass-grouped";
  }
  return "?";
}
const char* to_string(Toggle t) {
  switch (t) {
    case Toggle::kAuto: return "auto";
    case Toggle::kOff: return "off";
    case Toggle::kOn: return "on";
  }
  return "?";
}
const char* to_string(TileFamily t) {
  switch (t) {
    case TileFamily::kAuto: return "auto";
    case TileFamily::kNormal: return "normal";
    case TileFamily::kSwapAB: return "swap-ab";
  }
  return "?";
}

// ---- presets ----
QuantScheme QuantScheme::bf16() { return {}; }
QuantScheme QuantScheme::fp16() {
  QuantScheme q;
  q.weight.format = WeightFormat::kFP16;
  return q;
}
QuantScheme QuantScheme::fp8_per_tensor(bool dynamic_act_scale) {
  QuantScheme q;
  q.weight = {WeightFormat::kFP8E4M3, ScaleGranularity::kPerTensor, ScaleFormat::kFloat32};
  q.act = dynamic_act_scale ? ActQuant::kPerTensorDynamic : ActQuant::kPerTensorStatic;
  return q;
}
QuantScheme QuantScheme::fp8_per_channel() {
  QuantScheme q;
  q.weight = {WeightFormat::kFP8E4M3, ScaleGranularity::kPerChannel, ScaleFormat::kFloat32};
  q.act = ActQuant::kPerToken;
  return q;
}
QuantScheme QuantScheme::fp8_block128(ScaleFormat scales) {
  QuantScheme q;
  q.weight = {WeightFormat::kFP8E4M3, ScaleGranularity::kBlock, scales, 128, 128};
  q.act = ActQuant::kGroup128;
  q.act_scale_format = scales;
  return q;
}

RouterConfig RouterConfig::softmax_topk(int k, bool renormalize) {
  RouterConfig r;
  r.kind = RouterKind::kSoftmaxTopK;
  r.top_k = k;
  r.renormalize = renormalize;
  return r;
}
RouterConfig RouterConfig::deepseek_v3(int k, int n_group, int topk_group, float scaling) {
  RouterConfig r;
  r.kind = RouterKind::kBiasedTopK;
  r.score = ScoreFunction::kSigmoid;
  r.top_k = k;
  r.renormalize = true;
  r.n_group = n_group;
  r.topk_group = topk_group;
  r.routed_scaling = scaling;
  r.use_correction_bias = true;
  return r;
}
RouterConfig RouterConfig::deepseek_v4(int k, float scaling) {
  RouterConfig r = deepseek_v3(k, 1, 1, scaling);
  r.score = ScoreFunction::kSqrtSoftplus;
  return r;
}
RouterConfig RouterConfig::sigmoid_bias(int k, float scaling) { return deepseek_v3(k, 1, 1, scaling); }
RouterConfig RouterConfig::gpt_oss(int k) {
  RouterConfig r;
  r.kind = RouterKind::kTopKSoftmax;
  r.top_k = k;
  return r;
}
RouterConfig RouterConfig::llama4() {
  RouterConfig r;
  r.kind = RouterKind::kSigmoidTop1;
  r.top_k = 1;
  r.weight_on_input = true;
  return r;
}
RouterConfig RouterConfig::hash(int k, ScoreFunction score, float scaling) {
  RouterConfig r;
  r.kind = RouterKind::kHash;
  r.score = score;
  r.top_k = k;
  r.renormalize = true;
  r.routed_scaling = scaling;
  return r;
}
RouterConfig RouterConfig::precomputed(int k) {
  RouterConfig r;
  r.kind = RouterKind::kPrecomputed;
  r.top_k = k;
  return r;
}

// ---- problem ----
double MoeProblem::flops() const {
  const double rows = static_cast<double>(num_tokens) * slots_per_token();
  return 2.0 * rows * (static_cast<double>(gemm1_rows()) * hidden + static_cast<double>(hidden) * intermediate);
}

std::ostream& operator<<(std::ostream& os, const MoeProblem& p) {
  os << "MoeProblem{T=" << p.num_tokens << " max_T=" << p.max_tokens << " E=" << p.num_experts;
  if (p.num_local_experts >= 0) os << " E_local=" << p.num_local_experts;
  if (p.expected_local_slots > 0.f) os << " local_slots=" << p.expected_local_slots;
  os << " k=" << p.router.top_k << " K=" << p.hidden << " N=" << p.intermediate
     << " act_dtype=" << to_string(p.act_dtype) << " weights=" << to_string(p.quant.weight.format);
  if (p.quant.weight.granularity != ScaleGranularity::kNone)
    os << "/" << to_string(p.quant.weight.granularity) << "/" << to_string(p.quant.weight.scale_format);
  if (p.quant.act != ActQuant::kNone) os << " act_quant=" << to_string(p.quant.act);
  os << " activation=" << to_string(p.activation.kind);
  if (p.activation.interleaved) os << "(interleaved)";
  os << " router=" << to_string(p.router.kind);
  if (p.router.kind == RouterKind::kBiasedTopK || p.router.kind == RouterKind::kHash)
    os << "/" << to_string(p.router.score);
  if (p.router.n_group > 1) os << " groups=" << p.router.n_group << "/" << p.router.topk_group;
  if (p.router.renormalize) os << " renorm";
  if (p.router.routed_scaling != 1.f) os << " scale=" << p.router.routed_scaling;
  if (p.num_shared_experts) os << " shared=" << p.num_shared_experts;
  if (p.has_expert_bias) os << " bias";
  return os << "}";
}

}  // namespace fusedmoe
