#!/usr/bin/env bash
# Session 13, call 8 (device code f921168, bench tool with the read + write floor): the dispatch
# bench at 4096 and 16384 tokens, with the same-run write-fill rate.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
timeout 50 .gpu/bin/fusedmoe bench --suite dispatch --tokens 4096,16384 > "$out/bench_dispatch_rw.txt" 2>&1
echo "rc=$?"
grep -E "streaming read|write-only|16384|4096|floor" "$out/bench_dispatch_rw.txt" | cut -c1-190
