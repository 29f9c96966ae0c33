#!/usr/bin/env bash
# Session 18, call 5: Swap-AB split-K lowered until its clusters all fit at once
# (cudaOccupancyMaxActiveClusters; call 4's timeline: qwen235-tp8 GEMM1 at 1 token, 48 clusters of
# 5, entries over 17 us). Full GPU suite (Forward.SplitKClustersFitOneWave prints the resident
# cluster counts of this chip); the 1-4 token layer with the default splits and 3 / 4 / 5 forced,
# same run.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_SHARDS=8 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
timeout 60 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8,qwen30-tp1,dsv3-tp8,qwen235-tp4,qwen235-tp8-fp8c,dsv3-tp8-fp8b \
  --tokens 1,4 --ksplits 3,4,5 > "$out/bench_splits.txt" 2>&1
echo "bench splits rc=$?"
cat "$out/summary.txt"
grep -E "FAILED|Failure" <(zcat "$out/gpu_tests.log.gz") | head -20
zcat "$out/gpu_tests.log.gz" | grep -E "^\[ splits" | head -12
