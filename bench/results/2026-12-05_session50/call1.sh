#!/usr/bin/env bash
# Plan for the next session (written in session 49, not run): one call on the final code, ideally an
# H200. Carry ["build_pack/gpu_main.tar.xz"] restaged at the final commit (scripts/build.sh &&
# scripts/stage_gpu.sh && rm -f build_pack/gpu_main.tar.xz && tar -cJf build_pack/gpu_main.tar.xz .gpu).
#  1. the whole GPU suite with the BF16 evict_last stores on by default (session 49 ran 109 tests of
#     the grouped GEMMs with them, not the whole suite) and the main job;
#  2. the evict_last store rule on the H200: decode layers at 16 / 64 / 256 tokens with
#     FUSEDMOE_OUT_KEEP_L2=0 against the default, two alternated rounds (session 49 measured it on
#     an H100 only);
#  3. the BF16 combine lead: ncu of the combine kernel in qwen235-tp8's layer at 256 tokens (L2 hit
#     rate of its expert-row loads, its first CTA's start against GEMM2's last CTA).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
for r in 1 2; do
  for k in 0 default; do
    if [ "$k" = default ]; then env=(); else env=(FUSEDMOE_OUT_KEEP_L2=0); fi
    echo "== round $r keep $k" >> "$sum"
    env ${env[@]+"${env[@]}"} timeout 90 .gpu/bin/fusedmoe bench --suite layer --tokens 16,64,256 --packed \
      --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4,qwen235-tp8,qwen235-tp4,qwen30-tp1,mixtral-tp2,gptoss-tp1 > "$out/l_r${r}_$k.txt" 2>&1
    grep -E " layer " "$out/l_r${r}_$k.txt" | grep -v "packed off" | cut -c1-100 >> "$sum"
  done
done
export PATH=/usr/local/cuda/bin:$PATH
if command -v ncu >/dev/null 2>&1; then
  timeout 120 ncu --kernel-name regex:combine --launch-count 3 --section MemoryWorkloadAnalysis --section LaunchStats \
    .gpu/bin/fusedmoe bench --suite layer --tokens 256 --packed --cases qwen235-tp8 > "$out/ncu_combine.txt" 2>&1
  echo "ncu: rc=$?" >> "$sum"
fi
left=$((560 - SECONDS)); [ $left -gt 300 ] && left=300
echo "suite limit ${left}s (started at ${SECONDS}s)" >> "$sum"
OUT=$out/t GPU_TEST_SHARDS=16 GPU_TEST_TIMEOUT=$left GPU_TEST_FILTER='-StreamProbe.*' SASS=0 MAIN=1 \
  scripts/gpu_run.sh > /dev/null
gzip -f "$out/t/gpu_tests.log"
cat "$out/t/summary.txt" >> "$sum"
OUT=$out scripts/bundle_out.sh >> "$sum"
cat "$sum"
