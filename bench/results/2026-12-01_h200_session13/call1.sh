#!/usr/bin/env bash
# Session 13, call 1 (build 810abfe's device code = 5713bfd): where the dispatch time goes at
# 16384 tokens. Memory ceilings (membw.py), the dispatch bench at 4096/16384, ncu kernel times
# and memory metrics of the dsv3 chain.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
d=bench/results/2026-12-01_h200_session13
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$out/membw.txt" 2>&1
/opt/torch/.venv/bin/python3 $d/membw.py >> "$out/membw.txt" 2>&1
.gpu/bin/fusedmoe bench --suite dispatch --tokens 256,4096,16384 > "$out/bench_dispatch.txt" 2>&1
ncu --clock-control none --launch-count 40 -k "regex:router|plan|permute|scale_gather|front" --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_op_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,sm__cycles_elapsed.avg.per_second .gpu/bin/fusedmoe bench --suite dispatch --cases dsv3-routing --tokens 16384 > "$out/ncu_dsv3_16384.txt" 2>&1
ncu --clock-control none -k 'regex:permute_quant' --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats .gpu/bin/fusedmoe bench --suite dispatch --cases dsv3-routing --tokens 16384 > "$out/ncu_permute_sections.txt" 2>&1
cat "$out/membw.txt"; grep -E "16384|4096" "$out/bench_dispatch.txt" | cut -c1-150
grep -E "^  [a-z_]|gpu__time|dram__|lts__|warps_active|inst_exec|per_second" "$out/ncu_dsv3_16384.txt" | head -120
