#!/usr/bin/env bash
# Session 21, call 5: the full GPU suite on ff3e41e (staged Swap-AB epilogue + FP8 row values by
# cp.async + branch-free block-scale loads); FP8 decode A/B against e49b9d1 (staged epilogue only,
# .gpu_st), two alternating runs; FP8 stage split of the new build.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_st.tar.xz
tar -xJf build_pack/gpu_new.tar.xz
GPU_TEST_SHARDS=12 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log"; gzip -f "$out/gpu_tests.log"
C=qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
for rep in 1 2; do
  for g in .gpu_st .gpu; do
    echo "== $g rep $rep ($(cat $g/COMMIT 2>/dev/null))"
    timeout 60 $g/bin/fusedmoe bench --suite layer --cases $C --tokens 1,16,64,256 2>&1 | grep -E "^[a-z0-9-]+ +layer fp8|geometric"
  done
done > "$out/bench_ab.txt"
timeout 40 .gpu/bin/fusedmoe bench --suite layer --cases dsv3-tp8-fp8b,qwen235-tp8-fp8c --tokens 64,256 --stages > "$out/bench_stages.txt" 2>&1
cat "$out/summary.txt"
zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -20
