// Fused front kernel instances for RowMode::kSqrtSoftplusRow (see front_instances.cuh).
#define FUSEDMOE_FRONT_INSTANCES 1
#include "kernels/front/front_instances.cuh"

namespace fusedmoe::kernels::front_detail {
cudaError_t launch_front_sqrt_softplus(const FrontParams& f, bool bf16, int vec, const FrontLaunch& l, cudaStream_t s) {
  return launch_front_mode<RowMode::kSqrtSoftplusRow>(f, bf16, vec, l, s);
}

void append_front_sqrt_softplus_instances(KernelList* out) { append_front_mode<RowMode::kSqrtSoftplusRow>(out); }
}  // namespace fusedmoe::kernels::front_detail
