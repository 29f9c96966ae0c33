#!/usr/bin/env bash
# Session 13, call 6 (build 61f6dcd): weight tiles per CTA above call 5's 1-3 at 16/256 tokens.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
timeout 120 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8,dsv3-tp8,mixtral-tp2 --tokens 16,256 --precomputed \
  --tpc 4,6,8,12,16 --csv "$out/sweep_tpc.csv" > "$out/bench_tpc.txt" 2>&1
echo "rc=$?"
grep -E " layer" "$out/bench_tpc.txt" | grep -v precomputed | cut -c1-150
