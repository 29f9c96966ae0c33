#!/usr/bin/env bash
# Planned for session 62 (not run here). Restage first (scripts/build.sh && bash scripts/stage_gpu.sh &&
# git rev-parse --short HEAD > .gpu/COMMIT && tar -cJf build_pack/gpu_main.tar.xz .gpu), carry
# ["build_pack/gpu_main.tar.xz"], LIMIT=560.
# 1. The GPU suite with 330 s per shard (session 61's call 2 cut two shards at 280 s: the shards'
#    contents follow the test list, and Forward.Fp8GatherRows / Fp8HQuantInGemm2 take 130-225 s).
# 2. The fused front inside the layer (~10 µs at 256 tokens against ~6.5 standalone after a flush and
#    a code sweep; not the early-launched dependents, session 61 call 2): the layer trace now also
#    prints the last routing block's entry. Do the routing blocks enter together in the layer?
set -uo pipefail
source scripts/device_prelude.sh
mkdir -p "$out/b"
o=$out
if [ "$(left)" -gt 360 ]; then suite_step 330; fi
out=$o/b
bench_step trace 60 --suite layer --packed --trace --tokens 16,128,256 --cases qwen235-tp8-fp8c,qwen235-tp8
grep -E "timeline|front" "$out/trace.txt" | head -30 >> "$sum"
bench_step dispatch 60 --suite dispatch --flushed --tokens 128,256 --cases qwen3-routing
out=$o
tar -czf "$out/bench.tar.gz" -C "$out" b && rm -rf "$out/b"
cat "$sum"
