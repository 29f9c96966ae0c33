#!/usr/bin/env bash
# Session 16, call 5: the test fixed after call 4 (DispatchApi.DeviceTokenCountPrecomputedFusedFront
# verified token order against the default permuted layout), with its neighbours. Library unchanged.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
.gpu/bin/fusedmoe_gpu_tests --gtest_filter='DispatchApi.DeviceTokenCount*:DispatchApi.Precomputed*:DispatchApi.FusedFrontPrecomputed*' \
  > "$out/gpu_tests.log" 2>&1
echo "rc=$?"
grep -E "^\[  (PASSED|FAILED) |^\[       OK|Failure" "$out/gpu_tests.log"
