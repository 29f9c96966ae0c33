#!/usr/bin/env bash
# Session 15, call 6 (final commit): the dispatch GPU tests (the fused front, precomputed ids, the
# refactored fused-vs-separate tests) and the decode layer's defaults on two cases.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_FILTER='DispatchApi.*' GPU_TEST_SHARDS=8 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
timeout 50 .gpu/bin/fusedmoe bench --suite layer --cases qwen30-tp1,dsv3-tp8-fp8b --tokens 1 --precomputed > "$out/bench_layer.txt" 2>&1
cat "$out/summary.txt"; grep -E "^(qwen|dsv3)|floor|rate|command" "$out/bench_layer.txt" | cut -c1-140
