#!/usr/bin/env bash
# Session 12, call 4: GEMM1's early weight stages (0, 3, 6, default = whole ring) and gathered rows
# (no permute) at 1-16 tokens, with and without the router, on the decode cases.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
.gpu/bin/fusedmoe bench --suite layer --cases qwen30-tp1,gptoss-tp1,mixtral-tp2,qwen235-tp8,dsv3-tp8,qwen235-tp8-fp8c,dsv3-tp8-fp8b \
  --tokens 1,4,16 --precomputed --early 0,3,6 --gather --csv "$out/early.csv" > "$out/bench_early.txt" 2>&1
echo "bench rc=$?"
grep -E "^[a-z0-9-]+ +layer" "$out/bench_early.txt" | cut -c1-110
