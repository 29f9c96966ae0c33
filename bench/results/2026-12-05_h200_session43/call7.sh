#!/usr/bin/env bash
# Session 43, call 7 (carry ["build_pack"]: the build in .gpu/COMMIT): fused_activation's auto rule
# (on with w1_gate_up_blocks given and CUTLASS's 128x256 GEMM1 tile). The CUTLASS forward tests,
# then the prefill stages with --fused-act: the default row is now the fused path where the rule
# applies (mixtral-tp2, qwen30-tp1, dsv4f-tp4) and the two-pass path on qwen235-tp8 at 16384.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
timeout 150 $B/fusedmoe_gpu_tests --gtest_filter='Forward.Cutlass*:CutlassGatedGemm1.*' > "$out/tests.log" 2>&1
stamp "tests rc=$?: $(grep -c '^\[       OK \]' "$out/tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/tests.log") FAILED"
timeout 150 $B/fusedmoe bench --suite layer --tokens 4096,16384 --stages --fused-act --cases mixtral-tp2,qwen30-tp1,dsv4f-tp4,qwen235-tp8 > "$out/prefill.txt" 2>&1
stamp "prefill rc=$?"
grep -E "layer|stage gemm1|over .* points" "$out/prefill.txt" | cut -c1-130 >> "$out/summary.txt"
gzip -f "$out/tests.log"
cat "$out/summary.txt"
