#!/usr/bin/env bash
# Session 49, call 8 (pack: the final library + FUSEDMOE_OUT_KEEP_L2, a measurement switch): the
# Swap-AB epilogues storing H / the expert rows with the L2 policy evict_last, so that GEMM2's weight
# stream does not push the expert rows out before the combine reads them (call 7: the BF16 combine
# stage is slower than the FP8 one at the same shape with PDL on or off).
#  1. GPU tests of the grouped GEMMs and the layer's graph replay with the switch on (correctness);
#  2. stages at 256 tokens, default / switch, two alternated rounds;
#  3. decode layers at 16 / 64 / 256 tokens, default / switch, two alternated rounds.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
for i in $(seq 0 7); do
  FUSEDMOE_OUT_KEEP_L2=1 GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 90 .gpu/bin/fusedmoe_gpu_tests \
    --gtest_filter='*GroupedGemm*:Forward.GraphReplayMatchesDirectCall:Forward.Fp8*' > "$out/keep_tests_$i.log" 2>&1 &
done
wait
cat "$out"/keep_tests_*.log > "$out/keep_tests.log"; rm -f "$out"/keep_tests_*.log
echo "tests with the switch: $(grep -E '^\[  PASSED  \]' "$out/keep_tests.log" | grep -oE '[0-9]+' | awk '{s+=$1} END {print s+0}') passed; $(grep -E '^\[  FAILED  \] [A-Za-z]' "$out/keep_tests.log" | sort -u | head -5 | tr '\n' ' ') at ${SECONDS}s" >> "$sum"
for r in 1 2; do
  for k in 0 1; do
    echo "== stages round $r keep $k" >> "$sum"
    FUSEDMOE_OUT_KEEP_L2=$k timeout 60 .gpu/bin/fusedmoe bench --suite layer --tokens 256 --packed --stages \
      --cases qwen235-tp8,qwen235-tp8-fp8c > "$out/st_r${r}_$k.txt" 2>&1
    grep -E " layer |stage gemm2|stage combine" "$out/st_r${r}_$k.txt" | cut -c1-110 >> "$sum"
  done
done
for r in 1 2; do
  for k in 0 1; do
    echo "== layers round $r keep $k" >> "$sum"
    FUSEDMOE_OUT_KEEP_L2=$k timeout 90 .gpu/bin/fusedmoe bench --suite layer --tokens 16,64,256 --packed \
      --cases qwen235-tp8,dsv3-tp8,mixtral-tp2,qwen235-tp4,qwen235-tp8-fp8c,dsv3-tp8-fp8b > "$out/l_r${r}_$k.txt" 2>&1
    grep -E " layer " "$out/l_r${r}_$k.txt" | grep -v "packed off" | cut -c1-100 >> "$sum"
  done
  echo "at ${SECONDS}s" >> "$sum"
done
OUT=$out scripts/bundle_out.sh >> "$sum"
cat "$sum"
