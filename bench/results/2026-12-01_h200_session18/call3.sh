#!/usr/bin/env bash
# Session 18, call 3 (final device code): call 2 without the block-scale L1 prefetch (measured
# 5-20 % slower on every block-scaled case) and with the per-channel / per-tensor epilogue values
# still loaded a weight tile ahead. Full GPU suite; the decode layer BF16 and FP8 (router and
# precomputed) with the final defaults.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_SHARDS=8 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
timeout 90 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8,dsv3-tp8,qwen235-tp4,qwen30-tp1,dsv4f-tp4,mixtral-tp2,gptoss-tp1 \
  --tokens 1,4,16,64,256 --precomputed --json "$out/bench_bf16.json" > "$out/bench_bf16.txt" 2>&1
echo "bench bf16 rc=$?"
timeout 70 .gpu/bin/fusedmoe bench --suite layer --cases dsv3-tp8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b,qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-ep8-fp8b \
  --tokens 1,16,64,256 --precomputed --json "$out/bench_fp8.json" > "$out/bench_fp8.txt" 2>&1
echo "bench fp8 rc=$?"
cat "$out/summary.txt"
grep -E "FAILED|Failure" <(zcat "$out/gpu_tests.log.gz") | head -20
grep -E "geometric" "$out"/bench_*.txt
