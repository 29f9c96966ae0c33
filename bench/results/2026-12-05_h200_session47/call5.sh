#!/usr/bin/env bash
# Session 47, device call 5 (same pack): with the stmatrix puts (FUSEDMOE_SWAP_STSM=1), GEMM2's weight
# tiles per CTA (FUSEDMOE_FP8_GEMM2_TPC) at 64 / 256 tokens on four FP8 cases: rule, 16, 32, rule, 32, 16.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
export FUSEDMOE_SWAP_STSM=1
i=0
for t in 0 16 32 0 32 16; do
  i=$((i + 1))
  FUSEDMOE_FP8_GEMM2_TPC=$t OUT=$out/r$i GPU_TEST_FILTER=- SASS=0 MAIN=0 BENCH=layer \
    BENCH_ARGS="--tokens 64,256 --packed --stages --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,qwen235-tp4-fp8b" \
    timeout 80 scripts/gpu_run.sh > /dev/null
  echo "== r$i tpc=$t"
  grep -E " layer |stage gemm2" "$out/r$i/bench_layer.txt" | grep -v "packed off" |
    awk '{for(i=1;i<=NF;i++) if ($i ~ /^(64|256)$/ && $(i+1) ~ /\./) {printf "%s %s %s %s\n", $1, ($2=="stage"?$3:"L"), $i, $(i+1); break}}' | tr '\n' '|'
  echo
done > "$out/summary.txt"
tar -czf "$out/logs.tgz" -C "$out" $(cd "$out" && ls -d r*) && rm -rf "$out"/r[0-9]*
cat "$out/summary.txt"
