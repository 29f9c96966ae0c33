// The list of kernel instances compiled into this library (empty without CUDA).
#pragma once
#include <string>
#include <vector>

namespace fusedmoe::kernels {
std::vector<std::string> compiled_kernel_names();
}
