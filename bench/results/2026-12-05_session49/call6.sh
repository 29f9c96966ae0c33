#!/usr/bin/env bash
# Session 49, call 6: why the combine stage costs ~13.6 us after BF16 qwen235-tp8's GEMM2 at 256
# tokens and ~6.7 after qwen235-tp8-fp8c's (calls 4-5, H200; the combine alone at that size ~5 us).
#  1. stages with PDL forced on / off and the BF16 GEMM2 schedule forced balanced / raster;
#  2. the combine with its rows forced into 2 / 4 / 8 column chunks (FUSEDMOE_COMBINE_CHUNKS, a
#     measurement switch) against the default, alternated, at 256 tokens, two cases;
#  3. the combine's GPU tests with 4 forced chunks (correctness of that path at every size).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
FUSEDMOE_COMBINE_CHUNKS=4 timeout 60 .gpu/bin/fusedmoe_gpu_tests --gtest_filter='Combine*:Forward.GraphReplay*' > "$out/combine_tests.log" 2>&1
echo "combine tests, 4 chunks forced: rc=$? $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]' "$out/combine_tests.log" | tr '\n' ' ')" >> "$sum"
grep "\[timing\] combine" "$out/combine_tests.log" | cut -c1-110 >> "$sum"
timeout 90 .gpu/bin/fusedmoe bench --suite layer --tokens 256 --packed --stages --pdl --balanced \
  --cases qwen235-tp8 > "$out/pdl_balanced.txt" 2>&1
echo "== pdl / balanced (rc=$?)" >> "$sum"
grep -E " layer |stage combine|stage gemm2" "$out/pdl_balanced.txt" | cut -c1-125 >> "$sum"
for r in 1 2; do
  for c in 0 2 4 8; do
    echo "== round $r chunks $c" >> "$sum"
    FUSEDMOE_COMBINE_CHUNKS=$c timeout 90 .gpu/bin/fusedmoe bench --suite layer --tokens 256 --packed --stages \
      --cases qwen235-tp8,qwen235-tp8-fp8c > "$out/chunks_r${r}_$c.txt" 2>&1
    grep -E " layer |stage combine" "$out/chunks_r${r}_$c.txt" | grep -v "packed off" | cut -c1-110 >> "$sum"
  done
  echo "at ${SECONDS}s" >> "$sum"
done
OUT=$out scripts/bundle_out.sh >> "$sum"
cat "$sum"
