#!/usr/bin/env bash
# Session 26, call 2: FP8 GEMM1 on the balanced schedule's static ranges (ForwardOptions::balanced_gemm1,
# bench --balanced1; token-order block scales per segment). (a) the FP8 forward tests, the new one
# included; (b) the five FP8 block/channel cases at 16-256 tokens, balanced1 forced each way against
# the default, GEMM1 chained 8 tiles per CTA (--tpc1 8, call 1's lead) beside them, with stages.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
GPU_TEST_SHARDS=12 GPU_TEST_FILTER='Forward.*Fp8*:Forward.Balanced*:Fp8*' bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/sass.txt.gz" "$out/run.log"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
B=.gpu/bin/fusedmoe
F=dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b,qwen235-tp8-fp8c
timeout 300 $B bench --suite layer --cases $F --tokens 16,64,128,256 --balanced1 --tpc1 8 --stages > "$out/bench_bal1.txt" 2>&1
echo "bal1 rc=$?"; grep -A6 "variants against" "$out/bench_bal1.txt"
grep -E " layer " "$out/bench_bal1.txt" | cut -c1-100
