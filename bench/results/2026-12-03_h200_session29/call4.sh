#!/usr/bin/env bash
# Session 29, call 4 (after a refused start): the rows from a per-group prefix (pre) and no division,
# clusters of up to 8 routing blocks by default (17-64 tokens), 4 tokens per
# block while they fit (17-32), non-portable clusters of 16 behind FUSEDMOE_FRONT_CLUSTER=16.
# (a) router / dispatch / plan GPU tests by default, DispatchApi.* with FUSEDMOE_FRONT_CLUSTER=16
# and with FUSEDMOE_FRONT_TPB=8; (b) `bench --suite dispatch`: default, TPB=8, CLUSTER=16, default.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
F='DispatchApi.*:Plan.*:PlanGraph.*:RouterGpu.*-*Informational*'
for c in default cluster16 tpb8; do
  echo "==== $c" >> "$out/tests.log"
  case $c in
    default) timeout 150 .gpu/bin/fusedmoe_gpu_tests --gtest_filter="$F" >> "$out/tests.log" 2>&1 ;;
    cluster16) FUSEDMOE_FRONT_CLUSTER=16 timeout 150 .gpu/bin/fusedmoe_gpu_tests --gtest_filter="DispatchApi.*" >> "$out/tests.log" 2>&1 ;;
    tpb8) FUSEDMOE_FRONT_TPB=8 timeout 150 .gpu/bin/fusedmoe_gpu_tests --gtest_filter="DispatchApi.*" >> "$out/tests.log" 2>&1 ;;
  esac
  echo "tests $c rc=$?"; grep -E "^\[  PASSED|^\[  FAILED|FAILED  \]" "$out/tests.log" | tail -4
done
gzip -f "$out/tests.log"
for c in default tpb8 cluster16 default; do
  echo "==== $c" >> "$out/bench_dispatch.txt"
  case $c in
    default) timeout 100 .gpu/bin/fusedmoe bench --suite dispatch --tokens 1,17,32,33,64,65,128,256 >> "$out/bench_dispatch.txt" 2>&1 ;;
    tpb8) FUSEDMOE_FRONT_TPB=8 timeout 100 .gpu/bin/fusedmoe bench --suite dispatch --tokens 17,32 >> "$out/bench_dispatch.txt" 2>&1 ;;
    cluster16) FUSEDMOE_FRONT_CLUSTER=16 timeout 100 .gpu/bin/fusedmoe bench --suite dispatch --tokens 33,64,65,128 >> "$out/bench_dispatch.txt" 2>&1 ;;
  esac
  echo "bench $c rc=$?"
done
grep -E "^====|token-order \(1|route\+plan \(1|T=.*(token-order|route\+plan):" "$out/bench_dispatch.txt" | sed 's/  */ /g' | cut -c1-200
