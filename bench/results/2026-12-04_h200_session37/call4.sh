#!/usr/bin/env bash
# Session 37, call 4 (carry ["build_pack"], code 583a3be: the final code, FP8 GEMM2 on the raster by default). The full
# GPU suite; GEMM timelines at 16 and 64 tokens; every layer case at 1-256 tokens with packed
# weights; the FP8 balanced GEMM2 forced each way (the default now the raster); FP8 GEMM2's early
# weight stages 0 / 1 / 2 against the default (the whole ring up to 64 tokens).
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
timeout 90 $B/fusedmoe bench --suite layer --tokens 16,64 --packed --trace --cases qwen235-tp8-fp8c,dsv3-tp8-fp8b,qwen235-tp8,dsv3-tp8 > "$out/trace.txt" 2>&1
timeout 240 $B/fusedmoe bench --suite layer --tokens 1,16,64,256 --packed --json "$out/decode.json" > "$out/decode.txt" 2>&1
echo "decode bench rc=$?" >> "$out/summary.txt"
timeout 90 $B/fusedmoe bench --suite layer --tokens 16,64 --packed --balanced --cases qwen235-tp8-fp8c,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b > "$out/balanced.txt" 2>&1
timeout 150 $B/fusedmoe bench --suite layer --tokens 16,64,256 --packed --early2 0,1,2 --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b > "$out/early2.txt" 2>&1
{ tail -6 "$out/early2.txt"; grep -E "known" "$out/trace.txt"; tail -4 "$out/decode.txt"; tail -3 "$out/balanced.txt"; } >> "$out/summary.txt"
rm -f "$out/decode.json.tmp"
cat "$out/summary.txt"
