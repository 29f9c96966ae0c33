#!/usr/bin/env bash
# Session 38, call 5 (carry ["build_pack"]): the normal tiles' staged epilogue (GEMM1 and GEMM2 of
# the grouped backend's normal family) stores each valid row with one asynchronous bulk copy, as
# the ping-pong GEMM2 of call 4. Full GPU suite first (the change is in default paths), then the
# BF16 prefill cases on each backend with stages (call 1's command, three cases: grouped-backend
# GEMM1/GEMM2 against call 1's numbers and against CUTLASS in the same run).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
for s in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$s timeout 230 $B/fusedmoe_gpu_tests --gtest_filter='-StreamProbe.*' > "$out/shard_$s.log" 2>&1 &
done
wait
cat "$out"/shard_*.log > "$out/gpu_tests.log"; rm -f "$out"/shard_*.log
{ echo "suite: $(grep -c '^\[       OK \]' "$out/gpu_tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/gpu_tests.log") FAILED lines"
  grep '^\[  FAILED  \]' "$out/gpu_tests.log" | sort -u; } >> "$out/summary.txt"
gzip -f "$out/gpu_tests.log"
stamp suite done
timeout 100 $B/fusedmoe bench --suite layer --tokens 16384 --stages --cutlass --cases dsv3-tp8,qwen235-tp8,mixtral-tp2 > "$out/prefill_stages.txt" 2>&1
stamp "prefill bench rc=$?"
grep -E "layer|gemm1|gemm2" "$out/prefill_stages.txt" >> "$out/summary.txt"
cat "$out/summary.txt"
