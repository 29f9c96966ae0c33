#!/usr/bin/env bash
# Session 44, call 5 (carry ["build_pack"], build in .gpu/COMMIT): call 4 made lean after failed starts left
# little device time. The Swap-AB epilogues' puts as stmatrix (FUSEDMOE_SWAP_STSM=1; the library
# default is off until measured): (a) decode A/B, two rounds each way, layer only, packed weights;
# (b) the GPU tests that run Swap-AB epilogues, 12 shards, with it on; (c) memcheck of two of them.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
C=qwen235-tp8,dsv3-tp8,qwen235-tp8-fp8c,dsv3-tp8-fp8b,qwen235-tp4-fp8b
for r in 1 2; do
  for st in 1 0; do
    FUSEDMOE_SWAP_STSM=$st timeout 40 $B/fusedmoe bench --suite layer --tokens 16,64,256 --packed --cases $C > "$out/ab_r${r}_stsm$st.txt" 2>&1
    stamp "r$r stsm $st rc=$?"
  done
done
export FUSEDMOE_SWAP_STSM=1
F='Fp8GroupedGemm.*:Cases/GroupedGemm.*:GroupedGemmPacked.*:Forward.SwapAbTiles:Forward.TokenCountsBothFamilies:Forward.EveryActivation:Forward.BoundaryShapes:Forward.SkewedRoutingSharedExpertAndExpertMap:Forward.SuiteShapesAtSmallBatch:Forward.DenseSwapAb:Forward.Fp8PairSwapAb:Forward.Fp8HQuantInGemm1:Forward.Fp8HQuantInGemm2:Forward.PackedWeights:Forward.Fp8SwapAbTiles:Forward.Fp8RowScaledLayers:Forward.Fp8BlockScaledLayers:Forward.GraphReplayMatchesDirectCall'
for s in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$s timeout 200 $B/fusedmoe_gpu_tests --gtest_filter="$F" > "$out/shard_$s.log" 2>&1 &
done
wait
cat "$out"/shard_*.log > "$out/gpu_tests.log"; rm -f "$out"/shard_*.log
{ echo "tests (stsm on): $(grep -c '^\[       OK \]' "$out/gpu_tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/gpu_tests.log") FAILED lines"
  grep '^\[  FAILED  \]' "$out/gpu_tests.log" | sort -u; } >> "$out/summary.txt"
gzip -f "$out/gpu_tests.log"
stamp tests done
timeout 60 compute-sanitizer --tool memcheck $B/fusedmoe_gpu_tests --gtest_filter='Fp8GroupedGemm.SwapAbTiles:Forward.SwapAbTiles' > "$out/memcheck.log" 2>&1
stamp "memcheck rc=$?: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$out/memcheck.log" | tr '\n' ' ')"
for f in "$out"/ab_*.txt; do echo "== $f"; grep -E " layer " "$f" | grep -v "packed off" | awk '{for(i=1;i<=NF;i++) if ($i ~ /^(16|64|256)$/ && $(i+1) ~ /\./) {printf "%s %s %s | ", $1, $i, $(i+1); break}}'; echo; done >> "$out/summary.txt"
cat "$out/summary.txt"
