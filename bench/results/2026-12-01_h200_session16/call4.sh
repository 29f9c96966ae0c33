#!/usr/bin/env bash
# Session 16, call 4 (final build): all GPU tests (new: the fused front reporting an out-of-range
# precomputed id as read, ids aliasing the output ids, duplicate ids, device token count with
# precomputed ids in the fused front, k = 10 precomputed; the balanced GEMM2 cases); the BF16 decode
# layer with the final defaults and with ForwardOptions::balanced_gemm2 forced each way (--balanced).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_SHARDS=8 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
timeout 240 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8,dsv3-tp8,qwen235-tp4,qwen30-tp1,dsv4f-tp4,mixtral-tp2,gptoss-tp1 \
  --tokens 1,4,16,64,256 --precomputed --balanced --json "$out/bench_layer.json" > "$out/bench_layer.txt" 2>&1
echo "bench rc=$?"
cat "$out/summary.txt"
grep -E "FAILED|Failure" <(zcat "$out/gpu_tests.log.gz") | head -20
grep -E "^(dsv|qwen|mixtral|gptoss)|geometric" "$out/bench_layer.txt" | cut -c1-120
