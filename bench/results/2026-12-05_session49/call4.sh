#!/usr/bin/env bash
# Session 49, call 4 (carry ["build_pack/gpu_main.tar.xz"], staged at the final code: the split
# front's rule on by default): the dispatch suite at 1-256 tokens (issue #3's table), memcheck of
# the split front (FUSEDMOE_FRONT_SPLIT=2 forces it on every router at 2-16 tokens), stages with
# GEMM timelines for two qwen235-tp8 cases at 256 tokens, the whole GPU
# suite (16 shards, its limit from the time left) and the main job. Logs in bundle.tar.gz.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
timeout 60 .gpu/bin/fusedmoe bench --suite dispatch --tokens 1,12,13,16,17,32,64,128,256 > "$out/dispatch.txt" 2>&1
echo "dispatch bench: rc=$? at ${SECONDS}s" >> "$sum"
# (a lead for later: the combine stage at 256 tokens took 11.8 us after BF16 qwen235-tp8's GEMM2 and
# 6.6 after qwen235-tp8-fp8c's in call 1; the GEMM timelines of both)
timeout 60 .gpu/bin/fusedmoe bench --suite layer --tokens 256 --packed --stages --trace \
  --cases qwen235-tp8,qwen235-tp8-fp8c > "$out/stages_trace.txt" 2>&1
echo "stages + trace: rc=$? at ${SECONDS}s" >> "$sum"
export PATH=/usr/local/cuda/bin:$PATH
FUSEDMOE_FRONT_SPLIT=2 timeout 150 compute-sanitizer --tool memcheck .gpu/bin/fusedmoe_gpu_tests \
  --gtest_filter='DispatchApi.FusedFrontMatchesSeparateKernelsBitwise' > "$out/memcheck_split.log" 2>&1
echo "memcheck (split forced): rc=$? $(grep -E 'ERROR SUMMARY' "$out/memcheck_split.log" | tail -1) $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]' "$out/memcheck_split.log" | tr '\n' ' ') at ${SECONDS}s" >> "$sum"
left=$((560 - SECONDS)); [ $left -gt 300 ] && left=300
echo "suite limit ${left}s (started at ${SECONDS}s)" >> "$sum"
OUT=$out/t GPU_TEST_SHARDS=16 GPU_TEST_TIMEOUT=$left GPU_TEST_FILTER='-StreamProbe.*' SASS=0 MAIN=1 \
  scripts/gpu_run.sh > /dev/null
gzip -f "$out/t/gpu_tests.log"
cat "$out/t/summary.txt" >> "$sum"
{ echo "== dispatch.txt"; grep -E "token-order \(|route\+plan \(" "$out/dispatch.txt" | cut -c1-100
  grep -E "T=.*(token-order|route\+plan):" "$out/dispatch.txt" | sed 's/^ *//' | cut -c1-175; } >> "$sum"
OUT=$out scripts/bundle_out.sh >> "$sum"
cat "$sum"
