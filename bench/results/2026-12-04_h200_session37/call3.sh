#!/usr/bin/env bash
# Session 37, call 3 (carry ["build_pack"], code 1ef808a as call 2): the FP8 GEMM2's static balanced
# ranges forced on / off where the rule takes them (rows up to the experts), twice, and BF16
# qwen235-tp8 (dynamic form) for reference.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
for r in 1 2; do
  timeout 150 $B/fusedmoe bench --suite layer --tokens 4,8,12,16,24,32 --packed --balanced --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b,qwen235-tp8 > "$out/balanced_r$r.txt" 2>&1
  tail -4 "$out/balanced_r$r.txt" >> "$out/summary.txt"
done
cat "$out/summary.txt"
