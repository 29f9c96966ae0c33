#!/usr/bin/env bash
# Session 23, call 2. f537cac (gpu_act): the GEMMs load only the activation boxes holding rows of
# the expert. (a) the full GPU suite on it; (b) every tile forced (crossover) on BF16 and FP8
# decode cases at 64/256 tokens (the tile rule's data); (c) old build (06493da, gpu_head) vs new,
# same run: forced tiles at 256 on two cases, and prefill points on the normal family.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_act.tar.xz
GPU_TEST_SHARDS=12 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/sass.txt.gz"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure|illegal|misaligned" | head -20
timeout 160 .gpu/bin/fusedmoe bench --suite crossover --cases dsv3-tp8,dsv3-ep8,qwen235-tp8,mixtral-tp2,qwen235-tp4 --tokens 64,256 > "$out/bench_new_bf16.txt" 2>&1
echo "crossover bf16 rc=$?"; grep -A30 "Swap-AB vs normal" "$out/bench_new_bf16.txt" | grep "T=" | cut -c1-150
timeout 80 .gpu/bin/fusedmoe bench --suite crossover --cases dsv3-tp8-fp8b,qwen235-tp8-fp8c --tokens 64,256 > "$out/bench_new_fp8.txt" 2>&1
echo "crossover fp8 rc=$?"; grep -A30 "Swap-AB vs normal" "$out/bench_new_fp8.txt" | grep "T=" | cut -c1-150
# (c) alternating old / new, same run
mkdir -p old && tar -xJf build_pack/gpu_head.tar.xz -C old
for b in old/.gpu .gpu; do
  echo "== $b $(cat $b/COMMIT)"
  timeout 60 $b/bin/fusedmoe bench --suite crossover --cases dsv3-tp8,qwen235-tp8 --tokens 256 2>&1 | grep -E "^(dsv3|qwen)" | cut -c1-120
  timeout 60 $b/bin/fusedmoe bench --suite layer --cases mixtral-tp2,qwen235-tp8-fp8c,dsv3-tp8-fp8b --tokens 256,4096 2>&1 | grep -E "layer" | cut -c1-120
done > "$out/bench_old_new.txt" 2>&1
cat "$out/bench_old_new.txt"
