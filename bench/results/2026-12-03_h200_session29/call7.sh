#!/usr/bin/env bash
# Session 29, call 7 (final code): clusters of up to 12 blocks of 4 tokens or 9 of 8 (17-72 tokens;
# non-portable above 8). (a) the full GPU suite; (b) bench --suite dispatch, default and with
# FUSEDMOE_FRONT_CLUSTER=8 (call 6's default), alternated.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
GPU_TEST_SHARDS=12 timeout 250 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/run.log" "$out/sass.txt.gz"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
for v in default c8 default; do
  echo "==== $v" >> "$out/bench_dispatch.txt"
  if [ $v = c8 ]; then
    FUSEDMOE_FRONT_CLUSTER=8 timeout 70 .gpu/bin/fusedmoe bench --suite dispatch --tokens 33,48,65,72 >> "$out/bench_dispatch.txt" 2>&1
  else
    timeout 70 .gpu/bin/fusedmoe bench --suite dispatch --tokens 1,16,17,32,33,48,49,64,65,72,73,96,128,256 >> "$out/bench_dispatch.txt" 2>&1
  fi
  echo "dispatch $v rc=$?"
done
grep -E "^====|token-order \(1|route\+plan \(1" "$out/bench_dispatch.txt" | sed 's/  */ /g' | cut -c1-100
grep -E "^====|T=.*(token-order|route\+plan):" "$out/bench_dispatch.txt" | sed 's/  */ /g' | sed 's/all in.*| end/end/' | cut -c1-90
echo "check failures: $(grep -c 'CHECK FAILED' "$out/bench_dispatch.txt")"
