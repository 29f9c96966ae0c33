#!/usr/bin/env bash
# Session 50, call 5 (carry ["build_pack/gpu_main.tar.xz"], build 8c1683f). The FP8 decode GEMM2's
# schedule re-measured on today's kernels (the layer asks FP8 GEMM2 for the raster since session 17;
# pair, stmatrix and H-quantising instances came later): the balanced schedule forced on / off
# (bench --balanced) and one wave of 32 tiles per CTA (FUSEDMOE_FP8_GEMM2_TPC=32) against the
# default, FP8 cases at 64 / 128 / 256 tokens, packed weights, two alternated rounds.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
B=.gpu/bin/fusedmoe
f8=qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
for r in 1 2; do
  timeout 120 $B bench --suite layer --tokens 64,128,256 --packed --balanced --cases "$f8" > "$out/bal_r$r.txt" 2>&1
  echo "== round $r balanced: rc=$?" >> "$sum"
  grep -E " layer " "$out/bal_r$r.txt" | grep -v "packed off" | cut -c1-120 >> "$sum"
  grep -A3 "variants against" "$out/bal_r$r.txt" >> "$sum"
  FUSEDMOE_FP8_GEMM2_TPC=32 timeout 120 $B bench --suite layer --tokens 64,128,256 --packed --cases "$f8" > "$out/tpc32_r$r.txt" 2>&1
  echo "== round $r gemm2 tpc 32: rc=$?" >> "$sum"
  grep -E " layer " "$out/tpc32_r$r.txt" | grep -v "packed off" | cut -c1-120 >> "$sum"
done
OUT=$out scripts/bundle_out.sh >> "$sum"
cat "$sum"
