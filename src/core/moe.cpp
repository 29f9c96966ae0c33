// The public entry points: validate -> size workspace -> decide backend -> run.
#include <sstream>

#include "core/check.h"
#include "core/workspace.h"
#include "dispatch/oracle.h"
#include "fusedmoe/device.h"
#include "fusedmoe/moe.h"

namespace fusedmoe {

Status workspace_size(const MoeProblem& p, size_t* bytes) {
  FM_REQUIRE(bytes != nullptr, kInvalidArgument, "bytes is null");
  FM_TRY(validate(p));
  *bytes = detail::WorkspaceLayout::plan(p).total;
  return Status::Ok();
}

Status forward(const MoeProblem& p, const MoeTensors& t, void* workspace, size_t workspace_bytes, Stream stream,
               const ForwardOptions& options) {
  FM_TRY(validate(p, t));
  const size_t need = detail::WorkspaceLayout::plan(p).total;
  FM_REQUIRE(workspace_bytes >= need, kWorkspaceTooSmall,
             "workspace has " << workspace_bytes << " bytes; this problem (max_tokens " << p.max_tokens << ") needs "
                              << need << " (ask workspace_size())");
  FM_REQUIRE(workspace != nullptr, kInvalidArgument, "workspace is null");
  FM_REQUIRE(reinterpret_cast<uintptr_t>(workspace) % detail::kWorkspaceAlign == 0, kMisaligned,
             "workspace must be " << detail::kWorkspaceAlign << "-byte aligned");
  int device = 0;
  FM_TRY(current_device(&device));
  FM_TRY(check_device_supported(device));
  const detail::Decision d = detail::decide(p, options);
  if (d.chosen == Backend::kAuto) return d.status;
  (void)stream;
  return Status(StatusCode::kInternal, "backend chosen but not wired");
}

std::string explain(const MoeProblem& p, const ForwardOptions& options) {
  std::ostringstream os;
  os << p << "\n";
  const Status v = validate(p);
  if (!v.ok()) {
    os << "invalid: " << v.to_string() << "\n";
    return os.str();
  }
  os << "workspace: " << detail::WorkspaceLayout::plan(p).total << " bytes for max_tokens " << p.max_tokens << "\n";
  os << "FLOPs at T=" << p.num_tokens << ": " << p.flops() << "\n";
  const detail::Decision d = detail::decide(p, options);
  os << "backends (override: " << to_string(options.backend) << ", tiles: " << to_string(options.tiles) << "):\n";
  for (const auto& c : d.candidates)
    os << "  " << to_string(c.backend) << ": " << (c.legal.ok() ? "can run" : c.legal.message()) << "\n";
  if (d.chosen != Backend::kAuto)
    os << "chosen: " << to_string(d.chosen) << " (" << d.reason << ")\n";
  else
    os << "chosen: none (" << d.status.message() << ")\n";
  return os.str();
}

}  // namespace fusedmoe
