// The layer's front half (route -> plan -> permute/quantise) and back half (combine) on the
// device, wired from the workspace layout. Validation first; then launches only.
#include <cuda_runtime.h>

#include <algorithm>

#include "core/check.h"
#include "core/stages.h"
#include "core/workspace.h"
#include "fusedmoe/device.h"
#include "fusedmoe/moe.h"
#include "kernels/common/launch_mode.h"  // plain C++ (the PDL scope of dispatch())
#if defined(FUSEDMOE_WITH_CUDA)
#include "kernels/combine/combine_launch.h"
#include "kernels/dispatch/plan_launch.h"
#include "kernels/front/front_launch.h"
#include "kernels/quant/permute_quant_launch.h"
#include "kernels/router/router_launch.h"
#endif

namespace fusedmoe {

namespace {

template <class T>
T* region(void* ws, const detail::Region& r) {
  return r.bytes ? reinterpret_cast<T*>(static_cast<char*>(ws) + r.offset) : nullptr;
}

Status launched(cudaError_t e, const char* what) {
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e == cudaSuccess) return Status::Ok();
  return Status(StatusCode::kCudaError, std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace

namespace detail {
Status check_workspace(const MoeProblem& p, const void* ws, size_t bytes) {
  const size_t need = detail::WorkspaceLayout::plan(p).total;
  FM_REQUIRE(bytes >= need, kWorkspaceTooSmall,
             "workspace has " << bytes << " bytes; this problem (max_tokens " << p.max_tokens << ") needs " << need
                              << " (ask workspace_size())");
  FM_REQUIRE(ws != nullptr, kInvalidArgument, "workspace is null");
  FM_REQUIRE(reinterpret_cast<uintptr_t>(ws) % detail::kWorkspaceAlign == 0, kMisaligned,
             "workspace must be " << detail::kWorkspaceAlign << "-byte aligned");
  return Status::Ok();
}

Status check_device() {
  int device = 0;
  FM_TRY(current_device(&device));
  return check_device_supported(device);
}
}  // namespace detail

namespace detail {

Status check_call(const MoeProblem& p, const MoeTensors& t, const void* ws, size_t ws_bytes, bool front_only) {
  FM_TRY(front_only ? validate_front(p, t) : validate(p, t));
  FM_TRY(check_workspace(p, ws, ws_bytes));
  return check_device();
}

Status run_dispatch(const MoeProblem& p, const MoeTensors& t, void* ws, Stream stream, const DispatchOptions& o,
                    DispatchResult* r) {
#if !defined(FUSEDMOE_WITH_CUDA)
  (void)stream;
  return Status(StatusCode::kNoDevice, "built without CUDA kernels");
#else
  const detail::WorkspaceLayout w = detail::WorkspaceLayout::plan(p);
  cudaStream_t s = stream;
  const int k = p.top_k();
  const int groups = p.weight_experts();
  const int slots = p.slots_per_token();
  *r = DispatchResult{};
  r->num_groups = groups;
  r->num_tokens_device = t.num_tokens_device;
  int32_t* topk_ids = region<int32_t>(ws, w.topk_ids);
  float* topk_weights = region<float>(ws, w.topk_weights);
  int32_t* error_flag = region<int32_t>(ws, w.error_flag);
  r->topk_ids = topk_ids;
  r->topk_weights = topk_weights;
  r->counts = region<int32_t>(ws, w.counts);
  r->offsets = region<int32_t>(ws, w.offsets);
  r->padded_offsets = region<int32_t>(ws, w.padded_offsets);
  r->row_token = region<int32_t>(ws, w.row_token);
  r->row_slot = region<int32_t>(ws, w.row_slot);
  r->slot_row = region<int32_t>(ws, w.slot_row);
  kernels::RouterArgs ra;
  ra.config = p.router;
  ra.num_tokens = p.num_tokens;
  ra.num_tokens_dev = t.num_tokens_device;
  ra.num_experts = p.num_experts;
  ra.logits = t.router_logits;
  ra.correction_bias = t.correction_bias;
  ra.token_ids = t.token_ids;
  ra.hash_table = t.hash_table;
  ra.hash_vocab = t.hash_vocab;
  ra.topk_ids_in = t.topk_ids;
  ra.topk_weights_in = t.topk_weights;
  ra.topk_ids = topk_ids;
  ra.topk_weights = topk_weights;
  ra.error_flag = error_flag;

  kernels::PlanArgs pa;
  pa.topk_ids = topk_ids;
  pa.num_tokens = p.num_tokens;
  pa.num_tokens_dev = t.num_tokens_device;
  pa.top_k = k;
  pa.num_experts = p.num_experts;
  pa.expert_map = p.num_local_experts >= 0 ? t.expert_map : nullptr;
  pa.num_local_experts = p.local_experts();
  pa.num_shared_experts = p.num_shared_experts;
  pa.tile_m = o.tile_m;
  pa.counts = const_cast<int32_t*>(r->counts);
  pa.offsets = const_cast<int32_t*>(r->offsets);
  pa.padded_offsets = const_cast<int32_t*>(r->padded_offsets);
  pa.row_token = const_cast<int32_t*>(r->row_token);
  pa.row_slot = const_cast<int32_t*>(r->row_slot);
  pa.slot_row = const_cast<int32_t*>(r->slot_row);
  pa.error_flag = error_flag;
  pa.scratch = region<void>(ws, w.plan_scratch);
  pa.scratch_bytes = w.plan_scratch.bytes;

  const bool quant = p.quant.act != ActQuant::kNone;
  // Rows the permuted layout can occupy: every row plus the padding of each non-empty group.
  const int64_t rows = p.num_tokens * slots;
  const int64_t max_pad_rows = rows + std::min<int64_t>(groups, rows) * (o.tile_m - 1);
  r->act = region<void>(ws, w.act_in);
  r->act_rows = o.permute ? max_pad_rows : p.num_tokens;
  r->act_scales = quant ? region<float>(ws, w.act_in_scales) : nullptr;

  // Small token counts: one fused kernel (route + plan, + the token-order quantisation).
  if (o.fuse_front && p.num_tokens > 0) {
    kernels::FrontArgs fa;
    fa.router = ra;
    fa.plan = pa;
    // Token order: x is quantised in the fused kernel when the scheme needs no pass over all of x
    // first (dynamic per-tensor) and no routing weight on it; otherwise route + plan are still
    // fused and the quantiser runs after.
    const bool fuse_quant = !o.permute && quant && p.quant.act != ActQuant::kPerTensorDynamic &&
                            !p.router.weight_on_input;
    if (fuse_quant) {
      fa.quant = p.quant.act;
      fa.scale_format = p.quant.act_scale_format;
      fa.act_dtype = p.act_dtype;
      fa.x = t.x;
      fa.x_row_stride = t.x_row_stride;
      fa.hidden = p.hidden;
      fa.static_scale = t.act_scale;
      fa.q_out = const_cast<void*>(r->act);
      fa.q_scales = const_cast<float*>(r->act_scales);
    }
    if (kernels::front_small_eligible(fa, nullptr)) {  // it writes the whole error flag itself
      const cudaError_t e = kernels::launch_front_small(fa, s);
      if (e != cudaErrorCooperativeLaunchTooLarge) {  // too large: nothing launched, separate kernels
        FM_TRY(launched(e, "fused route + plan"));
        r->fused_front = true;
        ++r->launches;
        if (fa.quant != ActQuant::kNone) return Status::Ok();  // x quantised in token order already
      }
    }
  }
  // Token order, no quantisation, no weight on the input: GEMM1 reads x itself (no copy).
  const int64_t x_stride = t.x_row_stride > 0 ? t.x_row_stride : p.hidden;
  const bool x_as_is = !o.permute && !quant && !p.router.weight_on_input && x_stride == p.hidden;
  if (!r->fused_front) {
    // A router that reads whole rows of logits writes the whole error flag itself (no memset node:
    // ~1 us per call in graph replay); the plan only adds to it afterwards.
    ra.owns_error_flag = p.num_tokens > 0 && kernels::router_owns_error_flag(p.router.kind);
    if (!ra.owns_error_flag) {
      FM_TRY(launched(cudaMemsetAsync(error_flag, 0, 16, s), "clear error flag"));
      ++r->launches;
    }
    if (p.num_tokens > 0) {
      FM_TRY(launched(kernels::launch_router(ra, s), "router"));
      ++r->launches;
    }
    FM_TRY(launched(kernels::launch_plan(pa, s), "dispatch plan"));
    r->launches += kernels::plan_launch_count(p.num_tokens * slots);
  }

  kernels::PermuteQuantArgs qa;
  qa.x = t.x;
  qa.x_row_stride = t.x_row_stride;
  qa.act_dtype = p.act_dtype;
  qa.num_tokens = p.num_tokens;
  qa.num_tokens_dev = t.num_tokens_device;
  qa.hidden = p.hidden;
  qa.quant = p.quant.act;
  qa.scale_format = p.quant.act_scale_format;
  qa.static_scale = t.act_scale;
  qa.permute = o.permute;
  qa.slots = slots;
  qa.num_groups = groups;
  qa.slot_row = r->slot_row;
  qa.row_token = r->row_token;
  qa.row_slot = r->row_slot;
  qa.offsets = r->offsets;
  qa.padded_offsets = r->padded_offsets;
  qa.row_weight = p.router.weight_on_input ? topk_weights : nullptr;
  qa.top_k = k;
  qa.out = const_cast<void*>(r->act);
  qa.out_scales = const_cast<float*>(r->act_scales);
  qa.rows_out = r->act_rows;
  qa.scratch = region<void>(ws, w.quant_scratch);
  qa.scratch_bytes = w.quant_scratch.bytes;
  // 1x128 scales kept in token order (DispatchOptions::group_scales_by_token): the permute's stage
  // in the quantiser's scratch is the result.
  qa.scales_by_token = o.group_scales_by_token && o.permute && p.quant.act == ActQuant::kGroup128 &&
                       !p.router.weight_on_input;
  if (qa.scales_by_token) {
    r->act_scales = nullptr;
    r->act_scales_by_token = kernels::permute_quant_token_scales(qa.scratch);
    r->act_scales_token_stride = kernels::scale_stage_stride(p.hidden);
  }
  if (x_as_is) {
    r->act = t.x;
    return Status::Ok();
  }
  if (p.num_tokens > 0) {
    int kernels_launched = 0;
    qa.kernels_launched = &kernels_launched;
    FM_TRY(launched(kernels::launch_permute_quant(qa, s), "permute/quantise"));
    r->launches += kernels_launched;
  }
  return Status::Ok();
#endif
}

Status run_combine(const MoeProblem& p, const DispatchResult& d, const void* expert_out, void* out,
                   int64_t out_row_stride, Stream stream, bool plan_ready, const float* bias) {
#if !defined(FUSEDMOE_WITH_CUDA)
  (void)p; (void)d; (void)expert_out; (void)out; (void)out_row_stride; (void)stream; (void)plan_ready; (void)bias;
  return Status(StatusCode::kNoDevice, "built without CUDA kernels");
#else
  if (p.num_tokens == 0) return Status::Ok();
  kernels::CombineArgs c;
  c.expert_out = expert_out;
  c.slot_row = d.slot_row;
  c.topk_weights = p.router.weight_on_input ? nullptr : d.topk_weights;
  c.shared_scale = p.shared_expert_scale;
  c.num_tokens = p.num_tokens;
  c.num_tokens_dev = d.num_tokens_device;
  c.top_k = p.top_k();
  c.num_shared = p.num_shared_experts;
  c.hidden = p.hidden;
  c.act_dtype = p.act_dtype;
  c.out = out;
  c.out_row_stride = out_row_stride;
  c.plan_ready = plan_ready;
  if (bias != nullptr) {
    c.bias = bias;
    c.group_offsets = d.offsets;
    c.num_groups = d.num_groups;
  }
  return launched(kernels::launch_combine(c, stream), "combine");
#endif
}

}  // namespace detail

Status dispatch(const MoeProblem& p, const MoeTensors& t, void* ws, size_t ws_bytes, Stream stream,
                const DispatchOptions& o, DispatchResult* r) {
  FM_REQUIRE(r != nullptr, kInvalidArgument, "result is null");
  FM_REQUIRE(o.tile_m >= 1 && o.tile_m <= detail::kMaxTileRows, kInvalidArgument,
             "tile_m (" << o.tile_m << ") must be in [1, " << detail::kMaxTileRows << "]");
  FM_TRY(detail::check_call(p, t, ws, ws_bytes, /*front_only=*/true));  // (no out, weights: engines bring their own)
  const kernels::ScopedOverlap overlap(o.overlap_launches);  // every launch below (launch_mode.h)
  return detail::run_dispatch(p, t, ws, stream, o, r);
}

Status combine(const MoeProblem& p, const DispatchResult& d, const void* expert_out, void* out,
               int64_t out_row_stride, Stream stream) {
  FM_TRY(validate(p));
  FM_REQUIRE(p.num_tokens == 0 || (out != nullptr && expert_out != nullptr), kInvalidArgument,
             "combine needs expert_out and out");
  FM_REQUIRE(reinterpret_cast<uintptr_t>(out) % 16 == 0 && reinterpret_cast<uintptr_t>(expert_out) % 16 == 0,
             kMisaligned, "combine: out and expert_out must be 16-byte aligned");
  FM_REQUIRE(out_row_stride == 0 || (out_row_stride >= p.hidden && out_row_stride % 8 == 0), kMisaligned,
             "out_row_stride (" << out_row_stride << ") must be 0 or a multiple of 8 that is >= K");
  FM_TRY(detail::check_device());
  return detail::run_combine(p, d, expert_out, out, out_row_stride, stream);
}

Status check_device_errors(const MoeProblem& p, const void* ws, Stream stream) {
  FM_TRY(validate(p));
  FM_REQUIRE(ws != nullptr, kInvalidArgument, "workspace is null");
  // With no tokens forward() and dispatch() launch nothing, so no flag was written for this call:
  // what the workspace holds there is an earlier call's or garbage (found by `fusedmoe run --tokens
  // 0` on a poisoned workspace, session 58).
  if (p.num_tokens == 0) return Status::Ok();
  const detail::WorkspaceLayout w = detail::WorkspaceLayout::plan(p);
  int32_t flag[4] = {0, 0, 0, 0};
  cudaError_t e = cudaMemcpyAsync(flag, static_cast<const char*>(ws) + w.error_flag.offset, sizeof(flag),
                                  cudaMemcpyDeviceToHost, stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  FM_TRY(launched(e, "read error flag"));
#if defined(FUSEDMOE_WITH_CUDA)
  FM_REQUIRE(flag[0] != kernels::kErrorHashTokenOutOfRange, kOutOfRange,
             "hash routing: token id " << flag[3] << " at token " << flag[1] << " is outside the table [0, "
                                       << "hash_vocab): that token was routed nowhere");
  FM_REQUIRE(flag[0] != kernels::kErrorTokenCount, kOutOfRange,
             "device token count " << flag[1] << " is outside [0, " << flag[3]
                                   << "] (problem.num_tokens, the bound): it was clamped");
#endif
  FM_REQUIRE(flag[0] == 0, kOutOfRange,
             "routing id " << flag[3] << " at token " << flag[1] << ", slot " << flag[2] << " is outside [0, "
                           << p.num_experts << "): that slot was routed nowhere");
  return Status::Ok();
}

}  // namespace fusedmoe
