#!/usr/bin/env bash
# Session 36, call 3 (carry ["build_pack"]), the final code: H quantised in GEMM1 by default with
# static per-tensor scales only (call 2: faster there, slower with per-token / 1x128 scales), the
# fused front at 17-64 tokens with quantised x and its late trigger. The full GPU suite; the FP8
# layers with packed weights: fused front forced each way, fused H quant off, in one run.
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
F8=qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
timeout 300 .gpu/bin/fusedmoe bench --suite layer --tokens 1,4,16,32,64,256 --packed --front --hq --cases $F8 --json "$out/final.json" > "$out/final.txt" 2>&1
{ echo "--- final"; grep -E "layer" "$out/final.txt"; tail -3 "$out/final.txt"; } >> "$out/summary.txt"
head -4 "$out/summary.txt"
