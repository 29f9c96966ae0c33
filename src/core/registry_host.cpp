// Without CUDA kernels the registry is empty; with them, kernels/registry.cu defines it.
#include "kernels/registry.h"

#if !defined(FUSEDMOE_WITH_CUDA)
namespace fusedmoe::kernels {
KernelList compiled_kernel_instances() { return {}; }
std::vector<std::string> compiled_kernel_names() { return {}; }
}  // namespace fusedmoe::kernels
#endif
