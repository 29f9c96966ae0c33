#!/usr/bin/env bash
# Session 46, the smallest correctness call (same pack): the tests of the code no GPU has run, only:
# the Swap-AB tests with the stmatrix puts on (FUSEDMOE_SWAP_STSM=1), Forward.Fp8GatherRows, and the
# session 46 CUTLASS tests (every FP8 configuration, the BF16 1x2 cluster, the FP8 fused GEMM1, its
# layer test, the timing), 12 shards. ~150-200 s.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
F='Fp8GroupedGemm.SwapAbTiles:Cases/GroupedGemm.*:GroupedGemmPacked.*:Forward.SwapAbTiles:Forward.DenseSwapAb:Forward.Fp8PairSwapAb:Forward.Fp8HQuantInGemm2:Forward.Fp8SwapAbTiles:Forward.PackedWeights:Forward.Fp8GatherRows:CutlassFp8Gemm.*:CutlassFp8Timing.*:CutlassGroupedGemm.EveryConfigRaggedGroups:Forward.CutlassFp8FusedActivation:Forward.CutlassBackendFp8*'
FUSEDMOE_SWAP_STSM=1 OUT=$out GPU_TEST_SHARDS=12 GPU_TEST_TIMEOUT=240 GPU_TEST_FILTER="$F" SASS=0 MAIN=0 \
  scripts/gpu_run.sh > /dev/null
grep -hE "^\[  FAILED  \]|rel_err|timing" "$out/gpu_tests.log" | grep -E "FAILED|cutlass" | head -60 > "$out/cutlass_lines.txt"
gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"
