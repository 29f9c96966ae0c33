#!/usr/bin/env bash
# Session 25, call 5 (carry ["build_pack"]; build_pack/gpu_final.tar.xz as in call 4): the FP8
# decode points' existing knobs (no code change): GEMM2's balanced static ranges forced, weight
# tiles per CTA forced, evict_first both ways, GEMM2's early weight stages.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_final.tar.xz
cat .gpu/COMMIT
timeout 200 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8-fp8c,dsv3-tp8-fp8b,qwen235-tp4-fp8b --tokens 64,256 \
  --balanced --tpc 2,4,8,16 --evict --early2 0,8 > "$out/bench_fp8_knobs.txt" 2>&1
echo "knobs rc=$?"; grep -A14 "variants against" "$out/bench_fp8_knobs.txt"
grep -E "^(qwen|dsv)" "$out/bench_fp8_knobs.txt" | cut -c1-105
