#!/usr/bin/env bash
# Session 28, call 1: issue #3's fused front. (a) the dispatch/router/plan GPU tests with every
# experiment on (FUSEDMOE_FRONT_EXP=7); (b) `bench --suite dispatch`
# with experiments 7, 4, 1 and the default twice (SM clock in the timeline).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw --format=csv > "$out/tests.log" 2>&1
F='DispatchApi.*:Plan.*:PlanGraph.*:RouterGpu.*-*Informational*'
for e in 7; do
  echo "==== FUSEDMOE_FRONT_EXP=$e" >> "$out/tests.log"
  FUSEDMOE_FRONT_EXP=$e timeout 120 .gpu/bin/fusedmoe_gpu_tests --gtest_filter="$F" >> "$out/tests.log" 2>&1
  echo "tests exp=$e rc=$?"; grep -E "^\[  PASSED|^\[  FAILED" "$out/tests.log" | tail -3
done
gzip -f "$out/tests.log"
for e in 0 7 4 1 0; do
  echo "==== FUSEDMOE_FRONT_EXP=$e" >> "$out/bench_exp.txt"
  t0=$(date +%s)
  FUSEDMOE_FRONT_EXP=$e timeout 70 .gpu/bin/fusedmoe bench --suite dispatch --tokens 1,16,32,64,128,256 >> "$out/bench_exp.txt" 2>&1
  echo "bench exp=$e rc=$? $(( $(date +%s) - t0 )) s"
done
grep -E "^====|token-order \(1|route\+plan \(1|T=.*(token-order|route\+plan):" "$out/bench_exp.txt" | sed 's/  */ /g' | cut -c1-260
