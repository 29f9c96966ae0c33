#!/usr/bin/env bash
# Session 17, call 2: GEMM1's split-K forced apart from GEMM2 (ForwardOptions::gemm1_k_splits,
# bench --ksplits1): the new GPU test Forward.Gemm1SplitKOnly and the forward tests touched by the
# FP8 balanced rule; then the decode layer (BF16 and FP8 cases, precomputed and router) with GEMM1
# split 2 / 3 / 4 ways next to the defaults, same run, and the per-CTA timeline of qwen235-tp8 and
# dsv3-tp8 at 16 tokens, default vs GEMM1 split 2 and 4.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_SHARDS=8 GPU_TEST_FILTER='Forward.Gemm1SplitKOnly:Forward.Fp8SwapAbTiles:Forward.Fp8RowScaledLayers:Forward.OverlappedLaunchesMatchPlainBitwise:Forward.SuiteShapesAtSmallBatch:Forward.SwapAbTiles' \
  bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
timeout 200 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8,dsv3-tp8,qwen235-tp4,mixtral-tp2,dsv4f-tp4,qwen30-tp1,gptoss-tp1 \
  --tokens 4,16,64,256 --precomputed --ksplits1 2,3,4 > "$out/bench_layer_bf16.txt" 2>&1
echo "bench bf16 rc=$?"
timeout 120 .gpu/bin/fusedmoe bench --suite layer --cases dsv3-tp8-fp8b,qwen235-tp8-fp8c,dsv4f-tp4-fp8b,qwen235-tp4-fp8b \
  --tokens 16,64,256 --precomputed --ksplits1 2,4 > "$out/bench_layer_fp8.txt" 2>&1
echo "bench fp8 rc=$?"
timeout 80 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8,dsv3-tp8 --tokens 16 --ksplits1 2,4 \
  --trace --trace-csv "$out/trace.csv" > "$out/bench_layer_trace.txt" 2>&1
echo "trace rc=$?"
gzip -f "$out/trace.csv"
cat "$out/summary.txt"
grep -E "FAILED|Failure" <(zcat "$out/gpu_tests.log.gz") | head -20
grep -E "^(dsv|qwen|mixtral|gptoss)|geometric" "$out/bench_layer_bf16.txt" "$out/bench_layer_fp8.txt" | grep -v precomputed | cut -c1-140
