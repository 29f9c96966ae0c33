#!/usr/bin/env bash
# Session 22, call 6: the fixed hybrid GPU test (Forward.CutlassGemm2AfterGatheredGemm1) and the
# CUTLASS-backend layer tests on the final build.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
GPU_TEST_SHARDS=6 GPU_TEST_FILTER='Forward.Cutlass*' bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/run.log" "$out/sass.txt.gz"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"
zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -20
