#!/usr/bin/env bash
# Session 54, call 4: the row-scaled FP8 layers' GEMM2 on the static balanced ranges (requested by
# the oracle with gathered rows since this build): forced each way at 6-16 tokens, two rounds; the
# GPU tests that run row-scaled FP8 by default at small token counts (and the balanced / gathered
# ones), the Python torch test, and the FP8 decode table on this build.
set -uo pipefail
source scripts/device_prelude.sh
bench_step balanced_r1 40 --suite layer --balanced --tokens 6,8,12,16 --packed --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t
bench_step balanced_r2 40 --suite layer --balanced --tokens 6,8,12,16 --packed --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t
OUT=$out/t GPU_TEST_SHARDS=8 GPU_TEST_TIMEOUT=150 SASS=0 MAIN=1 \
  GPU_TEST_FILTER='Forward.Fp8RowScaledLayers:Forward.Fp8GatherRows:Forward.SplitKClustersFitOneWave:Forward.Balanced*:Forward.Fp8SwapAbTiles:Forward.*Graph*:Fp8GroupedGemm.Balanced*' \
  scripts/gpu_run.sh > /dev/null
gzip -f "$out/t/gpu_tests.log"
cat "$out/t/summary.txt" >> "$sum"
tar -czf "$out/suite.tar.gz" -C "$out" t && rm -rf "$out/t"
bench_step decode_fp8 60 --suite layer --tokens 1,16,64,128,256 --packed \
  --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
mkdir -p "$out/bench" && mv "$out"/balanced_*.txt "$out"/decode_fp8.txt "$out/bench/" 2>/dev/null
tar -czf "$out/bench.tar.gz" -C "$out" bench && rm -rf "$out/bench"
cat "$sum"
