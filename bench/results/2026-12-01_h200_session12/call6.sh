#!/usr/bin/env bash
# Session 12, call 6: the GPU test suite and the decode layer benchmark after Swap-AB GEMMs with
# one to two waves of single tiles run two tiles per CTA (one wave) and gathered rows also go on
# for small experts (<= 6 MB).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
GPU_TEST_SHARDS=8 BENCH=layer BENCH_ARGS="--cases qwen30-tp1,gptoss-tp1,mixtral-tp2,qwen235-tp8,dsv3-tp8,qwen235-tp4,dsv4f-tp4,qwen235-tp8-fp8c,dsv3-tp8-fp8b --tokens 1,4,16,64,256 --precomputed" bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz"
cat "$out/summary.txt"
grep -E "^[a-z0-9-]+ +layer" "$out/bench_layer.txt" | cut -c1-110
