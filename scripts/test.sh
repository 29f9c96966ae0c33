#!/usr/bin/env bash
# Builds everything (CUDA kernels included) and runs the test suite through ctest.
# CPU tests run everywhere; GPU tests run on an sm_90 GPU and are reported as skipped elsewhere.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/build.sh"
cd "$build"
set +e
ctest --output-on-failure -j 2 2>&1 | tee ctest.log
rc=${PIPESTATUS[0]}
set -e
# GoogleTest counts (ctest counts the GPU binary as one test).
cpu_line=$("$build/bin/fusedmoe_cpu_tests" --gtest_list_tests | grep -c '^  ')
echo "CPU GoogleTest cases: $cpu_line"
grep -h "SKIPPED:" Testing/Temporary/LastTest.log 2>/dev/null || true
exit $rc
