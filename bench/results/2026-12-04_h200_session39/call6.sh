#!/usr/bin/env bash
# Session 39, call 6 (carry ["build_pack"]): CUTLASS ping-pong 64x256 (config 5): an expert's last,
# partial tile pads at most 63 rows instead of 127 (at 4096 tokens dsv3-tp8 has ~128 rows per expert:
# 1.5 tiles of 128 on average). Kernel tests of every config; forward tests with both GEMMs on it;
# prefill stages alternated default / 5,5 / default / 5,5 on 3 cases at 2048 / 4096 / 16384.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
timeout 100 $B/fusedmoe_gpu_tests --gtest_filter='CutlassGroupedGemm.*' > "$out/tests_kernel.log" 2>&1
stamp "kernel tests rc=$? $(grep -c '^\[       OK \]' "$out/tests_kernel.log") OK, $(grep -c '^\[  FAILED  \]' "$out/tests_kernel.log") FAILED"
grep -E "64x256|FAILED" "$out/tests_kernel.log" | head -5 >> "$out/summary.txt"
FUSEDMOE_CUTLASS_CONFIG=5,5 timeout 120 $B/fusedmoe_gpu_tests --gtest_filter='Forward.Cutlass*:-*Fp8*' > "$out/tests_forward.log" 2>&1
stamp "forward tests (5,5) rc=$? $(grep -c '^\[       OK \]' "$out/tests_forward.log") OK, $(grep -c '^\[  FAILED  \]' "$out/tests_forward.log") FAILED"
grep '^\[  FAILED  \]' "$out/tests_forward.log" | sort -u >> "$out/summary.txt"
for r in 1 2 3 4; do
  if [ $((r % 2)) -eq 0 ]; then tag=p64; export FUSEDMOE_CUTLASS_CONFIG=5,5; else tag=default; unset FUSEDMOE_CUTLASS_CONFIG; fi
  timeout 90 $B/fusedmoe bench --suite layer --tokens 2048,4096,16384 --stages --cases dsv3-tp8,qwen235-tp8,dsv4f-tp4 > "$out/prefill_r${r}_${tag}.txt" 2>&1
  stamp "prefill r$r $tag rc=$?"
  grep -E "layer|gemm1|gemm2" "$out/prefill_r${r}_${tag}.txt" >> "$out/summary.txt"
done
gzip -f "$out"/tests_*.log
stamp end
tail -2 "$out/summary.txt"
