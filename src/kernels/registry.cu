// Names of every compiled kernel instance, for `fusedmoe info` and the tests.
#include "kernels/gemm/sm90_bf16_gemm_smoke.h"
#include "kernels/registry.h"

namespace fusedmoe::kernels {
std::vector<std::string> compiled_kernel_names() {
  return {sm90_bf16_gemm_smoke_name()};
}
}  // namespace fusedmoe::kernels
