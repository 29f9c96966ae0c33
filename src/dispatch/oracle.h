// The oracle: which backend and tiles run a problem, and why. Candidates -> legality
// (can_implement with a reason) -> choice (heuristic now, tuned tables later) -> an explicit
// override always wins or fails loudly with the reason.
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
  TileFamily family = TileFamily::kNormal;
  int tokens_tile = 128;
  std::string tile_reason;
};

// Each expert's weights stream once at decode (<= 256 tokens): the auto token tile holds the tile
// rule's headroom times the expected rows per expert (ForwardOptions::weights_evict_first's auto).
bool weights_stream_once(const MoeProblem& p);

// reasons = false (forward()): no candidate list or reason text when the grouped backend runs the
// problem (the choice itself is the same).
Decision decide(const MoeProblem& p, const ForwardOptions& options, bool reasons = true);

}  // namespace fusedmoe::detail
