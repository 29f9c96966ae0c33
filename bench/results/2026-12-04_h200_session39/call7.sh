#!/usr/bin/env bash
# Session 39, call 7 (carry ["build_pack"], call 6's build): GEMM2 on CUTLASS ping-pong 64x256
# (FUSEDMOE_CUTLASS_CONFIG=0,5) against the default on the cases call 6 did not cover, at few rows
# per expert (1024 / 2048 tokens), alternated default / 0,5 / default / 0,5.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
for r in 1 2 3 4; do
  if [ $((r % 2)) -eq 0 ]; then tag=g2p64; export FUSEDMOE_CUTLASS_CONFIG=0,5; else tag=default; unset FUSEDMOE_CUTLASS_CONFIG; fi
  timeout 60 $B/fusedmoe bench --suite layer --tokens 1024,2048 --stages --cases qwen235-tp4,qwen30-tp1,dsv3-ep8 > "$out/prefill_r${r}_${tag}.txt" 2>&1
  stamp "prefill r$r $tag rc=$?"
  grep -E "layer|gemm2" "$out/prefill_r${r}_${tag}.txt" >> "$out/summary.txt"
done
stamp end
