#!/usr/bin/env bash
# Plan for the next session (written in session 51, which had no device; not run): one call on the
# final code, ideally an H200. Carry ["build_pack/gpu_main.tar.xz"] restaged at the final commit
# (scripts/build.sh && scripts/stage_gpu.sh && rm -f build_pack/gpu_main.tar.xz && tar -cJf
# build_pack/gpu_main.tar.xz .gpu; stage_gpu.sh also stages the Python module for the device's
# Python 3.12 when pyenv's 3.12 has nanobind: `/root/.pyenv/versions/3.12.1/bin/python3 -m pip
# install nanobind==3.1.0 numpy`).
#  1. the whole GPU suite, the main job and the Python binding's torch test (tests/python/
#     test_forward_gpu.py, new in session 51: forward() on torch tensors against reference_forward(),
#     BF16 and FP8 blocks, graph replay with a device token count, bad input);
#  (2-4 are call1b.sh, on the same warm machine: the two together exceed one call's 600 s)
#  2. the decode tables with the torch peer under the bench's new default routing (uniform for every
#     router: correction biases zero), BF16 then FP8, 1 / 16 / 64 / 256 tokens, packed weights;
#  3. the old default (--skew bias) for the three bias-router FP8 cases, same run, for the record;
#  4. the stages of dsv3-tp8-fp8b / dsv4f-tp4-fp8b at 256 tokens under uniform routing (the former
#     is the FP8 point expected nearest vLLM's figure, 430.9 us, once routed uniformly).
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
