#!/usr/bin/env bash
# Session 14, call 2 (build 9fa0700): write ceilings with bf16-sized reads (writebw.cu), plan /
# dispatch / permute / forward GPU tests, the dispatch bench with the permute's x loads through
# .cg (default) and through L1 (FUSEDMOE_PQ_LOAD=1), ncu kernel times of the dsv3 chain at 16384.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
d=bench/results/2026-12-01_h200_session14
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a $d/writebw.cu -o /tmp/writebw && /tmp/writebw > "$out/writebw.txt" 2>&1
GPU_TEST_SHARDS=8 GPU_TEST_FILTER='Plan*:DispatchApi*:PermuteQuant*:Forward*:CombineApi*' BENCH=dispatch BENCH_ARGS="--tokens 1,16,256,4096,16384" bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/bench_dispatch.json" "$out/info.log"
gzip -f "$out/gpu_tests.log"
FUSEDMOE_PQ_LOAD=1 .gpu/bin/fusedmoe bench --suite dispatch --tokens 4096,16384 > "$out/bench_dispatch_l1.txt" 2>&1
for m in 0 1; do
  FUSEDMOE_PQ_LOAD=$m ncu --clock-control none --launch-count 12 -k "regex:router_topk|plan_|permute|scale_gather" --metrics gpu__time_duration.sum,lts__t_sectors.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_read.sum .gpu/bin/fusedmoe bench --suite dispatch --cases dsv3-routing --tokens 16384 > "$out/ncu_$m.txt" 2>&1
done
cat "$out/summary.txt"
grep -E "permute|fill|read|copy" "$out/writebw.txt" | grep -E "bf16|fill +plain|cudaMem|read " | head -20
grep -E "^(dsv3|qwen3)" "$out/bench_dispatch.txt" | cut -c1-110
echo "--- L1 loads"; grep -E "^(dsv3|qwen3)" "$out/bench_dispatch_l1.txt" | cut -c1-110
for m in 0 1; do echo "--- ncu load mode $m"; grep -E "^  [a-z_]|gpu__time|lts__t_sectors.sum|dram__bytes" "$out/ncu_$m.txt" | sed 's/(router_detail::Params).*//;s/(plan_detail::PlanParams).*//;s/(pq_detail::PQParams).*//' | head -40; done
