#!/usr/bin/env bash
# Session 32, call 2 (build of .gpu/COMMIT, the final code: the deferred FP8 promotion compiled for the
# 2-CTA Swap-AB instances, off by default (FUSEDMOE_FP8_DEFER=1); the default kernels SASS-identical to
# 8c73dbc's; the 64-wide stages removed): (a) the full GPU suite; (b) the FP8 cases at 16 / 64 / 256
# tokens with stages: default, FUSEDMOE_FP8_DEFER=1, default.
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
for v in 0 1 0; do
  i=$((i+1))
  FUSEDMOE_FP8_DEFER=$v timeout 80 $B bench --suite layer --cases $C --tokens 16,64,256 --stages > "$out/fp8_r${i}_d$v.txt" 2>&1
  echo "run $i defer=$v rc=$?"; grep -E " layer " "$out/fp8_r${i}_d$v.txt" | sed 's/  */ /g' | sed -E 's/ layer fp8 swap-ab, token tile [0-9]+//' | cut -c1-48
done
