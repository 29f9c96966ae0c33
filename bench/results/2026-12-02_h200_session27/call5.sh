#!/usr/bin/env bash
# Session 27, call 5: compute-sanitizer memcheck on the tests that run the dense Swap-AB instances
# (bdb19b7's build; the budget left allowed only this): the FP8 Swap-AB GEMM cases (each on the
# 2-CTA and the dense instance), then the layer test Forward.DenseSwapAb (BF16 and FP8).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
T=.gpu/bin/fusedmoe_gpu_tests
timeout 70 compute-sanitizer --tool memcheck $T --gtest_filter='Fp8GroupedGemm.SwapAbTiles' > "$out/memcheck_fp8.log" 2>&1
echo "fp8 rc=$?"; grep -E "ERROR SUMMARY|^\[  PASSED|^\[  FAILED" "$out/memcheck_fp8.log"
timeout 90 compute-sanitizer --tool memcheck $T --gtest_filter='Forward.DenseSwapAb' > "$out/memcheck_layer.log" 2>&1
echo "layer rc=$?"; grep -E "ERROR SUMMARY|^\[  PASSED|^\[  FAILED" "$out/memcheck_layer.log"; tail -3 "$out/memcheck_layer.log"
gzip -f "$out"/memcheck_*.log
