#!/usr/bin/env bash
# Session 31, call 5 (the final code: the dense rule's host-side cleanup, device code identical to
# 8c73dbc's): the full GPU suite.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
GPU_TEST_SHARDS=12 timeout 200 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/run.log" "$out/sass.txt.gz"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
