#!/usr/bin/env bash
# Session 33, call 4 (build of .gpu/COMMIT): the ping-pong consumers removed (slower, calls 1-3); FP8 Swap-AB
# deep-ring instances, one CTA per SM with twice the stages (FUSEDMOE_FP8_DEEP bit 0 GEMM1, bit 1 GEMM2,
# off by default): (a) the FP8 GPU tests with FUSEDMOE_FP8_DEEP=3; (b) if they pass, the FP8 cases at
# 16 / 64 / 256 tokens with stages: deep 0, 2, 3, 0.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
echo "build $(cat .gpu/COMMIT)"
F='Fp8GroupedGemm.*:Forward.Fp8*:Forward.SwapAbTiles:Forward.Balanced*:DispatchApi.DeepSeekV3Fp8BlockPermuted:Forward.SplitK*:Forward.DenseSwapAb'
t0=$(date +%s)
for i in $(seq 0 11); do
  FUSEDMOE_FP8_DEEP=3 GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$i timeout 170 .gpu/bin/fusedmoe_gpu_tests --gtest_filter="$F" > "$out/pp.$i.log" 2>&1 &
done
wait
cat "$out"/pp.*.log > "$out/pp_tests.log"; rm -f "$out"/pp.*.log
np=$(grep -E '^\[  PASSED  \]' "$out/pp_tests.log" | grep -oE '[0-9]+' | awk '{s+=$1} END {print s+0}')
echo "deep tests: $(( $(date +%s) - t0 )) s; passed $np; $(grep -E '^\[  FAILED  \] [A-Za-z]' "$out/pp_tests.log" | sort -u | head -8 | tr '\n' ' ')"
grep RUN "$out/pp_tests.log" | awk '{print $4}' | sort > /tmp/r; grep -E "^\[       OK|^\[  FAILED" "$out/pp_tests.log" | awk '{print $4}' | sort > /tmp/d; echo "unfinished: $(comm -23 /tmp/r /tmp/d | tr '\n' ' ')"
gzip -f "$out/pp_tests.log"
B=.gpu/bin/fusedmoe
C=qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
i=0
for v in 0 2 3 0; do
  i=$((i+1))
  if [ "$v" != 0 ] && [ -n "$(comm -23 /tmp/r /tmp/d)" ]; then echo "skip deep=$v (tests unfinished)"; continue; fi
  FUSEDMOE_FP8_DEEP=$v timeout 80 $B bench --suite layer --cases $C --tokens 16,64,256 --stages > "$out/fp8_r${i}_deep$v.txt" 2>&1
  echo "run $i deep=$v rc=$?"; grep -E " layer | gemm2 " "$out/fp8_r${i}_deep$v.txt" | sed 's/  */ /g' | sed -E 's/ layer fp8 swap-ab, token tile [0-9]+//' | cut -c1-48
done
