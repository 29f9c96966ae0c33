#!/usr/bin/env bash
# Session 48's device calls (session 47's call7.sh / call8.sh regrouped into three calls on one warm
# machine; one pack per call, since two packs and the tree exceed the device tool's 64 MiB):
#   a: carry ["build_pack/gpu_s37.tar.xz"]  session 37's library and tool (583a3be) extracted into
#      build_pack/s37 (ignored: stays on the warm machine); one timing of BF16 qwen235-tp8 / dsv3-tp8.
#   b: carry ["build_pack/gpu_wip.tar.xz"]  branch wip/epilogue-per-kernel (36b6640): the whole GPU
#      suite (12 shards), its decode bench; kept in build_pack/wip.
#   c: carry ["build_pack/gpu_main.tar.xz"] main (40e7be9 = e44ddb1's code): new / old / new on
#      the call-a timing, main / wip / main decode tables, memcheck of the wip's FP8 Swap-AB kernel
#      tests (the stmatrix path).
# Run from the repo root: bash bench/results/2026-12-05_h100_session48/call.sh a|b|c
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
step=${1:-a}
export PATH=/usr/local/cuda/bin:$PATH
sum="$out/summary.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
old_new() {  # $1: label, $2: build folder (session 47's call 7 command)
  timeout 80 $2/bin/fusedmoe bench --suite layer --tokens 64,256 --packed --stages --cases qwen235-tp8,dsv3-tp8 \
    > "$out/on_$1.txt" 2>&1
  local rc=$?; echo "== on_$1 ($(cat $2/COMMIT 2>/dev/null)) rc=$rc" >> "$sum"
}
decode() {  # $1: label, $2: build folder (session 47's call 8 command)
  timeout 150 $2/bin/fusedmoe bench --suite layer --tokens 16,64,256 --packed \
    --cases qwen235-tp8,dsv3-tp8,qwen235-tp4,qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,qwen235-tp4-fp8b,dsv4f-tp4-fp8b \
    > "$out/decode_$1.txt" 2>&1
  local rc=$?; echo "== decode_$1 ($(cat $2/COMMIT 2>/dev/null)) rc=$rc" >> "$sum"
}
t0=$(date +%s)
if [ "$step" = a ]; then
  rm -rf build_pack/s37 && mkdir -p build_pack/s37 && tar -xJf build_pack/gpu_s37.tar.xz -C build_pack/s37
  old_new r1_old build_pack/s37
elif [ "$step" = b ]; then
  rm -rf .gpu && tar -xJf build_pack/gpu_wip.tar.xz && rm -rf build_pack/wip && cp -r .gpu build_pack/wip
  OUT=$out/t GPU_TEST_SHARDS=12 GPU_TEST_TIMEOUT=330 GPU_TEST_FILTER='-StreamProbe.*' SASS=0 MAIN=0 \
    scripts/gpu_run.sh > /dev/null
  cat "$out/t/summary.txt" >> "$sum"; gzip -f "$out/t/gpu_tests.log"
  decode wip_r1 build_pack/wip
else
  rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
  old_new r2_new .gpu
  [ -x build_pack/s37/bin/fusedmoe ] && old_new r3_old build_pack/s37
  old_new r4_new .gpu
  decode main_r1 .gpu
  [ -x build_pack/wip/bin/fusedmoe ] && decode wip_r2 build_pack/wip
  decode main_r2 .gpu
  if [ -x build_pack/wip/bin/fusedmoe_gpu_tests ]; then
    timeout 280 compute-sanitizer --tool memcheck build_pack/wip/bin/fusedmoe_gpu_tests \
      --gtest_filter='Fp8GroupedGemm.SwapAbTiles' > "$out/memcheck.log" 2>&1
    rc=$?; echo "== memcheck wip Fp8GroupedGemm.SwapAbTiles rc=$rc $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$out/memcheck.log" | tr '\n' ' ')" >> "$sum"
    gzip -f "$out/memcheck.log"
  fi
fi
for f in "$out"/on_*.txt; do
  [ -f "$f" ] || continue
  echo "== $(basename "$f")"; grep -E " layer |stage " "$f" | grep -v "packed off" | cut -c1-110
done >> "$sum"
for f in "$out"/decode_*.txt; do
  [ -f "$f" ] || continue
  echo "== $(basename "$f")"; grep -E " layer " "$f" | grep -v "packed off" | cut -c1-100
done >> "$sum"
echo "wall $(( $(date +%s) - t0 )) s" >> "$sum"
cat "$sum"
