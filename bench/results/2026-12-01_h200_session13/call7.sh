#!/usr/bin/env bash
# Session 13, call 7: fewer ALU instructions per expert in the shared float math (expf clamps by
# FMNMX and no overflow/underflow selects, sanitise and canon by FMNMX, to_key as one xor). Full
# GPU suite, the dispatch bench, ncu of the router kernel at 16384 tokens.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_SHARDS=8 BENCH=dispatch BENCH_ARGS="--tokens 1,16,256,1024,4096,16384" bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log"
grep -E "recip exhaustive" "$out/gpu_tests.log" > "$out/router_lines.txt"
ncu --clock-control none --launch-count 4 -k "regex:router_topk" --metrics gpu__time_duration.sum,smsp__inst_executed.sum,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active .gpu/bin/fusedmoe bench --suite dispatch --tokens 16384 > "$out/ncu_router.txt" 2>&1
cat "$out/summary.txt"; cat "$out/router_lines.txt"
grep -E "^(dsv3|qwen3)" "$out/bench_dispatch.txt" | grep -v "unfused\|pdl" | cut -c1-120
grep -E "^  [a-z_]|gpu__time|inst_exec|alu" "$out/ncu_router.txt" | sed 's/(router_detail::Params).*//'
