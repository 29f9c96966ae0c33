// parallel_for for the CPU reference: independent iterations [0, n) over up to
// hardware_concurrency threads, in contiguous chunks. Each iteration's own arithmetic (and so every
// result bit) is the same as in a serial loop: callers give each iteration its own output and no
// shared accumulation. Used where the float64 reference dominates GPU-test wall time.
#pragma once
#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace fusedmoe::ref::detail {

template <class F>
void parallel_for(int64_t n, int64_t min_per_thread, F&& f) {
  const int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t threads = std::min<int64_t>({hw, 64, n / std::max<int64_t>(1, min_per_thread)});
  if (threads <= 1) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads));
  const int64_t chunk = (n + threads - 1) / threads;
  for (int64_t t = 0; t < threads; ++t) {
    const int64_t lo = t * chunk, hi = std::min(n, lo + chunk);
    if (lo >= hi) break;
    pool.emplace_back([lo, hi, &f] {
      for (int64_t i = lo; i < hi; ++i) f(i);
    });
  }
  for (std::thread& th : pool) th.join();
}

}  // namespace fusedmoe::ref::detail
