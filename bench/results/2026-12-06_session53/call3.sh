#!/usr/bin/env bash
# Session 53, call 3 (carry ["build_pack/gpu_main.tar.xz"]): dispatch() validating the front's inputs
# only. The Python binding's torch test (call 2: past its bad-input case, dispatch() asked for out),
# then the GPU tests of dispatch() / combine() and of forward()'s main paths.
set -uo pipefail
source scripts/device_prelude.sh
PYTHONPATH=.gpu/python timeout 120 /opt/torch/.venv/bin/python3 tests/python/test_forward_gpu.py > "$out/python_gpu.log" 2>&1
echo "python forward (GPU): rc=$?; $(tail -1 "$out/python_gpu.log")" >> "$sum"
OUT=$out/t GPU_TEST_SHARDS=16 GPU_TEST_TIMEOUT=150 PY_TEST=0 SASS=0 MAIN=0 \
  GPU_TEST_FILTER="${FILTER:-Dispatch*:Combine*:Forward.TokenCountsBothFamilies:Forward.PrecomputedAndHashRouting:Forward.GraphReplayMatchesDirectCall:Forward.Fp8RowScaledLayers:Forward.Fp8BlockScaledLayers}" \
  scripts/gpu_run.sh > /dev/null
gzip -f "$out/t/gpu_tests.log"
cat "$out/t/summary.txt" >> "$sum"
tar -czf "$out/suite.tar.gz" -C "$out" t && rm -rf "$out/t"
cat "$sum"
