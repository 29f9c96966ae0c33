#!/usr/bin/env bash
# Session 14, call 3: the chunked plan as one cooperative kernel (default) against the three
# kernels (FUSEDMOE_PLAN_COOP=0). Full GPU suite; the plan tests again on the three-kernel path;
# the dispatch bench (both paths at 4096 / 16384); ncu kernel times of the dsv3 chain at 16384.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_SHARDS=8 BENCH=dispatch BENCH_ARGS="--tokens 1,16,256,1024,4096,16384" bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/bench_dispatch.json" "$out/info.log"
FUSEDMOE_PLAN_COOP=0 .gpu/bin/fusedmoe_gpu_tests --gtest_filter='Plan*:DispatchApi*' > "$out/gpu_tests_plan3.log" 2>&1
tail -3 "$out/gpu_tests_plan3.log" >> "$out/gpu_tests.log"; rm -f "$out/gpu_tests_plan3.log"
gzip -f "$out/gpu_tests.log"
FUSEDMOE_PLAN_COOP=0 .gpu/bin/fusedmoe bench --suite dispatch --tokens 1024,4096,16384 > "$out/bench_dispatch_plan3.txt" 2>&1
for m in 1 0; do
  FUSEDMOE_PLAN_COOP=$m ncu --clock-control none --launch-count 6 -k "regex:router_topk|plan_|permute" --metrics gpu__time_duration.sum .gpu/bin/fusedmoe bench --suite dispatch --cases dsv3-routing --tokens 16384 > "$out/ncu_$m.txt" 2>&1
done
cat "$out/summary.txt"
grep -E "^(dsv3|qwen3)" "$out/bench_dispatch.txt" | grep -v unfused | cut -c1-140
echo "--- FUSEDMOE_PLAN_COOP=0"; grep -E "^(dsv3|qwen3)" "$out/bench_dispatch_plan3.txt" | grep -v unfused | cut -c1-140
for m in 1 0; do echo "--- ncu coop=$m"; grep -E "^  [a-z_]|gpu__time" "$out/ncu_$m.txt" | sed 's/(router_detail::Params).*//;s/(plan_detail::PlanParams).*//;s/(pq_detail::PQParams).*//' | head -16; done
