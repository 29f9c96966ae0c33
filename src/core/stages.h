// Internal entry points of the layer's stages, without the public calls' validation (the
// caller has validated once): used by forward() and by dispatch()/combine().
#pragma once
#include "fusedmoe/moe.h"

namespace fusedmoe::detail {
// The part of validate(p, t) that dispatch() needs: the problem, x, the router's inputs, the expert
// map, a device token count, a static activation scale; not out, the weights or their scales.
Status validate_front(const MoeProblem& p, const MoeTensors& t);
// validate(p, t) (front_only: validate_front) + workspace size/alignment + a supported device.
Status check_call(const MoeProblem& p, const MoeTensors& t, const void* ws, size_t ws_bytes, bool front_only = false);
// A supported device is current (sm_90, kernels preloaded).
Status check_device();
Status run_dispatch(const MoeProblem& p, const MoeTensors& t, void* ws, Stream stream, const DispatchOptions& o,
                    DispatchResult* r);
// plan_ready: kernels::CombineArgs::plan_ready (forward() only: the permute, or GEMM1 gathering its
// rows, waits before it triggers, so the plan is complete when the combine starts).
// bias: the expert bias b2 [weight experts, K] f32, added to each slot's row by the combine (the
// CUTLASS backend's GEMM2 has none in its epilogue); nullptr = none.
Status run_combine(const MoeProblem& p, const DispatchResult& d, const void* expert_out, void* out,
                   int64_t out_row_stride, Stream stream, bool plan_ready = false, const float* bias = nullptr);
}  // namespace fusedmoe::detail
