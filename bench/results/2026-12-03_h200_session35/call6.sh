#!/usr/bin/env bash
# Device call 6 (carry ["build_pack"]), branch wip/packed-fp8: packed FP8 weights too
# (MoeTensors::w1_packed / w2_packed, pack_weights, ForwardOptions::packed_weights). The full GPU
# suite (12 shards; StreamProbe excluded: it measures, call 4 has its numbers); then the layer bench at
# 1 / 16 / 64 / 256 tokens, every case, BF16 with packed weights and "packed off" (the 2D boxes).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
pids=()
for s in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$s timeout 400 $B/fusedmoe_gpu_tests --gtest_filter='-StreamProbe.*' > "$out/shard_$s.log" 2>&1 &
  pids+=($!)
done
wait
cat "$out"/shard_*.log > "$out/gpu_tests.log"; rm -f "$out"/shard_*.log
{ echo "suite (without StreamProbe): $(grep -c '^\[       OK \]' "$out/gpu_tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/gpu_tests.log") FAILED lines"
  grep '^\[  FAILED  \]' "$out/gpu_tests.log" | sort -u
  grep "packed   \]" "$out/gpu_tests.log"; } >> "$out/summary.txt"
timeout 200 $B/fusedmoe bench --suite layer --tokens 1,16,64,256 --packed --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b,qwen235-tp8,dsv3-tp8 --json "$out/decode.json" > "$out/decode.txt" 2>&1
echo "decode bench rc=$?" >> "$out/summary.txt"
gzip -f "$out/gpu_tests.log"
tail -8 "$out/decode.txt" >> "$out/summary.txt"
cat "$out/summary.txt"
