// run_gpu.h — `fusedmoe run` on a GPU (run_gpu.cpp; CUDA builds only).
#pragma once
#include <cstdint>
#include <string>

#include "fusedmoe/fusedmoe.h"
#include "testing/layer_data.h"

namespace fusedmoe_cli {

// One MoE layer of problem `p` (num_tokens set) through forward() on the current GPU: random
// inputs and weights from `seed` (testing::make_layer_data, the GPU tests' data), the weights packed
// for the Swap-AB GEMMs as an engine would at load time, the output checked against the float64
// CPU reference with the tests' bounds, then timed. Prints a report; returns 0 when the layer ran
// and its output is within the bound, 1 when not, 2 for data that cannot be made (the reason).
int run_layer_gpu(const fusedmoe::MoeProblem& p, const std::string& name, uint64_t seed, fusedmoe::testing::Skew skew);

}  // namespace fusedmoe_cli
