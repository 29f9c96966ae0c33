#!/usr/bin/env bash
# Session 39, call 5 (carry ["build_pack"]): CUTLASS's cooperative 128x256 GEMM at dsv3-tp8's GEMM2
# shape (131072 rows, N 7168, K 256) split into 8 / 32 / 256 equal groups (same FLOPs and output):
# does the pointer-array kernel pay per group? Then the CUTLASS kernel tests again.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
timeout 200 $B/fusedmoe_gpu_tests --gtest_filter='CutlassGroupedTiming.*:CutlassGroupedGemm.*' > "$out/tests.log" 2>&1
echo "rc=$? $(grep -c '^\[       OK \]' "$out/tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/tests.log") FAILED lines" >> "$out/summary.txt"
grep -E "timing|FAILED" "$out/tests.log" >> "$out/summary.txt"
cat "$out/summary.txt"
