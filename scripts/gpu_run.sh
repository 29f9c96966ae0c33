#!/usr/bin/env bash
# The GPU loop: runs on the machine with the H200, from the repo root, with .gpu/ staged by
# scripts/stage_gpu.sh. Runs info, the GPU test suite, the SASS check and the default main job,
# writes full logs under $OUT (or ./out), and prints a short summary last.
#   GPU_TEST_FILTER  gtest filter for the GPU suite (default: all)
#   SANITIZE=1       also run the suite (filtered by SANITIZE_FILTER) under compute-sanitizer
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${OUT:-$root/out}
mkdir -p "$out"
g=.gpu
export PATH=/usr/local/cuda/bin:$PATH
summary=()
say() { summary+=("$1"); }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader 2>&1 | tee "$out/gpu.txt"
say "gpu: $(head -1 "$out/gpu.txt"); build commit $(cat $g/COMMIT 2>/dev/null)"

$g/bin/fusedmoe info > "$out/info.log" 2>&1; rc=$?
say "fusedmoe info: rc=$rc; $(grep -E '^self-test' "$out/info.log" | head -1)"

$g/bin/fusedmoe_gpu_tests --gtest_filter="${GPU_TEST_FILTER:-*}" > "$out/gpu_tests.log" 2>&1; rc=$?
say "gpu tests: rc=$rc; $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]|tests ran|SKIPPED' "$out/gpu_tests.log" | tr '\n' ' ')"
grep -E "rel_l2_err|rel_err|FAILED" "$out/gpu_tests.log" | head -40 > "$out/gpu_tests_summary.txt"

if command -v cuobjdump >/dev/null 2>&1; then
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
  compute-sanitizer --tool memcheck $g/bin/fusedmoe_gpu_tests --gtest_filter="${SANITIZE_FILTER:-*}" > "$out/memcheck.log" 2>&1; rc=$?
  say "memcheck: rc=$rc; $(grep -E 'ERROR SUMMARY' "$out/memcheck.log" | tail -1)"
fi

$g/bin/fusedmoe run > "$out/run.log" 2>&1; rc=$?
say "fusedmoe run: rc=$rc; $(grep -E 'self-test|output \[' "$out/run.log" | tr '\n' ' ')"

echo
echo "==== summary ===="
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
