// Router kernel instances for RowMode::kSqrtSoftplusRow (see router_instances.cuh).
#define FUSEDMOE_ROUTER_INSTANCES 1
#include "kernels/router/router_instances.cuh"

namespace fusedmoe::kernels::router_detail {
cudaError_t launch_topk_sqrt_softplus(const Params& p, bool bf16, int vec, size_t smem, cudaStream_t stream) {
  return launch_topk_mode<RowMode::kSqrtSoftplusRow>(p, bf16, vec, smem, stream);
}

void append_topk_sqrt_softplus_instances(KernelList* out) { append_topk_mode<RowMode::kSqrtSoftplusRow>(out); }
}  // namespace fusedmoe::kernels::router_detail
