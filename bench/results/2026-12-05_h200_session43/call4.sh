#!/usr/bin/env bash
# Session 43, call 4 (carry ["build_pack"]: 56764ef's build): why the CUTLASS GEMM1 with the activation
# in its epilogue (fused_activation) saves nothing on mixtral-tp2 (call 3: GEMM1 stage 6674 vs 6652 us
# at 16384 tokens, on vs off). ncu sections of, at mixtral-tp2 4096 tokens: CUTLASS's GEMM1 and the
# grouped_activation kernel of the default, and the fused GEMM1 (kernel name holds GatedEpilogue).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
B=.gpu/bin/fusedmoe
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
S="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy --metrics dram__bytes_read.sum,dram__bytes_write.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum"
prof() {  # name, timeout, ncu kernel args..., -- bench args...
  local name=$1 t=$2; shift 2
  local k=(); while [ "$1" != "--" ]; do k+=("$1"); shift; done; shift
  { echo "=== $name"; timeout $t ncu --clock-control none "${k[@]}" $S $B bench "$@" 2>&1; echo "rc=$?"; } >> "$out/ncu_sections.txt"
}
prof g1_cutlass 100 --kernel-name-base mangled -k regex:GroupProblemShape --launch-count 1 -- --suite layer --cases mixtral-tp2 --tokens 4096
prof act 60 -k regex:grouped_activation --launch-count 1 -- --suite layer --cases mixtral-tp2 --tokens 4096
prof g1_fused 100 --kernel-name-base mangled -k regex:GatedEpilogue --launch-count 1 -- --suite layer --cases mixtral-tp2 --tokens 4096 --fused-act
prof g1_fused_q30 100 --kernel-name-base mangled -k regex:GatedEpilogue --launch-count 1 -- --suite layer --cases qwen30-tp1 --tokens 16384 --fused-act
prof g1_cutlass_q30 100 --kernel-name-base mangled -k regex:GroupProblemShape --launch-count 1 -- --suite layer --cases qwen30-tp1 --tokens 16384
grep -E "^=== |Duration|DRAM Throughput|dram__bytes|gmma|Registers Per|No Eligible|Issued Warp|Eligible Warps|Warp Cycles Per Issued|Compute \(SM\)|L2 Cache Throughput|Grid Size|Dynamic Shared|inst_executed|Achieved Occ|rc=" "$out/ncu_sections.txt" | cut -c1-150 >> "$out/summary.txt"
cat "$out/summary.txt"
