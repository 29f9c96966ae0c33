#!/usr/bin/env bash
# Session 47's plan for the next session (not run): branch wip/epilogue-per-kernel (36b6640: each
# kernel compiled with its measured Swap-AB epilogue only; the pair FP8 GEMM2 chains 8 ring lengths)
# against main, on one warm machine in two calls (one pack per call: two packs and the tree exceed
# the device tool's 64 MiB).
#   8a: carry ["build_pack/gpu_wip.tar.xz"]: the whole GPU suite on the branch (12 shards, 300 s),
#       memcheck of an FP8 Swap-AB kernel case (the stmatrix path, 300 s), the branch's decode bench;
#       the branch is kept in build_pack/wip (ignored: stays on the warm machine).
#   8b: carry ["build_pack/gpu_main.tar.xz"]: main's decode bench, the branch's again, main's again.
# Packs: scripts/stage_gpu.sh at each commit, then tar -cJf of .gpu (gpu_wip: the same from the
# branch's build).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
step=${1:-a}
decode() {  # $1: label, $2: build folder holding bin/ and lib/
  timeout 150 $2/bin/fusedmoe bench --suite layer --tokens 16,64,256 --packed \
    --cases qwen235-tp8,dsv3-tp8,qwen235-tp4,qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,qwen235-tp4-fp8b,dsv4f-tp4-fp8b \
    > "$out/decode_$1.txt" 2>&1
  local rc=$?
  echo "== decode $1 ($(cat $2/COMMIT)) rc=$rc" >> "$out/summary.txt"
}
: > "$out/summary.txt"
if [ "$step" = a ]; then
  rm -rf .gpu && tar -xJf build_pack/gpu_wip.tar.xz && rm -rf build_pack/wip && cp -r .gpu build_pack/wip
  OUT=$out/t GPU_TEST_SHARDS=12 GPU_TEST_TIMEOUT=300 GPU_TEST_FILTER='-StreamProbe.*' SANITIZE=1 SANITIZE_TIMEOUT=300 \
    SANITIZE_FILTER='Fp8GroupedGemm.SwapAbTiles' SASS=0 scripts/gpu_run.sh > /dev/null
  cat "$out/t/summary.txt" >> "$out/summary.txt"; gzip -f "$out/t/gpu_tests.log"
  decode wip_r1 build_pack/wip
else
  rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
  decode main_r1 .gpu
  [ -x build_pack/wip/bin/fusedmoe ] && decode wip_r2 build_pack/wip
  decode main_r2 .gpu
fi
for f in "$out"/decode_*.txt; do
  echo "== $(basename "$f")"; grep -E " layer " "$f" | grep -v "packed off" | cut -c1-100
done >> "$out/summary.txt"
cat "$out/summary.txt"
