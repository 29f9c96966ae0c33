#!/usr/bin/env bash
# Session 16, call 2: the balanced schedule for chained Swap-AB tiles (Params::flat). All GPU
# tests; then the BF16 decode layer with the balanced schedule off (FUSEDMOE_GEMM_BALANCED=0) and
# on, same run, every BF16 suite case at 1-256 tokens; the timeline of the four cases under 0.75.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_SHARDS=8 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
C=qwen235-tp8,dsv3-tp8,mixtral-tp2,qwen235-tp4,qwen30-tp1,gptoss-tp1,dsv4f-tp4
for b in 0 1; do
  FUSEDMOE_GEMM_BALANCED=$b timeout 150 .gpu/bin/fusedmoe bench --suite layer --cases $C --tokens 1,4,16,64,256 \
    --precomputed > "$out/bench_layer_balanced$b.txt" 2>&1
  echo "bench balanced=$b rc=$?"
done
timeout 100 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8,dsv3-tp8,qwen235-tp4 --tokens 16,256 \
  --precomputed --stages --trace --trace-csv "$out/trace.csv" > "$out/bench_layer_trace.txt" 2>&1
echo "trace rc=$?"
gzip -f "$out/trace.csv"
cat "$out/summary.txt"
paste -d'|' <(grep -E "^(dsv|qwen|mixtral|gptoss)" "$out/bench_layer_balanced0.txt" | cut -c1-100) \
  <(grep -E "^(dsv|qwen|mixtral|gptoss)" "$out/bench_layer_balanced1.txt" | cut -c60-100)
grep -E "geometric" "$out"/bench_layer_balanced*.txt
grep -E "gemm|stage" "$out/bench_layer_trace.txt" | cut -c1-200
