#!/usr/bin/env bash
# Session 21, call 7 (ff3e41e): issue #3's front at 1-256 tokens (per call in graph replay and the
# fused kernel's own timeline, first block entry to end), and the 1-token layer from precomputed ids
# on the BF16 cases with a vLLM 1-token figure.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
tar -xJf build_pack/gpu_new.tar.xz
timeout 60 .gpu/bin/fusedmoe bench --suite dispatch --tokens 1,16,64,256 > "$out/bench_dispatch.txt" 2>&1; echo "dispatch rc=$?"
timeout 40 .gpu/bin/fusedmoe bench --suite layer --cases qwen30-tp1,mixtral-tp2,gptoss-tp1,qwen235-tp8 --tokens 1 --precomputed > "$out/bench_1tok.txt" 2>&1; echo "1tok rc=$?"
