#!/usr/bin/env bash
# Session 42's plan, kept by session 43 (NOT RUN: no machine was lent in sessions 42 and 43):
# the tagged exchange (session 41's second form, branch wip/tagged-exchange: main + one commit,
# opt-in with FUSEDMOE_FRONT_TAGGED=1). Build that branch in a worktree (git worktree add
# /tmp/tagged wip/tagged-exchange && cd /tmp/tagged && scripts/build.sh && scripts/stage_gpu.sh &&
# mkdir -p build_pack && tar -cJf build_pack/gpu_tagged.tar.xz .gpu), copy build_pack/gpu_tagged.tar.xz
# into this checkout's build_pack/ (alone: the carry holds 64 MiB), run with carry ["build_pack"]:
# (a) DispatchApi / RouterGpu / Plan tests tagged and DispatchApi with the barrier, in parallel;
# (b) memcheck of the multi-call test, tagged; (c) bench --suite dispatch tagged / barrier
#     alternated twice (the kernel time at 73-256 tokens decides: session 41's first form was
#     0.1-0.5 us slower; the second form saves the release fence only, ~0.45 us in session 29's
#     breakdown: qwen3 at 128-256 tokens 5.15-5.31 us would come under 5 us).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
rm -rf .gpu && tar -xJf build_pack/gpu_tagged.tar.xz  # (always: a warm machine keeps the last call's .gpu)
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
FUSEDMOE_FRONT_TAGGED=1 timeout 150 compute-sanitizer --tool memcheck $B/fusedmoe_gpu_tests --gtest_filter='DispatchApi.FusedFrontAcrossCallsOnOneWorkspace' > "$out/memcheck.log" 2>&1
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
cat "$out/summary.txt"; paste -d' ' <(sed -n '1,28p' "$out/front_end.txt") <(sed -n '29,56p' "$out/front_end.txt" | cut -c30-70)
