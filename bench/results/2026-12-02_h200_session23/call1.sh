#!/usr/bin/env bash
# Session 23, call 1. (a) The full GPU suite on 06493da (session 22's HEAD, never run on a GPU;
# its library is bd20b49's). (b) Baseline for this session's kernel work: every tile forced
# (crossover suite) on the BF16 decode cases at 64-256 tokens. (c) Branch wip/tma-row-gather
# (f610c69, packed as gpu_tma): FUSEDMOE_GATHER_TMA=1 bitwise tests, then prefill/decode A/B.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
GPU_TEST_SHARDS=12 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/sass.txt.gz"; gzip -f "$out/gpu_tests.log"; mv "$out/summary.txt" "$out/head_summary.txt"
cat "$out/head_summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -20
timeout 130 .gpu/bin/fusedmoe bench --suite crossover --cases dsv3-tp8,dsv3-ep8,qwen235-tp8,mixtral-tp2 --tokens 64,256 > "$out/bench_crossover.txt" 2>&1
echo "crossover rc=$?"; grep -A40 "Swap-AB vs normal" "$out/bench_crossover.txt" | head -30
# (c) the TMA row-gather branch
rm -rf .gpu; tar -xJf build_pack/gpu_tma.tar.xz; mkdir -p "$out/tma"
OUT="$out/tma" FUSEDMOE_GATHER_TMA=1 GPU_TEST_SHARDS=8 GPU_TEST_FILTER='Forward.OverlappedLaunchesMatchPlainBitwise:Forward.Gemm1SplitKOnly:Forward.CutlassGemm2AfterGatheredGemm1:Forward.SuiteShapesAtSmallBatch:Forward.DeviceTokenCountOneGraph:Forward.TokenCountsBothFamilies:Forward.GraphReplayMatchesDirectCall' bash scripts/gpu_run.sh > /dev/null 2>&1
mv "$out/tma/summary.txt" "$out/tma_summary.txt"; gzip -c "$out/tma/gpu_tests.log" > "$out/tma_gpu_tests.log.gz"; rm -rf "$out/tma"
cat "$out/tma_summary.txt"; zcat "$out/tma_gpu_tests.log.gz" | grep -E "FAILED|Failure|illegal|misaligned" | head -20
for env in 0 1; do
  echo "== FUSEDMOE_GATHER_TMA=$env"
  FUSEDMOE_GATHER_TMA=$env timeout 70 .gpu/bin/fusedmoe bench --suite layer --cases dsv3-tp8,qwen235-tp8,mixtral-tp2 --tokens 4096,16384 --cutlass-gemm2 --stages 2>&1 | grep -E "layer|stage gemm1|variants|\]:"
  FUSEDMOE_GATHER_TMA=$env timeout 50 .gpu/bin/fusedmoe bench --suite layer --cases dsv3-tp8,qwen235-tp8,qwen30-tp1 --tokens 1,64,256 --gather 2>&1 | grep -E "layer|variants|\]:"
done > "$out/bench_tma.txt"
grep -E "==|variants|\]:" "$out/bench_tma.txt"
