#!/usr/bin/env bash
# Session 47, device call 4 (same pack): the decode tables (packed weights) with the torch peer
# column, with the stmatrix rule decided from call 1 (FP8 Swap-AB epilogues: stmatrix; BF16: the
# per-value puts), emulated on this pack by FUSEDMOE_SWAP_STSM per table.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
FUSEDMOE_SWAP_STSM=1 OUT=$out/fp8 PEER=1 GPU_TEST_FILTER=- SASS=0 MAIN=0 BENCH=layer \
  BENCH_ARGS="--tokens 1,16,64,256 --packed --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b" \
  timeout 150 scripts/gpu_run.sh > /dev/null
FUSEDMOE_SWAP_STSM=0 OUT=$out/bf16 PEER=1 GPU_TEST_FILTER=- SASS=0 MAIN=0 BENCH=layer BENCH_ARGS="--tokens 1,16,64,256 --packed" \
  timeout 150 scripts/gpu_run.sh > /dev/null
for s in fp8 bf16; do cp "$out/$s/bench_layer.txt" "$out/decode_$s.txt"; done
grep -hE "geometric mean" "$out"/decode_*.txt
rm -rf "$out/fp8" "$out/bf16"
