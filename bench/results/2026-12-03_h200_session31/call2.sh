#!/usr/bin/env bash
# Session 31, call 2 (build of .gpu/COMMIT: BF16 GEMM1 on the dense instances where its chain of
# tiles (choose_tiles_per_cta) fits one wave of dense CTA slots; ForwardOptions::gemm1_dense_swapab;
# bench --dense1 / --tpc1d): (a) the full GPU suite; (b) every BF16 case at 1-8 tokens, the new
# default against GEMM1's dense instances forced on / off; (c) the FP8 cases at 64-256 tokens with
# GEMM1 on its dense instance at 2 / 3 / 4 weight tiles per CTA (one wave of dense slots) and
# GEMM1's dense forced on / off, with stages.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
GPU_TEST_SHARDS=12 timeout 250 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/run.log" "$out/sass.txt.gz"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
B=.gpu/bin/fusedmoe
timeout 150 $B bench --suite layer --cases qwen235-tp8,qwen30-tp1,dsv3-tp8,dsv3-ep8,dsv4f-tp4,qwen235-tp4,mixtral-tp2,gptoss-tp1 --tokens 1,2,3,4,6,8 --dense1 > "$out/bf16_small.txt" 2>&1
echo "bf16 small rc=$?"; grep -E " layer " "$out/bf16_small.txt" | sed 's/  */ /g' | cut -d" " -f1,6- | cut -c1-90
timeout 200 $B bench --suite layer --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b --tokens 64,128,256 --tpc1d 2,3,4 --dense1 --stages > "$out/fp8_tpc1d.txt" 2>&1
echo "fp8 rc=$?"; grep -E " layer | stage gemm1" "$out/fp8_tpc1d.txt" | sed 's/  */ /g' | cut -c1-110
