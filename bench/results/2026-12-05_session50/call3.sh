#!/usr/bin/env bash
# Session 50, call 3 (carry ["build_pack/gpu_exp.tar.xz"]: bin/ and lib/ of 46091ee + the combine
# experiment switches of call3_combine_exp.patch). Why the decode combine is slow when its expert
# rows come from DRAM (call 2's ncu: 13.6-14.3 us for 16.8 MB on an H100):
#  1. CombineTiming.* (alone, rows in L2 and after a 256 MB streaming read) with the default kernel,
#     float32 accumulation (FUSEDMOE_COMBINE_EXP_F32=1: the float64 math's cost; not the library's
#     bits) and 2 / 4 column chunks (FUSEDMOE_COMBINE_EXP_CHUNKS), two alternated rounds;
#  2. the layer's stages at 256 tokens (qwen235-tp8 BF16, qwen235-tp8-fp8c, dsv3-tp8) with each.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
rm -rf .gpu && tar -xJf build_pack/gpu_exp.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
variants=("" "FUSEDMOE_COMBINE_EXP_F32=1" "FUSEDMOE_COMBINE_EXP_CHUNKS=2" "FUSEDMOE_COMBINE_EXP_CHUNKS=4")
names=(default f32 chunks2 chunks4)
for r in 1 2; do
  for i in 0 1 2 3; do
    echo "== round $r ${names[$i]}" >> "$sum"
    env ${variants[$i]} timeout 60 .gpu/bin/fusedmoe_gpu_tests --gtest_filter='CombineTiming.*' 2>&1 | grep timing >> "$sum"
  done
done
for i in 0 1 2 3; do
  echo "== stages ${names[$i]}" >> "$sum"
  env ${variants[$i]} timeout 120 .gpu/bin/fusedmoe bench --suite layer --tokens 256 --packed --stages \
    --cases qwen235-tp8,dsv3-tp8,qwen235-tp8-fp8c > "$out/stages_${names[$i]}.txt" 2>&1
  grep -E " layer | stage combine " "$out/stages_${names[$i]}.txt" | grep -v "packed off" | cut -c1-110 >> "$sum"
done
OUT=$out scripts/bundle_out.sh >> "$sum"
cat "$sum"
