#!/usr/bin/env bash
# Session 46, device call A (carry ["build_pack"], the build named in .gpu/COMMIT): correctness of the
# code no GPU has run yet (sessions 44-46), through scripts/gpu_run.sh:
# (a) the whole GPU suite, 12 shards, with FUSEDMOE_SWAP_STSM=1 (every Swap-AB test then runs the
#     stmatrix puts), without Forward.Fp8GatherRows; memcheck of Swap-AB tests; the main job;
# (b) Forward.Fp8GatherRows alone (session 45's FP8 gathered rows: a hang costs this step only) and
#     under memcheck.
# Each step's logs in its own folder, packed at the end (the device tool returns at most 8 files).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
FUSEDMOE_SWAP_STSM=1 OUT=$out/a GPU_TEST_SHARDS=12 GPU_TEST_TIMEOUT=280 GPU_TEST_FILTER='-StreamProbe.*:Forward.Fp8GatherRows' \
  SANITIZE=1 SANITIZE_TIMEOUT=90 SANITIZE_FILTER='Fp8GroupedGemm.SwapAbTiles:Forward.SwapAbTiles:Forward.Fp8HQuantInGemm2Reduced' \
  SASS=0 scripts/gpu_run.sh > /dev/null
echo "== a"; cat "$out/a/summary.txt"
OUT=$out/b GPU_TEST_SHARDS=1 GPU_TEST_TIMEOUT=100 GPU_TEST_FILTER='Forward.Fp8GatherRows' \
  SANITIZE=1 SANITIZE_TIMEOUT=120 SANITIZE_FILTER='Forward.Fp8GatherRows' SASS=0 MAIN=0 scripts/gpu_run.sh > /dev/null
for s in a b; do echo "== $s"; cat "$out/$s/summary.txt"; done > "$out/summary.txt"
grep -hE "^\[  FAILED  \]|rel_err|timing" "$out"/a/gpu_tests.log | grep -E "FAILED|cutlass" | head -60 > "$out/cutlass_lines.txt"
tar -czf "$out/logs.tgz" -C "$out" a b && rm -rf "$out/a" "$out/b"
cat "$out/summary.txt"
