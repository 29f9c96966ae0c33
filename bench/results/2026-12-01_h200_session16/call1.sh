#!/usr/bin/env bash
# Session 16, call 1 (build f3a5d19, session 15's final code): the DispatchApi tests (the refactored
# fused-vs-separate helper had not run on the GPU), then the BF16 decode points under 0.75 of the
# floor (issue #4) with per-stage times and the per-CTA GEMM timeline, to see where the time goes.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_FILTER='DispatchApi.*:Forward.DeviceTokenCountOneGraph:Forward.GraphReplayMatchesDirectCall' \
  GPU_TEST_SHARDS=4 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
timeout 200 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8,dsv3-tp8,mixtral-tp2,qwen235-tp4 --tokens 16,256 \
  --precomputed --stages --trace --trace-csv "$out/trace.csv" > "$out/bench_layer_trace.txt" 2>&1
echo "bench rc=$?"
gzip -f "$out/trace.csv"
cat "$out/summary.txt"
grep -E "^(dsv3|qwen|mixtral)|gemm|front" "$out/bench_layer_trace.txt" | cut -c1-210
