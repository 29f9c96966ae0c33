// router_launch.cu — host side of the router kernels: checks the configuration, picks the
// instance (logits dtype x VEC x slots per lane) and launches. No allocation, no synchronisation:
// CUDA-graph capturable.
#include "kernels/router/router_launch.h"
#include "kernels/common/launch.cuh"

#include <algorithm>
#include <cstdint>

#include "kernels/router/router.cuh"
#include "kernels/router/router_instances.cuh"

namespace fusedmoe::kernels {

namespace {

using router_detail::Params;

using router_detail::kMaxGrid;

using router_detail::RowMode;

template <typename T>
cudaError_t launch_topk(const Params& p, RowMode mode, int vec, size_t smem, cudaStream_t stream) {
  constexpr bool kBf16 = sizeof(T) == 2;
  switch (mode) {  // the instances live in router_mode_*.cu (compiled in parallel)
    case RowMode::kSoftmaxRow: return router_detail::launch_topk_softmax(p, kBf16, vec, smem, stream);
    case RowMode::kSigmoidRow: return router_detail::launch_topk_sigmoid(p, kBf16, vec, smem, stream);
    case RowMode::kSqrtSoftplusRow: return router_detail::launch_topk_sqrt_softplus(p, kBf16, vec, smem, stream);
    case RowMode::kLogitsRow: return router_detail::launch_topk_logits(p, kBf16, vec, smem, stream);
  }
  return cudaErrorInvalidValue;
}

template <typename T>
cudaError_t launch_gather(const Params& p, cudaStream_t stream) {
  const int tokens_per_warp = 32 >> p.kp_log2;
  const int64_t warps = (p.num_tokens + tokens_per_warp - 1) / tokens_per_warp;
  constexpr int kWarps = router_detail::kGatherThreads / 32;
  const int64_t blocks = std::min<int64_t>((warps + kWarps - 1) / kWarps, kMaxGrid);
  return launch_chain(router_detail::router_gather_kernel<T>, dim3(static_cast<unsigned>(blocks)),
                      dim3(router_detail::kGatherThreads), 0, stream, p);
}

}  // namespace

const char* router_kernel_name() {
  return "router_topk_warp<f32|bf16, vec 1-8, <=32 experts/lane> + router_gather<f32|bf16>";
}

cudaError_t prepare_router(const RouterArgs& args, router_detail::RouterPrep* prep) {
  const RouterConfig& rc = args.config;
  const int num_experts = args.num_experts;
  const int k = rc.top_k;
  if (args.num_tokens < 0) return cudaErrorInvalidValue;
  if (num_experts < 1 || num_experts > kMaxExperts) return cudaErrorInvalidValue;
  if (k < 1 || k > kMaxTopK || k > num_experts) return cudaErrorInvalidValue;
  if (args.num_tokens == 0) return cudaSuccess;  // nothing to launch (prep stays default)
  if (args.topk_ids == nullptr || args.topk_weights == nullptr) return cudaErrorInvalidValue;
  const bool bf16 = rc.logits_dtype == DType::kBFloat16;
  if (!bf16 && rc.logits_dtype != DType::kFloat32) return cudaErrorInvalidValue;

  Params p;
  p.num_tokens = args.num_tokens;
  p.num_tokens_dev = args.num_tokens_dev;
  p.num_experts = num_experts;
  p.k = k;
  p.kind = rc.kind;
  p.score = rc.score;
  p.renormalize = rc.renormalize;
  p.scaling = rc.routed_scaling;
  p.logits = args.logits;
  p.token_ids = args.token_ids;
  p.hash_table = args.hash_table;
  p.hash_vocab = args.hash_vocab;
  p.ids_in = args.topk_ids_in;
  p.weights_in = args.topk_weights_in;
  p.ids_out = args.topk_ids;
  p.weights_out = args.topk_weights;
  p.error_flag = args.error_flag;
  p.owns_error_flag = args.owns_error_flag && router_owns_error_flag(rc.kind);

  bool row_kernel = true;  // the warp-per-token kernel (reads whole rows of logits)
  size_t smem = 0;
  switch (rc.kind) {
    case RouterKind::kSoftmaxTopK:
    case RouterKind::kTopKSoftmax:
    case RouterKind::kSigmoidTop1:
      if (args.logits == nullptr) return cudaErrorInvalidValue;
      break;
    case RouterKind::kBiasedTopK:
      if (args.logits == nullptr) return cudaErrorInvalidValue;
      if (rc.use_correction_bias) {
        if (args.correction_bias == nullptr) return cudaErrorInvalidValue;
        p.bias = args.correction_bias;
      }
      if (rc.n_group > 1) {
        if (num_experts % rc.n_group != 0) return cudaErrorInvalidValue;
        if (rc.topk_group < 1 || rc.topk_group > rc.n_group) return cudaErrorInvalidValue;
        const int group_size = num_experts / rc.n_group;
        if (k > rc.topk_group * group_size) return cudaErrorInvalidValue;
        p.n_group = rc.n_group;
        p.topk_group = rc.topk_group;
        p.group_size = group_size;
        int lanes = 1;
        while (lanes * 2 * rc.n_group <= 32) lanes *= 2;
        p.lanes_per_group = lanes;
        p.wsm_words = num_experts + rc.n_group;
        smem = sizeof(uint32_t) * static_cast<size_t>(router_detail::kWarpsPerBlock) *
               static_cast<size_t>(p.wsm_words);
      }
      break;
    case RouterKind::kHash:
      if (args.token_ids == nullptr || args.hash_table == nullptr) return cudaErrorInvalidValue;
      row_kernel = args.logits != nullptr && rc.score == ScoreFunction::kSoftmax;
      break;
    case RouterKind::kPrecomputed:
      if (args.topk_ids_in == nullptr || args.topk_weights_in == nullptr) return cudaErrorInvalidValue;
      row_kernel = false;
      break;
    default: return cudaErrorInvalidValue;
  }

  prep->bf16 = bf16;
  prep->row_kernel = row_kernel;
  prep->smem_per_warp = row_kernel && smem > 0 ? smem / router_detail::kWarpsPerBlock : 0;
  if (!row_kernel) {
    while ((1 << p.kp_log2) < k) ++p.kp_log2;
    prep->p = p;
    return cudaSuccess;
  }
  RowMode mode = RowMode::kSoftmaxRow;  // kSoftmaxTopK, kHash with logits and a softmax score
  if (rc.kind == RouterKind::kTopKSoftmax || rc.kind == RouterKind::kSigmoidTop1) mode = RowMode::kLogitsRow;
  if (rc.kind == RouterKind::kBiasedTopK) {
    if (rc.score == ScoreFunction::kSigmoid) mode = RowMode::kSigmoidRow;
    else if (rc.score == ScoreFunction::kSqrtSoftplus) mode = RowMode::kSqrtSoftplusRow;
    else if (rc.score != ScoreFunction::kSoftmax) return cudaErrorInvalidValue;
  }
  if (rc.kind == RouterKind::kHash && rc.score != ScoreFunction::kSoftmax && rc.score != ScoreFunction::kSigmoid &&
      rc.score != ScoreFunction::kSqrtSoftplus)
    return cudaErrorInvalidValue;
  prep->vec = hd::router_vec_width(num_experts, bf16);
  prep->mode = mode;
  p.aligned = reinterpret_cast<uintptr_t>(p.logits) % (static_cast<uintptr_t>(prep->vec) * (bf16 ? 2 : 4)) == 0;
  prep->p = p;
  return cudaSuccess;
}

cudaError_t launch_router(const RouterArgs& args, cudaStream_t stream) {
  router_detail::RouterPrep prep;
  const cudaError_t e = prepare_router(args, &prep);
  if (e != cudaSuccess) return e;
  if (args.num_tokens == 0) return cudaSuccess;
  const Params& p = prep.p;
  if (!prep.row_kernel) return prep.bf16 ? launch_gather<uint16_t>(p, stream) : launch_gather<float>(p, stream);
  const size_t smem = prep.smem_per_warp * router_detail::kWarpsPerBlock;
  return prep.bf16 ? launch_topk<uint16_t>(p, prep.mode, prep.vec, smem, stream)
                   : launch_topk<float>(p, prep.mode, prep.vec, smem, stream);
}

}  // namespace fusedmoe::kernels

namespace fusedmoe::kernels {
// The router's instances (kernels/registry.h): top-k from router_mode_*.cu, gather from here.
void append_router_instances(KernelList* out) {
  router_detail::append_topk_softmax_instances(out);
  router_detail::append_topk_sigmoid_instances(out);
  router_detail::append_topk_sqrt_softplus_instances(out);
  router_detail::append_topk_logits_instances(out);
  out->push_back({"router", "router_gather<f32>", reinterpret_cast<const void*>(&router_detail::router_gather_kernel<float>)});
  out->push_back({"router", "router_gather<bf16>", reinterpret_cast<const void*>(&router_detail::router_gather_kernel<uint16_t>)});
}
}  // namespace fusedmoe::kernels
