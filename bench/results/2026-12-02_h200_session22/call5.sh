#!/usr/bin/env bash
# Session 22, call 5 (e31259d): why the normal-tile GEMM1 with gathered rows (cp.async producer) ran
# 1.8x slower than the permute + CUTLASS GEMM1 at dsv3-tp8 16384 (call 4): ncu of that kernel (first
# launch of the hybrid layer), sections and SASS source counters (stall reasons per instruction).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin/fusedmoe
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --metrics dram__bytes_read.sum,dram__bytes_write.sum"
timeout 100 ncu --clock-control none -k regex:sm90_bf16_grouped_gemm --launch-count 1 $S $B bench --suite layer --cases dsv3-tp8 --tokens 16384 --cutlass-gemm2 > "$out/ncu_g1_gather.txt" 2>&1
echo "ncu rc=$?"
timeout 110 ncu --clock-control none -k regex:sm90_bf16_grouped_gemm --launch-count 1 --section SourceCounters --import-source no --page source --print-source sass --csv $B bench --suite layer --cases dsv3-tp8 --tokens 16384 --cutlass-gemm2 > "$out/src_g1_gather.csv" 2>&1
echo "src rc=$?"
gzip -f "$out/src_g1_gather.csv"
grep -E "grouped_gemm|Duration|DRAM Throughput|Memory Throughput|dram__bytes|No Eligible|Issued Warp|Eligible Warps|Warp Cycles Per Issued|Compute \(SM\)|L2 Cache Throughput|Grid Size|Registers Per|Stall|stall" "$out/ncu_g1_gather.txt" | cut -c1-160 | head -40
