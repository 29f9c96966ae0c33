#!/usr/bin/env bash
# Session 29, call 3: the fused front's cluster path with pushed counts (each entry adds its group's
# count into every block's shared memory before the cluster barrier; no reads of other blocks'
# masks after it). (a) router / dispatch / plan GPU tests, default and with clusters of up to 8
# blocks (FUSEDMOE_FRONT_CLUSTER=8: 64 tokens) and with clusters off (=0);
# (b) `bench --suite dispatch` default and with FUSEDMOE_FRONT_CLUSTER=8 and =0, alternated.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
build_pack/latency_probe > "$out/latency_probe.txt" 2>&1; cat "$out/latency_probe.txt"
tar -xJf build_pack/gpu_head.tar.xz
F='DispatchApi.*:Plan.*:PlanGraph.*:RouterGpu.*-*Informational*'
for c in default 8 0; do
  echo "==== FUSEDMOE_FRONT_CLUSTER=$c" >> "$out/tests.log"
  if [ $c = default ]; then timeout 150 .gpu/bin/fusedmoe_gpu_tests --gtest_filter="$F" >> "$out/tests.log" 2>&1
  else FUSEDMOE_FRONT_CLUSTER=$c timeout 150 .gpu/bin/fusedmoe_gpu_tests --gtest_filter="DispatchApi.*" >> "$out/tests.log" 2>&1; fi
  echo "tests cluster=$c rc=$?"; grep -E "^\[  PASSED|^\[  FAILED|FAILED  \]" "$out/tests.log" | tail -4
done
gzip -f "$out/tests.log"
for c in default 8 0 default; do
  echo "==== FUSEDMOE_FRONT_CLUSTER=$c" >> "$out/bench_dispatch.txt"
  if [ $c = default ]; then timeout 100 .gpu/bin/fusedmoe bench --suite dispatch --tokens 1,17,32,48,64,128,256 >> "$out/bench_dispatch.txt" 2>&1
  else FUSEDMOE_FRONT_CLUSTER=$c timeout 100 .gpu/bin/fusedmoe bench --suite dispatch --tokens 17,32,48,64 >> "$out/bench_dispatch.txt" 2>&1; fi
  echo "bench cluster=$c rc=$?"
done
grep -E "^====|token-order \(1|route\+plan \(1|T=.*(token-order|route\+plan):" "$out/bench_dispatch.txt" | sed 's/  */ /g' | cut -c1-230
