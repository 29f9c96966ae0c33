#!/usr/bin/env bash
# Session 39, call 1 (carry ["build_pack"]): the normal-tile GEMM2 at 2 CTAs per SM (3 stages each,
# plain stores, no setmaxnreg; GroupedGemmArgs::pingpong = 2, reached in forward() through
# ForwardOptions::pingpong_gemm2 with FUSEDMOE_GEMM2_LEAN=1). Its GEMM2 tests (and the ping-pong's)
# against float64; then the prefill A/B with stages: "pingpong on" rows are the 2-CTA GEMM2 here.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
timeout 120 $B/fusedmoe_gpu_tests --gtest_filter='*GroupedGemm.*lean2*:*GroupedGemm.*pingpong*:GroupedGemmArgs.*' > "$out/gemm_tests.log" 2>&1
stamp "gemm tests rc=$? $(grep -c '^\[       OK \]' "$out/gemm_tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/gemm_tests.log") FAILED lines"
grep '^\[  FAILED  \]' "$out/gemm_tests.log" | sort -u >> "$out/summary.txt"
FUSEDMOE_GEMM2_LEAN=1 timeout 260 $B/fusedmoe bench --suite layer --tokens 4096,16384 --stages --pingpong --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4,qwen235-tp8,qwen235-tp4,qwen30-tp1,mixtral-tp2 > "$out/prefill_lean.txt" 2>&1
stamp "prefill bench rc=$?"
grep -E "layer|gemm2|geometric" "$out/prefill_lean.txt" >> "$out/summary.txt"
gzip -f "$out/gemm_tests.log"
stamp end
tail -3 "$out/summary.txt"
