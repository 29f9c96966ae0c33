// front_launch.cu — host side of the fused front kernel: eligibility, parameters (through the
// router's and the plan's own checks), launch shape.
#include "kernels/front/front_launch.h"

#include <cooperative_groups.h>

#include <algorithm>
#include <atomic>

#include "kernels/front/front_instances.cuh"
#include "kernels/quant/vec.cuh"

namespace fusedmoe::kernels {

using front_detail::FrontLaunch;
using front_detail::FrontParams;
using router_detail::RowMode;

namespace {
std::atomic<unsigned long long*> g_front_trace{nullptr};

// The most routing blocks that form one cluster: kMaxClusterBlocks (the size rules below cap it),
// or FUSEDMOE_FRONT_CLUSTER (a tuning and diagnostic override, read once: 0 or 1 = never a
// cluster, always the cooperative launch; at most kMaxClusterBlocks; above 8 a non-portable size).
int front_cluster_max() {
  static const int v = [] {
    const std::optional<int> e = env_int("FUSEDMOE_FRONT_CLUSTER");
    return e ? std::clamp(*e, 0, front_detail::kMaxClusterBlocks) : front_detail::kMaxClusterBlocks;
  }();
  return v;
}

// The fewer tokens per routing block: kCoopTokensPerBlock, or kRouteWarps with FUSEDMOE_FRONT_TPB=8
// (a tuning and diagnostic override, read once).
int front_small_tpb() {
  static const int v = env_int("FUSEDMOE_FRONT_TPB").value_or(front_detail::kCoopTokensPerBlock) == 8
                           ? front_detail::kRouteWarps
                           : front_detail::kCoopTokensPerBlock;
  return v;
}
// The cluster of routing blocks at `tpb` tokens per block: the measured limits (front.cuh:
// kClusterBlocksOf4, kClusterBlocksOf8) under front_cluster_max().
int front_cluster_limit(int tpb) {
  return std::min(front_cluster_max(), tpb <= front_detail::kCoopTokensPerBlock ? front_detail::kClusterBlocksOf4
                                                                                 : front_detail::kClusterBlocksOf8);
}
// Tokens per routing block above one block: a cluster while its blocks fit front_cluster_limit(),
// with front_small_tpb() tokens each when they fit (bounds 17-48 by default), else kRouteWarps
// (49-72); then a cooperative launch, front_small_tpb() while the blocks fit kMaxRouteBlocks
// (bounds up to 128), else kRouteWarps.
int front_tokens_per_block(int64_t bound) {
  const int small = front_small_tpb();
  const auto blocks = [&](int tpb) { return (bound + tpb - 1) / tpb; };
  if (blocks(small) <= front_cluster_limit(small)) return small;
  if (blocks(front_detail::kRouteWarps) <= front_cluster_limit(front_detail::kRouteWarps)) return front_detail::kRouteWarps;
  return blocks(small) <= front_detail::kMaxRouteBlocks ? small : front_detail::kRouteWarps;
}

// Bounds of 2-16 tokens on several routing blocks instead of one of 16 routing warps. Default (the
// rule): a quantising front (x in token order) over >= 256 experts at kSplitFromTokens-16 tokens, as
// blocks of 4 tokens: with one block, routing ends ~0.6 us later from 13 tokens (the last routed
// stamp 4.13 -> 4.70 us at 12 -> 13 tokens: presumably 13+ routing warps on one SM slowing each
// other), and dsv3 + FP8 route + plan + quantise took 7.08-7.68 -> 6.64-6.69 us per call at 13-16
// tokens (kernel 5.60-5.73 -> 5.22), 0.1-0.2 us slower at 10-12 (H100, session 49 calls 1-2). Not
// the BF16 front: dsv3-tp8 layers at 13 / 16 tokens ran 3 % slower / level (call 3); nor qwen3
// (E 128: 0.2-1.0 us slower per call at 8-16 tokens).
// FUSEDMOE_FRONT_SPLIT (read once, a measurement switch): 0 = never; n >= 2 = every router at
// bounds n-16; FUSEDMOE_FRONT_SPLIT_TPB: 1, 2, 4 (default) or 8 tokens per block.
inline constexpr int64_t kSplitFromTokens = 13;
inline constexpr int kSplitMinExperts = 256;
int front_split_from() {
  static const int v = std::max(-1, env_int("FUSEDMOE_FRONT_SPLIT").value_or(-1));  // -1: the rule
  return v;
}
int front_split_tpb() {
  static const int v = [] {
    const int t = env_int("FUSEDMOE_FRONT_SPLIT_TPB").value_or(4);
    return t == 1 || t == 2 || t == 8 ? t : 4;
  }();
  return v;
}
bool front_split(bool precomputed, bool quant, int experts, int64_t bound) {
  const int from = front_split_from();
  if (from < 0) return front_split_rule(precomputed, quant, experts, bound);
  return !precomputed && bound >= 2 && bound <= front_detail::kWideTokens && from > 0 && bound >= from;
}

// Precomputed ids through the fused front (default on); FUSEDMOE_FRONT_PRECOMPUTED=0 (read once)
// sends them to the separate kernels, for measurement.
bool front_precomputed_on() {
  static const bool v = env_int("FUSEDMOE_FRONT_PRECOMPUTED").value_or(1) != 0;
  return v;
}
}  // namespace

bool front_split_rule(bool precomputed, bool quantises, int experts, int64_t bound) {
  if (precomputed || bound < kSplitFromTokens || bound > front_detail::kWideTokens) return false;
  return quantises && experts >= kSplitMinExperts;
}

size_t front_scratch_bytes(int64_t max_tokens, int groups) {
  // Any bound that may run on several routing blocks (from 2 tokens: FUSEDMOE_FRONT_SPLIT); a call
  // may run fewer tokens than the workspace's bound.
  if (max_tokens <= 1) return 0;
  return front_detail::block_masks_bytes(std::max(groups, 0));
}

void set_front_trace(unsigned long long* buffer) { g_front_trace.store(buffer, std::memory_order_relaxed); }

const char* front_small_kernel_name() {
  return "front_small<f32|bf16 logits, vec 1-8, <=32 experts/lane, row mode> (route + plan + token-order fp8)";
}

bool front_small_shape_ok(RouterKind kind, int64_t tokens, int slots, const char** why) {
  const char* dummy = nullptr;
  const char*& w = why != nullptr ? *why : dummy;
  static_assert(kFrontPrecomputedMaxTokens <= kFrontMaxTokens, "front: precomputed ids' bound");
  if (kind == RouterKind::kPrecomputed ? tokens > kFrontPrecomputedMaxTokens : !reads_logits(kind)) {
    w = kind == RouterKind::kPrecomputed ? "precomputed ids above 256 tokens" : "hash router (reads no logits row)";
    return false;
  }
  if (tokens < 1 || tokens > kFrontMaxTokens) {
    w = "token bound outside [1, 256]";
    return false;
  }
  if (tokens * slots > kFrontMaxEntries) {
    w = "tokens x slots above the single-block plan";
    return false;
  }
  return true;
}

bool front_small_eligible(const FrontArgs& a, const char** why) {
  const char* dummy = nullptr;
  const char*& w = why != nullptr ? *why : dummy;
  const RouterConfig& rc = a.router.config;
  const int64_t bound = a.router.num_tokens;
  if (!front_small_shape_ok(rc.kind, bound, a.plan.top_k + a.plan.num_shared_experts, &w)) return false;
  if (rc.kind == RouterKind::kPrecomputed && !front_precomputed_on()) {
    w = "precomputed ids: off (FUSEDMOE_FRONT_PRECOMPUTED=0)";
    return false;
  }
  if (a.plan.num_tokens != bound || a.router.num_tokens_dev != a.plan.num_tokens_dev || a.plan.topk_ids != a.router.topk_ids) {
    w = "router and plan disagree";
    return false;
  }
  if (a.plan.num_local_experts + a.plan.num_shared_experts > front_detail::kMaxGroups) {
    w = "more than 1088 local groups";
    return false;
  }
  if (bound > 1 &&
      (a.plan.scratch == nullptr || a.plan.scratch_bytes < front_scratch_bytes(bound, a.plan.num_local_experts + a.plan.num_shared_experts))) {
    w = "plan scratch below front_scratch_bytes (the blocks' masks)";
    return false;
  }
  switch (a.quant) {
    case ActQuant::kNone: break;
    case ActQuant::kPerTensorStatic:
    case ActQuant::kPerToken:
    case ActQuant::kGroup128:
      if (rc.weight_on_input) {
        w = "weight-on-input scaling of x before quantisation";
        return false;
      }
      if (a.hidden <= 0 || a.hidden % 16 != 0 || a.x == nullptr || a.q_out == nullptr || !vec::aligned16(a.x) ||
          !vec::aligned16(a.q_out) || (a.x_row_stride != 0 && (a.x_row_stride < a.hidden || a.x_row_stride % 8 != 0)) ||
          (a.act_dtype != DType::kBFloat16 && a.act_dtype != DType::kFloat16) ||
          (a.quant == ActQuant::kPerTensorStatic && a.static_scale == nullptr)) {
        w = "quantisation arguments (K % 16, alignment, dtype, static scale)";
        return false;
      }
      break;
    default:
      w = "dynamic per-tensor scale needs a pass over all of x first";
      return false;
  }
  w = "eligible";
  return true;
}

cudaError_t launch_front_small(const FrontArgs& a, cudaStream_t stream) {
  if (!front_small_eligible(a, nullptr)) return cudaErrorInvalidValue;
  router_detail::RouterPrep rp;
  cudaError_t e = prepare_router(a.router, &rp);
  if (e != cudaSuccess) return e;
  const bool precomputed = a.router.config.kind == RouterKind::kPrecomputed;
  if (!rp.row_kernel && !precomputed) return cudaErrorInvalidValue;
  FrontParams f{};
  f.precomputed = precomputed;
  e = plan_detail::prepare_plan(a.plan, &f.plan);
  if (e != cudaSuccess) return e;
  f.r = rp.p;
  f.trace = g_front_trace.load(std::memory_order_relaxed);

  const bool quant = a.quant != ActQuant::kNone;
  FrontLaunch l;
  // 16 warps: a single routing block routes with all of them; several route with 8 and quantise
  // (or idle) with the others; block 0's general fallback plan gets them all.
  l.block = front_detail::kMaxThreads;
  const int warps = l.block / 32;
  const int64_t bound = a.router.num_tokens;
  const int64_t entries = f.plan.num_entries;
  const int G = f.plan.num_groups;
  f.plan_entries_per_warp = static_cast<int>(std::max<int64_t>(1, (entries + warps - 1) / warps));
  l.smem = std::max(rp.smem_per_warp * warps,
                    plan_detail::plan_smem_bytes(warps, G, static_cast<int>(entries)));
  if (l.smem > front_detail::kFrontMaxSmem) return cudaErrorInvalidValue;
  // Routing blocks: one up to kWideTokens (unless front_split()); above, front_tokens_per_block()
  // tokens each.
  const bool split = front_split(precomputed, quant, f.r.num_experts, bound);
  f.tokens_per_block = split                               ? front_split_tpb()
                       : bound <= front_detail::kWideTokens ? front_detail::kWideTokens
                                                            : front_tokens_per_block(bound);
  f.route_blocks = static_cast<int>((bound + f.tokens_per_block - 1) / f.tokens_per_block);
  const bool wide = f.route_blocks == 1;
  l.grid = f.route_blocks;
  if (quant) {
    // Quantising-only blocks after the routing ones (which do not quantise): about
    // kQuantBytesPerBlock of x per block, at most one block per SM, at least one. One SM streams
    // only ~15-60 GB/s of rows: 8 rows of K 7168 quantised by one block took 8.8 us on the H200.
    const int64_t x_bytes = bound * a.hidden * 2;
    const int64_t want = (x_bytes + front_detail::kQuantBytesPerBlock - 1) / front_detail::kQuantBytesPerBlock;
    l.grid += static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(want, vec::sm_count() - f.route_blocks)));
  }
  f.quant_warps = (l.grid - f.route_blocks) * warps;
  // Several routing blocks: one thread-block cluster when they are few enough (the launcher
  // checks that it fits, else it makes the cooperative launch), else a cooperative launch. Both
  // need the scratch (reserved for every bound above kWideTokens).
  if (!wide && f.route_blocks <= front_cluster_limit(f.tokens_per_block)) l.cluster = f.route_blocks;
  l.cooperative = f.route_blocks > 1;
  l.one_block = wide;
  if (l.cooperative) {
    if (a.plan.scratch == nullptr || a.plan.scratch_bytes < front_detail::block_masks_bytes(G))
      return cudaErrorInvalidValue;
    f.block_masks = static_cast<uint32_t*>(a.plan.scratch);
  }

  f.quant_scheme = pq_detail::kNone;
  if (quant) {
    f.quant_scheme = a.quant == ActQuant::kPerTensorStatic ? pq_detail::kStatic
                     : a.quant == ActQuant::kPerToken       ? pq_detail::kToken
                                                            : pq_detail::kGroup;
    f.ue8m0 = a.scale_format == ScaleFormat::kUE8M0;
    f.x_f16 = a.act_dtype == DType::kFloat16;
    f.x = a.x;
    f.x_stride = a.x_row_stride > 0 ? a.x_row_stride : a.hidden;
    f.hidden = a.hidden;
    f.units = a.hidden / 16;
    f.static_scale = a.static_scale;
    f.q_out = static_cast<uint8_t*>(a.q_out);
    f.q_scales = a.q_scales;
    f.rows_pad4 = (bound + 3) / 4 * 4;
  }

  // Precomputed ids: the logits mode's instances run them (route_token is not called), as one
  // routing block or several.
  if (precomputed) return front_detail::launch_front_logits(f, rp.bf16, 1, l, stream);
  switch (rp.mode) {
    case RowMode::kSoftmaxRow: return front_detail::launch_front_softmax(f, rp.bf16, rp.vec, l, stream);
    case RowMode::kSigmoidRow: return front_detail::launch_front_sigmoid(f, rp.bf16, rp.vec, l, stream);
    case RowMode::kSqrtSoftplusRow: return front_detail::launch_front_sqrt_softplus(f, rp.bf16, rp.vec, l, stream);
    case RowMode::kLogitsRow: return front_detail::launch_front_logits(f, rp.bf16, rp.vec, l, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace fusedmoe::kernels

namespace fusedmoe::kernels {

namespace {
// Two blocks meet at a grid barrier: the first cooperative launch of a process pays a one-time
// driver set-up; warm_cooperative_launch() makes the preload pay it instead of a first call.
__global__ void cooperative_warmup_kernel(int* sink) {
  cooperative_groups::this_grid().sync();
  if (sink != nullptr && threadIdx.x == 0) *sink = static_cast<int>(blockIdx.x);
}
}  // namespace

cudaError_t warm_cooperative_launch() {
  cudaStream_t s = nullptr;
  cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (e != cudaSuccess) return e;
  e = launch_cooperative(cooperative_warmup_kernel, 2, 32, 0, s, static_cast<int*>(nullptr));
  const cudaError_t e2 = cudaStreamSynchronize(s);
  cudaStreamDestroy(s);
  return e != cudaSuccess ? e : e2;
}

// The fused front kernel's instances (kernels/registry.h), from front_mode_*.cu, and the
// cooperative warm-up kernel of this file.
void append_front_instances(KernelList* out) {
  out->push_back({"front", "cooperative_warmup (grid barrier, 2 blocks)",
                  reinterpret_cast<const void*>(&cooperative_warmup_kernel)});
  front_detail::append_front_softmax_instances(out);
  front_detail::append_front_sigmoid_instances(out);
  front_detail::append_front_sqrt_softplus_instances(out);
  front_detail::append_front_logits_instances(out);
}
}  // namespace fusedmoe::kernels
