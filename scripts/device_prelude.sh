#!/usr/bin/env bash
# Sourced by a session's device-call script (bench/results/<session>/callN.sh) on the GPU machine:
# unpacks the staged build (build_pack/gpu_main.tar.xz, carried with the call) into .gpu/, starts
# $OUT/summary.txt with the GPU and the build's commit, and defines
#   left            seconds left of the call's budget (LIMIT, default 575: a 600 s call less ~25)
#   bench_step NAME TIMEOUT ARGS...   `fusedmoe bench ARGS` into $OUT/NAME.txt while time is left,
#                   its rc and layer rows appended to the summary (skipped under 30 s left)
#   tests_step NAME TIMEOUT FILTER  the GPU tests matching FILTER into $OUT/NAME.txt, their count of
#                   passed / failed and the failures appended to the summary
#   runs_step SEED "ARGS" ...   `fusedmoe run ARGS --seed SEED` per quoted argument list (100 s each,
#                   while 45 s are left) into $OUT/runs.tar.gz, each one's rc and PASS line appended
#   suite_step SHARD_TIMEOUT [FILTER]  scripts/gpu_run.sh (16 shards, the main job, the torch test;
#                   GPU_RUN_ENV adds variables such as SANITIZE=1) into $OUT/suite.tar.gz, its
#                   summary appended
# Variables set: start (epoch s), out ($OUT or ./out), sum (the summary file).
start=$(date +%s)
out=${OUT:-out}
mkdir -p "$out"
sum="$out/summary.txt"
left() { echo $((${LIMIT:-575} - ($(date +%s) - start))); }
rm -rf .gpu && tar -xJf "${PACK:-build_pack/gpu_main.tar.xz}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
bench_step() {
  local name=$1 t=$2
  shift 2
  local l
  l=$(left)
  if [ "$l" -lt 30 ]; then echo "== $name: skipped (${l} s left)" >> "$sum"; return; fi
  [ "$t" -gt $((l - 10)) ] && t=$((l - 10))
  timeout "$t" .gpu/bin/fusedmoe bench "$@" > "$out/$name.txt" 2>&1
  echo "== $name: rc=$? at $(( $(date +%s) - start )) s" >> "$sum"
  grep -E " layer " "$out/$name.txt" | grep -v "packed off" | cut -c1-150 >> "$sum"
}
tests_step() {
  local name=$1 t=$2 filter=$3
  timeout "$t" .gpu/bin/fusedmoe_gpu_tests --gtest_filter="$filter" > "$out/$name.txt" 2>&1
  echo "== $name: rc=$? at $(( $(date +%s) - start )) s; $(grep -cE '^\[       OK' "$out/$name.txt") ok, $(grep -cE '^\[  FAILED  \] [A-Z]' "$out/$name.txt") failed" >> "$sum"
  grep -E "FAILED|Failure" "$out/$name.txt" | head -20 >> "$sum"
}
runs_step() {
  local seed=$1 i=0 args
  shift
  for args in "$@"; do
    i=$((i + 1))
    [ "$(left)" -lt 45 ] && { echo "run $i skipped ($(left) s left)" >> "$sum"; continue; }
    # shellcheck disable=SC2086  # (each argument list is split into its options)
    timeout 100 .gpu/bin/fusedmoe run $args --seed "$seed" > "$out/run_$i.txt" 2>&1
    echo "run $i ($args): rc=$? $(grep -E 'GPU layer|rel error|time per call|timing' "$out/run_$i.txt" | cut -c1-170 | tr '\n' ' ')" >> "$sum"
  done
  [ "$i" -gt 0 ] && tar -czf "$out/runs.tar.gz" -C "$out" $(cd "$out" && ls run_*.txt 2>/dev/null) && rm -f "$out"/run_*.txt
}
suite_step() {
  local t=$1 filter=${2:--StreamProbe.*}
  env OUT="$out/t" GPU_TEST_SHARDS=16 GPU_TEST_TIMEOUT="$t" GPU_TEST_FILTER="$filter" SASS=0 MAIN=1 ${GPU_RUN_ENV:-} \
    scripts/gpu_run.sh > /dev/null
  gzip -f "$out/t/gpu_tests.log" "$out/t/memcheck.log" 2>/dev/null
  cat "$out/t/summary.txt" >> "$sum"
  echo "suite done at $(( $(date +%s) - start )) s" >> "$sum"
  tar -czf "$out/suite.tar.gz" -C "$out" t && rm -rf "$out/t"
}
