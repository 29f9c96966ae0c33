#!/usr/bin/env bash
# Session 46 plan, call 1 (carry ["build_pack"], the build named in .gpu/COMMIT): correctness of the
# code that has not run on a GPU yet (sessions 44-46), through scripts/gpu_run.sh:
# (a) the whole GPU suite, 12 shards, with FUSEDMOE_SWAP_STSM=1 (every Swap-AB test then runs the
#     stmatrix puts; the other kernels do not read the switch), memcheck of Swap-AB tests, the main job;
# (b) Forward.Fp8GatherRows alone (session 45's FP8 gathered rows: a hang costs this step only) and
#     under memcheck;
# (c) the Swap-AB tests again with the switch off (the per-value puts, recompiled since session 43);
# (d) session 46's CUTLASS FP8 configurations (CutlassFp8Config 2 and 3: 1x2 clusters, ping-pong
#     64x128) under memcheck (their kernel tests CutlassFp8Gemm.* and the informational timing
#     CutlassFp8Timing.* ran in (a)), and the FP8 layer tests on the CUTLASS backend with each
#     configuration forced on both GEMMs (FUSEDMOE_CUTLASS_FP8_CONFIG).
# Each step's logs in its own folder, packed at the end (the device tool returns at most 8 files).
# ~500 s.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
SW='Fp8GroupedGemm.*:Cases/GroupedGemm.*:GroupedGemmPacked.*:Forward.SwapAbTiles:Forward.TokenCountsBothFamilies:Forward.EveryActivation:Forward.BoundaryShapes:Forward.SkewedRoutingSharedExpertAndExpertMap:Forward.SuiteShapesAtSmallBatch:Forward.DenseSwapAb:Forward.Fp8PairSwapAb:Forward.Fp8HQuantInGemm1:Forward.Fp8HQuantInGemm2:Forward.PackedWeights:Forward.Fp8SwapAbTiles:Forward.Fp8RowScaledLayers:Forward.Fp8BlockScaledLayers:Forward.GraphReplayMatchesDirectCall'
FUSEDMOE_SWAP_STSM=1 OUT=$out/a GPU_TEST_SHARDS=12 GPU_TEST_TIMEOUT=300 GPU_TEST_FILTER='-StreamProbe.*:Forward.Fp8GatherRows' \
  SANITIZE=1 SANITIZE_TIMEOUT=100 SANITIZE_FILTER='Fp8GroupedGemm.SwapAbTiles:Forward.SwapAbTiles:Forward.Fp8HQuantInGemm2Reduced' \
  SASS=0 scripts/gpu_run.sh > /dev/null
OUT=$out/b GPU_TEST_SHARDS=1 GPU_TEST_TIMEOUT=120 GPU_TEST_FILTER='Forward.Fp8GatherRows' \
  SANITIZE=1 SANITIZE_TIMEOUT=150 SANITIZE_FILTER='Forward.Fp8GatherRows' SASS=0 MAIN=0 scripts/gpu_run.sh > /dev/null
FUSEDMOE_SWAP_STSM=0 OUT=$out/c GPU_TEST_SHARDS=12 GPU_TEST_TIMEOUT=150 GPU_TEST_FILTER="$SW" SASS=0 MAIN=0 \
  scripts/gpu_run.sh > /dev/null
OUT=$out/d GPU_TEST_SHARDS=1 GPU_TEST_TIMEOUT=60 GPU_TEST_FILTER='CutlassFp8Gemm.RejectsAConfigOutOfRange' \
  SANITIZE=1 SANITIZE_TIMEOUT=150 SANITIZE_FILTER='CutlassFp8Gemm.*Ragged*' SASS=0 MAIN=0 scripts/gpu_run.sh > /dev/null
CF='Forward.CutlassBackendFp8*:Forward.Fp8LargeTokenCounts:Forward.Fp8RowScaledLayers:Forward.Fp8BlockScaledLayers'
for c in 2 3; do
  FUSEDMOE_CUTLASS_FP8_CONFIG=$c,$c OUT=$out/e$c GPU_TEST_SHARDS=4 GPU_TEST_TIMEOUT=150 GPU_TEST_FILTER="$CF" SASS=0 MAIN=0 \
    scripts/gpu_run.sh > /dev/null
done
for s in a b c d e2 e3; do echo "== $s"; cat "$out/$s/summary.txt"; done > "$out/summary.txt"
tar -czf "$out/logs.tgz" -C "$out" a b c d e2 e3 && rm -rf "$out/a" "$out/b" "$out/c" "$out/d" "$out/e2" "$out/e3"
cat "$out/summary.txt"
