#!/usr/bin/env bash
# Session 21, call 4 (build e49b9d1, staged Swap-AB epilogue): ncu source counters (stall samples per
# SASS instruction) of dsv3-tp8-fp8b GEMM1 and GEMM2 and qwen235-tp8-fp8c GEMM2 at 256 tokens.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_new.tar.xz
B=.gpu/bin/fusedmoe
N="ncu --clock-control none --launch-count 1 -k regex:sm90_fp8_grouped_gemm --section SourceCounters --import-source no --page source --print-source sass --csv"
timeout 100 $N $B bench --suite layer --cases dsv3-tp8-fp8b --tokens 256 > "$out/src_dsv3_g1.csv" 2>&1; echo "g1 rc=$?"
timeout 100 $N --launch-skip 1 $B bench --suite layer --cases dsv3-tp8-fp8b --tokens 256 > "$out/src_dsv3_g2.csv" 2>&1; echo "g2 rc=$?"
timeout 100 $N --launch-skip 1 $B bench --suite layer --cases qwen235-tp8-fp8c --tokens 256 > "$out/src_qwen_g2.csv" 2>&1; echo "q2 rc=$?"
gzip -f "$out"/src_*.csv
