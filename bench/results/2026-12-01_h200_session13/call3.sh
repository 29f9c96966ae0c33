#!/usr/bin/env bash
# Session 13, call 3 (build e8a232f): what limits the router kernel at 16384 tokens (dsv3, f32
# logits): ncu pipe utilisation, scheduler and warp-state sections, and per-instruction source
# counters.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
ncu --clock-control none --launch-count 1 -k "regex:router_topk" --section ComputeWorkloadAnalysis --section SchedulerStats --section WarpStateStats --section InstructionStats --section Occupancy --metrics smsp__inst_executed_pipe_uniform.sum,smsp__inst_executed_op_shfl.sum,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_adu.avg.pct_of_peak_sustained_active,smsp__average_warp_latency_issue_stalled_barrier .gpu/bin/fusedmoe bench --suite dispatch --cases dsv3-routing --tokens 16384 > "$out/ncu_router_sections.txt" 2>&1
ncu --clock-control none --launch-count 1 -k "regex:router_topk" --section SourceCounters --import-source no --page source --print-source sass --csv .gpu/bin/fusedmoe bench --suite dispatch --cases dsv3-routing --tokens 16384 > "$out/ncu_router_source.csv" 2>&1
gzip -f "$out/ncu_router_source.csv"
grep -v "^==" "$out/ncu_router_sections.txt" | grep -E "Pipe|pipe|Issue|Eligible|Active Warps|Stall|Cycles Per|Occupancy|IPC|Executed|shfl|uniform|Duration" | head -70
