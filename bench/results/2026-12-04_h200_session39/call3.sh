#!/usr/bin/env bash
# Session 39, call 3 (carry ["build_pack"]): CUTLASS GEMM2 with a whole-tile epilogue buffer (the
# tile's TMA store drains under the next tile's main loop instead of 128x32 subtiles through two
# 8 KB buffers): BF16 config 5 (FUSEDMOE_CUTLASS_CONFIG=0,5: GEMM1 auto, GEMM2 config 5) and the FP8
# row-scaled GEMM2 (FUSEDMOE_FP8_EPI=1). Tests: every CUTLASS config on ragged groups; the CUTLASS
# forward tests with both switches. Then prefill stages alternated default / switched / default /
# switched on 7 BF16 and 2 FP8 row-scaled cases at 2048 and 16384 tokens.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
timeout 120 $B/fusedmoe_gpu_tests --gtest_filter='CutlassGroupedGemm.*' > "$out/tests_kernel.log" 2>&1
stamp "CUTLASS kernel tests rc=$? $(grep -c '^\[       OK \]' "$out/tests_kernel.log") OK, $(grep -c '^\[  FAILED  \]' "$out/tests_kernel.log") FAILED lines"
grep -E "epi128|FAILED" "$out/tests_kernel.log" | head -12 >> "$out/summary.txt"
FUSEDMOE_CUTLASS_CONFIG=0,5 FUSEDMOE_FP8_EPI=1 timeout 200 $B/fusedmoe_gpu_tests --gtest_filter='Forward.Cutlass*:Forward.Fp8RowScaledLayers:Forward.Fp8LargeTokenCounts:Forward.Fp8DynamicPerTensor' > "$out/tests_forward.log" 2>&1
stamp "forward tests (switched) rc=$? $(grep -c '^\[       OK \]' "$out/tests_forward.log") OK, $(grep -c '^\[  FAILED  \]' "$out/tests_forward.log") FAILED lines"
grep '^\[  FAILED  \]' "$out/tests_forward.log" | sort -u >> "$out/summary.txt"
C=dsv3-tp8,dsv3-ep8,dsv4f-tp4,qwen235-tp8,qwen235-tp4,qwen30-tp1,mixtral-tp2,qwen235-tp8-fp8c,qwen235-tp8-fp8t
for r in 1 2 3 4; do
  if [ $((r % 2)) -eq 0 ]; then tag=epi; export FUSEDMOE_CUTLASS_CONFIG=0,5 FUSEDMOE_FP8_EPI=1; else tag=default; unset FUSEDMOE_CUTLASS_CONFIG FUSEDMOE_FP8_EPI; fi
  timeout 130 $B/fusedmoe bench --suite layer --tokens 2048,16384 --stages --cases $C > "$out/prefill_r${r}_${tag}.txt" 2>&1
  stamp "prefill r$r $tag rc=$?"
  grep -E "layer|gemm2" "$out/prefill_r${r}_${tag}.txt" >> "$out/summary.txt"
done
gzip -f "$out"/tests_*.log
stamp end
tail -3 "$out/summary.txt"
