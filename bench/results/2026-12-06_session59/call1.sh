#!/usr/bin/env bash
# Session 59, call 1: the tail-pair instances (FP8 GEMM2, K = 129-192, packed weights) - their tests,
# the A/B against the plain pairs (FUSEDMOE_FP8_TAIL=0) and the unpacked boxes ([packed off] rows),
# tile 16 pairs forced on GEMM2 (FUSEDMOE_FP8_PAIR=2) with and without tails; then the whole suite.
set -uo pipefail
source scripts/device_prelude.sh
tests_step tails 200 'Forward.Fp8TailPairs:Forward.PackedWeights:Forward.Fp8PairSwapAb'
bench_step q235_tail 70 --suite layer --packed --stages --tokens 128,256,512 --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t
FUSEDMOE_FP8_TAIL=0 bench_step q235_notail 70 --suite layer --packed --stages --tokens 128,256,512 --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t
FUSEDMOE_FP8_PAIR=2 bench_step q235_p16_tail 50 --suite layer --packed --stages --tokens 64,128 --cases qwen235-tp8-fp8c
FUSEDMOE_FP8_PAIR=2 FUSEDMOE_FP8_TAIL=0 bench_step q235_p16_notail 50 --suite layer --packed --stages --tokens 64,128 --cases qwen235-tp8-fp8c
if [ "$(left)" -gt 250 ]; then suite_step 300; else echo "suite skipped ($(left) s left)" >> "$sum"; fi
cat "$sum"
