#!/usr/bin/env bash
# Session 14, call 1 (the command as run on the device, from the repo root): write / copy / read
# rates and permute-shaped write patterns (writebw.cu, built there). writebw.cu then gained the
# bf16-read permute rows, run again in call 2.
cd bench/results/2026-12-01_h200_session14 && nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a writebw.cu -o /tmp/writebw && nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,ecc.mode.current --format=csv && /tmp/writebw 2>&1 | tee $OUT/call1_writebw.txt
