#!/usr/bin/env bash
# Session 13, call 5 (build 61f6dcd): the BF16 decode points under 0.75 of the floor (issue #4:
# qwen235-tp8 16/256 tokens, dsv3-tp8 and mixtral-tp2 at 256) against the forced tile families and
# the tuning overrides, to find what the oracle should pick there. Measurements only.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
B=.gpu/bin
timeout 110 $B/fusedmoe bench --suite crossover --cases qwen235-tp8,dsv3-tp8,mixtral-tp2 --tokens 16,256 --csv "$out/crossover.csv" > "$out/bench_crossover.txt" 2>&1
echo "crossover rc=$?"
timeout 150 $B/fusedmoe bench --suite layer --cases qwen235-tp8,dsv3-tp8,mixtral-tp2 --tokens 16,256 --precomputed \
  --tpc 1,2,3 --ksplits 1,2 --early 0 --pdl --gather --staged --csv "$out/sweep.csv" > "$out/bench_sweep.txt" 2>&1
echo "sweep rc=$?"
grep -E "normal|swap-ab|ratio|faster" "$out/bench_crossover.txt" | cut -c1-150 | head -40
grep -E " layer" "$out/bench_sweep.txt" | cut -c1-150 | head -80
