// Host launcher of the fused front half for small token counts (decode): route + plan (+ FP8
// quantisation of x in token order, the gather layout) in one cooperative kernel launch (a
// grid-wide barrier between routing and planning; at most 32 routing blocks, plus blocks that only
// quantise). Results are identical to
// launch_router + launch_plan (+ launch_permute_quant with permute == false). The kernel writes
// the whole error flag (router.error_flag, int32[4]) itself: no memset before it. No allocation,
// no host synchronisation; CUDA-graph capturable (cooperative kernel nodes).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "fusedmoe/quant.h"
#include "fusedmoe/types.h"
#include "kernels/dispatch/plan_launch.h"
#include "kernels/router/router_launch.h"

namespace fusedmoe::kernels {

// Bounds of the fused path: tokens (the launch bound) and plan entries (tokens x slots).
inline constexpr int64_t kFrontMaxTokens = 256;
inline constexpr int64_t kFrontMaxEntries = 256 * 17;
// Precomputed ids run in the fused front up to this many tokens (every bound of the fused path;
// forward() takes them there by auto, measured faster in session 57: resolve() in core/moe.cpp).
inline constexpr int64_t kFrontPrecomputedMaxTokens = kFrontMaxTokens;

// The problem-shape part of the eligibility (also what explain() reports): a router that reads
// logits rows (or precomputed ids), 1 <= tokens <= kFrontMaxTokens, tokens x
// slots <= kFrontMaxEntries.
bool front_small_shape_ok(RouterKind kind, int64_t tokens, int slots, const char** why = nullptr);

struct FrontArgs {
  RouterArgs router;  // router.num_tokens: T or its bound; router.num_tokens_dev: optional device T
  PlanArgs plan;      // same T / bound and device count; plan.topk_ids = router.topk_ids
  // Optional FP8 quantisation of x in token order (rows = the bound), as launch_permute_quant
  // with permute == false: kNone (skip), kPerTensorStatic, kPerToken or kGroup128.
  ActQuant quant = ActQuant::kNone;
  ScaleFormat scale_format = ScaleFormat::kFloat32;
  DType act_dtype = DType::kBFloat16;
  const void* x = nullptr;
  int64_t x_row_stride = 0;
  int hidden = 0;
  const float* static_scale = nullptr;
  void* q_out = nullptr;      // [bound, K] e4m3
  float* q_scales = nullptr;  // kPerTensorStatic: [1]; kPerToken: [pad4(bound)]; kGroup128: [K/128, pad4(bound)]
  // (the kernel triggers its dependents at its start, quantising or not: a PDL-launched reader of
  // its outputs must wait (griddepcontrol.wait) before reading them)
};

// True when the fused path can run these arguments: a router that reads rows of logits
// (softmax / biased / top-k-softmax / sigmoid-top-1; not hash), or precomputed ids (unless
// FUSEDMOE_FRONT_PRECOMPUTED=0); bound <= kFrontMaxTokens, bound x slots <=
// kFrontMaxEntries, quantisation none / static / per-token / 128-group of a K that is a multiple
// of 16, and no weight-on-input scaling of x. *why says which condition failed.
bool front_small_eligible(const FrontArgs& args, const char** why);

// cudaErrorInvalidValue when not eligible or the arguments are invalid (as the separate launchers);
// cudaErrorCooperativeLaunchTooLarge, with nothing launched, when the grid cannot be resident at
// once on this device (the caller then runs the separate kernels).
cudaError_t launch_front_small(const FrontArgs& args, cudaStream_t stream);

const char* front_small_kernel_name();

// Whether a bound of 2-16 tokens routes on several blocks of 4 tokens instead of one block of 16
// routing warps: the measured rule (a quantising front over >= 256 experts at 13-16 tokens;
// front_launch.cu), without the FUSEDMOE_FRONT_SPLIT override.
bool front_split_rule(bool precomputed, bool quantises, int experts, int64_t bound);

// Scratch the fused kernel needs in args.plan.scratch (each routing block's group masks, for
// bounds from 2 tokens, which may run on several routing blocks; 0 at 1). The workspace reserves
// it in the plan's scratch.
size_t front_scratch_bytes(int64_t max_tokens, int groups);

// One tiny cooperative launch on a private stream, synchronised: the process's first cooperative
// launch carries a one-time driver cost, paid here (by preload_kernels) instead of by a call.
cudaError_t warm_cooperative_launch();

// Diagnostic timeline (the bench's dispatch suite): while a device buffer of at least
// 32 x kTraceSlots (16) + kFineStamps (16) uint64 is set, every fused-front launch records
// %globaltimer stamps per block into it (front.cuh: kTraceSlots, trace_stamp; a diagnosis build
// also block 0's fine stamps). nullptr (the default) turns it off; production never sets it. Not
// thread-safe against concurrent launches: a tool's switch.
void set_front_trace(unsigned long long* buffer);

}  // namespace fusedmoe::kernels
