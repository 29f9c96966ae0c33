#!/usr/bin/env bash
# Session 53, call 2 (carry ["build_pack/gpu_main.tar.xz"]): the library with its C++ runtime kept
# private (exclude-libs + version script) and the oracle's new headroom rule. First the Python
# binding's torch test (call 1: the error text of a Status lost its numbers in PyTorch's process),
# then the whole GPU suite and the main job, then the bias routers' BF16 layers under the new rule.
set -uo pipefail
start=$(date +%s)
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
OUT=$out/t GPU_TEST_SHARDS=16 GPU_TEST_TIMEOUT=${SUITE_TIMEOUT:-260} GPU_TEST_FILTER="${FILTER:--StreamProbe.*}" SASS=0 MAIN=1 \
  scripts/gpu_run.sh > /dev/null
gzip -f "$out/t/gpu_tests.log"
cat "$out/t/summary.txt" >> "$sum"
echo "suite done at $(( $(date +%s) - start )) s" >> "$sum"
tar -czf "$out/suite.tar.gz" -C "$out" t && rm -rf "$out/t"
timeout 40 .gpu/bin/fusedmoe bench --suite layer --tokens 16,64,128,256 --packed --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4 \
  > "$out/bias_bf16.txt" 2>&1
echo "== bias_bf16: rc=$? at $(( $(date +%s) - start )) s" >> "$sum"
grep -E " layer " "$out/bias_bf16.txt" | grep -v "packed off" | cut -c1-130 >> "$sum"
cat "$sum"
