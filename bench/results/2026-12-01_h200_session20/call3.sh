#!/usr/bin/env bash
# Session 20, call 3 (no tests; build 6413f51): the dynamic GEMM2 rule for short reductions only,
# auto against forced on/off on the long-reduction cases (gptoss-tp1, mixtral-tp2); GEMM1's weight
# tiles per CTA forced (--tpc1: chained tiles hide each CTA's pipeline fill) on the decode points
# under 0.75 of the floor; the whole decode suite with the router.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_new.tar.xz
B=.gpu/bin/fusedmoe
timeout 100 $B bench --suite layer --cases gptoss-tp1,mixtral-tp2 --tokens 4,16,64,256 --precomputed --balanced \
  > "$out/bench_balanced_long.txt" 2>&1
echo "balanced rc=$?"
{
  timeout 60 $B bench --suite layer --cases dsv3-tp8 --tokens 64,256 --precomputed --tpc1 2,4,8
  timeout 60 $B bench --suite layer --cases qwen235-tp8 --tokens 16,64,256 --precomputed --tpc1 2,3,6
  timeout 60 $B bench --suite layer --cases mixtral-tp2 --tokens 64,256 --precomputed --tpc1 2,4,7
  timeout 60 $B bench --suite layer --cases qwen30-tp1,gptoss-tp1 --tokens 256 --precomputed --tpc1 2,3,4
} > "$out/bench_tpc1.txt" 2>&1
echo "tpc1 rc=$?"
timeout 150 $B bench --suite layer --tokens 1,4,16,64,256 --json "$out/bench_decode.json" > "$out/bench_decode.txt" 2>&1
echo "decode rc=$?"
