#!/usr/bin/env bash
# Device call 1 (carry ["build_pack"]): the full GPU suite on the staged-combine build (12 shards),
# beside it 31 seeds of Fp8GroupedGemm.SwapAbTiles (session 34's failing one first); then the
# combine timing test and the layer bench with the staged combine forced each way.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader >> "$out/summary.txt"
# seeds (4 streams) beside the suite
( for i in 0 1 2 3; do
    ( seeds=$([ $i = 0 ] && echo 16296730396128209446; seq $((101 + i * 8)) $((108 + i * 8)) | tr '\n' ' ')
      for seed in $seeds; do
        FUSEDMOE_TEST_SEED=$seed timeout 120 $B/fusedmoe_gpu_tests --gtest_filter=Fp8GroupedGemm.SwapAbTiles > "$out/s$i.log" 2>&1
        rc=$?
        echo "seed $seed rc=$rc $(grep -E 'swapab16_v1' "$out/s$i.log" | grep -oE 'rel_l2[= ][0-9.e+-]+' | head -1) fails: $(grep -c 'Failure' "$out/s$i.log")"
        cat "$out/s$i.log" >> "$out/seeds_full_$i.log"
      done ) > "$out/seeds_$i.txt" &
  done; wait ) &
SEEDS=$!
pids=()
for s in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$s timeout 400 $B/fusedmoe_gpu_tests > "$out/shard_$s.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
wait $SEEDS
cat "$out"/shard_*.log > "$out/gpu_tests.log"; rm -f "$out"/shard_*.log
{ echo "suite: $(grep -c '^\[       OK \]' "$out/gpu_tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/gpu_tests.log") FAILED lines"
  grep '^\[  FAILED  \]' "$out/gpu_tests.log" | sort -u
  cat "$out"/seeds_[0-3].txt; } >> "$out/summary.txt"
cat "$out"/seeds_full_*.log > "$out/seeds.log"; rm -f "$out"/seeds_full_*.log "$out"/seeds_[0-3].txt "$out"/s[0-3].log
$B/fusedmoe_gpu_tests --gtest_filter=CombineTiming.* 2>&1 | grep timing >> "$out/summary.txt"
timeout 330 $B/fusedmoe bench --suite layer --tokens 1,16,256 --combine > "$out/bench_combine.txt" 2>&1
timeout 60 $B/fusedmoe bench --suite layer --cases dsv3-tp8,qwen235-tp8,dsv3-tp8-fp8b --tokens 4096 --combine > "$out/bench_combine_4096.txt" 2>&1
gzip -f "$out/gpu_tests.log" "$out/seeds.log"
tail -5 "$out/bench_combine.txt" >> "$out/summary.txt"
cat "$out/summary.txt"
