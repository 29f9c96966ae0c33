#!/usr/bin/env bash
# Device call 4 (carry ["build_pack"]), branch wip/packed-weights: the weight-streaming probe and
# the packed-weights test (same bits + GEMM times) alone on the idle GPU; then the full GPU suite
# without them (12 shards), beside it Fp8GroupedGemm.* with session 34's seed and three fresh ones; the combine
# timing; the decode table (layer, 1 / 16 / 64 / 256 tokens, every suite case).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
timeout 120 $B/fusedmoe_gpu_tests --gtest_filter=StreamProbe.* > "$out/probe.log" 2>&1
echo "probe rc=$?" >> "$out/summary.txt"
timeout 200 $B/fusedmoe_gpu_tests --gtest_filter=GroupedGemmPacked.* > "$out/packed.log" 2>&1
echo "packed test rc=$?" >> "$out/summary.txt"; grep "packed   \]" "$out/packed.log" >> "$out/summary.txt"
for seed in 16296730396128209446 21 22 23; do
  FUSEDMOE_TEST_SEED=$seed timeout 400 $B/fusedmoe_gpu_tests --gtest_filter='Fp8GroupedGemm.*' > "$out/s_$seed.log" 2>&1 &
done
pids=()
for s in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$s timeout 400 $B/fusedmoe_gpu_tests --gtest_filter='-StreamProbe.*:GroupedGemmPacked.*' > "$out/shard_$s.log" 2>&1 &
  pids+=($!)
done
wait
cat "$out"/shard_*.log > "$out/gpu_tests.log"; rm -f "$out"/shard_*.log
{ echo "suite (without StreamProbe, GroupedGemmPacked): $(grep -c '^\[       OK \]' "$out/gpu_tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/gpu_tests.log") FAILED lines"
  grep '^\[  FAILED  \]' "$out/gpu_tests.log" | sort -u; } >> "$out/summary.txt"
for seed in 16296730396128209446 21 22 23; do
  echo "Fp8GroupedGemm seed $seed: $(grep -c '^\[       OK \]' "$out/s_$seed.log") OK, $(grep -c '^\[  FAILED  \]' "$out/s_$seed.log") FAILED; $(grep 'swapab16_v1 ' "$out/s_$seed.log" | head -1 | grep -oE 'rel_l2=.*carriers'); $(grep -A1 'swapab16_v1 ' "$out/s_$seed.log" | grep -oE 'largest.*' | head -1)" >> "$out/summary.txt"
  cat "$out/s_$seed.log" >> "$out/gpu_tests.log"; rm -f "$out/s_$seed.log"
done
$B/fusedmoe_gpu_tests --gtest_filter=CombineTiming.* 2>&1 | grep timing >> "$out/summary.txt"
timeout 150 $B/fusedmoe bench --suite layer --tokens 1,16,64,256 --json "$out/decode.json" > "$out/decode.txt" 2>&1
echo "decode bench rc=$?" >> "$out/summary.txt"
gzip -f "$out/gpu_tests.log"
grep probe "$out/probe.log" | tail -22 >> "$out/summary.txt"
cat "$out/summary.txt"
