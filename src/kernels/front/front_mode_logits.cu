// Fused front kernel instances for RowMode::kLogitsRow (see front_instances.cuh).
#define FUSEDMOE_FRONT_INSTANCES 1
#include "kernels/front/front_instances.cuh"

namespace fusedmoe::kernels::front_detail {
cudaError_t launch_front_logits(const FrontParams& f, bool bf16, int vec, const FrontLaunch& l, cudaStream_t s) {
  return launch_front_mode<RowMode::kLogitsRow>(f, bf16, vec, l, s);
}

void append_front_logits_instances(KernelList* out) { append_front_mode<RowMode::kLogitsRow>(out); }
}  // namespace fusedmoe::kernels::front_detail
