#!/usr/bin/env bash
# The GPU loop: runs on the machine with the H200, from the repo root, with .gpu/ staged by
# scripts/stage_gpu.sh. Runs info, the GPU test suite, the SASS check, the default main job and
# the benchmarks, writes logs under $OUT (or ./out), and prints a short summary last.
#   GPU_TEST_FILTER  gtest filter for the GPU suite (default: all; "-" skips the suite)
#   GPU_TEST_SHARDS  parallel test processes (gtest sharding, default 4)
#   GPU_TEST_TIMEOUT seconds per shard process (default 0: none; a hung shard then costs only itself)
#   SANITIZE=1       also run the suite (filtered by SANITIZE_FILTER) under compute-sanitizer
#                    (SANITIZE_TIMEOUT seconds, default 0: none)
#   SASS=0           skip the SASS / cubin check;  MAIN=0  skip the default main job
#   BENCH            space-separated `fusedmoe bench` suites to run (dispatch, layer, crossover, coldstart, rope)
#   BENCH_ARGS       extra arguments for every bench call (e.g. "--tokens 1,16,256")
#   PEER=1           before `bench --suite layer`, time the torch._grouped_mm peer
#                    (bench/peers/torch_grouped_mm.py, PEER_PYTHON, default the device's torch venv)
#                    on the same tokens and add its column (--peer)
# Files written (at most 8, the device tool's limit): summary.txt info.log gpu_tests.log
# memcheck.log run.log sass.txt.gz python_gpu.log bench_<suite>.txt bench_<suite>.json
#   PY_TEST=0        skip the Python binding's GPU test (run when .gpu/python was staged)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${OUT:-$root/out}
mkdir -p "$out"
g=.gpu
export PATH=/usr/local/cuda/bin:$PATH
summary=()
say() { summary+=("$1"); }

gpu=$(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader 2>&1 | head -1)
say "gpu: $gpu; build commit $(cat $g/COMMIT 2>/dev/null); $(date -u +%Y-%m-%dT%H:%MZ)"

{ echo "$gpu"; $g/bin/fusedmoe info; } > "$out/info.log" 2>&1; rc=$?
say "fusedmoe info: rc=$rc; $(grep -E '^self-test|kernels compiled' "$out/info.log" | tr '\n' ' ')"

if [ "${GPU_TEST_FILTER:-*}" != "-" ]; then
  # GPU_TEST_SHARDS processes in parallel (gtest sharding; default 4): the float64 references of
  # the layer tests are CPU-bound and the device machine has 16 cores. One log, shard by shard.
  t0=$(date +%s)
  shards=${GPU_TEST_SHARDS:-4}
  rc=0
  limit=()
  [ "${GPU_TEST_TIMEOUT:-0}" -gt 0 ] && limit=(timeout "$GPU_TEST_TIMEOUT")
  for i in $(seq 0 $((shards - 1))); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i ${limit[@]+"${limit[@]}"} $g/bin/fusedmoe_gpu_tests --gtest_filter="${GPU_TEST_FILTER:-*}" \
      > "$out/gpu_tests.shard$i.log" 2>&1 &
  done
  for job in $(jobs -p); do wait "$job" || rc=$?; done
  for i in $(seq 0 $((shards - 1))); do
    echo "==== shard $i of $shards"; cat "$out/gpu_tests.shard$i.log"; rm -f "$out/gpu_tests.shard$i.log"
  done > "$out/gpu_tests.log"
  passed=$(grep -E '^\[  PASSED  \]' "$out/gpu_tests.log" | grep -oE '[0-9]+' | awk '{s += $1} END {print s + 0}')
  say "gpu tests ($shards shards): rc=$rc in $(( $(date +%s) - t0 )) s; passed ${passed:-0}; $(grep -E '^\[  FAILED  \] [0-9]+ test|SKIPPED' "$out/gpu_tests.log" | sort -u | tr '\n' ' ')"
  fails=$(grep -E '^\[  FAILED  \] [A-Za-z]' "$out/gpu_tests.log" | sort -u | head -10 | tr '\n' ' ')
  [ -n "$fails" ] && say "failed: $fails"
fi

if [ "${SASS:-1}" = 0 ]; then
  :
elif command -v cuobjdump >/dev/null 2>&1; then
  cuobjdump --dump-sass $g/lib/libfusedmoe.so > "$out/sass.txt" 2>&1
  hg=$(grep -c HGMMA "$out/sass.txt"); qg=$(grep -c QGMMA "$out/sass.txt")
  arch=$(cuobjdump --list-elf $g/lib/libfusedmoe.so 2>/dev/null | grep -o 'sm_[0-9a-z]*' | sort | uniq -c | tr '\n' ' ')
  ptx=$(cuobjdump --list-ptx $g/lib/libfusedmoe.so 2>/dev/null | grep -c ptx)
  say "sass: HGMMA x$hg, QGMMA x$qg; cubins: $arch; embedded PTX: $ptx"
  gzip -f "$out/sass.txt"
else
  say "sass: cuobjdump not found"
fi

if [ "${SANITIZE:-0}" = 1 ] && command -v compute-sanitizer >/dev/null 2>&1; then
  limit=()
  [ "${SANITIZE_TIMEOUT:-0}" -gt 0 ] && limit=(timeout "$SANITIZE_TIMEOUT")
  ${limit[@]+"${limit[@]}"} compute-sanitizer --tool memcheck $g/bin/fusedmoe_gpu_tests --gtest_filter="${SANITIZE_FILTER:-*}" > "$out/memcheck.log" 2>&1; rc=$?
  say "memcheck: rc=$rc; $(grep -E 'ERROR SUMMARY' "$out/memcheck.log" | tail -1); $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]' "$out/memcheck.log" | tr '\n' ' ')"
fi

# The Python binding with torch tensors (tests/python/test_forward_gpu.py), when stage_gpu.sh put
# a module for the device's Python there (.gpu/python; PY_TEST=0 skips it).
if [ "${PY_TEST:-1}" != 0 ] && [ -d $g/python/fusedmoe ]; then
  PYTHONPATH=$g/python timeout 300 "${PEER_PYTHON:-/opt/torch/.venv/bin/python3}" tests/python/test_forward_gpu.py \
    > "$out/python_gpu.log" 2>&1; rc=$?
  say "python forward (GPU): rc=$rc; $(tail -1 "$out/python_gpu.log")"
fi

if [ "${MAIN:-1}" != 0 ]; then
  timeout 300 $g/bin/fusedmoe run > "$out/run.log" 2>&1; rc=$?
  say "fusedmoe run: rc=$rc; $(grep -E 'GPU layer|rel error|time per call|output \[' "$out/run.log" | tr '\n' ' ')"
fi

for suite in ${BENCH:-}; do
  peer_arg=""
  if [ "$suite" = layer ] && [ "${PEER:-0}" = 1 ]; then
    toks=$(echo "${BENCH_ARGS:-}" | sed -n 's/.*--tokens \([0-9,]*\).*/\1/p')
    cases=$(echo "${BENCH_ARGS:-}" | sed -n 's/.*--cases \([a-z0-9,-]*\).*/\1/p')
    "${PEER_PYTHON:-/opt/torch/.venv/bin/python3}" bench/peers/torch_grouped_mm.py ${toks:+--tokens $toks} ${cases:+--cases $cases} \
      --json /tmp/peer_layer.json > /tmp/peer_layer.txt 2>&1; rc=$?
    say "torch._grouped_mm peer: rc=$rc; $(grep -c 'peer)' /tmp/peer_layer.txt) cases"
    peer_arg="--peer /tmp/peer_layer.json"
  fi
  # shellcheck disable=SC2086
  $g/bin/fusedmoe bench --suite "$suite" --json "$out/bench_$suite.json" ${BENCH_ARGS:-} $peer_arg > "$out/bench_$suite.txt" 2>&1; rc=$?
  say "bench $suite: rc=$rc (table in bench_$suite.txt)"
done

echo
for suite in ${BENCH:-}; do echo "---- bench $suite"; cat "$out/bench_$suite.txt"; done
echo
echo "==== summary ===="
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
