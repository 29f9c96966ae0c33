#!/usr/bin/env bash
# Session 21, call 2 (build fea00a0 = HEAD's library SASS): the FP8 decode GEMMs' stalls by SASS
# instruction (ncu source counters) for dsv3-tp8-fp8b GEMM1 and qwen235-tp8-fp8c GEMM2 at 256 tokens;
# the FP8 cases at 64/256 tokens with GEMM2's balanced schedule forced on/off and tiles per CTA.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_front.tar.xz
B=.gpu_front/bin/fusedmoe
timeout 120 ncu --clock-control none --launch-count 1 -k "regex:sm90_fp8_grouped_gemm" --section WarpStateStats --print-details all --section SourceCounters --import-source no --page source --print-source sass --csv $B bench --suite layer --cases dsv3-tp8-fp8b --tokens 256 > "$out/ncu_src_dsv3_g1.csv" 2>&1
echo "src1 rc=$?"
timeout 120 ncu --clock-control none --launch-skip 1 --launch-count 1 -k "regex:sm90_fp8_grouped_gemm" --section SourceCounters --import-source no --page source --print-source sass --csv $B bench --suite layer --cases qwen235-tp8-fp8c --tokens 256 > "$out/ncu_src_qwen_g2.csv" 2>&1
echo "src2 rc=$?"
timeout 60 ncu --clock-control none --launch-count 2 -k "regex:sm90_fp8_grouped_gemm" --section WarpStateStats --print-details all $B bench --suite layer --cases dsv3-tp8-fp8b --tokens 256 > "$out/ncu_stall_dsv3.txt" 2>&1
echo "stall rc=$?"
gzip -f "$out"/ncu_src_*.csv
timeout 200 $B bench --suite layer --cases dsv3-tp8-fp8b,qwen235-tp8-fp8c,dsv3-ep8-fp8b,qwen235-tp4-fp8b,dsv4f-tp4-fp8b --tokens 64,256 --precomputed --balanced --tpc 1,2,4 > "$out/bench_fp8_gemm2.txt" 2>&1
echo "bench rc=$?"
grep -iE "stall|Warp Cycles" "$out/ncu_stall_dsv3.txt" | head -60
