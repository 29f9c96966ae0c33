#!/usr/bin/env bash
# Session 13, call 2: router throughput changes (resident grid with warps looping over tokens,
# 64-register budget for <= 8 slots per lane, sigmoid reciprocal in float, unbiased scores fetched
# after the rounds, half the slot-sum shuffles for k <= 8) and the router owning the error flag
# (no memset node). Full GPU suite, the dispatch bench, ncu kernel times at 16384 tokens.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_SHARDS=8 BENCH=dispatch BENCH_ARGS="--tokens 1,16,256,1024,4096,16384" bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log"
grep -E "recip exhaustive|router timing" "$out/gpu_tests.log" > "$out/router_lines.txt"
ncu --clock-control none --launch-count 14 -k "regex:router|plan|permute" --metrics gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active .gpu/bin/fusedmoe bench --suite dispatch --tokens 16384 > "$out/ncu_16384.txt" 2>&1
cat "$out/summary.txt"; cat "$out/router_lines.txt"
grep -E "^(dsv3|qwen3)" "$out/bench_dispatch.txt" | cut -c1-120
grep -E "^  [a-z_]|gpu__time|inst_exec|warps_active" "$out/ncu_16384.txt" | sed 's/(router_detail::Params).*//;s/(plan_detail::PlanParams).*//;s/(pq_detail::PQParams).*//' | head -60
