#!/usr/bin/env bash
# Session 30, call 4 (measurement only, the pack of 842ef70 as in calls 1-3): the decode GEMM1 at 4-8
# tokens, whose chained CTAs ran 1.2 waves at qwen30-tp1 4 tokens (call 2's timeline: 324 CTAs on
# 264 slots, a 23.8 us tail): GEMM1 forced to 3 / 4 weight tiles per CTA, and the dense instances
# forced on / off, with stages.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
timeout 120 .gpu/bin/fusedmoe bench --suite layer --cases qwen30-tp1,qwen235-tp4 --tokens 4,8 --tpc1 3,4 --dense --stages > "$out/gemm1_small.txt" 2>&1
echo "rc=$?"; grep -E " layer | stage gemm1" "$out/gemm1_small.txt" | sed 's/  */ /g' | cut -c1-110
