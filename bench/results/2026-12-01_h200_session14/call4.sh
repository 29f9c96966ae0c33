#!/usr/bin/env bash
# Session 14, call 4 (build of the session's final device code): full GPU suite; the dispatch
# bench; the permute's row team capped at 128 / 64 threads (FUSEDMOE_PQ_TEAM, an experiment):
# its tests and the dispatch bench at 4096 / 16384; ncu kernel times of the dsv3 chain at 16384.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_SHARDS=8 BENCH=dispatch BENCH_ARGS="--tokens 1,16,256,1024,4096,16384" bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/bench_dispatch.json" "$out/info.log"
for t in 128 64; do
  FUSEDMOE_PQ_TEAM=$t .gpu/bin/fusedmoe_gpu_tests --gtest_filter='PermuteQuant*:DispatchApi*' > "$out/t.log" 2>&1
  { echo "==== FUSEDMOE_PQ_TEAM=$t"; tail -3 "$out/t.log"; } >> "$out/gpu_tests.log"; rm -f "$out/t.log"
  FUSEDMOE_PQ_TEAM=$t .gpu/bin/fusedmoe bench --suite dispatch --tokens 4096,16384 > "$out/bench_dispatch_team$t.txt" 2>&1
done
gzip -f "$out/gpu_tests.log"
ncu --clock-control none --launch-count 5 -k "regex:router_topk|plan_|permute" --metrics gpu__time_duration.sum .gpu/bin/fusedmoe bench --suite dispatch --cases dsv3-routing --tokens 16384 > "$out/ncu.txt" 2>&1
cat "$out/summary.txt"
zcat "$out/gpu_tests.log.gz" | grep -A3 "==== FUSEDMOE_PQ_TEAM"
grep -E "^(dsv3|qwen3)" "$out/bench_dispatch.txt" | grep -v unfused | cut -c1-140
for t in 128 64; do echo "--- FUSEDMOE_PQ_TEAM=$t"; grep -E "^(dsv3|qwen3)" "$out/bench_dispatch_team$t.txt" | grep -E "contiguous" | grep -v pdl | cut -c1-140; done
grep -E "^  [a-z_]|gpu__time" "$out/ncu.txt" | sed 's/(router_detail::Params).*//;s/(plan_detail::PlanParams).*//;s/(pq_detail::PQParams).*//'
