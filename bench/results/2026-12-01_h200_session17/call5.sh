#!/usr/bin/env bash
# Session 17, call 5: the dynamic balanced GEMM2 (BF16; GroupedGemmArgs::queue, a work counter in
# the workspace that GEMM1 zeroes) and the tile rule's middle band. GPU tests: the grouped GEMM
# cases (new dyn_* copies of the balanced ones), Forward.BalancedGemm2Dynamic (repeated calls with
# a poisoned workspace, graph replay, bitwise against the raster), the overlap bitwise test, FP8
# balanced. Bench, same run: the BF16 decode layer with balanced forced on / off (--balanced) with
# the dynamic form (default) and with the static ranges (FUSEDMOE_EXPERIMENT_STATIC_BALANCED=1);
# the per-CTA timeline at 16 tokens; the middle band's cases.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_SHARDS=8 GPU_TEST_FILTER='GroupedGemm*:Cases/GroupedGemm*:Forward.BalancedGemm2Dynamic:Forward.OverlappedLaunchesMatchPlainBitwise:Forward.GraphReplayMatchesDirectCall:Forward.SwapAbTiles:Forward.SuiteShapesAtSmallBatch:Fp8GroupedGemm.Balanced*:Forward.TokenCountsBothFamilies' \
  bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
C=qwen235-tp8,dsv3-tp8,qwen235-tp4,qwen30-tp1,dsv4f-tp4,mixtral-tp2,gptoss-tp1
timeout 150 .gpu/bin/fusedmoe bench --suite layer --cases $C --tokens 1,16,64,256 --balanced > "$out/bench_dyn.txt" 2>&1
echo "bench dyn rc=$?"
FUSEDMOE_EXPERIMENT_STATIC_BALANCED=1 timeout 150 .gpu/bin/fusedmoe bench --suite layer --cases $C --tokens 1,16,64,256 --balanced > "$out/bench_static.txt" 2>&1
echo "bench static rc=$?"
{ timeout 60 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8,dsv3-tp8,qwen235-tp4 --tokens 16 --trace
  timeout 60 .gpu/bin/fusedmoe bench --suite layer --cases mixtral-tp2,dsv3-tp8,qwen235-tp8-fp8c,qwen235-tp8-fp8t --tokens 96,128,512 --precomputed; } > "$out/bench_trace_band.txt" 2>&1
echo "trace+band rc=$?"
cat "$out/summary.txt"
grep -E "FAILED|Failure" <(zcat "$out/gpu_tests.log.gz") | head -20
paste <(grep -E "^(dsv|qwen|mixtral|gptoss)" "$out/bench_dyn.txt" | awk '{print $1, $(NF-5), $(NF-4)}') <(grep -E "^(dsv|qwen|mixtral|gptoss)" "$out/bench_static.txt" | awk '{print $(NF-4)}') | head -0
grep -E "^(dsv|qwen|mixtral|gptoss)" "$out/bench_dyn.txt" | cut -c1-100 > /tmp/a; grep -E "^(dsv|qwen|mixtral|gptoss)" "$out/bench_static.txt" | cut -c60-100 > /tmp/b; paste -d'|' /tmp/a /tmp/b
grep -E "gemm2|gemm1" "$out/bench_trace_band.txt" | cut -c1-190
grep -E "^(dsv|qwen|mixtral)" "$out/bench_trace_band.txt" | grep -v "\[" | cut -c1-110
