#!/usr/bin/env bash
# Session 38, call 1 (carry ["build_pack"]: e67cf03's build, whose device code is af42ede's): why
# GEMM2 at prefill runs at ~45 % of its own floor. ncu sections + SASS source counters (stall
# reasons per instruction) of CUTLASS's BF16 GEMM2 (dsv3-tp8, 16384 tokens), of our normal-tile
# GEMM2 on the same problem (grouped backend, `--cutlass` variant), and of CUTLASS's FP8 row-scaled
# GEMM2 (qwen235-tp8-fp8c, 16384); then the prefill stage table of both backends.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin/fusedmoe
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --metrics dram__bytes_read.sum,dram__bytes_write.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"
SRC="--section SourceCounters --import-source no --page source --print-source sass --csv"
prof() {  # name, timeout, ncu kernel args..., -- bench args...
  local name=$1 t=$2; shift 2
  local k=(); while [ "$1" != "--" ]; do k+=("$1"); shift; done; shift
  { echo "=== $name"; timeout $t ncu --clock-control none "${k[@]}" --launch-count 1 $S $B bench "$@" 2>&1; echo "rc=$?"; } >> "$out/ncu_sections.txt"
  timeout $t ncu --clock-control none "${k[@]}" --launch-count 1 $SRC $B bench "$@" > "$out/src_$name.csv" 2>&1
  echo "$name src rc=$?" >> "$out/summary.txt"; gzip -f "$out/src_$name.csv"
}
prof g2_cutlass_bf16 80 --kernel-name-base mangled -k regex:GroupProblemShape --launch-skip 1 -- --suite layer --cases dsv3-tp8 --tokens 16384
prof g2_grouped_bf16 80 -k regex:sm90_bf16_grouped_gemm --launch-skip 1 -- --suite layer --cases dsv3-tp8 --tokens 16384 --cutlass
prof g2_cutlass_fp8row 80 --kernel-name-base mangled -k regex:GroupProblemShape --launch-skip 1 -- --suite layer --cases qwen235-tp8-fp8c --tokens 16384
timeout 150 $B bench --suite layer --tokens 16384 --stages --cutlass --cases dsv3-tp8,qwen235-tp8,mixtral-tp2,qwen235-tp8-fp8c,dsv3-tp8-fp8b > "$out/prefill_stages.txt" 2>&1
echo "prefill bench rc=$?" >> "$out/summary.txt"
grep -E "^=== |device_kernel|grouped_gemm|Duration|DRAM Throughput|dram__bytes|gmma|Registers Per|No Eligible|Issued Warp|Eligible Warps|Warp Cycles Per Issued|Compute \(SM\)|L2 Cache Throughput|Grid Size|Block Size|Achieved Occ|rc=" "$out/ncu_sections.txt" | cut -c1-150 >> "$out/summary.txt"
grep -E "layer|stage" "$out/prefill_stages.txt" | grep " 16384 " >> "$out/summary.txt"
cat "$out/summary.txt"
