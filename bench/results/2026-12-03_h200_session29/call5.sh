#!/usr/bin/env bash
# Session 29, call 5 (final code): (a) the full GPU suite; (b) memcheck on the fused-front dispatch
# tests (clusters, pushed counts, byte sums); (c) bench --suite dispatch (default, and
# FUSEDMOE_FRONT_CLUSTER=6 + FUSEDMOE_FRONT_TPB=8 = session 28's choice of launch); (d) the decode
# table (every case at 1 / 16 / 64 / 256 tokens, default options).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
GPU_TEST_SHARDS=12 timeout 250 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/run.log" "$out/sass.txt.gz"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
timeout 200 compute-sanitizer --tool memcheck .gpu/bin/fusedmoe_gpu_tests \
  --gtest_filter='DispatchApi.FusedFront*:DispatchApi.DeviceTokenCountOneGraphServesEveryCount' > "$out/memcheck.log" 2>&1
echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck.log" | head -5; gzip -f "$out/memcheck.log"
for v in default old; do
  echo "==== $v" >> "$out/bench_dispatch.txt"
  if [ $v = old ]; then
    FUSEDMOE_FRONT_CLUSTER=6 FUSEDMOE_FRONT_TPB=8 timeout 70 .gpu/bin/fusedmoe bench --suite dispatch --tokens 17,32,48,64 >> "$out/bench_dispatch.txt" 2>&1
  else
    timeout 70 .gpu/bin/fusedmoe bench --suite dispatch --tokens 1,2,16,17,32,33,48,64,65,96,128,129,200,256 >> "$out/bench_dispatch.txt" 2>&1
  fi
  echo "dispatch $v rc=$?"
done
grep -E "^====|token-order \(1|route\+plan \(1" "$out/bench_dispatch.txt" | sed 's/  */ /g' | cut -c1-100
grep -c "CHECK FAILED" "$out/bench_dispatch.txt"
timeout 200 .gpu/bin/fusedmoe bench --suite layer --tokens 1,16,64,256 --json "$out/bench_decode.json" > "$out/bench_decode.txt" 2>&1
echo "decode rc=$?"; grep -E "streaming read|GEMM rate" "$out/bench_decode.txt"
grep -E " layer " "$out/bench_decode.txt" | sed 's/  */ /g' | cut -c1-120
