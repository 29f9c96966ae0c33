#!/usr/bin/env bash
# Session 20, call 6 (measurement only, the final build d8a2982): for the next step, GEMM1's weight
# tiles per CTA forced (--tpc1) on the FP8 decode cases (the one-wave rule is BF16-only), and the
# per-CTA timeline of a slow long chain (qwen30-tp1 at 256 tokens, 12 tiles) against one tile.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_new.tar.xz
B=.gpu/bin/fusedmoe
{
  timeout 60 $B bench --suite layer --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t --tokens 64,256 --precomputed --tpc1 1,2,3
  timeout 60 $B bench --suite layer --cases qwen235-tp4-fp8b,dsv4f-tp4-fp8b --tokens 64,256 --precomputed --tpc1 1,2,3,4
  timeout 60 $B bench --suite layer --cases dsv3-tp8-fp8b --tokens 64,256 --precomputed --tpc1 1,2,3
} > "$out/bench_fp8_tpc1.txt" 2>&1
echo "fp8 tpc1 rc=$?"
{
  timeout 40 $B bench --suite layer --cases qwen30-tp1 --tokens 256 --precomputed --trace --tpc1 12
} > "$out/bench_qwen30_chain.txt" 2>&1
echo "chain rc=$?"
