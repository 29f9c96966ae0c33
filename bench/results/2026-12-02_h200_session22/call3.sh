#!/usr/bin/env bash
# Session 22, call 3 (the commit after a0c391d: bench --stages for every variant): where prefill
# GEMM2 loses. Stages of both backends (grouped normal tiles vs CUTLASS) at 4096/16384 tokens; ncu
# of the CUTLASS GEMM2 (ptr-array grouped kernel) and of our normal-tile GEMM2, dsv3-tp8 16384.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin/fusedmoe
timeout 200 $B bench --suite layer --cases dsv3-tp8,qwen235-tp8,qwen30-tp1,dsv3-tp8-fp8b,qwen235-tp8-fp8c --tokens 4096,16384 --cutlass --stages > "$out/bench_backends_stages.txt" 2>&1
echo "stages rc=$?"
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy --metrics dram__bytes_read.sum,dram__bytes_write.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"
timeout 150 ncu --clock-control none --kernel-name-base mangled -k regex:GroupProblemShape --launch-skip 1 --launch-count 1 $S $B bench --suite layer --cases dsv3-tp8 --tokens 16384 > "$out/ncu_g2_cutlass.txt" 2>&1
echo "ncu cutlass rc=$?"
timeout 150 ncu --clock-control none -k regex:sm90_bf16_grouped_gemm --launch-skip 1 --launch-count 1 $S $B bench --suite layer --cases dsv3-tp8 --tokens 16384 --cutlass > "$out/ncu_g2_grouped.txt" 2>&1
echo "ncu grouped rc=$?"
for f in "$out"/ncu_*.txt; do echo "== $f"; grep -E "device_kernel|grouped_gemm|Duration|DRAM Throughput|Memory Throughput|dram__bytes|gmma|Registers Per|No Eligible|Issued Warp|Eligible Warps|Warp Cycles Per Issued|Compute \(SM\)|L2 Cache Throughput|Grid Size|Block Size" "$f" | cut -c1-160 | head -40; done
grep -E "stage gemm2|layer" "$out/bench_backends_stages.txt" | head -60
