#!/usr/bin/env bash
# Session 16, call 3: the balanced schedule as a rule for GEMM2 only (sparse rows). All GPU tests;
# the BF16 decode layer with the schedule off / on, twice each, interleaved, same run.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_SHARDS=8 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
C=qwen235-tp8,dsv3-tp8,mixtral-tp2,qwen235-tp4,qwen30-tp1,gptoss-tp1,dsv4f-tp4
for r in a b; do
  for b in 0 1; do
    FUSEDMOE_GEMM_BALANCED=$b timeout 150 .gpu/bin/fusedmoe bench --suite layer --cases $C --tokens 1,4,16,64,256 \
      --precomputed > "$out/bench_layer_balanced${b}_$r.txt" 2>&1
    echo "bench balanced=$b run $r rc=$?"
  done
done
cat "$out/summary.txt"
for r in a b; do
  paste -d'|' <(grep -E "^(dsv|qwen|mixtral|gptoss)" "$out/bench_layer_balanced0_$r.txt" | cut -c1-82) \
    <(grep -E "^(dsv|qwen|mixtral|gptoss)" "$out/bench_layer_balanced1_$r.txt" | cut -c72-82)
done
grep -E "geometric" "$out"/bench_layer_balanced*.txt
