#!/usr/bin/env bash
# Session 17, call 1 (branch wip/fp8-balanced): the GEMM, forward and fused-front GPU tests that
# session 16 left unrun (balanced GEMM cases, the bitwise overlap test flipping balanced_gemm2, the
# fused-front precomputed tests) plus the FP8 balanced schedule (Fp8GroupedGemm.BalancedSchedule);
# then the FP8 decode layer with ForwardOptions::balanced_gemm2 forced each way (--balanced), and
# two BF16 cases with the defaults (the shared schedule header must not change them).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_SHARDS=8 GPU_TEST_FILTER='GroupedGemm*:Fp8GroupedGemm.*:Forward.OverlappedLaunchesMatchPlainBitwise:DispatchApi.*Precomputed*:DispatchApi.FusedFront*:Forward.SwapAbTiles:Forward.Fp8SwapAbTiles:Forward.SuiteShapesAtSmallBatch:Forward.Fp8RowScaledLayers' \
  bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
timeout 200 .gpu/bin/fusedmoe bench --suite layer --cases dsv3-tp8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b,qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-ep8-fp8b \
  --tokens 1,16,64,256 --precomputed --balanced --json "$out/bench_layer_fp8.json" > "$out/bench_layer_fp8.txt" 2>&1
echo "bench fp8 rc=$?"
timeout 60 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8,dsv3-tp8 --tokens 16,64 --precomputed > "$out/bench_layer_bf16.txt" 2>&1
echo "bench bf16 rc=$?"
cat "$out/summary.txt"
grep -E "FAILED|Failure" <(zcat "$out/gpu_tests.log.gz") | head -20
grep -E "^(dsv|qwen|mixtral|gptoss)|geometric" "$out/bench_layer_fp8.txt" "$out/bench_layer_bf16.txt" | cut -c1-150
