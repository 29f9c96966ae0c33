#!/usr/bin/env bash
# Session 12, call 5: the GPU test suite, and the decode layer benchmark (every suite case, 1-256
# tokens, with and without the router) with gathered GEMM1 rows now auto-on at decode from
# logits (<= 400 MB touched), each case also with the switch forced on and off.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
GPU_TEST_SHARDS=8 BENCH=layer BENCH_ARGS="--tokens 1,4,16,64,256 --precomputed --gather" bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz"
cat "$out/summary.txt"
grep -E "^[a-z0-9-]+ +layer" "$out/bench_layer.txt" | cut -c1-120 | head -40
