#!/usr/bin/env bash
# Session 34, call 3 (build of .gpu/COMMIT; carry ["build_pack"]): the pair instances by their rule
# (pair_fp8_auto, ForwardOptions::fp8_pair_swapab): (0) the full GPU suite (12 shards, without the
# SASS dump that ran past gpu_run.sh's time in call 2), info and the main job; (a) the FP8 cases at
# 16 / 64 / 256 tokens with stages: the default (the rule), pair forced on, pair forced off.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
echo "build $(cat .gpu/COMMIT)"
.gpu/bin/fusedmoe info 2>&1 | grep -E "kernels compiled|self-test"
t0=$(date +%s)
for i in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$i timeout 280 .gpu/bin/fusedmoe_gpu_tests > "$out/t.$i.log" 2>&1 &
done
wait
cat "$out"/t.*.log > "$out/gpu_tests.log"; rm -f "$out"/t.*.log
echo "gpu tests: $(( $(date +%s) - t0 )) s; passed $(grep -E '^\[  PASSED  \]' "$out/gpu_tests.log" | grep -oE '[0-9]+' | awk '{s+=$1} END {print s+0}'); $(grep -E '^\[  FAILED  \] [A-Za-z]' "$out/gpu_tests.log" | sort -u | head -8 | tr '\n' ' ')"
grep -E "^\[       OK \] Forward.Fp8PairSwapAb|^\[  FAILED  \] Forward.Fp8PairSwapAb" "$out/gpu_tests.log" | head -2
gzip -f "$out/gpu_tests.log"
.gpu/bin/fusedmoe run > "$out/run.log" 2>&1; echo "fusedmoe run rc=$?; $(grep -E 'output \[' "$out/run.log")"
C=qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
timeout 200 .gpu/bin/fusedmoe bench --suite layer --cases $C --tokens 16,64,256 --stages --pair --json "$out/fp8_pair.json" > "$out/fp8_pair.txt" 2>&1
echo "bench rc=$?"; grep -E " layer " "$out/fp8_pair.txt" | sed 's/  */ /g' | sed -E 's/ layer fp8 swap-ab, token tile ([0-9]+)/ t\1/' | cut -c1-80
tail -7 "$out/fp8_pair.txt"
