#!/usr/bin/env bash
# Session 23, call 5: branch wip/tma-row-gather (f610c69, gpu_tma) at prefill, the question call 1
# left open (its prefill bench ran past its timeout): the gathered GEMM1 of --cutlass-gemm2 with
# cp.async rows (FUSEDMOE_GATHER_TMA=0) vs 1-row TMA boxes (=1), same binary, stages split.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_tma.tar.xz
for env in 0 1; do
  echo "== FUSEDMOE_GATHER_TMA=$env"
  FUSEDMOE_GATHER_TMA=$env timeout 85 .gpu/bin/fusedmoe bench --suite layer --cases dsv3-tp8,qwen235-tp8 --tokens 16384 --cutlass-gemm2 --stages 2>&1 | grep -E "layer|stage|variants|\]:" | cut -c1-130
done > "$out/bench_tma_prefill.txt" 2>&1
cat "$out/bench_tma_prefill.txt"
