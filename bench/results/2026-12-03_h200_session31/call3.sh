#!/usr/bin/env bash
# Session 31, call 3 (build of .gpu/COMMIT: GEMM1's single-tile dense rule past one wave of 2-CTA
# slots only, from the expected local rows): (a) the full GPU suite; (b) the BF16 cases
# the rule changes at 1-8 tokens, default against GEMM1's dense forced on / off; (c) ncu of the FP8
# GEMM2 of qwen235-tp8-fp8c at 256 tokens (SASS stall samples);
# (d) every case at 1 / 16 / 64 / 256 tokens (the decode table).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
GPU_TEST_SHARDS=12 timeout 250 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/run.log" "$out/sass.txt.gz"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
B=.gpu/bin/fusedmoe
timeout 150 $B bench --suite layer --cases dsv3-tp8,dsv3-ep8,qwen235-tp8,qwen235-tp4,qwen30-tp1,dsv4f-tp4 --tokens 1,2,3,4,6,8 --dense1 > "$out/bf16_small.txt" 2>&1
echo "bf16 small rc=$?"; grep -E " layer " "$out/bf16_small.txt" | sed 's/  */ /g' | sed -E 's/ layer bf16 swap-ab, token tile [0-9]+//' | cut -c1-60
timeout 120 $B bench --suite layer --tokens 1,16,64,256 > "$out/decode.txt" 2>&1
echo "decode rc=$?"; grep -E " layer " "$out/decode.txt" | sed 's/  */ /g' | sed -E 's/ layer (bf16|fp8) swap-ab, token tile [0-9]+//' | cut -c1-60
timeout 120 ncu --clock-control none -k regex:sm90_fp8_grouped_gemm --launch-skip 1 --launch-count 1 --section SourceCounters --import-source no --page source --print-source sass --csv $B bench --suite layer --cases qwen235-tp8-fp8c --tokens 256 > "$out/src_g2_fp8c.csv" 2>&1
echo "src rc=$?"; gzip -f "$out/src_g2_fp8c.csv"
