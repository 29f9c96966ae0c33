#!/usr/bin/env bash
# Session 12, call 1: where the decode GEMMs lose time (per-CTA timeline of both BF16 GEMMs) and
# what forced split-K / weight tiles per CTA do, at 1 and 4 tokens. Run from the repo root with
# .gpu carried; writes under $OUT.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
B=.gpu/bin
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > "$out/info.txt"
$B/fusedmoe bench --suite layer --cases qwen30-tp1,gptoss-tp1,mixtral-tp2,qwen235-tp8 --tokens 1,4 --precomputed \
  --ksplits 1,2,3,4 --tpc 2 --trace-csv "$out/trace.csv" --csv "$out/sweep.csv" > "$out/bench_sweep.txt" 2>&1
echo "bench rc=$?"
gzip -f "$out/trace.csv"
grep -E "layer|timeline|gemm[12]:" "$out/bench_sweep.txt" | cut -c1-230 | head -150
