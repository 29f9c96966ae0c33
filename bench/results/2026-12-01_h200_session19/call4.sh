#!/usr/bin/env bash
# Session 19, call 4 (final device code, 30b35b5; build dc48c85): the full GPU suite; then the
# schedule set-up out of line, measured: this build (.gpu), the one before it (e0258dc, .gpu_prev)
# and session 15's (f3a5d19, .gpu15) at 1 token (stages + per-CTA timeline), and this build against
# the previous one on the BF16 and FP8 decode points (1-256 tokens), alternating. Builds travel
# compressed in build_pack/.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
for f in build_pack/*.tar.xz; do tar -xJf "$f"; done
GPU_TEST_SHARDS=8 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
for b in .gpu15 .gpu_prev .gpu; do
  echo "== $b ($(cat $b/COMMIT 2>/dev/null))"
  timeout 40 $b/bin/fusedmoe bench --suite layer --cases qwen30-tp1,mixtral-tp2,gptoss-tp1,qwen235-tp8 --tokens 1 --precomputed --stages
  timeout 40 $b/bin/fusedmoe bench --suite layer --cases qwen30-tp1,mixtral-tp2,gptoss-tp1,qwen235-tp8 --tokens 1 --trace-csv "$out/trace$b.csv" > /dev/null 2>&1
done > "$out/bench_1tok.txt" 2>&1
echo "bench 1tok rc=$?"
gzip -f "$out"/trace*.csv
for rep in 1; do
  for b in .gpu_prev .gpu; do
    echo "== $b rep $rep ($(cat $b/COMMIT 2>/dev/null))"
    timeout 50 $b/bin/fusedmoe bench --suite layer --cases qwen235-tp8,dsv3-tp8,qwen30-tp1,mixtral-tp2,dsv4f-tp4,qwen235-tp8-fp8c,dsv3-tp8-fp8b \
      --tokens 1,4,16,64,256
  done
done > "$out/bench_decode_ab.txt" 2>&1
echo "bench decode rc=$?"
cat "$out/summary.txt"
grep -E "FAILED|Failure" <(zcat "$out/gpu_tests.log.gz") | head -20
