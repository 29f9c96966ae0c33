#!/usr/bin/env bash
# Session 52, call 2 at its smallest (little device time left; carry ["build_pack/gpu_main.tar.xz"],
# build 5414f98): the Python binding's torch test (the out_topk_ids fix), the tile-headroom A/B
# (the bias routers' BF16 layers: new 2x, old 8x via FUSEDMOE_TILE_HEADROOM=8), then forward()'s GPU
# tests that run check_forward (out_topk_ids / out_topk_weights checked bitwise) as far as time goes.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
PYTHONPATH=.gpu/python timeout 60 /opt/torch/.venv/bin/python3 tests/python/test_forward_gpu.py > "$out/python_gpu.log" 2>&1
echo "python forward (GPU): rc=$?; $(tail -1 "$out/python_gpu.log")" >> "$sum"
for h in 8 2; do
  FUSEDMOE_TILE_HEADROOM=$h timeout 30 .gpu/bin/fusedmoe bench --suite layer --tokens 16,64,128,256 \
    --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4 > "$out/headroom$h.txt" 2>&1
  echo "== headroom $h: rc=$?" >> "$sum"
  grep -E " layer " "$out/headroom$h.txt" | cut -c1-110 >> "$sum"
done
timeout 120 .gpu/bin/fusedmoe_gpu_tests --gtest_filter="${FILTER:-Forward.TokenCountsBothFamilies:Forward.SwapAbTiles:Forward.SuiteShapesAtSmallBatch:Forward.Fp8BlockScaledLayers:Forward.SkewedRoutingSharedExpertAndExpertMap}" > "$out/gpu_tests.log" 2>&1
echo "gpu tests: rc=$? $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]' "$out/gpu_tests.log" | tr '\n' ' ')" >> "$sum"
gzip -f "$out/gpu_tests.log"
cat "$sum"
