#!/usr/bin/env bash
# Session 17, call 6: all GPU tests on the build with the dynamic balanced GEMM2 in both kernels
# (BF16 and FP8), the tile rule's middle band, GEMM1's split override; then the decode layer with
# the defaults and balanced forced each way: BF16 (dynamic) and FP8 with the dynamic form (default)
# and the static ranges (FUSEDMOE_EXPERIMENT_STATIC_BALANCED=1), same run.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_SHARDS=8 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
timeout 100 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8,dsv3-tp8,qwen235-tp4,qwen30-tp1,dsv4f-tp4,mixtral-tp2,gptoss-tp1 \
  --tokens 1,4,16,64,256 --balanced --json "$out/bench_bf16.json" > "$out/bench_bf16.txt" 2>&1
echo "bench bf16 rc=$?"
F=dsv3-tp8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b,qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-ep8-fp8b
timeout 70 .gpu/bin/fusedmoe bench --suite layer --cases $F --tokens 1,16,64,256 --balanced > "$out/bench_fp8_dyn.txt" 2>&1
echo "bench fp8 dyn rc=$?"
FUSEDMOE_EXPERIMENT_STATIC_BALANCED=1 timeout 70 .gpu/bin/fusedmoe bench --suite layer --cases $F --tokens 1,16,64,256 --balanced > "$out/bench_fp8_static.txt" 2>&1
echo "bench fp8 static rc=$?"
cat "$out/summary.txt"
grep -E "FAILED|Failure" <(zcat "$out/gpu_tests.log.gz") | head -20
grep -E "geometric" "$out"/bench_*.txt
