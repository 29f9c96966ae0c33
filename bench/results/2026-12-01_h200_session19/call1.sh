#!/usr/bin/env bash
# Session 19, call 1: merge test of wip/split-fit-record (the two occupancy queries share one
# cached helper); full GPU suite. Then the 1-token layer on every case (several were not
# re-measured after session 18's split-K fit), and the prefill stages of the row-scaled FP8 and
# two BF16 cases (not measured since sessions 6 / 10).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_SHARDS=8 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
timeout 60 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8,dsv3-tp8,qwen235-tp4,qwen30-tp1,dsv4f-tp4,mixtral-tp2,gptoss-tp1,dsv3-tp8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b,qwen235-tp8-fp8c \
  --tokens 1,4 --precomputed > "$out/bench_1tok.txt" 2>&1
echo "bench 1tok rc=$?"
timeout 150 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,qwen235-tp8,dsv3-tp8,dsv3-tp8-fp8b \
  --tokens 1024,4096,16384 --stages > "$out/bench_prefill_stages.txt" 2>&1
echo "bench prefill rc=$?"
cat "$out/summary.txt"
grep -E "FAILED|Failure" <(zcat "$out/gpu_tests.log.gz") | head -20
