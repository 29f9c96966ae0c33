#!/usr/bin/env bash
# Session 32, call 1 (build of .gpu/COMMIT: FP8 Swap-AB deferred promotion, FUSEDMOE_FP8_DEFER=0
# turns it off; 64-wide FP8 stages for K % 128 in 1..64, FUSEDMOE_FP8_K64=0 turns them off):
# (a) the full GPU suite (both on); (b) the FP8 cases at 16 / 64 / 256 tokens with stages:
# new default, old (the previous kernels: defer off, K64 off), defer only, new default.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
GPU_TEST_SHARDS=12 timeout 250 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/run.log" "$out/sass.txt.gz"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
B=.gpu/bin/fusedmoe
C=qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
i=0
for v in "1 1" "0 0" "1 0" "1 1"; do
  set -- $v; i=$((i+1))
  FUSEDMOE_FP8_DEFER=$1 FUSEDMOE_FP8_K64=$2 timeout 80 $B bench --suite layer --cases $C --tokens 16,64,256 --stages > "$out/fp8_r${i}_d$1_k$2.txt" 2>&1
  echo "run $i defer=$1 k64=$2 rc=$?"; grep -E " layer | stage gemm" "$out/fp8_r${i}_d$1_k$2.txt" | sed 's/  */ /g' | sed -E 's/ layer fp8 swap-ab, token tile [0-9]+//' | cut -c1-60
done
