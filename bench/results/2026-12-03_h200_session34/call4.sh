#!/usr/bin/env bash
# Session 34, call 4 (carry ["build_pack"]: gpu_head.tar.xz = the final build; gpu_old.tar.xz, c8daf8c's
# kernels before the pair instances, did not fit the 64 MiB carry and was left out): (a) call 3's one failure (Fp8GroupedGemm.SwapAbTiles,
# swapab16_v1, seed 16296730396128209446) with that seed on both builds; (b) the final pair rule
# against pair forced on / off at 256 tokens; (c) the full GPU suite on the final build; (d) the six
# FP8 cases at 1 / 16 / 64 / 256 tokens with stages (the decode table).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
[ -d .gpu_old ] || { [ -f build_pack/gpu_old.tar.xz ] && tar -xJf build_pack/gpu_old.tar.xz; }
echo "build $(cat .gpu/COMMIT); old: $(cat .gpu_old/COMMIT 2>/dev/null || echo 'not carried')"
for b in .gpu .gpu_old; do
  [ -d $b ] || continue
  FUSEDMOE_TEST_SEED=16296730396128209446 timeout 60 $b/bin/fusedmoe_gpu_tests --gtest_filter=Fp8GroupedGemm.SwapAbTiles > "$out/seed_$b.log" 2>&1
  echo "$b seed repro rc=$?: $(grep -E 'swapab16_v1 ' "$out/seed_$b.log" | grep -oE 'rel_l2=[0-9.e-]+ \(bound [0-9.e-]+' ) $(grep -cE ' FAIL$' "$out/seed_$b.log") FAIL lines"
done
cat "$out"/seed_.gpu*.log > "$out/seed_repro.log"; rm -f "$out"/seed_.gpu*.log; gzip -f "$out/seed_repro.log"
timeout 60 .gpu/bin/fusedmoe bench --suite layer --cases dsv3-tp8-fp8b,dsv3-ep8-fp8b,qwen235-tp8-fp8c,qwen235-tp8-fp8t --tokens 256 --pair > "$out/pair_rule.txt" 2>&1
echo "pair A/B rc=$?"; grep -E " layer " "$out/pair_rule.txt" | sed 's/  */ /g' | sed -E 's/ layer fp8 swap-ab, token tile ([0-9]+)/ t\1/' | cut -c1-80; tail -5 "$out/pair_rule.txt" | head -3
t0=$(date +%s)
for i in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$i timeout 200 .gpu/bin/fusedmoe_gpu_tests > "$out/t.$i.log" 2>&1 &
done
wait
cat "$out"/t.*.log > "$out/gpu_tests.log"; rm -f "$out"/t.*.log
echo "gpu tests: $(( $(date +%s) - t0 )) s; passed $(grep -E '^\[  PASSED  \]' "$out/gpu_tests.log" | grep -oE '[0-9]+' | awk '{s+=$1} END {print s+0}'); $(grep -E '^\[  FAILED  \] [A-Za-z]' "$out/gpu_tests.log" | sort -u | head -8 | tr '\n' ' ')"
gzip -f "$out/gpu_tests.log"
C=qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
timeout 90 .gpu/bin/fusedmoe bench --suite layer --cases $C --tokens 1,16,64,256 --stages > "$out/fp8_decode.txt" 2>&1
echo "decode rc=$?"; grep -E " layer " "$out/fp8_decode.txt" | sed 's/  */ /g' | sed -E 's/ layer fp8 swap-ab, token tile ([0-9]+)/ t\1/' | cut -c1-80
