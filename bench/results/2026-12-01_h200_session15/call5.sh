#!/usr/bin/env bash
# Session 15, call 5 (final build): fuse_front auto off with quantised x up to 16 tokens. The
# forward/dispatch GPU tests that run FP8 layers and graphs at small token counts; the FP8 decode
# layer with the final defaults at 1, 4, 16 tokens; the fused front forced each way at 64 / 256.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_FILTER='Forward.Fp8BlockScaledLayers:Forward.Fp8RowScaledLayers:Forward.Fp8SwapAbTiles:Forward.Fp8DynamicPerTensor:Forward.DeviceTokenCountOneGraph:Forward.OverlappedLaunchesMatchPlainBitwise:Forward.GraphReplayMatchesDirectCall:Forward.SuiteShapesAtSmallBatch:DispatchApi.*' \
  GPU_TEST_SHARDS=8 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
.gpu/bin/fusedmoe bench --suite layer --cases dsv3-tp8-fp8b,dsv4f-tp4-fp8b,qwen235-tp8-fp8c,qwen235-tp8-fp8t --tokens 1,4,16 \
  --precomputed > "$out/bench_layer_fp8.txt" 2>&1
.gpu/bin/fusedmoe bench --suite layer --cases dsv3-tp8-fp8b,qwen235-tp8-fp8c --tokens 64,256 --precomputed --front \
  > "$out/bench_layer_fp8_front_64_256.txt" 2>&1
cat "$out/summary.txt"
grep -E "^(dsv3|dsv4|qwen)" "$out/bench_layer_fp8.txt" | cut -c1-120
grep -E "^(dsv3|qwen)" "$out/bench_layer_fp8_front_64_256.txt" | cut -c1-125
