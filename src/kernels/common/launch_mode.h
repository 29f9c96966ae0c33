// launch_mode.h — whether the layer's kernel launches on this thread carry the programmatic
// dependent launch attribute (launch.cuh: launch_chain; pdl.cuh: the device side). Plain C++ so
// that host code (forward()) can open the scope.
#pragma once

namespace fusedmoe::kernels {

namespace launch_detail {
inline bool& overlap_flag() {
  thread_local bool on = false;
  return on;
}
}  // namespace launch_detail

// Launches on this thread, while alive, carry the PDL attribute when `on` (restores the previous
// state on exit; nests).
class ScopedOverlap {
 public:
  explicit ScopedOverlap(bool on) : prev_(launch_detail::overlap_flag()) { launch_detail::overlap_flag() = on; }
  ~ScopedOverlap() { launch_detail::overlap_flag() = prev_; }
  ScopedOverlap(const ScopedOverlap&) = delete;
  ScopedOverlap& operator=(const ScopedOverlap&) = delete;

 private:
  bool prev_;
};

inline bool overlap_launches() { return launch_detail::overlap_flag(); }

}  // namespace fusedmoe::kernels
