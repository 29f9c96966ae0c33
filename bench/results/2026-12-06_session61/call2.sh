#!/usr/bin/env bash
# Session 61, call 2: the final commit on a GPU. Restage first (scripts/build.sh && bash
# scripts/stage_gpu.sh && git rev-parse --short HEAD > .gpu/COMMIT && tar -cJf build_pack/gpu_main.tar.xz
# .gpu), carry ["build_pack/gpu_main.tar.xz"], LIMIT=430.
# 1. The GPU suite (the library as session 60's final one plus the code-sweep kernel; the prefetch
#    options of call 1 removed).
# 2. If time is left: the layer timeline with overlapped launches on and off (--pdl), to see whether
#    the dependents launched early (the permute, GEMM1) slow the fused front inside the layer.
set -uo pipefail
source scripts/device_prelude.sh
mkdir -p "$out/b"
o=$out
if [ "$(left)" -gt 300 ]; then suite_step 280; fi
out=$o/b
bench_step trace 50 --suite layer --packed --trace --pdl --tokens 128,256 --cases qwen235-tp8-fp8c
grep -E "timeline|front" "$out/trace.txt" | head -24 >> "$sum"
out=$o
tar -czf "$out/bench.tar.gz" -C "$out" b && rm -rf "$out/b"
cat "$sum"
