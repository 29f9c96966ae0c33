#!/usr/bin/env bash
# Session 37, call 5 (carry ["build_pack"]): the FP8 GEMM2 on the dynamic balanced schedule
# (FUSEDMOE_FP8_DYNAMIC=1, the BF16 rule) against the default raster. The full GPU suite both ways
# (with the variable set, less the test that expects FP8's forced static ranges); the six FP8
# layer cases at 4-256 tokens with packed weights: default / dynamic / default.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
suite() {  # $1: log name, $2: FUSEDMOE_FP8_DYNAMIC, $3: gtest filter
  for s in $(seq 0 11); do
    FUSEDMOE_FP8_DYNAMIC=$2 GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$s timeout 400 $B/fusedmoe_gpu_tests --gtest_filter="$3" > "$out/shard_$s.log" 2>&1 &
  done
  wait
  cat "$out"/shard_*.log > "$out/$1.log"; rm -f "$out"/shard_*.log
  { echo "$1: $(grep -c '^\[       OK \]' "$out/$1.log") OK, $(grep -c '^\[  FAILED  \]' "$out/$1.log") FAILED lines"
    grep '^\[  FAILED  \]' "$out/$1.log" | sort -u; } >> "$out/summary.txt"
  gzip -f "$out/$1.log"
}
suite gpu_tests 0 '-StreamProbe.*'
suite gpu_tests_fp8_dynamic 1 '-StreamProbe.*:Forward.BalancedGemm2Dynamic'
F8=qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
for r in 1 2 3; do
  env=0; [ $r = 2 ] && env=1
  FUSEDMOE_FP8_DYNAMIC=$env timeout 150 $B/fusedmoe bench --suite layer --tokens 4,8,12,16,24,32,64,128,256 --packed --cases $F8 > "$out/ab_r${r}_dynamic${env}.txt" 2>&1
done
cat "$out/summary.txt"
