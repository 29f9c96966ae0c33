#!/usr/bin/env bash
# Device call 2 (carry ["build_pack"]): the full GPU suite on the row-team combine with the plan in
# shared memory (12 shards), beside it the combine tests with FUSEDMOE_COMBINE_LEGACY=1 and the
# FP8 seed of session 34 (the flip-aware rel bound); then the combine timing both ways and the layer
# bench at 1 / 16 / 256 tokens, default / legacy / default.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
( FUSEDMOE_COMBINE_LEGACY=1 timeout 300 $B/fusedmoe_gpu_tests --gtest_filter='Combine*' > "$out/legacy_tests.log" 2>&1
  echo "legacy combine tests rc=$?: $(grep -c '^\[       OK \]' "$out/legacy_tests.log") OK" > "$out/x1.txt"
  FUSEDMOE_TEST_SEED=16296730396128209446 timeout 120 $B/fusedmoe_gpu_tests --gtest_filter=Fp8GroupedGemm.SwapAbTiles > "$out/seed.log" 2>&1
  echo "seed 16296730396128209446 rc=$?: $(grep 'swapab16_v1 ' "$out/seed.log" | head -1)" >> "$out/x1.txt" ) &
SIDE=$!
pids=()
for s in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$s timeout 400 $B/fusedmoe_gpu_tests > "$out/shard_$s.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
wait $SIDE
cat "$out"/shard_*.log > "$out/gpu_tests.log"; rm -f "$out"/shard_*.log
{ echo "suite: $(grep -c '^\[       OK \]' "$out/gpu_tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/gpu_tests.log") FAILED lines"
  grep '^\[  FAILED  \]' "$out/gpu_tests.log" | sort -u
  cat "$out/x1.txt"; } >> "$out/summary.txt"
rm -f "$out/x1.txt"
cat "$out/legacy_tests.log" "$out/seed.log" >> "$out/gpu_tests.log"; rm -f "$out/legacy_tests.log" "$out/seed.log"
$B/fusedmoe_gpu_tests --gtest_filter=CombineTiming.* 2>&1 | grep timing | sed 's/^/default /' >> "$out/summary.txt"
FUSEDMOE_COMBINE_LEGACY=1 $B/fusedmoe_gpu_tests --gtest_filter=CombineTiming.* 2>&1 | grep timing | sed 's/^/legacy  /' >> "$out/summary.txt"
timeout 130 $B/fusedmoe bench --suite layer --tokens 1,16,256 > "$out/bench_r1_default.txt" 2>&1
FUSEDMOE_COMBINE_LEGACY=1 timeout 130 $B/fusedmoe bench --suite layer --tokens 1,16,256 > "$out/bench_r2_legacy.txt" 2>&1
timeout 130 $B/fusedmoe bench --suite layer --tokens 1,16,256 > "$out/bench_r3_default.txt" 2>&1
gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"
