#!/usr/bin/env bash
# Session 52, call 1 (session 51's planned call1.sh, which never ran; carry
# ["build_pack/gpu_main.tar.xz"], staged at this session's first commit): the whole GPU suite,
# the main job and the Python binding's torch test (tests/python/test_forward_gpu.py).
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
OUT=$out scripts/bundle_out.sh >> "$sum"
cat "$sum"
