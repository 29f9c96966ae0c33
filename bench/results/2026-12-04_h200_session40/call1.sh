#!/usr/bin/env bash
# Session 40, call 1 (carry ["build_pack"]): 2656303, FP8 Swap-AB GEMM2 quantising H itself
# (ForwardOptions::gemm2_quantises_h, forced only). The new GPU test first, then the full GPU suite
# in 12 shards, then the four FP8 cases it applies to at 1-256 tokens with the variant forced on
# (bench --hs) next to the default (H quantised by the separate pass).
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
timeout 200 $B/fusedmoe bench --suite layer --tokens 1,16,64,256 --packed --hs \
  --cases qwen235-tp8-fp8c,dsv3-tp8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b > "$out/decode_hs_r1.txt" 2>&1
stamp "bench r1 rc=$?"
grep -E "^\s+\[|over .* points" "$out/decode_hs_r1.txt" >> "$out/summary.txt"
stamp end
tail -12 "$out/summary.txt"
