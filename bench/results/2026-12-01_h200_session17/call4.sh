#!/usr/bin/env bash
# Session 17, call 4 (build 9b08126, the K-group experiment at its default n = 1, i.e. the kernels of
# d3af003): the tile-family / token-tile crossover re-measured on every BF16 and FP8 decode case at
# 32-512 tokens (the heuristic dates from sessions 3-5): each family and token tile forced.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
timeout 280 .gpu/bin/fusedmoe bench --suite crossover --cases qwen235-tp8,dsv3-tp8,qwen235-tp4,mixtral-tp2,dsv4f-tp4,qwen30-tp1,gptoss-tp1,dsv3-ep8 \
  --tokens 32,64,128,256,512 > "$out/bench_crossover_bf16.txt" 2>&1
echo "bf16 rc=$?"
timeout 200 .gpu/bin/fusedmoe bench --suite crossover --cases dsv3-tp8-fp8b,qwen235-tp8-fp8c,dsv4f-tp4-fp8b,qwen235-tp4-fp8b,dsv3-ep8-fp8b \
  --tokens 32,64,128,256,512 > "$out/bench_crossover_fp8.txt" 2>&1
echo "fp8 rc=$?"
grep -E "T=|faster|crossover" "$out/bench_crossover_bf16.txt" "$out/bench_crossover_fp8.txt" | cut -c1-160
