// Names of every compiled kernel instance, for `fusedmoe info` and the tests.
#include "kernels/combine/combine_launch.h"
#include "kernels/dispatch/plan_launch.h"
#include "kernels/gemm/sm90_bf16_gemm_smoke.h"
#include "kernels/gemm/sm90_bf16_grouped_gemm.h"
#include "kernels/quant/permute_quant_launch.h"
#include "kernels/registry.h"
#include "kernels/rope/inv_rope_quant_launch.h"
#include "kernels/router/router_launch.h"
#include "kernels/util/stream_read.h"

namespace fusedmoe::kernels {
std::vector<std::string> compiled_kernel_names() {
  std::vector<std::string> names = {router_kernel_name(),        plan_kernel_name(),
                                    permute_quant_kernel_name(), combine_kernel_name(),
                                    sm90_bf16_gemm_smoke_name(), stream_read_kernel_name(),
                                    inv_rope_quant_kernel_name()};
  int n = 0;
  const char* const* gemms = grouped_gemm_instance_names(&n);
  for (int i = 0; i < n; ++i) names.emplace_back(gemms[i]);
  return names;
}
}  // namespace fusedmoe::kernels
