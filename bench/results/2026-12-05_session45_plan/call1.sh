#!/usr/bin/env bash
# Session 45 plan, call 1 (carry ["build_pack"], the build named in .gpu/COMMIT): correctness of the
# code that has not run on a GPU yet (sessions 44-45: the stmatrix Swap-AB epilogue, behind
# FUSEDMOE_SWAP_STSM; the FP8 kernel's K-loop stamps behind a trace test, always on).
# (a) the whole GPU suite, 12 shards, with FUSEDMOE_SWAP_STSM=1 (every Swap-AB test then runs the
#     stmatrix puts; the other kernels do not read the switch), then Forward.Fp8GatherRows alone;
# (b) the Swap-AB tests again with the switch off (the per-value puts, recompiled since session 43);
# (c) memcheck of Swap-AB GEMM and layer tests with the switch on; (d) memcheck of the FP8 gathered
# rows' test (Forward.Fp8GatherRows, session 45; the suite in (a) runs it too). ~450 s.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
shards() {  # $1: label, $2: gtest filter, $3: per-shard timeout (s); FUSEDMOE_SWAP_STSM from the caller
  for s in $(seq 0 11); do
    GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$s timeout "$3" $B/fusedmoe_gpu_tests --gtest_filter="$2" > "$out/shard_$s.log" 2>&1 &
  done
  wait
  cat "$out"/shard_*.log > "$out/$1.log"; rm -f "$out"/shard_*.log
  { echo "$1: $(grep -c '^\[       OK \]' "$out/$1.log") OK, $(grep -c '^\[  FAILED  \]' "$out/$1.log") FAILED lines"
    grep '^\[  FAILED  \]' "$out/$1.log" | sort -u; } >> "$out/summary.txt"
  gzip -f "$out/$1.log"
  stamp "$1 done"
}
FUSEDMOE_SWAP_STSM=1 shards suite_stsm1 '-StreamProbe.*:Forward.Fp8GatherRows' 300
# the FP8 gathered rows alone (new code: a hang costs this step only, not a suite shard)
timeout 120 $B/fusedmoe_gpu_tests --gtest_filter='Forward.Fp8GatherRows' > "$out/fp8_gather.log" 2>&1
stamp "Forward.Fp8GatherRows rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$out/fp8_gather.log" | tr '\n' ' ')"
grep -E "Failure|differ|rel" "$out/fp8_gather.log" | head -8 >> "$out/summary.txt"
SW='Fp8GroupedGemm.*:Cases/GroupedGemm.*:GroupedGemmPacked.*:Forward.SwapAbTiles:Forward.TokenCountsBothFamilies:Forward.EveryActivation:Forward.BoundaryShapes:Forward.SkewedRoutingSharedExpertAndExpertMap:Forward.SuiteShapesAtSmallBatch:Forward.DenseSwapAb:Forward.Fp8PairSwapAb:Forward.Fp8HQuantInGemm1:Forward.Fp8HQuantInGemm2:Forward.PackedWeights:Forward.Fp8SwapAbTiles:Forward.Fp8RowScaledLayers:Forward.Fp8BlockScaledLayers:Forward.GraphReplayMatchesDirectCall'
FUSEDMOE_SWAP_STSM=0 shards swapab_stsm0 "$SW" 150
FUSEDMOE_SWAP_STSM=1 timeout 100 compute-sanitizer --tool memcheck $B/fusedmoe_gpu_tests --gtest_filter='Fp8GroupedGemm.SwapAbTiles:Forward.SwapAbTiles:Forward.Fp8HQuantInGemm2Reduced' > "$out/memcheck.log" 2>&1
stamp "memcheck (stsm on) rc=$?: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$out/memcheck.log" | tr '\n' ' ')"
# (d) session 45's FP8 GEMM1 with gathered rows (kGather instances, forced only): its test under memcheck
timeout 120 compute-sanitizer --tool memcheck $B/fusedmoe_gpu_tests --gtest_filter='Forward.Fp8GatherRows' > "$out/memcheck_gather.log" 2>&1
stamp "memcheck (fp8 gather) rc=$?: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$out/memcheck_gather.log" | tr '\n' ' ')"
cat "$out/summary.txt"
