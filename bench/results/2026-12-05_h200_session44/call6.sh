#!/usr/bin/env bash
# Session 44, call 6 (carry ["build_pack"], the build in .gpu/COMMIT): the smallest check of the
# stmatrix Swap-AB epilogue that the session's remaining device time allows (~150 s): the GPU tests
# of Swap-AB epilogues (both kernels, gated / plain, every token tile, activations, H quantised by
# GEMM2, packed weights) with it on, then one A/B round on three decode cases.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
F='Forward.SwapAbTiles:Forward.Fp8SwapAbTiles:Fp8GroupedGemm.SwapAbTiles:Fp8GroupedGemm.Gemm2RandomSweep:Fp8GroupedGemm.Gemm1ActivationSweep:Forward.EveryActivation:Forward.Fp8HQuantInGemm2:Forward.Fp8HQuantInGemm1:Forward.PackedWeights:Forward.BoundaryShapes:Cases/GroupedGemm.*'
for s in $(seq 0 11); do
  FUSEDMOE_SWAP_STSM=1 GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$s timeout 80 $B/fusedmoe_gpu_tests --gtest_filter="$F" > "$out/shard_$s.log" 2>&1 &
done
wait
cat "$out"/shard_*.log > "$out/gpu_tests.log"; rm -f "$out"/shard_*.log
{ echo "tests (stsm on): $(grep -c '^\[       OK \]' "$out/gpu_tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/gpu_tests.log") FAILED lines"
  grep '^\[  FAILED  \]' "$out/gpu_tests.log" | sort -u; } >> "$out/summary.txt"
gzip -f "$out/gpu_tests.log"
stamp tests done
for st in 1 0; do
  FUSEDMOE_SWAP_STSM=$st timeout 25 $B/fusedmoe bench --suite layer --tokens 16,64,256 --cases qwen235-tp8,qwen235-tp8-fp8c,dsv3-tp8-fp8b > "$out/ab_stsm$st.txt" 2>&1
  stamp "stsm $st rc=$?"
done
for f in "$out"/ab_*.txt; do echo "== $f"; grep -E " layer " "$f" | awk '{for(i=1;i<=NF;i++) if ($i ~ /^(16|64|256)$/ && $(i+1) ~ /\./) {printf "%s %s %s | ", $1, $i, $(i+1); break}}'; echo; done >> "$out/summary.txt"
cat "$out/summary.txt"
