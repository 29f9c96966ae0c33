// Entry point of the GPU test binary: runs the suite only on an sm_90 device with this build's
// kernels; otherwise says plainly how many tests were skipped and why, and exits 77 (ctest SKIP).
#include <gtest/gtest.h>

#include <cstdio>

#include "fusedmoe/device.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (GTEST_FLAG_GET(list_tests)) return RUN_ALL_TESTS();
  int device = 0;
  fusedmoe::Status st = fusedmoe::current_device(&device);
  if (st.ok()) st = fusedmoe::check_device_supported(device);
  if (!st.ok()) {
    const int n = ::testing::UnitTest::GetInstance()->total_test_count();
    std::printf("SKIPPED: %d GPU tests not run: %s\n", n, st.to_string().c_str());
    return 77;
  }
  return RUN_ALL_TESTS();
}
