// The launch-mode switch behind ForwardOptions::overlap_launches (kernels/common/launch_mode.h):
// per thread, scoped, nesting, restored on exit.
#include <gtest/gtest.h>

#include <thread>

#include "kernels/common/launch_mode.h"

namespace fk = fusedmoe::kernels;

TEST(LaunchMode, ScopedOverlapNestsAndRestores) {
  EXPECT_FALSE(fk::overlap_launches());
  {
    const fk::ScopedOverlap on(true);
    EXPECT_TRUE(fk::overlap_launches());
    {
      const fk::ScopedOverlap off(false);
      EXPECT_FALSE(fk::overlap_launches());
    }
    EXPECT_TRUE(fk::overlap_launches());
  }
  EXPECT_FALSE(fk::overlap_launches());
}

TEST(LaunchMode, SwitchIsPerThread) {
  const fk::ScopedOverlap on(true);
  bool other = true;
  std::thread t([&] { other = fk::overlap_launches(); });
  t.join();
  EXPECT_FALSE(other) << "another thread's launches must not inherit the switch";
  EXPECT_TRUE(fk::overlap_launches());
}
