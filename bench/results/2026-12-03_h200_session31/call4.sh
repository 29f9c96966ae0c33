#!/usr/bin/env bash
# Session 31, call 4 (the pack of 8c73dbc, as call 3): every case at 1 / 2 / 4 tokens from
# precomputed ids (as vLLM's figures are measured), after this session's dense rules for GEMM1.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
timeout 150 .gpu/bin/fusedmoe bench --suite layer --tokens 1,2,4 --precomputed > "$out/precomputed_1_4.txt" 2>&1
echo "rc=$?"; grep -E " layer " "$out/precomputed_1_4.txt" | sed 's/  */ /g' | cut -c1-120
