#!/usr/bin/env bash
# Session 53, call 1 (carry ["build_pack/gpu_main.tar.xz"], build db8c766 = the final code of
# session 52): the tile-headroom A/B (the bias routers' BF16 layers, new rule 2x the expected rows
# against the old 8x via FUSEDMOE_TILE_HEADROOM=8, alternating rounds), then the whole GPU suite
# (Forward.* now checks out_topk_ids / out_topk_weights), the main job, the Python GPU test, then
# the decode tables (FP8 and BF16, packed weights, uniform routing), each step only while the
# call's time (LIMIT, default 575 s) leaves room; then the crossover (every tile forced) and the
# per-stage times of the FP8 cases furthest from the floor.
set -uo pipefail
start=$(date +%s)
left() { echo $((${LIMIT:-575} - ($(date +%s) - start))); }
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
for h in ${ROUNDS:-8 2 8 2}; do
  FUSEDMOE_TILE_HEADROOM=$h timeout 40 .gpu/bin/fusedmoe bench --suite layer --tokens 16,64,128,256 --packed \
    --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4 >> "$out/headroom$h.txt" 2>&1
  echo "== headroom $h: rc=$? at $(( $(date +%s) - start )) s" >> "$sum"
done
for h in 8 2; do
  echo "-- headroom $h" >> "$sum"
  grep -E " layer " "$out/headroom$h.txt" | grep -v "packed off" | cut -c1-130 >> "$sum"
done
OUT=$out/t GPU_TEST_SHARDS=16 GPU_TEST_TIMEOUT=$(( $(left) - 120 < 300 ? $(left) - 120 : 300 )) \
  GPU_TEST_FILTER="${FILTER:--StreamProbe.*}" SASS=0 MAIN=1 scripts/gpu_run.sh > /dev/null
gzip -f "$out/t/gpu_tests.log"
cat "$out/t/summary.txt" >> "$sum"
echo "suite done at $(( $(date +%s) - start )) s" >> "$sum"
tar -czf "$out/suite.tar.gz" -C "$out" t && rm -rf "$out/t"
step() {  # name timeout args...
  local name=$1 t=$2; shift 2
  local l; l=$(left)
  if [ "$l" -lt 30 ]; then echo "== $name: skipped (${l} s left)" >> "$sum"; return; fi
  [ "$t" -gt $((l - 10)) ] && t=$((l - 10))
  timeout "$t" .gpu/bin/fusedmoe bench "$@" > "$out/$name.txt" 2>&1
  echo "== $name: rc=$? at $(( $(date +%s) - start )) s" >> "$sum"
  grep -E " layer " "$out/$name.txt" | grep -v "packed off" | cut -c1-150 >> "$sum"
}
step decode_fp8 90 --suite layer --tokens 1,16,64,128,256 --packed \
  --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
step decode_bf16 90 --suite layer --tokens 1,16,64,256 --packed \
  --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4,qwen235-tp8,qwen235-tp4,qwen30-tp1,mixtral-tp2,gptoss-tp1
step crossover 60 --suite crossover --tokens 16,128,256 --packed --cases qwen235-tp8-fp8c,qwen235-tp4-fp8b,qwen235-tp8
grep -E "ratio" "$out/crossover.txt" >> "$sum"
step stages 40 --suite layer --stages --tokens 16,256 --packed --cases qwen235-tp8-fp8c,dsv3-tp8-fp8b
grep -E " stage " "$out/stages.txt" | cut -c1-120 >> "$sum"
mkdir -p "$out/bench" && mv "$out"/headroom*.txt "$out"/decode_*.txt "$out"/crossover.txt "$out"/stages.txt "$out/bench/" 2>/dev/null
tar -czf "$out/bench.tar.gz" -C "$out" bench && rm -rf "$out/bench"
cat "$sum"
