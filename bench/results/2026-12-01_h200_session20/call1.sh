#!/usr/bin/env bash
# Session 20, call 1: the raster-only grouped GEMM instances (HEAD, .gpu) against the build before
# them (dc48c85 = session 19's final device code, .gpu_cur) and session 15's (f3a5d19, .gpu15).
# (a) the grouped GEMM tests (BF16 and FP8 kernels, both schedules, split-K fit) on the new build;
# (b) 1-token layer from precomputed ids, three builds alternating, twice; the new build's stages
# and per-CTA timeline; (c) decode 1-256 tokens, previous vs new, alternating, twice.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
for f in build_pack/*.tar.xz; do tar -xJf "$f"; done
GPU_TEST_SHARDS=8 GPU_TEST_FILTER='GroupedGemm*:Fp8GroupedGemm*:Forward.SplitK*:Forward.Balanced*:Forward.Fp8*:KernelRegistry*:Preload*' \
  bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
C="qwen30-tp1,mixtral-tp2,gptoss-tp1,qwen235-tp8"
for rep in 1 2; do
  for b in .gpu15 .gpu_cur .gpu; do
    echo "== $b rep $rep ($(cat $b/COMMIT 2>/dev/null))"
    timeout 40 $b/bin/fusedmoe bench --suite layer --cases $C --tokens 1,4 --precomputed
  done
done > "$out/bench_1tok_ab.txt" 2>&1
echo "bench 1tok rc=$?"
{ timeout 40 .gpu/bin/fusedmoe bench --suite layer --cases $C --tokens 1 --precomputed --stages
  timeout 40 .gpu/bin/fusedmoe bench --suite layer --cases $C --tokens 1 --trace-csv "$out/trace_new.csv" > /dev/null 2>&1
} > "$out/bench_1tok_stages.txt" 2>&1
gzip -f "$out"/trace*.csv
for rep in 1 2; do
  for b in .gpu_cur .gpu; do
    echo "== $b rep $rep ($(cat $b/COMMIT 2>/dev/null))"
    timeout 50 $b/bin/fusedmoe bench --suite layer --cases qwen235-tp8,dsv3-tp8,qwen30-tp1,mixtral-tp2,dsv4f-tp4,qwen235-tp8-fp8c,dsv3-tp8-fp8b \
      --tokens 1,4,16,64,256
  done
done > "$out/bench_decode_ab.txt" 2>&1
echo "bench decode rc=$?"
cat "$out/summary.txt"
grep -E "FAILED|Failure" <(zcat "$out/gpu_tests.log.gz") | head -20
