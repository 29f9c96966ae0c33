#!/usr/bin/env bash
# Session 44, call 3 (carry ["build_pack"]): FP8 Swap-AB tiles per CTA at 16-256 tokens, each GEMM
# on its own. call 2's timeline: qwen235-tp8-fp8c at 256 tokens ran GEMM2 as 512 active CTAs on 264
# slots (two waves, 2.2 TB/s) and GEMM1 as 768 on 396 (3 per SM). GEMM2's count forced by
# FUSEDMOE_FP8_GEMM2_TPC (GEMM1 on its rule), GEMM1's by --tpc1 (GEMM2 on its rule).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
C=qwen235-tp8-fp8c,qwen235-tp4-fp8b,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b
for tpc in 0 8 16 32 64 128; do
  FUSEDMOE_FP8_GEMM2_TPC=$tpc timeout 60 $B/fusedmoe bench --suite layer --tokens 16,64,256 --stages --packed --cases $C > "$out/g2_tpc$tpc.txt" 2>&1
  stamp "gemm2 tpc $tpc rc=$?"
done
timeout 100 $B/fusedmoe bench --suite layer --tokens 16,64,256 --stages --packed --tpc1 1,2,3,4 --cases $C > "$out/g1_tpc.txt" 2>&1
stamp "gemm1 tpc rc=$?"
FUSEDMOE_FP8_GEMM2_TPC=32 timeout 60 $B/fusedmoe bench --suite layer --tokens 256 --packed --trace --cases qwen235-tp8-fp8c > "$out/trace32.txt" 2>&1
stamp "trace rc=$?"
for f in "$out"/g2_tpc*.txt; do echo "== $f"; grep -E "layer|stage gemm2" "$f" | grep -v "packed off" | cut -c1-118; done >> "$out/summary.txt"
grep -E "layer|stage gemm1" "$out/g1_tpc.txt" | grep -v "packed off" | cut -c1-125 >> "$out/summary.txt"
grep -E "gemm[12]:" "$out/trace32.txt" >> "$out/summary.txt"
cat "$out/summary.txt"
