#!/usr/bin/env bash
# Session 49, call 5 (the warm H200 of call 4, the same final build 54bdfa8): the decode tables with
# the torch peer (BF16 and FP8, 1-256 tokens, packed weights) and the stages of the three 256-token
# cases of call 1, on an H200 this time.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
[ -d .gpu ] || tar -xJf build_pack/gpu_main.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
OUT=$out/fp8 PEER=1 GPU_TEST_FILTER=- SASS=0 MAIN=0 BENCH=layer \
  BENCH_ARGS="--tokens 1,16,64,256 --packed --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b" \
  timeout 150 scripts/gpu_run.sh > /dev/null
OUT=$out/bf16 PEER=1 GPU_TEST_FILTER=- SASS=0 MAIN=0 BENCH=layer \
  BENCH_ARGS="--tokens 1,16,64,256 --packed --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4,qwen235-tp8,qwen235-tp4,qwen30-tp1,mixtral-tp2,gptoss-tp1" \
  timeout 150 scripts/gpu_run.sh > /dev/null
for s in fp8 bf16; do cp "$out/$s/bench_layer.txt" "$out/decode_$s.txt"; rm -rf "$out/$s"; done
echo "decode tables done at ${SECONDS}s" >> "$sum"
timeout 60 .gpu/bin/fusedmoe bench --suite layer --tokens 256 --packed --stages \
  --cases dsv3-tp8-fp8b,qwen235-tp8-fp8c,qwen235-tp8 > "$out/stages.txt" 2>&1
echo "stages: rc=$? at ${SECONDS}s" >> "$sum"
for f in "$out"/decode_*.txt "$out/stages.txt"; do
  echo "== $(basename "$f")"; grep -E " layer |stage | warning " "$f" | grep -v "packed off" | cut -c1-125
done >> "$sum"
cat "$sum"
