#!/usr/bin/env bash
# Session 29, call 2: (a) does %gridid differ for every launch (gridid_probe.cu, built here:
# build_pack/gridid_probe); (b) the router / dispatch / plan GPU tests and (c) `bench --suite
# dispatch` of commit 2 (shuffle scans over the blocks instead of REDUX, rows from one word scan,
# a ballot in the argmax rounds; build_pack/gpu_head.tar.xz).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
build_pack/gridid_probe > "$out/gridid_probe.txt" 2>&1; echo "probe rc=$?"; cat "$out/gridid_probe.txt"
tar -xJf build_pack/gpu_head.tar.xz
F='DispatchApi.*:Plan.*:PlanGraph.*:RouterGpu.*-*Informational*'
timeout 150 .gpu/bin/fusedmoe_gpu_tests --gtest_filter="$F" > "$out/tests.log" 2>&1
echo "tests rc=$?"; grep -E "^\[  PASSED|^\[  FAILED|FAILED  \]" "$out/tests.log" | tail -8
gzip -f "$out/tests.log"
timeout 120 .gpu/bin/fusedmoe bench --suite dispatch --tokens 1,16,17,64,128,256 > "$out/bench_dispatch.txt" 2>&1
echo "bench rc=$?"
grep -E "token-order \(1|route\+plan \(1|T=.*(token-order|route\+plan):" "$out/bench_dispatch.txt" | sed 's/  */ /g' | cut -c1-250
