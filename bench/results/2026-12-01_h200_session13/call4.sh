#!/usr/bin/env bash
# Session 13, call 4: router kernel with its sorted lists in shared memory (a pop is one shared
# load) and the logits sanitised once after either load path. Full GPU suite, the dispatch bench,
# ncu of the dispatch kernels at 16384 tokens, and the decode layer on four cases.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_SHARDS=8 BENCH="dispatch layer" BENCH_ARGS="--tokens 1,16,256,1024,4096,16384" bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/bench_layer.txt" "$out/bench_layer.json"
grep -E "recip exhaustive|router timing" "$out/gpu_tests.log" > "$out/router_lines.txt"
.gpu/bin/fusedmoe bench --suite layer --cases qwen30-tp1,qwen235-tp8,dsv3-tp8,dsv3-tp8-fp8b --tokens 1,16,256 --precomputed > "$out/bench_layer.txt" 2>&1
ncu --clock-control none --launch-count 10 -k "regex:router_topk|plan_|permute" --metrics gpu__time_duration.sum,smsp__inst_executed.sum,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active .gpu/bin/fusedmoe bench --suite dispatch --tokens 16384 > "$out/ncu_16384.txt" 2>&1
cat "$out/summary.txt"; cat "$out/router_lines.txt"
grep -E "^(dsv3|qwen3)" "$out/bench_dispatch.txt" | cut -c1-120
grep -E " layer" "$out/bench_layer.txt" | cut -c1-130
grep -E "^  [a-z_]|gpu__time|inst_exec|alu" "$out/ncu_16384.txt" | sed 's/(router_detail::Params).*//;s/(plan_detail::PlanParams).*//;s/(pq_detail::PQParams).*//' | head -40
