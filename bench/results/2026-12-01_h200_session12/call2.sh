#!/usr/bin/env bash
# Session 12, call 2: the decode layer's timeline across kernels (front, permute, both GEMMs, on
# one globaltimer axis from GEMM1's first CTA), with and without the permuted copy and PDL.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
B=.gpu/bin
export PATH=/usr/local/cuda/bin:$PATH
$B/fusedmoe bench --suite layer --cases qwen30-tp1,gptoss-tp1,mixtral-tp2,qwen235-tp8 --tokens 1,4 --precomputed \
  --gather --pdl --trace --csv "$out/sweep2.csv" > "$out/bench_timeline.txt" 2>&1
echo "bench rc=$?"
grep -E "layer|timeline|gemm[12]:|front:" "$out/bench_timeline.txt" | cut -c1-230 | head -150
