#!/usr/bin/env bash
# Session 54, call 3: GEMM2-side switches on the FP8 decode points just under 0.75 (qwen235-tp8-fp8c /
# fp8t at 16 / 128 / 256 tokens, dsv3-ep8-fp8b at 16), each forced each way in one run: the dense
# Swap-AB instances (GEMM2 at token tile 32 runs 2 CTAs per SM by the rule), the balanced GEMM2
# schedule, GEMM2 quantising H, the weights' evict_first policy.
set -uo pipefail
source scripts/device_prelude.sh
bench_step sweep_row 150 --suite layer --dense --balanced --hs --evict --stages --tokens 16,128,256 --packed --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t
bench_step sweep_ep8 60 --suite layer --dense --balanced --hs --evict --tokens 16 --packed --cases dsv3-ep8-fp8b
mkdir -p "$out/bench" && mv "$out"/sweep_*.txt "$out/bench/" 2>/dev/null
tar -czf "$out/bench.tar.gz" -C "$out" bench && rm -rf "$out/bench"
cat "$sum"
