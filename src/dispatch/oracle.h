// The oracle: which backend runs a problem, and why. Candidates -> legality (can_implement with a
// reason) -> choice (tuned tables later) -> an explicit override always wins or fails loudly.
#pragma once
#include <string>
#include <vector>

#include "fusedmoe/moe.h"

namespace fusedmoe::detail {

struct Candidate {
  Backend backend;
  Status legal;  // ok, or why this backend cannot run the problem
};

struct Decision {
  std::vector<Candidate> candidates;
  Backend chosen = Backend::kAuto;  // kAuto: none can run
  Status status;                    // why nothing was chosen
  std::string reason;               // why `chosen` won
};

Decision decide(const MoeProblem& p, const ForwardOptions& options);

}  // namespace fusedmoe::detail
