#!/usr/bin/env bash
# Session 52, call 1 (session 51's planned call1.sh, which never ran; carry
# ["build_pack/gpu_main.tar.xz"], staged at this session's first commit): the whole GPU suite,
# the main job and the Python binding's torch test (tests/python/test_forward_gpu.py); then the
# bias-router BF16 cases with each Swap-AB token tile forced (crossover suite) at 64 and 256 tokens
# under uniform routing: the oracle gives them 8x the expected rows (tuned on skewed loads).
# call1b.sh follows on the same warm machine.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
OUT=$out/t GPU_TEST_SHARDS=16 GPU_TEST_TIMEOUT=300 GPU_TEST_FILTER='-StreamProbe.*' SASS=0 MAIN=1 \
  scripts/gpu_run.sh > /dev/null
gzip -f "$out/t/gpu_tests.log"
cat "$out/t/summary.txt" >> "$sum"
timeout 110 .gpu/bin/fusedmoe bench --suite crossover --tokens 64,256 \
  --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4 > "$out/t/crossover_bias_bf16.txt" 2>&1
echo "== crossover (bias routers, BF16, uniform): rc=$?" >> "$sum"
grep -E "ratio|faster" "$out/t/crossover_bias_bf16.txt" >> "$sum"
grep -E " swap-ab | normal " "$out/t/crossover_bias_bf16.txt" | cut -c1-110 >> "$sum"
OUT=$out scripts/bundle_out.sh >> "$sum"
cat "$sum"
