#!/usr/bin/env bash
# Session 26, call 3: FP8 GEMM1's one-wave rule for long reductions (K >= 6144: one_wave_fp8_applies)
# as the default. (a) the full GPU suite; (b) the decode table, 14 cases x 1/16/64/128/256 tokens;
# (c) the rule against one tile per CTA (--tpc1 1 = the old default for these K-7168 GEMM1s) on the
# dsv3 FP8 cases, with stages.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
GPU_TEST_SHARDS=12 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/run.log"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
B=.gpu/bin/fusedmoe
timeout 200 $B bench --suite layer --tokens 1,16,64,128,256 > "$out/bench_decode.txt" 2>&1
echo "decode rc=$?"; grep -E " layer " "$out/bench_decode.txt" | cut -c1-100
timeout 150 $B bench --suite layer --cases dsv3-tp8-fp8b,dsv3-ep8-fp8b --tokens 64,128,256 --tpc1 1 --stages > "$out/bench_rule.txt" 2>&1
echo "rule rc=$?"; grep -A3 "variants against" "$out/bench_rule.txt"; grep -E " layer " "$out/bench_rule.txt" | cut -c1-100
