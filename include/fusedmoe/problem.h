// fusedmoe/problem.h — the descriptor of one MoE layer call and the tensors it reads and writes.
//
// Shapes (row-major, last index contiguous; E_l = local experts + shared experts):
//   x            [T, K]      act_dtype (bf16 | fp16), rows x_row_stride elements apart
//   w1           [E_l, R1, K] R1 = 2N gated (gate rows then up rows, or interleaved), N otherwise
//   w2           [E_l, K, N]
//   b1, b2       [E_l, R1], [E_l, K] float32 (when has_expert_bias)
//   out          [T, K]      act_dtype, rows out_row_stride elements apart
// Scales: see fusedmoe/quant.h. Expert parallelism: expert_map [E] int32 maps a global expert id
// to its local index or -1 (not on this rank; the layer then returns this rank's partial sum).
#pragma once
#include <cstdint>
#include <iosfwd>

#include "fusedmoe/activation.h"
#include "fusedmoe/quant.h"
#include "fusedmoe/router.h"
#include "fusedmoe/types.h"

namespace fusedmoe {

struct MoeProblem {
  int64_t num_tokens = 0;   // T of this call (0 is valid: nothing to do)
  int64_t max_tokens = 0;   // the planned maximum; the workspace is sized for it
  int num_experts = 0;      // E: routed experts of the model (global ids 0..E-1)
  int num_local_experts = -1;  // routed experts held here; -1 = all E (no expert map)
  int hidden = 0;           // K
  int intermediate = 0;     // N per expert (per rank under tensor parallelism)
  DType act_dtype = DType::kBFloat16;
  QuantScheme quant;
  Activation activation;
  RouterConfig router;
  int num_shared_experts = 0;       // 0 or 1: fused as local expert index local_experts()
  float shared_expert_scale = 1.f;  // its combine weight
  bool has_expert_bias = false;
  // Tuning hint, never a result: the routed slots per token expected to land on this GPU's experts
  // (0 = uniform routing, top_k x local / E). The oracle sizes the token tiles, schedules and the
  // backend choice from the rows it expects per expert; under expert parallelism with an
  // all-to-all dispatch a rank receives the tokens routed to it, whose slots land on its experts
  // far more than uniformly (top_k when every slot is local, as a layer of the local experts
  // alone). In [0, top_k].
  float expected_local_slots = 0.f;

  int top_k() const { return router.top_k; }
  int local_experts() const { return num_local_experts < 0 ? num_experts : num_local_experts; }
  // Experts whose weights are passed (local routed + shared).
  int weight_experts() const { return local_experts() + num_shared_experts; }
  int gemm1_rows() const { return activation.gemm1_rows(intermediate); }
  // Rows each token contributes to the grouped GEMMs (k routed + shared).
  int slots_per_token() const { return router.top_k + num_shared_experts; }
  // Routed slots per token expected on the local experts: expected_local_slots, or top_k x local / E.
  double local_slots_per_token() const {
    return expected_local_slots > 0.f ? double(expected_local_slots)
                                      : double(router.top_k) * local_experts() / (num_experts > 0 ? num_experts : 1);
  }
  // 2*T*(k+shared)*(R1*K + K*N)
  double flops() const;
};

std::ostream& operator<<(std::ostream& os, const MoeProblem& p);

struct MoeTensors {
  const void* x = nullptr;
  int64_t x_row_stride = 0;  // elements; 0 = K

  // Optional: the token count as an int32 in device memory, read by the kernels at run time.
  // problem.num_tokens is then only the bound the launches are sized for, so one captured CUDA
  // graph serves every count in [0, problem.num_tokens]. Rows of outputs past the device count
  // are not written. A device value outside that range is clamped and reported by
  // check_device_errors(). With problem.num_tokens == 0 nothing runs and the count is not read.
  const int32_t* num_tokens_device = nullptr;

  // Routing inputs (which ones depends on router.kind).
  const void* router_logits = nullptr;     // [T, E] router.logits_dtype
  const float* correction_bias = nullptr;  // [E]
  const int64_t* token_ids = nullptr;      // [T] (kHash)
  const int32_t* hash_table = nullptr;     // [hash_vocab, k] (kHash)
  int64_t hash_vocab = 0;
  const int32_t* topk_ids = nullptr;       // [T, k] (kPrecomputed)
  const float* topk_weights = nullptr;     // [T, k] (kPrecomputed)
  const int32_t* expert_map = nullptr;     // [E], required when num_local_experts >= 0

  const void* w1 = nullptr;
  const void* w1_scale = nullptr;
  const float* b1 = nullptr;
  const void* w2 = nullptr;
  const void* w2_scale = nullptr;
  const float* b2 = nullptr;
  const float* act_scale = nullptr;   // kPerTensorStatic: scale of the GEMM1 input
  const float* act2_scale = nullptr;  // kPerTensorStatic: scale of the GEMM2 input
  // Optional, BF16 or FP8 e4m3 weights: w1 / w2 also pre-tiled for the Swap-AB (decode) GEMMs,
  // written once by pack_weights() (moe.h), 16-byte aligned. Each weight stage is then one
  // contiguous 8 KB copy instead of 2D boxes: the same results, BF16 layers 2.4-8.2 % faster at
  // 1-256 tokens on the H200 (session 35).
  // w1 / w2 stay required: the normal tiles and the CUTLASS backend (prefill) read them.
  const void* w1_packed = nullptr;
  const void* w2_packed = nullptr;
  // Optional, BF16 (or FP8 e4m3 128x128-block) weights with a gated activation whose gate and up rows
  // are W1's two halves (not `interleaved`): the same rows alternating in blocks of 8 (gate 0-7, up
  // 0-7, gate 8-15, up 8-15, ...), written once by pack_gate_up_blocks() (moe.h), w1's size, 16-byte
  // aligned. The CUTLASS backend's GEMM1 reads it to apply the activation in its epilogue
  // (ForwardOptions::fused_activation); FP8 keeps w1_scale in the checkpoint's order. w1 stays
  // required (every other GEMM1 reads it).
  const void* w1_gate_up_blocks = nullptr;

  void* out = nullptr;
  int64_t out_row_stride = 0;  // elements; 0 = K

  // Optional: the routing decided by the layer, [T, k] each (global expert ids; the routing weights,
  // which the combine applies, or the permute to x for weight-on-input routers; no shared-expert
  // slot), copied from the workspace after the combine (4-byte aligned). With
  // num_tokens_device, rows past the device-side count are copied too and hold stale values.
  int32_t* out_topk_ids = nullptr;
  float* out_topk_weights = nullptr;
};

}  // namespace fusedmoe
