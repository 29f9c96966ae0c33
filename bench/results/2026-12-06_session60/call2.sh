#!/usr/bin/env bash
# Session 60, call 2 (LIMIT=450; steps by priority; the build in its summary: 5370780 + FUSEDMOE_COMBINE_CHUNKS). Measurement only:
# the FP8 dispatch at 16-256 tokens (the fused front in token order against front + permute),
# GEMM1's gathered e4m3 rows forced each way at 128 / 256 tokens on the row-scaled qwen235-tp8
# cases, the layer timeline at 16 / 128 / 256 tokens (with the front's phases) (call 1's trace files did not come back: 8 files at most),
# FP8 GEMM1 on the balanced one-wave schedule forced each way (--balanced1), GEMM1's tiles per CTA 1-3,
# and the combine's column chunks forced (FUSEDMOE_COMBINE_CHUNKS) at 128 / 256 tokens.
set -uo pipefail
source scripts/device_prelude.sh
mkdir -p "$out/b"
o=$out; out=$out/b
# the combine's chunked path at every test shape (the override is read once per process)
FUSEDMOE_COMBINE_CHUNKS=2 tests_step comb_tests2 60 'Combine.*'
FUSEDMOE_COMBINE_CHUNKS=4 tests_step comb_tests4 60 'Combine.*'
for ch in 0 2 4; do
  FUSEDMOE_COMBINE_CHUNKS=$ch bench_step comb$ch 60 --suite layer --packed --stages --tokens 128,256 --cases qwen235-tp8-fp8c,dsv3-ep8-fp8b
  grep -E "stage combine" "$out/comb$ch.txt" | cut -c1-130 >> "$sum"
done
bench_step gather 120 --suite layer --packed --stages --gather --tokens 128,256 --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t
grep -E " layer |stage" "$out/gather.txt" | cut -c1-130 >> "$sum"
bench_step bal1 90 --suite layer --packed --balanced1 --tokens 128,256 --cases qwen235-tp4-fp8b,qwen235-tp8-fp8c,dsv4f-tp4-fp8b
bench_step tpc1 90 --suite layer --packed --tpc1 1,2,3 --tpc1d 1,2,3 --tokens 256 --cases qwen235-tp4-fp8b,qwen235-tp8-fp8c
bench_step trace 90 --suite layer --packed --trace --trace-csv "$out/trace.csv" --tokens 16,128,256 --cases qwen235-tp8-fp8c,qwen235-tp4-fp8b
bench_step dispatch 90 --suite dispatch --flushed --tokens 16,64,128,256 --cases qwen235-tp8-fp8c,qwen235-tp4-fp8b,dsv3-tp8-fp8b
grep -E "token-order|contiguous" "$out/dispatch.txt" | cut -c1-140 >> "$sum"
out=$o
tar -czf "$out/bench.tar.gz" -C "$out" b && rm -rf "$out/b"
cat "$sum"
