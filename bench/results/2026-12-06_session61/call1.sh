#!/usr/bin/env bash
# Session 61, call 1 (session 60's next_call.sh plus the code-sweep rows). Restage first
# (scripts/build.sh && bash scripts/stage_gpu.sh && git rev-parse --short HEAD > .gpu/COMMIT &&
# tar -cJf build_pack/gpu_main.tar.xz .gpu), carry ["build_pack/gpu_main.tar.xz"], LIMIT=570.
# 1. The GPU suite (session 60's final library: its full suite last ran on 5370780; since then the
#    combine's chunk rule, whose Combine.* tests passed in session 60's call 3, and bench code).
# 2. The lead on the fused front inside the layer (~2x its standalone time, not explained by an L2
#    flush): is it the SMs' instruction caches? The dispatch suite with --flushed now also times each
#    call after the flush AND a code sweep (~256 KB of straight-line code on every SM), with the
#    front's phase timeline after each; and ncu on the front with every cache flushed (all) vs none.
# 3. The layer timeline (--trace) for the front's phases in the layer.
set -uo pipefail
source scripts/device_prelude.sh
if [ "$(left)" -gt 330 ]; then suite_step 300; fi
bench_step dispatch 90 --suite dispatch --flushed --tokens 16,128,256 --cases qwen3-routing,dsv3-routing
grep -E "flushed|swept|T=" "$out/dispatch.txt" | cut -c1-230 >> "$sum"
for cc in all none; do
  [ "$(left)" -lt 60 ] && break
  timeout 45 ncu --clock-control none --cache-control $cc -k "regex:front" --launch-skip 30 --launch-count 2 \
    --section WarpStateStats --section SchedulerStats --metrics gpu__time_duration.sum \
    .gpu/bin/fusedmoe bench --suite dispatch --cases qwen3-routing --tokens 256 > "$out/ncu_front_$cc.txt" 2>&1
  echo "== ncu cache-control $cc: rc=$?" >> "$sum"
  grep -E "Duration|No Instruction|Stall|gpu__time_duration|Warp Cycles" "$out/ncu_front_$cc.txt" | head -30 >> "$sum"
done
bench_step trace 60 --suite layer --packed --trace --tokens 16,128,256 --cases qwen235-tp8-fp8c
grep -iE "front" "$out/trace.txt" | head -20 >> "$sum"
tar -czf "$out/bench.tar.gz" -C "$out" $(cd "$out" && ls *.txt | grep -v summary.txt) 2>/dev/null && (cd "$out" && ls *.txt | grep -v summary.txt | xargs rm -f)
cat "$sum"
