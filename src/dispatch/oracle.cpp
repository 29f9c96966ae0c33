#include "dispatch/oracle.h"

namespace fusedmoe::detail {

namespace {
// Backends register here as their kernels land; each says what it cannot run and why.
Status can_implement(Backend b, const MoeProblem& p) {
  (void)p;
  switch (b) {
    case Backend::kFused:
      return Status(StatusCode::kUnsupported, "fused single-pass kernels are not built yet (issue #4)");
    case Backend::kCutlassGrouped:
      return Status(StatusCode::kUnsupported, "CUTLASS grouped-GEMM path is not built yet");
    case Backend::kAuto:
      break;
  }
  return Status(StatusCode::kInternal, "kAuto is not a backend");
}
}  // namespace

Decision decide(const MoeProblem& p, const ForwardOptions& options) {
  Decision d;
  for (Backend b : {Backend::kFused, Backend::kCutlassGrouped}) d.candidates.push_back({b, can_implement(b, p)});
  if (options.backend != Backend::kAuto) {
    for (const Candidate& c : d.candidates) {
      if (c.backend != options.backend) continue;
      if (c.legal.ok()) {
        d.chosen = c.backend;
        d.reason = "forced by ForwardOptions::backend";
      } else {
        d.status = Status(c.legal.code(), std::string("forced backend ") + to_string(c.backend) +
                                              " cannot run this problem: " + c.legal.message());
      }
      return d;
    }
  }
  for (const Candidate& c : d.candidates) {
    if (c.legal.ok()) {
      d.chosen = c.backend;
      d.reason = "first legal backend (no tuned table yet)";
      return d;
    }
  }
  std::string why = "no backend can run this problem:";
  for (const Candidate& c : d.candidates) why += std::string(" [") + to_string(c.backend) + ": " + c.legal.message() + "]";
  d.status = Status(StatusCode::kUnsupported, why);
  return d;
}

}  // namespace fusedmoe::detail
