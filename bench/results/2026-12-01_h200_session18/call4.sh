#!/usr/bin/env bash
# Session 18, call 4 (diagnosis only, same build as call 3): where the 1-token BF16 layer spends its
# time (per-stage times, the GEMMs' per-CTA timeline), against session 15's 23.95 us (qwen235-tp8).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
timeout 100 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8,qwen30-tp1,gptoss-tp1 --tokens 1,4 --stages --precomputed \
  > "$out/bench_stages_1tok.txt" 2>&1
echo "stages rc=$?"
timeout 60 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8 --tokens 1 --trace > "$out/bench_trace_1tok.txt" 2>&1
echo "trace rc=$?"
grep -E "layer|stage" "$out/bench_stages_1tok.txt" | head -40
