#!/usr/bin/env bash
# Session 41, call 2 (carry ["build_pack"]; NOT RUN: no machine was lent after call 1; kept as the
# plan for a later session, on a build with tagged_exchange_untested.patch applied): the tagged
# exchange's second form (warp 0 polls the blocks' row 0,
# stored after their mask rows; then one read of the mask rows), opt-in with FUSEDMOE_FRONT_TAGGED=1
# (the grid barrier is the default).
# (a) DispatchApi / RouterGpu / Plan tests tagged and DispatchApi by default (barrier), in parallel;
# (b) memcheck of the new test; (c) bench --suite dispatch default / barrier alternated twice;
# (d) the FP8 layers at 256 / 512 tokens with GEMM2 quantising H forced on / off (--hs): the new
#     1x128 rule at 512.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
FUSEDMOE_FRONT_TAGGED=1 timeout 200 $B/fusedmoe_gpu_tests --gtest_filter='DispatchApi.*:RouterGpu.*:Plan*.*' > "$out/tests_tagged.log" 2>&1 &
timeout 200 $B/fusedmoe_gpu_tests --gtest_filter='DispatchApi.*' > "$out/tests_barrier.log" 2>&1 &
wait
for v in tagged barrier; do
  stamp "tests $v: $(grep -c '^\[       OK \]' "$out/tests_$v.log") OK, $(grep -c '^\[  FAILED  \]' "$out/tests_$v.log") FAILED; $(tail -1 "$out/tests_$v.log")"
  grep -E '^\[  FAILED  \]|Failure' "$out/tests_$v.log" | head -5 >> "$out/summary.txt"
done
FUSEDMOE_FRONT_TAGGED=1 timeout 120 compute-sanitizer --tool memcheck $B/fusedmoe_gpu_tests --gtest_filter='DispatchApi.FusedFrontTaggedExchangeAcrossCalls' > "$out/memcheck.log" 2>&1
stamp "memcheck rc=$?: $(grep -E 'ERROR SUMMARY' "$out/memcheck.log" | tr '\n' ' ')"
T=1,16,17,32,48,64,72,73,96,128,129,192,256
for v in tagged barrier tagged barrier; do
  echo "==== $v" >> "$out/bench_dispatch.txt"
  if [ $v = tagged ]; then
    FUSEDMOE_FRONT_TAGGED=1 timeout 80 $B/fusedmoe bench --suite dispatch --tokens $T >> "$out/bench_dispatch.txt" 2>&1
  else
    timeout 80 $B/fusedmoe bench --suite dispatch --tokens $T >> "$out/bench_dispatch.txt" 2>&1
  fi
  stamp "dispatch $v rc=$?"
done
echo "check failures: $(grep -c 'CHECK FAILED' "$out/bench_dispatch.txt")" >> "$out/summary.txt"
grep -E "^====|T=.*(token-order|route\+plan):" "$out/bench_dispatch.txt" | sed 's/  */ /g' | sed 's/all in.*| end/end/' | cut -c1-70 > "$out/front_end.txt"
timeout 200 $B/fusedmoe bench --suite layer --tokens 256,512 --packed --hs \
  --cases qwen235-tp8-fp8c,dsv3-tp8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b > "$out/hs_512.txt" 2>&1
stamp "hs 512 rc=$?"
cat "$out/summary.txt"; paste -d' ' <(sed -n '1,28p' "$out/front_end.txt") <(sed -n '29,56p' "$out/front_end.txt" | cut -c30-70)
grep -E "tokens|fp8" "$out/hs_512.txt" | grep -E " (256|512) " | cut -c1-120
