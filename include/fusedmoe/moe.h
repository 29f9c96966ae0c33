// fusedmoe/moe.h — the entry points: validate, size the workspace, run the layer.
//
//   MoeProblem p = ...;  p.max_tokens = 4096;
//   size_t bytes;  check(fusedmoe::workspace_size(p, &bytes));   // once, at start-up
//   void* ws;  cudaMalloc(&ws, bytes);                            // caller owns all memory
//   p.num_tokens = t;                                             // any t <= max_tokens
//   check(fusedmoe::forward(p, tensors, ws, bytes, stream));      // async, graph-capturable
//
// forward() allocates nothing, never synchronises the host, and compiles nothing: every kernel
// is built ahead of time for sm_90a and token counts are runtime arguments.
#pragma once
#include <cstddef>
#include <string>

#include "fusedmoe/problem.h"
#include "fusedmoe/status.h"

namespace fusedmoe {

enum class Backend : uint8_t {
  kAuto,           // the oracle picks
  kFused,          // single-pass fused kernels (gather + GEMM + epilogue)
  kCutlassGrouped, // CUTLASS grouped GEMMs with separate permute / combine
};

enum class TileFamily : uint8_t {
  kAuto,
  kNormal,  // tokens in WGMMA's M (64/128)
  kSwapAB,  // expert rows in M = 64, tokens as N in {8, 16, 32, 64}
};

struct ForwardOptions {
  Backend backend = Backend::kAuto;  // an explicit choice always wins or fails with the reason
  TileFamily tiles = TileFamily::kAuto;
};

const char* to_string(Backend b);
const char* to_string(TileFamily t);

// Checks the descriptor alone (no pointers): shapes, counts, format combinations.
Status validate(const MoeProblem& p);
// Checks the descriptor and the tensors: required pointers present, 16-byte alignment, strides.
Status validate(const MoeProblem& p, const MoeTensors& t);

// Workspace needed for any call with num_tokens <= p.max_tokens.
Status workspace_size(const MoeProblem& p, size_t* bytes);

// Runs route -> dispatch -> GEMM1+activation -> GEMM2 -> combine on `stream`.
Status forward(const MoeProblem& p, const MoeTensors& t, void* workspace, size_t workspace_bytes,
               Stream stream, const ForwardOptions& options = {});

// The plan forward() would run for p, and why (backend, kernels, tiles), as text.
std::string explain(const MoeProblem& p, const ForwardOptions& options = {});

}  // namespace fusedmoe
