#!/usr/bin/env bash
# Session 15, call 3: precomputed ids through the fused front (<= 16 tokens). Full GPU suite; the
# decode layer from precomputed ids with the fused front (default; gather rows auto / on / off)
# and with the separate kernels (FUSEDMOE_FRONT_PRECOMPUTED=0), same run.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_SHARDS=8 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
cases=qwen30-tp1,gptoss-tp1,mixtral-tp2,qwen235-tp8,dsv3-tp8,dsv3-tp8-fp8b
.gpu/bin/fusedmoe bench --suite layer --cases $cases --tokens 1,4,16 --precomputed --gather > "$out/bench_layer_front.txt" 2>&1
FUSEDMOE_FRONT_PRECOMPUTED=0 .gpu/bin/fusedmoe bench --suite layer --cases $cases --tokens 1,4,16 --precomputed \
  > "$out/bench_layer_separate.txt" 2>&1
cat "$out/summary.txt"
for f in front separate; do echo "--- $f"; grep -E "precomputed" "$out/bench_layer_$f.txt" | cut -c1-120; done
