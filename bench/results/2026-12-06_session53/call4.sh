#!/usr/bin/env bash
# Session 53, call 4 (run as one command line on the machine warm from call 3, carry
# ["build_pack/gpu_main.tar.xz"], build 53304fe): the whole GPU suite and the main job on the final
# code (dispatch() validating the front's inputs only, the private C++ runtime, the new tile rule).
set -uo pipefail
source scripts/device_prelude.sh
OUT=$out/t GPU_TEST_SHARDS=16 GPU_TEST_TIMEOUT=220 GPU_TEST_FILTER='-StreamProbe.*' PY_TEST=0 SASS=0 MAIN=1 \
  scripts/gpu_run.sh > /dev/null
gzip -f $out/t/gpu_tests.log
cat $out/t/summary.txt >> $sum
tar -czf $out/suite.tar.gz -C $out t && rm -rf $out/t
cat $sum
