// Host launcher of the router kernels (every RouterKind of fusedmoe/router.h).
// One launch, no host synchronisation, no allocation; CUDA-graph capturable.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "fusedmoe/router.h"

namespace fusedmoe::kernels {

// Device-side input errors, recorded in an int32[4] in the workspace:
//   [0] error code (0 none, 1 = routed id out of [0, E)), set with atomicCAS (first one wins)
//   [1] token, [2] slot, [3] the offending id
// launch_router never clears it (the caller zeroes it before the launch), unless the router owns
// it (RouterArgs::owns_error_flag): then the router kernel writes all four words itself.
inline constexpr int kErrorIdOutOfRange = 1;
// kHash: token_ids[token] outside [0, hash_vocab): [2] = -1, [3] = the token id (saturated to
// int32); all k slots of the token get id -1, weight 0.
inline constexpr int kErrorHashTokenOutOfRange = 2;
// MoeTensors::num_tokens_device outside [0, bound]: [1] = the device count, [3] = the bound; the
// kernels clamp it (kernels/common/token_count.cuh).
inline constexpr int kErrorTokenCount = 3;

struct RouterArgs {
  RouterConfig config;
  int64_t num_tokens = 0;                  // tokens, or the bound when num_tokens_dev is set
  const int32_t* num_tokens_dev = nullptr; // optional: count read on the device (kernels/common/token_count.cuh)
  int num_experts = 0;
  const void* logits = nullptr;            // [T, E] config.logits_dtype (may be null for kHash/kPrecomputed)
  const float* correction_bias = nullptr;  // [E] when config.use_correction_bias
  const int64_t* token_ids = nullptr;      // [T] kHash
  const int32_t* hash_table = nullptr;     // [hash_vocab, k] kHash
  int64_t hash_vocab = 0;
  const int32_t* topk_ids_in = nullptr;    // [T, k] kPrecomputed
  const float* topk_weights_in = nullptr;  // [T, k] kPrecomputed
  int32_t* topk_ids = nullptr;             // [T, k] out: global ids, selection order
  float* topk_weights = nullptr;           // [T, k] out
  int32_t* error_flag = nullptr;           // int32[4]; ids out of range are replaced by -1 (routed nowhere)
  // The router writes the whole error flag itself (zero, or a device token count out of range), so
  // the caller needs no memset before it. Only for the routers that report nothing else: the ones
  // that read whole rows of logits (kSoftmaxTopK, kTopKSoftmax, kSigmoidTop1, kBiasedTopK);
  // ignored (the flag is only added to) for kHash and kPrecomputed.
  bool owns_error_flag = false;
};

// Routers whose kernel can own the error flag (RouterArgs::owns_error_flag): they only ever report
// a device token count out of range.
inline bool router_owns_error_flag(RouterKind kind) {
  return kind == RouterKind::kSoftmaxTopK || kind == RouterKind::kTopKSoftmax || kind == RouterKind::kSigmoidTop1 ||
         kind == RouterKind::kBiasedTopK;
}

// cudaErrorInvalidValue for an invalid configuration (E outside [1, 1024], k outside
// [1, min(E, 16)], n_group not dividing E, ..., a required pointer null); num_tokens == 0 launches
// nothing. Ids and weights equal ref::route's bit for bit (src/reference/router.cpp).
cudaError_t launch_router(const RouterArgs& args, cudaStream_t stream);

// Name of the compiled router kernel family, for compiled_kernel_names().
const char* router_kernel_name();

}  // namespace fusedmoe::kernels
