#!/usr/bin/env bash
# Session 15, call 4: ForwardOptions::fuse_front (auto: off for precomputed ids with quantised x).
# Full GPU suite; the FP8 decode layer with the router and from precomputed ids, the fused front
# forced on and off (bench --front), and the BF16 decode cases' defaults.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_SHARDS=8 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
.gpu/bin/fusedmoe bench --suite layer --cases dsv3-tp8-fp8b,dsv4f-tp4-fp8b,qwen235-tp8-fp8c,qwen235-tp8-fp8t --tokens 1,4,16 \
  --precomputed --front > "$out/bench_layer_fp8_front.txt" 2>&1
.gpu/bin/fusedmoe bench --suite layer --cases qwen30-tp1,gptoss-tp1,mixtral-tp2,qwen235-tp8,dsv3-tp8 --tokens 1,4,16 \
  --precomputed > "$out/bench_layer_bf16.txt" 2>&1
cat "$out/summary.txt"
grep -E "^[a-z]" "$out/bench_layer_fp8_front.txt" | grep -E "tp|fp8" | cut -c1-125
grep -E "precomputed" "$out/bench_layer_bf16.txt" | cut -c1-120
