#!/usr/bin/env bash
# Session 34, call 2 (build of .gpu/COMMIT; carry ["build_pack"]): FP8 Swap-AB with two 64-row
# weight tiles per ring stage (the "pair" instances, FUSEDMOE_FP8_PAIR: bit 0 GEMM1, bit 1 GEMM2;
# off by default): (0) the full GPU suite in default mode; (a) the FP8 GPU tests with
# FUSEDMOE_FP8_PAIR=3 (tests that check which instance ran may fail); (b) the FP8 cases at
# 16 / 64 / 256 tokens with stages: pair 0, 2, 3, 0.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
echo "build $(cat .gpu/COMMIT)"
GPU_TEST_SHARDS=12 timeout 250 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/run.log" "$out/sass.txt.gz"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
F='Fp8GroupedGemm.*:Forward.Fp8*:Forward.Balanced*:DispatchApi.DeepSeekV3Fp8BlockPermuted:Forward.SplitK*:Forward.DenseSwapAb'
for i in $(seq 0 11); do
  FUSEDMOE_FP8_PAIR=3 GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$i timeout 150 .gpu/bin/fusedmoe_gpu_tests --gtest_filter="$F" > "$out/t.$i.log" 2>&1 &
done
wait
cat "$out"/t.*.log > "$out/pair_tests.log"; rm -f "$out"/t.*.log
echo "pair tests: passed $(grep -E '^\[  PASSED  \]' "$out/pair_tests.log" | grep -oE '[0-9]+' | awk '{s+=$1} END {print s+0}'); $(grep -E '^\[  FAILED  \] [A-Za-z]' "$out/pair_tests.log" | sort -u | head -8 | tr '\n' ' ')"
grep -E "Failure|Expected|Which is|actual" "$out/pair_tests.log" | head -12
gzip -f "$out/pair_tests.log"
C=qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
i=0
for v in 0 2 3 0; do
  i=$((i+1))
  FUSEDMOE_FP8_PAIR=$v timeout 80 .gpu/bin/fusedmoe bench --suite layer --cases $C --tokens 16,64,256 --stages > "$out/fp8_r${i}_pair$v.txt" 2>&1
  echo "run $i pair=$v rc=$?"; grep -E " layer | gemm1 | gemm2 " "$out/fp8_r${i}_pair$v.txt" | sed 's/  */ /g' | sed -E 's/ layer fp8 swap-ab, token tile [0-9]+/ L/' | cut -c1-44
done
