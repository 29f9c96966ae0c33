#!/usr/bin/env bash
# Session 49, call 1 (one H200 call; carry ["build_pack/gpu_main.tar.xz"], staged at this session's
# code): session 48's plan (bench/results/2026-12-05_session49_plan/call1.sh) with an experiment in
# front of it.
#  0. the fused front at 2-16 tokens on several routing blocks (FUSEDMOE_FRONT_SPLIT=2, blocks of
#     FUSEDMOE_FRONT_SPLIT_TPB = 1 / 2 / 4 tokens) against one block of 16 warps: the front's GPU
#     tests under each, then `bench --suite dispatch` at 2-16 tokens alternated (default first and last);
#  1. decode tables with the torch peer (BF16 and FP8, 1-256 tokens, packed weights), the first
#     with finite FP8 bench data (a `warning` line would name non-finite outputs);
#  2. stages at 256 tokens for dsv3-tp8-fp8b, qwen235-tp8-fp8c, qwen235-tp8 (BF16);
#  3. the whole GPU suite (16 shards; its limit from the time left) and the main job.
# Everything but summary.txt comes back in bundle.tar.gz (scripts/bundle_out.sh).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
# 0. split front
for tpb in 1 2 4; do
  FUSEDMOE_FRONT_SPLIT=2 FUSEDMOE_FRONT_SPLIT_TPB=$tpb timeout 90 .gpu/bin/fusedmoe_gpu_tests \
    --gtest_filter='DispatchApi.*Front*:DispatchApi.DeviceTokenCount*' > "$out/split_tests_tpb$tpb.log" 2>&1
  echo "split tpb $tpb tests: rc=$? $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]' "$out/split_tests_tpb$tpb.log" | tr '\n' ' ')" >> "$sum"
done
i=0
for v in 0 1 2 4 0 2; do
  i=$((i + 1))
  if [ "$v" = 0 ]; then env=(); else env=(FUSEDMOE_FRONT_SPLIT=2 FUSEDMOE_FRONT_SPLIT_TPB=$v); fi
  env ${env[@]+"${env[@]}"} timeout 60 .gpu/bin/fusedmoe bench --suite dispatch --tokens 2,3,4,8,12,16 \
    > "$out/split_r${i}_tpb$v.txt" 2>&1
  echo "split bench r$i tpb $v: rc=$? at ${SECONDS}s" >> "$sum"
done
# 1-3: session 48's plan
OUT=$out/fp8 PEER=1 GPU_TEST_FILTER=- SASS=0 MAIN=0 BENCH=layer \
  BENCH_ARGS="--tokens 1,16,64,256 --packed --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b" \
  timeout 150 scripts/gpu_run.sh > /dev/null
OUT=$out/bf16 PEER=1 GPU_TEST_FILTER=- SASS=0 MAIN=0 BENCH=layer BENCH_ARGS="--tokens 1,16,64,256 --packed" \
  timeout 150 scripts/gpu_run.sh > /dev/null
for s in fp8 bf16; do cp "$out/$s/bench_layer.txt" "$out/decode_$s.txt"; rm -rf "$out/$s"; done
timeout 60 .gpu/bin/fusedmoe bench --suite layer --tokens 256 --packed --stages \
  --cases dsv3-tp8-fp8b,qwen235-tp8-fp8c,qwen235-tp8 > "$out/stages.txt" 2>&1
left=$((560 - SECONDS)); [ $left -gt 300 ] && left=300
echo "suite limit ${left}s (started at ${SECONDS}s)" >> "$sum"
OUT=$out/t GPU_TEST_SHARDS=16 GPU_TEST_TIMEOUT=$left GPU_TEST_FILTER='-StreamProbe.*' SASS=0 MAIN=1 \
  scripts/gpu_run.sh > /dev/null
gzip -f "$out/t/gpu_tests.log"
cat "$out/t/summary.txt" >> "$sum"
for f in "$out"/decode_*.txt "$out/stages.txt"; do
  echo "== $(basename "$f")"; grep -E " layer |stage | warning " "$f" | grep -v "packed off" | cut -c1-120
done >> "$sum"
for f in "$out"/split_r*.txt; do
  echo "== $(basename "$f")"; grep -E "token-order \(|route\+plan \(" "$f" | cut -c1-110; grep -E "T=.*(token-order|route\+plan):" "$f" | cut -c1-150
done >> "$sum"
OUT=$out scripts/bundle_out.sh
cat "$sum"
