#!/usr/bin/env bash
# Session 43's plan (NOT RUN: no machine was lent): ForwardOptions::fused_activation, the CUTLASS
# GEMM1 with the activation in its epilogue (kernels/gemm/cutlass_gated_epilogue.cuh), against the
# two-pass default (CUTLASS GEMM1 writing bf16 pre-activation rows + grouped_activation), at prefill.
# Same pack as call1_main.sh (build_pack/gpu_main.tar.xz, main), carry ["build_pack"].
# (a) its GPU tests alone first (if call 1 has not run: a failure here means the timing is void),
#     and memcheck of the kernel-level ones;
# (b) bench --suite layer --stages --fused-act at 4096 / 16384 tokens on the BF16 prefill cases,
#     twice: each case runs the default (off), "fused act on", "fused act off" in one process, so a
#     run holds two off samples and one on. What it decides: the auto rule (on where faster); the
#     expected gain is the activation pass and half of GEMM1's output bytes (8 * rows * N bytes:
#     mixtral-tp2 at 16384 ~1.9 GB, ~0.4-0.6 ms of 9.5 ms; qwen30-tp1 ~6 %; dsv3-tp8 ~1.4 %), less
#     whatever the no-shared-memory epilogue costs against CUTLASS's TMA-store epilogue.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz  # (always: a warm machine keeps the last call's .gpu)
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
timeout 200 $B/fusedmoe_gpu_tests --gtest_filter='CutlassGatedGemm1.*:Forward.CutlassFusedActivation:CutlassGroupedGemm.*' > "$out/tests.log" 2>&1
stamp "tests rc=$?: $(grep -c '^\[       OK \]' "$out/tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/tests.log") FAILED"
grep -E '^\[  FAILED  \]|Failure' "$out/tests.log" | head -5 >> "$out/summary.txt"
timeout 150 compute-sanitizer --tool memcheck $B/fusedmoe_gpu_tests --gtest_filter='CutlassGatedGemm1.*' > "$out/memcheck_gated.log" 2>&1
stamp "memcheck gated rc=$?: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$out/memcheck_gated.log" | tr '\n' ' ')"
C=mixtral-tp2,qwen30-tp1,dsv3-ep8,qwen235-tp4,dsv4f-tp4,dsv3-tp8,qwen235-tp8
for r in 1 2; do
  timeout 220 $B/fusedmoe bench --suite layer --tokens 4096,16384 --stages --fused-act --cases $C > "$out/prefill_r$r.txt" 2>&1
  stamp "prefill r$r rc=$?"
done
gzip -f "$out/tests.log"
grep -E "layer .*(fused act|cutlass)|over .* points" "$out"/prefill_r*.txt | cut -c1-150 >> "$out/summary.txt"
stamp end
cat "$out/summary.txt"
