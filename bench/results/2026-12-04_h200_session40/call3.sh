#!/usr/bin/env bash
# Session 40, call 3 (carry ["build_pack"]): H quantised by GEMM2 in its own instances (kHs); the
# other kernels byte-identical to 9618e11. The new GPU test first, then the full GPU suite in 12
# shards, then the four FP8 cases at 1-256 tokens, default and --hs, two runs; timelines at 16 and 64.
# (call 2 was never run: the carry with the old build for comparison exceeded 64 MiB.)
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
timeout 120 $B/fusedmoe_gpu_tests --gtest_filter='Forward.Fp8HQuantInGemm2' > "$out/test_hs.log" 2>&1
stamp "new test rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$out/test_hs.log" | head -3 | tr '\n' ' ')"
for s in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$s timeout 300 $B/fusedmoe_gpu_tests --gtest_filter='-StreamProbe.*' > "$out/shard_$s.log" 2>&1 &
done
wait
cat "$out"/shard_*.log > "$out/gpu_tests.log"; rm -f "$out"/shard_*.log
{ echo "suite: $(grep -c '^\[       OK \]' "$out/gpu_tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/gpu_tests.log") FAILED lines"
  grep '^\[  FAILED  \]' "$out/gpu_tests.log" | sort -u; } >> "$out/summary.txt"
gzip -f "$out/gpu_tests.log"
stamp suite done
C=qwen235-tp8-fp8c,dsv3-tp8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
for r in 1 2; do
  timeout 150 $B/fusedmoe bench --suite layer --tokens 1,16,64,256 --packed --hs --cases $C > "$out/decode_hs_r$r.txt" 2>&1
  stamp "bench r$r rc=$?"
  grep -E "over .* points" "$out/decode_hs_r$r.txt" >> "$out/summary.txt"
done
timeout 150 $B/fusedmoe bench --suite layer --tokens 16,64 --packed --hs --trace --cases qwen235-tp8-fp8c,dsv3-tp8-fp8b > "$out/trace.txt" 2>&1
stamp "trace rc=$?"
stamp end
tail -12 "$out/summary.txt"
