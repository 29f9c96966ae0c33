#!/usr/bin/env bash
# Session 41, call 1 (carry ["build_pack"]): the fused front's tagged exchange (issue #3).
# (a) the router / plan / dispatch / combine GPU tests by default (tagged exchange), and DispatchApi.*
#     with the grid barrier (FUSEDMOE_FRONT_TAGGED=0) and with clusters off (FUSEDMOE_FRONT_CLUSTER=0:
#     the cooperative launch, tagged, at 17-256 tokens), in parallel;
# (b) memcheck of the new test;
# (c) bench --suite dispatch: default, barrier, clusters off, default (same binary).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
timeout 200 $B/fusedmoe_gpu_tests --gtest_filter='DispatchApi.*:RouterGpu.*:Plan*.*:CombineApi.*:PermuteQuant.*' > "$out/tests_default.log" 2>&1 &
FUSEDMOE_FRONT_TAGGED=0 timeout 200 $B/fusedmoe_gpu_tests --gtest_filter='DispatchApi.*' > "$out/tests_barrier.log" 2>&1 &
FUSEDMOE_FRONT_CLUSTER=0 timeout 200 $B/fusedmoe_gpu_tests --gtest_filter='DispatchApi.*' > "$out/tests_nocluster.log" 2>&1 &
wait
for v in default barrier nocluster; do
  stamp "tests $v: $(grep -c '^\[       OK \]' "$out/tests_$v.log") OK, $(grep -c '^\[  FAILED  \]' "$out/tests_$v.log") FAILED; $(tail -1 "$out/tests_$v.log")"
  grep -E '^\[  FAILED  \]|Failure' "$out/tests_$v.log" | head -5 >> "$out/summary.txt"
done
timeout 120 compute-sanitizer --tool memcheck $B/fusedmoe_gpu_tests --gtest_filter='DispatchApi.FusedFrontTaggedExchangeAcrossCalls' > "$out/memcheck.log" 2>&1
stamp "memcheck rc=$?: $(grep -E 'ERROR SUMMARY' "$out/memcheck.log" | tr '\n' ' ')"
T=1,16,17,32,48,64,72,73,96,128,129,256
for v in default barrier nocluster default; do
  echo "==== $v" >> "$out/bench_dispatch.txt"
  case $v in
    barrier) FUSEDMOE_FRONT_TAGGED=0 timeout 80 $B/fusedmoe bench --suite dispatch --tokens $T >> "$out/bench_dispatch.txt" 2>&1 ;;
    nocluster) FUSEDMOE_FRONT_CLUSTER=0 timeout 80 $B/fusedmoe bench --suite dispatch --tokens $T >> "$out/bench_dispatch.txt" 2>&1 ;;
    *) timeout 80 $B/fusedmoe bench --suite dispatch --tokens $T >> "$out/bench_dispatch.txt" 2>&1 ;;
  esac
  stamp "dispatch $v rc=$?"
done
echo "check failures: $(grep -c 'CHECK FAILED' "$out/bench_dispatch.txt")" >> "$out/summary.txt"
grep -E "^====|T=.*(token-order|route\+plan):" "$out/bench_dispatch.txt" | sed 's/  */ /g' | sed 's/all in.*| end/end/' | cut -c1-90 > "$out/front_end.txt"
cat "$out/summary.txt"; cat "$out/front_end.txt" | head -120
