#!/usr/bin/env bash
# Session 15, call 2: the team router rewritten compact (rolled loops). DispatchApi + RouterGpu
# tests; the dispatch bench at 1-16 tokens with teams (default) and without
# (FUSEDMOE_FRONT_TEAM=1), same run; the decode layer with the router at 1-8 tokens, both ways.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
GPU_TEST_FILTER='DispatchApi.*:RouterGpu.*' GPU_TEST_SHARDS=8 BENCH=dispatch BENCH_ARGS="--tokens 1,2,4,8,16" bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/bench_dispatch.json" "$out/info.log"
gzip -f "$out/gpu_tests.log"
FUSEDMOE_FRONT_TEAM=1 .gpu/bin/fusedmoe bench --suite dispatch --tokens 1,2,4,8,16 > "$out/bench_dispatch_noteam.txt" 2>&1
for team in 16 1; do
  FUSEDMOE_FRONT_TEAM=$team .gpu/bin/fusedmoe bench --suite layer --cases dsv3-tp8-fp8b,dsv3-tp8 --tokens 1,4,8 \
    > "$out/bench_layer_team$team.txt" 2>&1
done
cat "$out/summary.txt"
for f in bench_dispatch bench_dispatch_noteam; do echo "--- $f"; grep -E "token-order \(1|route\+plan \(1|T=.*token-order:" "$out/$f.txt" | cut -c1-240; done
for team in 16 1; do echo "--- layer team $team"; grep -E "^(dsv3|kimi)" "$out/bench_layer_team$team.txt" | cut -c1-110; done
