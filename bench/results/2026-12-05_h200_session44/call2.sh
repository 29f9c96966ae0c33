#!/usr/bin/env bash
# Session 44, call 2 (carry ["build_pack"], build 98af5ff): why FP8 Swap-AB GEMM2 at 256 tokens runs at
# 48-67 % of its floor (call 1: qwen235-tp8-fp8c 53.9 us vs 26.0; ncu: 752 CTAs, 2 per SM, ~3 waves,
# DRAM 49 %). Sweeps of GEMM2's weight tiles per CTA, H quantised by GEMM2 on/off, the pair and dense
# instances, with stages; then the GEMM timelines of the default.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
C=qwen235-tp8-fp8c,qwen235-tp4-fp8b,dsv3-tp8-fp8b,dsv3-ep8-fp8b
timeout 200 $B/fusedmoe bench --suite layer --tokens 64,256 --stages --packed --tpc 2,4,8,16,32 --hs --pair --dense --cases $C > "$out/sweep.txt" 2>&1
stamp "sweep rc=$?"
timeout 60 $B/fusedmoe bench --suite layer --tokens 256 --packed --trace --cases qwen235-tp8-fp8c,qwen235-tp8 > "$out/trace.txt" 2>&1
stamp "trace rc=$?"
grep -E "layer|stage gemm2" "$out/sweep.txt" | cut -c1-125 >> "$out/summary.txt"
cat "$out/summary.txt"
