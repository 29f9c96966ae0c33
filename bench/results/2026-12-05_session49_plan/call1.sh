#!/usr/bin/env bash
# Plan for the next session (written in session 48, not run): the final code on an H200, one call.
# Carry ["build_pack/gpu_main.tar.xz"] restaged at the final commit (scripts/build.sh &&
# scripts/stage_gpu.sh && tar -cJf build_pack/gpu_main.tar.xz .gpu; session 48 left it at the final commit,
# whose code is the final code's). Everything but summary.txt comes back in bundle.tar.gz
# (scripts/bundle_out.sh: the tool returns at most 8 files).
#  1. decode tables with the torch peer (BF16 and FP8, 1-256 tokens, packed weights): issue #4's
#     and #5's numbers for the merged epilogue-per-kernel build (session 48 measured it on an H100),
#     the first with finite FP8 bench data (a `warning` line would name non-finite outputs);
#  2. stages at 256 tokens for dsv3-tp8-fp8b, qwen235-tp8-fp8c, qwen235-tp8 (BF16): the dense
#     tile-16 FP8 GEMM1 that ran 3.9 % slower on the H100 after the merge;
#  3. the whole GPU suite (16 shards, 300 s).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
OUT=$out/fp8 PEER=1 GPU_TEST_FILTER=- SASS=0 MAIN=0 BENCH=layer \
  BENCH_ARGS="--tokens 1,16,64,256 --packed --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b" \
  timeout 150 scripts/gpu_run.sh > /dev/null
OUT=$out/bf16 PEER=1 GPU_TEST_FILTER=- SASS=0 MAIN=0 BENCH=layer BENCH_ARGS="--tokens 1,16,64,256 --packed" \
  timeout 150 scripts/gpu_run.sh > /dev/null
for s in fp8 bf16; do cp "$out/$s/bench_layer.txt" "$out/decode_$s.txt"; rm -rf "$out/$s"; done
timeout 60 .gpu/bin/fusedmoe bench --suite layer --tokens 256 --packed --stages \
  --cases dsv3-tp8-fp8b,qwen235-tp8-fp8c,qwen235-tp8 > "$out/stages.txt" 2>&1
left=$((555 - SECONDS)); [ $left -gt 300 ] && left=300
echo "suite limit ${left}s (started at ${SECONDS}s)" >> "$sum"
OUT=$out/t GPU_TEST_SHARDS=16 GPU_TEST_TIMEOUT=$left GPU_TEST_FILTER='-StreamProbe.*' SASS=0 MAIN=1 \
  scripts/gpu_run.sh > /dev/null
gzip -f "$out/t/gpu_tests.log"
cat "$out/t/summary.txt" >> "$sum"
for f in "$out"/decode_*.txt "$out/stages.txt"; do
  echo "== $(basename "$f")"; grep -E " layer |stage | warning " "$f" | grep -v "packed off" | cut -c1-120
done >> "$sum"
OUT=$out scripts/bundle_out.sh
cat "$sum"
