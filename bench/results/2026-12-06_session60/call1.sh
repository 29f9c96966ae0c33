#!/usr/bin/env bash
# Session 60, call 1. Restage first (scripts/build.sh && bash scripts/stage_gpu.sh &&
# git rev-parse --short HEAD > .gpu/COMMIT && tar -cJf build_pack/gpu_main.tar.xz .gpu), carry
# ["build_pack/gpu_main.tar.xz"], LIMIT=570.
# Why: choose_tiles_per_cta gives qwen235-tp8's FP8 GEMM2 (K = 192, token tile 32, 188 token tiles in
# the grid's bound) 32 weight tiles per CTA on the tail pairs (ring 12) but 16 on the plain pairs
# (ring 8): session 59's A/B changed the chunking too. ~128 active token tiles x 2 chunks is about
# one wave of 264 slots at 256 tokens; at 512 tokens ~1.5 waves (the tails' regression there?).
# GEMM2's weight tiles per CTA swept (FUSEDMOE_FP8_GEMM2_TPC) with the tails on and off at 256 / 512
# tokens, then the GEMM2 timeline at 256, then the suite.
set -uo pipefail
source scripts/device_prelude.sh
for tpc in 8 16 32; do
  FUSEDMOE_FP8_GEMM2_TPC=$tpc bench_step tpc${tpc}_tail 40 --suite layer --packed --stages --tokens 256,512 --cases qwen235-tp8-fp8c
  FUSEDMOE_FP8_GEMM2_TPC=$tpc FUSEDMOE_FP8_TAIL=0 bench_step tpc${tpc}_notail 40 --suite layer --packed --stages --tokens 256,512 --cases qwen235-tp8-fp8c
done
bench_step trace256 60 --suite layer --packed --trace --trace-csv "$out/trace256.csv" --tokens 256 --cases qwen235-tp8-fp8c
if [ "$(left)" -gt 250 ]; then suite_step 300; else echo "suite skipped ($(left) s left)" >> "$sum"; fi
cat "$sum"
