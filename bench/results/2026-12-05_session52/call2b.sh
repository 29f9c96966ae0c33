#!/usr/bin/env bash
# Session 52, call 2 (planned; not run: the device budget ran out; carry
# ["build_pack/gpu_main.tar.xz"]): first the headroom A/B (the bias routers' BF16 layers with the
# new token tile rule, 2x the expected rows, against the old 8x: FUSEDMOE_TILE_HEADROOM=8), then the
# GPU tests of forward() (Forward.*: every check_forward case now also checks out_topk_ids /
# out_topk_weights bitwise against the reference's routing; FILTER overrides), the main job and the
# Python binding's torch test.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
for h in ${ROUNDS:-8 2 8 2}; do
  FUSEDMOE_TILE_HEADROOM=$h timeout 40 .gpu/bin/fusedmoe bench --suite layer --tokens 16,64,128,256 --packed \
    --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4 >> "$out/headroom$h.txt" 2>&1
  echo "== headroom $h: rc=$?" >> "$sum"
done
for h in 8 2; do
  echo "-- headroom $h" >> "$sum"
  grep -E " layer " "$out/headroom$h.txt" | cut -c1-110 >> "$sum"
done
OUT=$out/t GPU_TEST_SHARDS=16 GPU_TEST_TIMEOUT=200 GPU_TEST_FILTER="${FILTER:-Forward.*}" SASS=0 MAIN=1 \
  scripts/gpu_run.sh > /dev/null
gzip -f "$out/t/gpu_tests.log"
cat "$out/t/summary.txt" >> "$sum"
tar -czf "$out/suite.tar.gz" -C "$out" t && rm -rf "$out/t"
cat "$sum"
