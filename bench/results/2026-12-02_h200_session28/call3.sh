#!/usr/bin/env bash
# Session 28, call 3: route_token's phase stamps (a FUSEDMOE_ROUTE_TRACE=1 build of the sigmoid and
# softmax front instances, call 1's code; build_pack/gpu_trace.tar.xz), default front.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
tar -xJf build_pack/gpu_trace.tar.xz
timeout 60 .gpu_trace/bin/fusedmoe bench --suite dispatch --tokens 1,2,16,64,256 > "$out/bench_trace.txt" 2>&1; echo "trace rc=$?"
grep -E "T=.*(token-order|route\+plan):" "$out/bench_trace.txt" | sed 's/  */ /g'
