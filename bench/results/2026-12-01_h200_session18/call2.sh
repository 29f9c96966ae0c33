#!/usr/bin/env bash
# Session 18, call 2: FP8 Swap-AB scale latency. The epilogue's per-channel weight scales and biases
# are loaded one weight tile ahead; the block scales' lines are pulled into L1 three (tile, K block)
# steps ahead and the token scales read with plain (L1) loads. FP8 GPU tests (the statistical bound
# of small GEMM cases widened, see test_fp8_grouped_gemm.cpp Stats), then the FP8 decode layer and
# its stages against call 1.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_SHARDS=8 GPU_TEST_FILTER='Fp8GroupedGemm.*:Forward.Fp8*:Forward.CutlassBackendFp8BlockScaled:DispatchApi.DeepSeekV3Fp8BlockPermuted:Forward.BalancedGemm2Dynamic:Forward.SuiteShapesAtSmallBatch' \
  bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
timeout 70 .gpu/bin/fusedmoe bench --suite layer --cases dsv3-tp8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b,qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-ep8-fp8b \
  --tokens 1,16,64,256 --precomputed > "$out/bench_fp8.txt" 2>&1
echo "bench fp8 rc=$?"
timeout 60 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b \
  --tokens 16,64,256 --stages > "$out/bench_stages.txt" 2>&1
echo "bench stages rc=$?"
cat "$out/summary.txt"
grep -E "FAILED|Failure" <(zcat "$out/gpu_tests.log.gz") | head -20
grep -E "geometric" "$out"/bench_*.txt
