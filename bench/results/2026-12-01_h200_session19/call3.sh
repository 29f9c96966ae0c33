#!/usr/bin/env bash
# Session 19, call 3 (diagnosis, no test suite): the 1-token regression, session 15's build (f3a5d19,
# .gpu15) against this one, same run: per-stage times and the per-CTA GEMM timeline (--trace) of
# qwen30-tp1, mixtral-tp2, gptoss-tp1, qwen235-tp8 at 1 token; and the row-scaled FP8 prefill layer on
# both backends with this build's single CUTLASS configuration. Builds travel compressed.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
for f in build_pack/*.tar.xz; do tar -xJf "$f"; done
for b in .gpu15 .gpu16 .gpu; do
  [ -x $b/bin/fusedmoe ] || continue
  echo "== $b ($(cat $b/COMMIT 2>/dev/null))"
  timeout 60 $b/bin/fusedmoe bench --suite layer --cases qwen30-tp1,mixtral-tp2,gptoss-tp1,qwen235-tp8 --tokens 1 --precomputed --stages
  timeout 60 $b/bin/fusedmoe bench --suite layer --cases qwen30-tp1,mixtral-tp2,gptoss-tp1,qwen235-tp8 --tokens 1 --trace --trace-csv "$out/trace$b.csv" 2>&1 | grep -E "timeline|gemm[12]:|front:|permute"
done > "$out/bench_1tok_ab.txt" 2>&1
echo "bench ab rc=$?"
gzip -f "$out"/trace*.csv
timeout 90 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t --tokens 1024,4096,16384 --cutlass \
  > "$out/bench_fp8row.txt" 2>&1
echo "bench fp8row rc=$?"
