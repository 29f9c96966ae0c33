#!/usr/bin/env bash
# Session 39, call 8 (carry ["build_pack"]): the final build with the rule (GEMM2 on CUTLASS ping-pong
# 64x256 at <= 128 expected rows per expert): the CUTLASS kernel and forward GPU tests (auto configs),
# graph replay and device-count tests, then the layer at 1024 / 2048 tokens on three cases with stages.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
timeout 120 $B/fusedmoe_gpu_tests --gtest_filter='CutlassGroupedGemm.*:Forward.Cutlass*:Forward.GraphReplay*:Forward.DeviceTokenCount*' > "$out/tests.log" 2>&1
stamp "tests rc=$? $(grep -c '^\[       OK \]' "$out/tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/tests.log") FAILED"
grep '^\[  FAILED  \]' "$out/tests.log" | sort -u >> "$out/summary.txt"
timeout 60 $B/fusedmoe bench --suite layer --tokens 1024,2048 --stages --cases dsv3-tp8,dsv4f-tp4,qwen30-tp1 > "$out/prefill.txt" 2>&1
stamp "prefill rc=$?"
grep -E "layer|gemm2" "$out/prefill.txt" >> "$out/summary.txt"
gzip -f "$out/tests.log"
stamp end
