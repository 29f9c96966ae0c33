// fusedmoe/quant.h — weight formats and activation quantisation schemes.
//
// Weight scales multiply: real = stored * scale.  Scale tensors:
//   kPerTensor   w_scale [E]                 (one per expert matrix)
//   kPerChannel  w_scale [E, rows]           (rows = 2N for W1, K for W2)
//   kBlock       w_scale [E, ceil(rows/128), ceil(cols/128)]  (float32 or UE8M0 bytes)
//   kGroup       w_scale [E, rows, cols/group]                (4-bit formats, later)
// Activation scales (computed by the layer, or given for kPerTensorStatic):
//   kPerTensor*  one float;  kPerToken  [tokens];  kGroup128  [tokens, K/128].
#pragma once
#include <cstdint>

#include "fusedmoe/types.h"

namespace fusedmoe {

enum class WeightFormat : uint8_t {
  kBF16,
  kFP16,
  kFP8E4M3,
  kMXFP4,  // reserved: e2m1 with UE8M0 scale per 32 (no kernel yet)
  kInt4,   // reserved: W4A16 int4 with group scales (no kernel yet)
};

enum class ScaleGranularity : uint8_t {
  kNone,        // BF16/FP16 weights
  kPerTensor,
  kPerChannel,  // per output row
  kBlock,       // block_n x block_k tiles (128x128 in DeepSeek-style checkpoints)
  kGroup,       // 1 x group along K (4-bit formats)
};

enum class ScaleFormat : uint8_t {
  kFloat32,
  kUE8M0,  // power-of-two scales stored as one exponent byte
};

enum class ActQuant : uint8_t {
  kNone,              // activations stay in the input dtype (BF16/FP16 GEMMs)
  kPerTensorStatic,   // one caller-given scale
  kPerTensorDynamic,  // scale = global absmax / 448, computed on the device
  kPerToken,          // one scale per token row
  kGroup128,          // one scale per 1x128 group along K (DeepSeek)
};

struct WeightQuant {
  WeightFormat format = WeightFormat::kBF16;
  ScaleGranularity granularity = ScaleGranularity::kNone;
  ScaleFormat scale_format = ScaleFormat::kFloat32;
  int block_n = 128;  // kBlock: rows per scale
  int block_k = 128;  // kBlock: columns per scale; kGroup: group size along K
};

struct QuantScheme {
  WeightQuant weight;
  ActQuant act = ActQuant::kNone;
  ScaleFormat act_scale_format = ScaleFormat::kFloat32;

  static QuantScheme bf16();
  static QuantScheme fp16();
  static QuantScheme fp8_per_tensor(bool dynamic_act_scale);
  static QuantScheme fp8_per_channel();                  // per-channel W, per-token A
  static QuantScheme fp8_block128(ScaleFormat scales);   // 128x128 W, 1x128 A (DeepSeek)
};

const char* to_string(WeightFormat f);
const char* to_string(ScaleGranularity g);
const char* to_string(ScaleFormat f);
const char* to_string(ActQuant a);

}  // namespace fusedmoe
