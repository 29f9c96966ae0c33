// fusedmoe/status.h — errors as values: every API call returns a Status with a readable message.
// No exception crosses the library boundary.
#pragma once
#include <string>
#include <utility>

namespace fusedmoe {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument,    // a shape, count or parameter out of its documented range
  kUnsupported,        // a valid combination that this build/backend does not implement
  kMisaligned,         // a pointer or stride does not meet the alignment the kernels need
  kWorkspaceTooSmall,  // caller-provided workspace smaller than workspace_size() asked for
  kOutOfRange,         // data-dependent: an id >= E in precomputed routing, token > planned max
  kNoDevice,           // no CUDA device, or built without CUDA kernels
  kWrongArch,          // a device that is not sm_90 (Hopper)
  kCudaError,          // a CUDA runtime/driver call failed
  kInternal,
};

const char* to_string(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "kInvalidArgument: top_k (9) > num_experts (8)"
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

}  // namespace fusedmoe
