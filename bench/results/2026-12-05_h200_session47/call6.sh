#!/usr/bin/env bash
# Session 47, device call 6 (same pack; run inline as one command line): CUTLASS FP8 configuration 3
# (ping-pong 64x128 on 1x2 clusters) against configuration 1, forced on both GEMMs, 4096 / 16384
# tokens with stages, the six FP8 cases.
set -uo pipefail; out=${OUT:-out}; mkdir -p $out; rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
for c in 3 1; do
  FUSEDMOE_CUTLASS_FP8_CONFIG=$c,$c OUT=$out/c$c GPU_TEST_FILTER=- SASS=0 MAIN=0 BENCH=layer \
    BENCH_ARGS="--tokens 4096,16384 --stages --cases dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b,qwen235-tp8-fp8c,qwen235-tp8-fp8t" \
    timeout 120 scripts/gpu_run.sh > /dev/null
  echo "== c$c"
  grep -E " layer |stage gemm" $out/c$c/bench_layer.txt |
    awk '{for(i=1;i<=NF;i++) if ($i ~ /^(4096|16384)$/ && $(i+1) ~ /\./) {printf "%s %s %s %s\n", $1, ($2=="stage"?$3:"L"), $i, $(i+1); break}}' | tr '\n' '|'
  echo
  cp $out/c$c/bench_layer.txt $out/prefill_c$c.txt; rm -rf $out/c$c
done
