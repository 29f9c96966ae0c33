#!/usr/bin/env bash
# Session 37, call 1 (code da350fa) (carry ["build_pack"]): the separate quantiser of H triggers GEMM2 at its start
# (PermuteQuantArgs::trigger_at_start; FUSEDMOE_HQUANT_EARLY_TRIGGER=0 turns it off). The full GPU
# suite; the per-token / 1x128 FP8 cases with packed weights, default / off / default in turn; the
# GEMM timeline of qwen235-tp8-fp8c and dsv3-tp8-fp8b at 16 tokens both ways.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
for s in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$s timeout 400 $B/fusedmoe_gpu_tests --gtest_filter='-StreamProbe.*' > "$out/shard_$s.log" 2>&1 &
done
wait
cat "$out"/shard_*.log > "$out/gpu_tests.log"; rm -f "$out"/shard_*.log
{ echo "suite: $(grep -c '^\[       OK \]' "$out/gpu_tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/gpu_tests.log") FAILED lines"
  grep '^\[  FAILED  \]' "$out/gpu_tests.log" | sort -u; } >> "$out/summary.txt"
gzip -f "$out/gpu_tests.log"
F8=qwen235-tp8-fp8c,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
for r in 1 2 3; do
  env=1; [ $r = 2 ] && env=0
  FUSEDMOE_HQUANT_EARLY_TRIGGER=$env timeout 120 $B/fusedmoe bench --suite layer --tokens 1,16,64,256 --packed --cases $F8 > "$out/ab_r${r}_trigger${env}.txt" 2>&1
done
for env in 1 0; do
  FUSEDMOE_HQUANT_EARLY_TRIGGER=$env timeout 60 $B/fusedmoe bench --suite layer --tokens 16 --packed --trace --cases qwen235-tp8-fp8c,dsv3-tp8-fp8b > "$out/trace_trigger${env}.txt" 2>&1
done
{ for f in "$out"/ab_r*.txt; do echo "--- $f"; grep -E " layer " "$f"; done; } >> "$out/summary.txt"
head -3 "$out/summary.txt"
