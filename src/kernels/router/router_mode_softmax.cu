// Router kernel instances for RowMode::kSoftmaxRow (see router_instances.cuh).
#define FUSEDMOE_ROUTER_INSTANCES 1
#include "kernels/router/router_instances.cuh"

namespace fusedmoe::kernels::router_detail {
cudaError_t launch_topk_softmax(const Params& p, bool bf16, int vec, size_t smem, cudaStream_t stream) {
  return launch_topk_mode<RowMode::kSoftmaxRow>(p, bf16, vec, smem, stream);
}

void append_topk_softmax_instances(KernelList* out) { append_topk_mode<RowMode::kSoftmaxRow>(out); }
}  // namespace fusedmoe::kernels::router_detail
