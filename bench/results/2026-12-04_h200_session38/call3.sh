#!/usr/bin/env bash
# Session 38, call 3 (carry ["build_pack"]): the ping-pong normal-tile GEMM2 (ForwardOptions::
# Call 3: call 2 again after the fix of its race (the warpgroups' main loops take turns, ss.turn).
# pingpong_gemm2, forced; auto still off). Full GPU suite (with the new Forward.PingPongGemm2);
# memcheck of that test; prefill A/B with stages (CUTLASS GEMM2 vs ours) on the BF16 suite cases;
# ncu source counters of the ping-pong GEMM2 at dsv3-tp8 16384.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
for s in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$s timeout 330 $B/fusedmoe_gpu_tests --gtest_filter='-StreamProbe.*' > "$out/shard_$s.log" 2>&1 &
done
wait
cat "$out"/shard_*.log > "$out/gpu_tests.log"; rm -f "$out"/shard_*.log
{ echo "suite: $(grep -c '^\[       OK \]' "$out/gpu_tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/gpu_tests.log") FAILED lines"
  grep '^\[  FAILED  \]' "$out/gpu_tests.log" | sort -u; grep -A12 "PingPongGemm2" "$out/gpu_tests.log" | grep -iE "fail|error|expected" | head -20; } >> "$out/summary.txt"
gzip -f "$out/gpu_tests.log"
stamp suite done
timeout 280 $B/fusedmoe bench --suite layer --tokens 2048,16384 --stages --pingpong --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4,qwen235-tp8,qwen235-tp4,qwen30-tp1,mixtral-tp2 > "$out/prefill_pingpong.txt" 2>&1
stamp "prefill bench rc=$?"
grep -E "layer|gemm2" "$out/prefill_pingpong.txt" >> "$out/summary.txt"
timeout 60 ncu --clock-control none -k regex:sm90_bf16_grouped_gemm --launch-count 1 --section SourceCounters --section SpeedOfLight --import-source no --page source --print-source sass --csv $B/fusedmoe bench --suite layer --cases dsv3-tp8 --tokens 16384 --pingpong > "$out/src_g2_pingpong.csv" 2>&1
stamp "ncu rc=$?"; gzip -f "$out/src_g2_pingpong.csv"
timeout 120 compute-sanitizer --tool memcheck $B/fusedmoe_gpu_tests --gtest_filter='Forward.PingPongGemm2' > "$out/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$out/memcheck.log" | tail -3 | tr '\n' ' ')" >> "$out/summary.txt"
gzip -f "$out/memcheck.log"
cat "$out/summary.txt"
