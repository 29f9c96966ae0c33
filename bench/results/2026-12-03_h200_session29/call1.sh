#!/usr/bin/env bash
# Session 29, call 1: where the fused front's time goes after the routing. A diagnosis build
# (FUSEDMOE_FRONT_FINE_TRACE=1 in the sigmoid and softmax front instances; build_pack/gpu_diag.tar.xz):
# block 0's clock64 stamps, and the timeline of a launch right after another (--front-b2b).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
tar -xJf build_pack/gpu_diag.tar.xz
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw --format=csv > "$out/bench_diag.txt" 2>&1
timeout 120 .gpu_diag/bin/fusedmoe bench --suite dispatch --tokens 1,16,17,64,128,256 --front-b2b >> "$out/bench_diag.txt" 2>&1
echo "bench rc=$?"
grep -E "T=.*(token-order|route\+plan)( \(2nd of 2 back to back\))?:" "$out/bench_diag.txt" | sed 's/  */ /g'
