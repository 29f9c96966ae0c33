#!/usr/bin/env bash
# Session 43, call 6 (same pack as call 5; carry ["build_pack"]: the build of the commit in .gpu/COMMIT): the fused
# activation's epilogue with the fast quotient and b1 resolved per tile. Its tests, ncu of the fused
# GEMM1 at mixtral-tp2 4096 tokens (call 4: 1.42 ms, 172 M instructions; CUTLASS's GEMM1 1.29 ms,
# 125 M, + grouped_activation 0.137 ms), then the prefill stages, fused on / off, on three cases.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
timeout 200 $B/fusedmoe bench --suite layer --tokens 4096,16384 --stages --fused-act --cases dsv3-ep8,qwen235-tp4,dsv4f-tp4,qwen235-tp8 > "$out/prefill.txt" 2>&1
stamp "prefill rc=$?"
grep -E "layer|stage gemm1" "$out/prefill.txt" | cut -c1-130 >> "$out/summary.txt"
cat "$out/summary.txt"
