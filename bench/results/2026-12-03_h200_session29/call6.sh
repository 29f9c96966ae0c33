#!/usr/bin/env bash
# Session 29, call 6 (final code: call 5's minus the byte sums in the cooperative gather, which
# showed no gain): (a) the full GPU suite; (b) bench --suite dispatch, default and with clusters off
# (FUSEDMOE_FRONT_CLUSTER=0) at 17-64 tokens and with clusters of up to 12 blocks (non-portable) at
# 33-96 tokens, alternated.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
GPU_TEST_SHARDS=12 timeout 250 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/run.log" "$out/sass.txt.gz"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
for v in default off c12 default; do
  echo "==== $v" >> "$out/bench_dispatch.txt"
  if [ $v = off ]; then
    FUSEDMOE_FRONT_CLUSTER=0 timeout 70 .gpu/bin/fusedmoe bench --suite dispatch --tokens 17,32,48,64 >> "$out/bench_dispatch.txt" 2>&1
  elif [ $v = c12 ]; then
    FUSEDMOE_FRONT_CLUSTER=12 timeout 70 .gpu/bin/fusedmoe bench --suite dispatch --tokens 33,48,65,96 >> "$out/bench_dispatch.txt" 2>&1
  else
    timeout 70 .gpu/bin/fusedmoe bench --suite dispatch --tokens 1,2,16,17,32,33,48,64,65,96,128,129,200,256 >> "$out/bench_dispatch.txt" 2>&1
  fi
  echo "dispatch $v rc=$?"
done
grep -E "^====|token-order \(1|route\+plan \(1" "$out/bench_dispatch.txt" | sed 's/  */ /g' | cut -c1-100
grep -E "^====|T=.*(token-order|route\+plan):" "$out/bench_dispatch.txt" | sed 's/  */ /g' | sed 's/all in.*| end/end/' | cut -c1-90
grep -c "CHECK FAILED" "$out/bench_dispatch.txt"
