// fusedmoe/presets.h — built-in layer shapes of the models we serve (shared/model-shapes.md):
// the benchmark suite's per-GPU cases and a small case for CPU runs.
#pragma once
#include <string>
#include <vector>

#include "fusedmoe/problem.h"

namespace fusedmoe {

struct Preset {
  std::string name;         // "dsv3-tp8"
  std::string description;  // "DeepSeek-V3, TP8: E256 N256 K7168 k8, FP8 128x128 blocks"
  MoeProblem problem;       // num_tokens / max_tokens left 0
};

const std::vector<Preset>& presets();
// nullptr when unknown.
const Preset* find_preset(const std::string& name);

}  // namespace fusedmoe
