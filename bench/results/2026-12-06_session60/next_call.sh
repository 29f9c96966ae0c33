#!/usr/bin/env bash
# Planned for session 61 (not run here). Restage first (scripts/build.sh && bash scripts/stage_gpu.sh &&
# git rev-parse --short HEAD > .gpu/COMMIT && tar -cJf build_pack/gpu_main.tar.xz .gpu), carry
# ["build_pack/gpu_main.tar.xz"], LIMIT=570.
# 1. The GPU suite on the final code of session 60 (its full suite last ran on 5370780; since then the
#    combine's chunk rule, whose Combine.* tests passed in call 3, and bench code).
# 2. The lead on the fused front inside the layer (session 60, calls 2-3: ~2x its standalone time,
#    not explained by an L2 flush): is it instruction fetch? ncu on the front kernel of the dispatch
#    suite with every cache flushed before each profiled kernel (--cache-control all) against none,
#    the warp-state samples side by side (stall "no_instruction" / "branch_resolving" vs the rest).
set -uo pipefail
source scripts/device_prelude.sh
if [ "$(left)" -gt 330 ]; then suite_step 300; fi
for cc in all none; do
  timeout 90 ncu --clock-control none --cache-control $cc -k "regex:front_small" --launch-skip 30 --launch-count 3 \
    --section WarpStateStats --section SchedulerStats --metrics gpu__time_duration.sum \
    .gpu/bin/fusedmoe bench --suite dispatch --cases qwen3-routing --tokens 256 > "$out/ncu_front_$cc.txt" 2>&1
  echo "== ncu cache-control $cc: rc=$?" >> "$sum"
  grep -E "Duration|No Instruction|Stall|gpu__time_duration" "$out/ncu_front_$cc.txt" | head -30 >> "$sum"
done
bench_step trace 60 --suite layer --packed --trace --tokens 16,128,256 --cases qwen235-tp8-fp8c
cat "$sum"
