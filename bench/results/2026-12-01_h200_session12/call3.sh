#!/usr/bin/env bash
# Session 12, call 3: the GPU test suite, the decode layer benchmark (every suite case, 1-256
# tokens, with and without the router) after GEMM1 stopped prefetching weights during the
# permute, and the timeline / cold-input comparison of the three cases slower than vLLM at 1 token.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
GPU_TEST_SHARDS=8 BENCH=layer BENCH_ARGS="--tokens 1,4,16,64,256 --precomputed" bash scripts/gpu_run.sh > /dev/null 2>&1
{
  .gpu/bin/fusedmoe bench --suite layer --cases qwen30-tp1,gptoss-tp1,mixtral-tp2,qwen235-tp8-fp8c,dsv3-tp8-fp8b --tokens 1 --precomputed --trace
  echo "==== the same, inputs left cold after the flush (the method of earlier sessions)"
  .gpu/bin/fusedmoe bench --suite layer --cases qwen30-tp1,gptoss-tp1,mixtral-tp2,qwen235-tp8-fp8c,dsv3-tp8-fp8b --tokens 1 --precomputed --cold-inputs
} > "$out/bench_extra.txt" 2>&1
cat "$out/summary.txt"
grep -E "^[a-z0-9-]+ +layer" "$out/bench_layer.txt" | cut -c1-120
grep -E "layer|timeline|gemm[12]:|front:" "$out/bench_extra.txt" | cut -c1-200
