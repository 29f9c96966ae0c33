#!/usr/bin/env bash
# Session 57, call 3 (the final code of the session's kernels): the layers from precomputed ids
# with the new defaults (the fused front up to 256 tokens; row-scaled FP8 gathering its rows up to
# 128), at vLLM's decode points and the decode token counts; then the whole GPU suite, the main
# job and the torch test.
set -uo pipefail
source scripts/device_prelude.sh
bench_step pre_fp8 90 --suite layer --packed --precomputed --tokens 16,32,64,128,256 \
  --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
bench_step pre_bf16 90 --suite layer --packed --precomputed --tokens 16,64,256 \
  --cases qwen235-tp8,qwen30-tp1,dsv3-tp8,mixtral-tp2,gptoss-tp1
mkdir -p "$out/bench" && mv "$out"/pre_*.txt "$out/bench/" 2>/dev/null
tar -czf "$out/bench.tar.gz" -C "$out" bench && rm -rf "$out/bench"
if [ "$(left)" -gt 250 ]; then suite_step 330; else echo "suite skipped ($(left) s left)" >> "$sum"; fi
cat "$sum"
