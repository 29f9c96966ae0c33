#!/usr/bin/env bash
# Session 33, call 5 (build of .gpu/COMMIT): block scales loaded a stage ahead in the default FP8 K
# loop (Params::scale_ahead; FUSEDMOE_FP8_SCALE_AHEAD=0 runs the previous order, read once):
# (a) the FP8 GPU tests (default: scale_ahead on); (b) the FP8 cases at 16 / 64 / 256 tokens with
# stages: scale_ahead 1, 0.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
echo "build $(cat .gpu/COMMIT)"
F='Fp8GroupedGemm.*:Forward.Fp8*:Forward.SwapAbTiles:Forward.Balanced*:DispatchApi.DeepSeekV3Fp8BlockPermuted:Forward.SplitK*:Forward.DenseSwapAb:Forward.Cutlass*'
t0=$(date +%s)
for i in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$i timeout 150 .gpu/bin/fusedmoe_gpu_tests --gtest_filter="$F" > "$out/t.$i.log" 2>&1 &
done
wait
cat "$out"/t.*.log > "$out/fp8_tests.log"; rm -f "$out"/t.*.log
np=$(grep -E '^\[  PASSED  \]' "$out/fp8_tests.log" | grep -oE '[0-9]+' | awk '{s+=$1} END {print s+0}')
echo "fp8 tests: $(( $(date +%s) - t0 )) s; passed $np; $(grep -E '^\[  FAILED  \] [A-Za-z]' "$out/fp8_tests.log" | sort -u | head -8 | tr '\n' ' ')"
grep RUN "$out/fp8_tests.log" | awk '{print $4}' | sort > /tmp/r; grep -E "^\[       OK|^\[  FAILED" "$out/fp8_tests.log" | awk '{print $4}' | sort > /tmp/d; echo "unfinished: $(comm -23 /tmp/r /tmp/d | tr '\n' ' ')"
gzip -f "$out/fp8_tests.log"
B=.gpu/bin/fusedmoe
C=qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
i=0
for v in 1 0; do
  i=$((i+1))
  FUSEDMOE_FP8_SCALE_AHEAD=$v timeout 80 $B bench --suite layer --cases $C --tokens 16,64,256 --stages > "$out/fp8_r${i}_sa$v.txt" 2>&1
  echo "run $i scale_ahead=$v rc=$?"; grep -E " layer | gemm[12] " "$out/fp8_r${i}_sa$v.txt" | grep -v "qwen235-tp8-fp8" | sed 's/  */ /g' | sed -E 's/ layer fp8 swap-ab, token tile [0-9]+//' | cut -c1-44
done
