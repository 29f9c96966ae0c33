#!/usr/bin/env bash
# Session 60, call 4 (LIMIT=150; build in the summary = the final code commit): what fits in the
# last 240 s of device time. The combine's tests, the forward tests over FP8 / packed / tail-pair
# layers, the main job, the layer rows of the combine change (% of the floor), and the dispatch
# suite's --flushed rows through the new L2Flush helper.
set -uo pipefail
source scripts/device_prelude.sh
mkdir -p "$out/b"
o=$out; out=$out/b
tests_step tests 70 'Combine.*:Forward.Fp8TailPairs:Forward.PackedWeights'
timeout 40 .gpu/bin/fusedmoe run > "$out/run.txt" 2>&1
echo "== fusedmoe run: rc=$? $(grep -E 'GPU layer|time per call' "$out/run.txt" | cut -c1-200 | tr '\n' ' ')" >> "$sum"
bench_step layer 20 --suite layer --packed --tokens 96,128 --cases qwen235-tp8-fp8c
bench_step dispatch 15 --suite dispatch --flushed --tokens 256 --cases qwen3-routing
grep -E "route\+plan " "$out/dispatch.txt" | cut -c1-140 >> "$sum"
out=$o
tar -czf "$out/bench.tar.gz" -C "$out" b && rm -rf "$out/b"
cat "$sum"
