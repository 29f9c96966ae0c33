#!/usr/bin/env bash
# Session 21, call 6 (ff3e41e, the build that passed all 223 GPU tests in call 5): the decode suite
# with the router, every case, 1-256 tokens, floor columns (the session's final table).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
tar -xJf build_pack/gpu_new.tar.xz
timeout 150 .gpu/bin/fusedmoe bench --suite layer --tokens 1,4,16,64,256 --json "$out/bench_decode.json" > "$out/bench_decode.txt" 2>&1
echo "decode rc=$?"
