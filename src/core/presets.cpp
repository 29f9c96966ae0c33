// Built-in layer shapes: the per-GPU benchmark suite of shared/model-shapes.md, a few whole-model
// layers that exercise the other routers and activations, and small cases for CPU runs.
#include "fusedmoe/presets.h"

namespace fusedmoe {

namespace {

MoeProblem make(int e, int n, int k_hidden, RouterConfig router, QuantScheme quant,
                Activation act = Activation::silu()) {
  MoeProblem p;
  p.num_experts = e;
  p.intermediate = n;
  p.hidden = k_hidden;
  p.router = router;
  p.quant = quant;
  p.activation = act;
  return p;
}

std::vector<Preset> build() {
  const QuantScheme blk = QuantScheme::fp8_block128(ScaleFormat::kFloat32);
  const QuantScheme blk_ue8m0 = QuantScheme::fp8_block128(ScaleFormat::kUE8M0);
  std::vector<Preset> v;
  // ---- the benchmark suite (per-GPU problems of 8xH200 deployments) ----
  v.push_back({"dsv3-tp8", "DeepSeek-V3 TP8: E256 N256 K7168 k8, sigmoid+bias grouped 8/4, FP8 128x128",
               make(256, 256, 7168, RouterConfig::deepseek_v3(), blk)});
  {
    MoeProblem p = make(256, 2048, 7168, RouterConfig::deepseek_v3(), blk);
    p.num_local_experts = 32;
    v.push_back({"dsv3-ep8", "DeepSeek-V3 EP8: 32 of 256 experts local, N2048 K7168 k8, FP8 128x128", p});
  }
  v.push_back({"dsv4f-tp4", "DeepSeek-V4-Flash TP4: E256 N512 K4096 k6, sqrt-softplus+bias, clamped SwiGLU 10, FP8 128x128 UE8M0",
               make(256, 512, 4096, RouterConfig::deepseek_v4(), blk_ue8m0, Activation::clamped_swiglu(10.f))});
  v.push_back({"qwen235-tp8", "Qwen3-235B TP8: E128 N192 K4096 k8, softmax renorm, BF16",
               make(128, 192, 4096, RouterConfig::softmax_topk(8, true), QuantScheme::bf16())});
  v.push_back({"qwen235-tp4", "Qwen3-235B TP4: E128 N384 K4096 k8, softmax renorm, FP8 128x128",
               make(128, 384, 4096, RouterConfig::softmax_topk(8, true), blk)});
  v.push_back({"qwen30-tp1", "Qwen3-30B-A3B: E128 N768 K2048 k8, softmax renorm, BF16",
               make(128, 768, 2048, RouterConfig::softmax_topk(8, true), QuantScheme::bf16())});
  v.push_back({"mixtral-tp2", "Mixtral-8x7B TP2: E8 N7168 K4096 k2, softmax top-2 renorm, BF16",
               make(8, 7168, 4096, RouterConfig::softmax_topk(2, true), QuantScheme::bf16())});
  {
    MoeProblem p = make(128, 2880, 2880, RouterConfig::gpt_oss(4), QuantScheme::bf16(), Activation::swiglu_oai());
    p.has_expert_bias = true;
    v.push_back({"gptoss-tp1", "GPT-OSS-120B: E128 N2880 K2880 k4, top-k then softmax, SwiGLU-OAI interleaved, biases, BF16", p});
  }
  // ---- other model layers (routers / activations the suite does not cover) ----
  {
    MoeProblem p = make(512, 512, 2048, RouterConfig::softmax_topk(10, true), QuantScheme::bf16());
    p.num_shared_experts = 1;
    v.push_back({"qwen3next-tp1", "Qwen3-Next-80B: E512 N512 K2048 k10 + shared expert, BF16", p});
  }
  {
    MoeProblem p = make(16, 8192, 5120, RouterConfig::llama4(), QuantScheme::bf16());
    p.num_shared_experts = 1;
    v.push_back({"llama4-scout", "Llama-4-Scout: E16 N8192 K5120 sigmoid top-1 on the input + shared, BF16", p});
  }
  {
    MoeProblem p = make(128, 1856, 2688, RouterConfig::sigmoid_bias(6, 2.5f), QuantScheme::bf16(),
                        Activation::squared_relu());
    p.num_shared_experts = 1;
    v.push_back({"nemotron-nano", "Nemotron-3-Nano: E128 N1856 K2688 k6, squared ReLU (not gated) + shared, BF16", p});
  }
  v.push_back({"kimi-k2-tp8", "Kimi-K2 TP8: E384 N256 K7168 k8, sigmoid+bias x2.827, FP8 128x128",
               make(384, 256, 7168, RouterConfig::sigmoid_bias(8, 2.827f), blk)});
  // ---- small cases for CPU-only runs ----
  {
    MoeProblem p = make(16, 128, 256, RouterConfig::deepseek_v3(4, 4, 2, 2.5f), blk);
    p.num_shared_experts = 1;
    v.push_back({"tiny-dsv3", "DeepSeek-V3-like, scaled down: E16 N128 K256 k4, grouped 4/2, shared, FP8 128x128", p});
  }
  v.push_back({"tiny-qwen", "Qwen3-like, scaled down: E8 N64 K128 k2, softmax renorm, BF16",
               make(8, 64, 128, RouterConfig::softmax_topk(2, true), QuantScheme::bf16())});
  return v;
}

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = build();
  return all;
}

const Preset* find_preset(const std::string& name) {
  for (const Preset& p : presets())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace fusedmoe
