// Every compiled kernel instance, for `fusedmoe info`, the tests and preload_kernels().
#include "kernels/registry.h"

namespace fusedmoe::kernels {

KernelList compiled_kernel_instances() {
  KernelList v;
  v.reserve(256);
  append_router_instances(&v);
  append_front_instances(&v);
  append_plan_instances(&v);
  append_permute_quant_instances(&v);
  append_combine_instances(&v);
  append_grouped_gemm_instances(&v);
  append_grouped_gemm_fp8_instances(&v);
  append_cutlass_grouped_instances(&v);
  append_gemm_smoke_instances(&v);
  append_inv_rope_quant_instances(&v);
  append_stream_read_instances(&v);
  append_weight_pack_instances(&v);
  return v;
}

std::vector<std::string> compiled_kernel_names() {
  std::vector<std::string> names;
  for (const KernelInstance& k : compiled_kernel_instances()) names.push_back(k.name);
  return names;
}

}  // namespace fusedmoe::kernels
