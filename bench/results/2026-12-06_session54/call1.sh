#!/usr/bin/env bash
# Session 54, call 1: restage the final commit (scripts/build.sh &&
# scripts/stage_gpu.sh && tar -cJf build_pack/gpu_main.tar.xz .gpu), carry
# ["build_pack/gpu_main.tar.xz"], on an H200 if one comes. The whole GPU suite, the main job and the
# Python torch test on the final link layout (whitelist export lists), then the decode tables (the
# vLLM comparison wants H200 numbers), the per-CTA trace of the FP8 front at decode, and the FP8
# layers with the fused front and gathered e4m3 rows forced each way and both on (row-scaled
# qwen235-tp8, 1-128 tokens; session 47: gather 0.97-0.99 at 1-64), the front each way on the block cases.
set -uo pipefail
source scripts/device_prelude.sh
OUT=$out/t GPU_TEST_SHARDS=16 GPU_TEST_TIMEOUT=240 GPU_TEST_FILTER='-StreamProbe.*' SASS=0 MAIN=1 \
  scripts/gpu_run.sh > /dev/null
gzip -f "$out/t/gpu_tests.log"
cat "$out/t/summary.txt" >> "$sum"
echo "suite done at $(( $(date +%s) - start )) s" >> "$sum"
tar -czf "$out/suite.tar.gz" -C "$out" t && rm -rf "$out/t"
bench_step decode_fp8 90 --suite layer --tokens 1,16,64,128,256 --packed \
  --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
bench_step decode_bf16 90 --suite layer --tokens 1,16,64,128,256 --packed \
  --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4,qwen235-tp8,qwen235-tp4,qwen30-tp1,mixtral-tp2,gptoss-tp1
bench_step front_fp8 70 --suite layer --front --gather --tokens 1,4,16,32,64,128 --packed --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t
bench_step front_block 50 --suite layer --front --tokens 1,4,16 --packed --cases dsv3-tp8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
bench_step trace_fp8 40 --suite layer --trace --tokens 16,256 --packed --cases qwen235-tp8-fp8c,dsv3-tp8-fp8b
mkdir -p "$out/bench" && mv "$out"/decode_*.txt "$out"/trace_fp8.txt "$out"/front_*.txt "$out/bench/" 2>/dev/null
tar -czf "$out/bench.tar.gz" -C "$out" bench && rm -rf "$out/bench"
cat "$sum"
