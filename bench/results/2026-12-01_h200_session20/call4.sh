#!/usr/bin/env bash
# Session 20, call 4 (no tests; build with GEMM1's one-wave tiles per CTA): the rule against
# --tpc1 1 (one weight tile per GEMM1 CTA, the previous behaviour) on every BF16 decode case at
# 16-256 tokens, twice; the whole decode suite with the router.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_new.tar.xz
B=.gpu/bin/fusedmoe
for rep in 1 2; do
  echo "== rep $rep"
  timeout 120 $B bench --suite layer --cases qwen235-tp8,qwen30-tp1,mixtral-tp2,dsv3-tp8,gptoss-tp1,dsv4f-tp4,qwen235-tp4 \
    --tokens 16,64,256 --precomputed --tpc1 1
done > "$out/bench_onewave.txt" 2>&1
echo "onewave rc=$?"
timeout 150 $B bench --suite layer --tokens 1,4,16,64,256 --json "$out/bench_decode.json" > "$out/bench_decode.txt" 2>&1
echo "decode rc=$?"
