#!/usr/bin/env bash
# Session 31, call 3 (build of .gpu/COMMIT: GEMM1's single-tile dense rule past one wave of 2-CTA
# slots only, from the expected local rows): (a) the dense / forward GPU tests; (b) the BF16 cases
# the rule changes at 1-8 tokens, default against GEMM1's dense forced on / off; (c) ncu of the FP8
# GEMM2 of qwen235-tp8-fp8c at 256 tokens (sections, then SASS stall samples) and of
# dsv3-tp8-fp8b's (sections).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin/fusedmoe
F='Forward.DenseSwapAb:Forward.SuiteShapes*:Forward.TokenCounts*:Forward.Skewed*:Forward.Gemm1SplitKOnly'
for i in 0 1 2 3; do GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 200 .gpu/bin/fusedmoe_gpu_tests --gtest_filter="$F" > "$out/t$i.log" 2>&1 & done; wait
cat "$out"/t?.log > "$out/tests.log"; rm -f "$out"/t?.log
echo "tests: $(grep -E '^\[  PASSED  \]' "$out/tests.log" | tr '\n' ' ') $(grep -E '^\[  FAILED  \]' "$out/tests.log" | sort -u | tr '\n' ' ')"; gzip -f "$out/tests.log"
timeout 150 $B bench --suite layer --cases dsv3-tp8,dsv3-ep8,qwen235-tp8,qwen235-tp4,qwen30-tp1,dsv4f-tp4 --tokens 1,2,3,4,6,8 --dense1 > "$out/bf16_small.txt" 2>&1
echo "bf16 small rc=$?"; grep -E " layer " "$out/bf16_small.txt" | sed 's/  */ /g' | sed -E 's/ layer bf16 swap-ab, token tile [0-9]+//' | cut -c1-60
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --metrics dram__bytes_read.sum,dram__bytes_write.sum"
for c in qwen235-tp8-fp8c dsv3-tp8-fp8b; do
  timeout 100 ncu --clock-control none -k regex:sm90_fp8_grouped_gemm --launch-skip 1 --launch-count 1 $S $B bench --suite layer --cases $c --tokens 256 > "$out/ncu_g2_$c.txt" 2>&1
  echo "ncu $c rc=$?"; grep -E "sm90_fp8|Duration|DRAM Throughput|dram__bytes|No Eligible|Issued Warp|Eligible Warps|Warp Cycles Per Issued|L2 Cache Throughput|Grid Size|Registers Per|Achieved Occupancy|Block Limit|Stall" "$out/ncu_g2_$c.txt" | cut -c1-150 | head -30
done
timeout 120 ncu --clock-control none -k regex:sm90_fp8_grouped_gemm --launch-skip 1 --launch-count 1 --section SourceCounters --import-source no --page source --print-source sass --csv $B bench --suite layer --cases qwen235-tp8-fp8c --tokens 256 > "$out/src_g2_fp8c.csv" 2>&1
echo "src rc=$?"; gzip -f "$out/src_g2_fp8c.csv"
