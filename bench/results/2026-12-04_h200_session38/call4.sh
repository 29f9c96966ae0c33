#!/usr/bin/env bash
# Session 38, call 4 (carry ["build_pack"]): the ping-pong GEMM2's epilogue stores each valid row
# with one asynchronous bulk copy (cp.async.bulk, shared -> global) instead of synchronous 16-byte
# stores (call 3: ping-pong 1.3-1.7x slower than CUTLASS's GEMM2, the stores' register holds ~30 %
# of the stall samples). Full GPU suite; memcheck of Forward.PingPongGemm2; prefill A/B with stages.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
timeout 200 $B/fusedmoe bench --suite layer --tokens 2048,16384 --stages --pingpong --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4,qwen235-tp8,qwen235-tp4,qwen30-tp1,mixtral-tp2 > "$out/prefill_pingpong.txt" 2>&1
stamp "prefill bench rc=$?"
grep -E "layer|gemm2|geometric|pingpong" "$out/prefill_pingpong.txt" >> "$out/summary.txt"
for s in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$s timeout 300 $B/fusedmoe_gpu_tests --gtest_filter='-StreamProbe.*' > "$out/shard_$s.log" 2>&1 &
done
wait
cat "$out"/shard_*.log > "$out/gpu_tests.log"; rm -f "$out"/shard_*.log
{ echo "suite: $(grep -c '^\[       OK \]' "$out/gpu_tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/gpu_tests.log") FAILED lines"
  grep '^\[  FAILED  \]' "$out/gpu_tests.log" | sort -u; } >> "$out/summary.txt"
gzip -f "$out/gpu_tests.log"
stamp suite done
timeout 90 compute-sanitizer --tool memcheck $B/fusedmoe_gpu_tests --gtest_filter='Forward.PingPongGemm2' > "$out/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$out/memcheck.log" | tail -3 | tr '\n' ' ')" >> "$out/summary.txt"
gzip -f "$out/memcheck.log"
stamp end
tail -4 "$out/summary.txt"
