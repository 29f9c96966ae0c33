#!/usr/bin/env bash
# Session 44, call 1 (carry ["build_pack"]: the build in .gpu/COMMIT).
# (a) session 43's call 7: the fused_activation auto rule on the device (CUTLASS forward tests, prefill
#     stages with --fused-act; bench variants now timed in interleaved rounds).
# (b) FP8 decode stages at 64 / 256 tokens (packed weights) and ncu of GEMM2 at 256 tokens,
#     qwen235-tp8 FP8 per-channel vs BF16: FP8 GEMM2 ran as long as BF16's (58-64 us, floor 26 us).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
timeout 150 $B/fusedmoe_gpu_tests --gtest_filter='Forward.Cutlass*:CutlassGatedGemm1.*' > "$out/tests.log" 2>&1
stamp "tests rc=$?: $(grep -c '^\[       OK \]' "$out/tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/tests.log") FAILED"
timeout 170 $B/fusedmoe bench --suite layer --tokens 4096,16384 --stages --fused-act --cases mixtral-tp2,qwen30-tp1,dsv4f-tp4,qwen235-tp8 > "$out/prefill.txt" 2>&1
stamp "prefill rc=$?"
timeout 90 $B/fusedmoe bench --suite layer --tokens 64,256 --stages --packed --cases qwen235-tp8-fp8c,dsv3-tp8-fp8b,dsv3-ep8-fp8b,qwen235-tp4-fp8b,qwen235-tp8 > "$out/fp8_stages.txt" 2>&1
stamp "fp8 stages rc=$?"
S="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --metrics dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum,lts__t_bytes.sum"
prof() {  # name, timeout, ncu kernel args..., -- bench args...
  local name=$1 t=$2; shift 2
  local k=(); while [ "$1" != "--" ]; do k+=("$1"); shift; done; shift
  { echo "=== $name"; timeout $t ncu --clock-control none "${k[@]}" $S $B/fusedmoe bench "$@" 2>&1; echo "rc=$?"; } >> "$out/ncu.txt"
}
prof g2_fp8c 60 -k regex:sm90_fp8_grouped_gemm_kernel --launch-skip 1 --launch-count 1 -- --suite layer --cases qwen235-tp8-fp8c --tokens 256 --packed
prof g1_fp8c 60 -k regex:sm90_fp8_grouped_gemm_kernel --launch-count 1 -- --suite layer --cases qwen235-tp8-fp8c --tokens 256 --packed
prof g2_bf16 60 -k regex:sm90_bf16_grouped_gemm_kernel --launch-skip 1 --launch-count 1 -- --suite layer --cases qwen235-tp8 --tokens 256 --packed
stamp "ncu done"
grep -E "layer|stage gemm|over .* points" "$out/prefill.txt" | cut -c1-130 >> "$out/summary.txt"
grep -E "stage|layer" "$out/fp8_stages.txt" | grep -v "packed off" | cut -c1-120 >> "$out/summary.txt"
grep -E "^=== |void |Duration|DRAM Throughput|dram__bytes|lts__t_bytes|Registers Per|No Eligible|Issued Warp|Eligible Warps|Warp Cycles Per Issued|Compute \(SM\)|L2 Cache Throughput|L1/TEX Hit|L2 Hit|Grid Size|Block Size|Dynamic Shared|inst_executed|Achieved Occ|Theoretical Occ|Stall|rc=" "$out/ncu.txt" | cut -c1-150 >> "$out/summary.txt"
gzip -f "$out/tests.log"
cat "$out/summary.txt"
