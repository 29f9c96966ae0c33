#!/usr/bin/env bash
# Session 39, call 4 (carry ["build_pack"]): the final build (the library's source is session 38's
# cefb03c; new: the ping-pong GEMM2's kernel-level test cases, the bench's layout-bound row). Full
# GPU suite in 12 shards; then prefill stages on 3 BF16 cases with the bound row.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
for s in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$s timeout 300 $B/fusedmoe_gpu_tests --gtest_filter='-StreamProbe.*' > "$out/shard_$s.log" 2>&1 &
done
wait
cat "$out"/shard_*.log > "$out/gpu_tests.log"; rm -f "$out"/shard_*.log
{ echo "suite: $(grep -c '^\[       OK \]' "$out/gpu_tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/gpu_tests.log") FAILED lines"
  grep '^\[  FAILED  \]' "$out/gpu_tests.log" | sort -u; } >> "$out/summary.txt"
gzip -f "$out/gpu_tests.log"
stamp suite done
timeout 150 $B/fusedmoe bench --suite layer --tokens 4096,16384 --stages --cases dsv3-tp8,qwen235-tp8,mixtral-tp2 > "$out/prefill_bound.txt" 2>&1
stamp "prefill bench rc=$?"
grep -E "layer|bound" "$out/prefill_bound.txt" >> "$out/summary.txt"
stamp end
tail -4 "$out/summary.txt"
