#!/usr/bin/env bash
# Session 54, call 2: the row-scaled FP8 rule (fused front + gathered e4m3 rows up to 128 tokens) on
# the device: the whole GPU suite, memcheck on the row-scaled layers (the new default path), the
# Python torch test and the main job; the FP8 decode table with the new defaults; gathered rows at
# 256 tokens (kept off there); GEMM1 instance switches on qwen235-tp8-fp8c at 128 / 256 tokens.
set -uo pipefail
source scripts/device_prelude.sh
OUT=$out/t GPU_TEST_SHARDS=16 GPU_TEST_TIMEOUT=330 GPU_TEST_FILTER='-StreamProbe.*' SASS=0 MAIN=1 \
  SANITIZE=1 SANITIZE_TIMEOUT=150 SANITIZE_FILTER='Forward.Fp8RowScaledLayers' scripts/gpu_run.sh > /dev/null
gzip -f "$out/t/gpu_tests.log" "$out/t/memcheck.log"
cat "$out/t/summary.txt" >> "$sum"
echo "suite done at $(( $(date +%s) - start )) s" >> "$sum"
tar -czf "$out/suite.tar.gz" -C "$out" t && rm -rf "$out/t"
bench_step decode_fp8 90 --suite layer --tokens 1,4,16,32,64,128,256 --packed \
  --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
bench_step gather256 40 --suite layer --gather --stages --tokens 128,256 --packed --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t
bench_step gemm1_fp8c 60 --suite layer --pair --dense1 --tpc1 2 --ksplits1 2 --tokens 128,256 --packed --cases qwen235-tp8-fp8c
mkdir -p "$out/bench" && mv "$out"/decode_*.txt "$out"/gather256.txt "$out"/gemm1_fp8c.txt "$out/bench/" 2>/dev/null
tar -czf "$out/bench.tar.gz" -C "$out" bench && rm -rf "$out/bench"
cat "$sum"
