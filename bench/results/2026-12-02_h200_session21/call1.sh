#!/usr/bin/env bash
# Session 21, call 1 (build fea00a0 = HEAD's library SASS): where the FP8 decode GEMMs lose time.
# ncu sections of the first GEMM1 + GEMM2 launches of one layer call, FP8 (dsv3-tp8-fp8b,
# qwen235-tp8-fp8c) and BF16 (dsv3-tp8, qwen235-tp8) at 256 tokens, and the stage split.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_front.tar.xz
B=.gpu_front/bin/fusedmoe
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum"
for c in dsv3-tp8-fp8b qwen235-tp8-fp8c; do
  timeout 150 ncu --clock-control none --launch-count 2 -k "regex:sm90_fp8_grouped_gemm" $S $B bench --suite layer --cases $c --tokens 256 > "$out/ncu_$c.txt" 2>&1
  echo "$c rc=$?"
done
for c in dsv3-tp8 qwen235-tp8; do
  timeout 120 ncu --clock-control none --launch-count 2 -k "regex:sm90_bf16_grouped_gemm" $S $B bench --suite layer --cases $c --tokens 256 > "$out/ncu_$c.txt" 2>&1
  echo "$c rc=$?"
done
timeout 100 $B bench --suite layer --cases dsv3-tp8-fp8b,qwen235-tp8-fp8c,dsv3-tp8,qwen235-tp8 --tokens 64,256 --stages > "$out/bench_stages.txt" 2>&1
echo "stages rc=$?"
for f in "$out"/ncu_*.txt; do echo "== $f"; grep -E "grouped_gemm_kernel|Duration|DRAM Throughput|Memory Throughput|dram__bytes|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|No Eligible|Issued Warp|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Compute \(SM\)|lts__t_sectors" "$f" | head -60; done
