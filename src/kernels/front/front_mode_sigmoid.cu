// Fused front kernel instances for RowMode::kSigmoidRow (see front_instances.cuh).
#define FUSEDMOE_FRONT_INSTANCES 1
#include "kernels/front/front_instances.cuh"

namespace fusedmoe::kernels::front_detail {
cudaError_t launch_front_sigmoid(const FrontParams& f, bool bf16, int vec, const FrontLaunch& l, cudaStream_t s) {
  return launch_front_mode<RowMode::kSigmoidRow>(f, bf16, vec, l, s);
}

void append_front_sigmoid_instances(KernelList* out) { append_front_mode<RowMode::kSigmoidRow>(out); }
}  // namespace fusedmoe::kernels::front_detail
