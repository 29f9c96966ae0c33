#!/usr/bin/env bash
# Prepared in session 24 (not run): the next session's first device call. Build and stage both
# main's HEAD and branch wip/fp8-scale-prefetch (the FP8 Swap-AB K loop with two stages on the
# tensor core, not yet run on a GPU). Two whole packs are ~54 MB, near the 64 MiB carry limit with
# the tree, so main's pack holds its library only (the binaries find lib/ through their rpath):
#   scripts/build.sh && scripts/stage_gpu.sh && tar -cJf build_pack/gpu_main_lib.tar.xz .gpu/lib
#   git checkout wip/fp8-scale-prefetch && scripts/build.sh && scripts/stage_gpu.sh &&
#   tar -cJf build_pack/gpu_fp8db.tar.xz .gpu && git checkout main
# (carry ["build_pack"]; main's device code passed 224/224 in session 24's call 5, so the suite
# runs on the branch only).
# (a) the full GPU suite on the branch; (b) the FP8 decode table, main vs branch alternated twice;
# (c) the per-CTA timeline of qwen235-tp8 at 256 tokens (the last BF16 decode point under 0.75).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_fp8db.tar.xz
GPU_TEST_SHARDS=12 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/sass.txt.gz" "$out/run.log"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
F=qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
for i in 1 2; do
  for b in main fp8db; do
    rm -rf .gpu; tar -xJf build_pack/gpu_fp8db.tar.xz
    if [ $b = main ]; then rm -rf .gpu/lib; tar -xJf build_pack/gpu_main_lib.tar.xz; fi
    timeout 60 .gpu/bin/fusedmoe bench --suite layer --cases $F --tokens 1,16,64,256 > "$out/bench_fp8_${b}_$i.txt" 2>&1
    echo "$b $i rc=$?"
  done
done
for f in "$out"/bench_fp8_*.txt; do echo "== $f"; grep -E "^(qwen|dsv)" "$f" | cut -c1-100; done
rm -rf .gpu; tar -xJf build_pack/gpu_fp8db.tar.xz; rm -rf .gpu/lib; tar -xJf build_pack/gpu_main_lib.tar.xz
timeout 60 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8 --tokens 256 --trace-csv "$out/trace.csv" > "$out/bench_trace.txt" 2>&1
echo "trace rc=$?"; gzip -f "$out/trace.csv"
