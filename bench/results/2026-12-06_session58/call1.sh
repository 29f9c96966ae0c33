#!/usr/bin/env bash
# Session 58, call 1: session 57's final code on a GPU (it had not run as a whole) with this session's
# first change (05bbe18: the one-block fused front reports a bad precomputed id through the 64-bit
# least key as the several-block launches do), and the H200 evidence issues #4 / #5 owe if an H200
# comes. Carry ["build_pack/gpu_main.tar.xz"] (staged at 05bbe18).
# First: the changed path's tests.
# H200: vLLM's table (precomputed ids, as vLLM's figures are timed) and the decode tables, then the
#       whole GPU suite, the main job and the torch test.
# other GPU (H100): the suite first, then the FP8 decode points under 0.75 stage by stage.
set -uo pipefail
source scripts/device_prelude.sh
tests_step tests_changed 150 'DispatchApi.*:Forward.PrecomputedAndHashRouting'
# `fusedmoe run` now runs the layer on the GPU through forward() (checked against the float64
# reference, timed): the suite runs the default (dsv3-tp8, FP8 blocks, 4 tokens); these, other
# presets, schemes and sizes.
run_variants() {
  local i=0
  for args in "--preset qwen235-tp8 --tokens 256" "--preset qwen235-tp8 --quant fp8c --tokens 64" \
              "--preset gptoss-tp1 --tokens 16" "--preset qwen3next-tp1 --tokens 100" \
              "--preset dsv3-ep8 --tokens 33" "--preset mixtral-tp2 --tokens 1000" "--preset qwen30-tp1 --tokens 0"; do
    i=$((i + 1))
    [ "$(left)" -lt 60 ] && { echo "run $i skipped ($(left) s left)" >> "$sum"; continue; }
    timeout 120 .gpu/bin/fusedmoe run $args --seed 11 > "$out/run_$i.txt" 2>&1
    echo "run $i ($args): rc=$? $(grep -E 'GPU layer|rel error|time per call' "$out/run_$i.txt" | cut -c1-170 | tr '\n' ' ')" >> "$sum"
  done
  tar -czf "$out/runs.tar.gz" -C "$out" $(cd "$out" && ls run_*.txt) && rm -f "$out"/run_*.txt
}
if grep -q H200 "$sum"; then
  bench_step v_dsv3tp8 90 --suite layer --packed --precomputed --tokens 1,16,256,4096,16384 --cases dsv3-tp8-fp8b
  bench_step v_dsv3ep8 90 --suite layer --packed --precomputed --skew local --local-hint --tokens 1,64,1024,16384 --cases dsv3-ep8-fp8b
  bench_step v_dsv4f 60 --suite layer --packed --precomputed --tokens 1,64,4096 --cases dsv4f-tp4-fp8b
  bench_step v_q235fp8 60 --suite layer --packed --precomputed --tokens 1,256,16384 --cases qwen235-tp8-fp8c,qwen235-tp8
  bench_step v_q235tp4 40 --suite layer --packed --precomputed --tokens 1,1024 --cases qwen235-tp4-fp8b
  bench_step v_q30 60 --suite layer --packed --precomputed --tokens 1,256,16384 --cases qwen30-tp1
  bench_step v_mixtral 60 --suite layer --packed --precomputed --tokens 1,1024,16384 --cases mixtral-tp2
  bench_step v_gptoss 60 --suite layer --packed --precomputed --tokens 1,64,4096 --cases gptoss-tp1
  bench_step decode_fp8 90 --suite layer --tokens 1,16,64,128,256 --packed \
    --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
  bench_step decode_bf16 90 --suite layer --tokens 1,16,64,128,256 --packed \
    --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4,qwen235-tp8,qwen235-tp4,qwen30-tp1,mixtral-tp2,gptoss-tp1
  if [ "$(left)" -gt 250 ]; then suite_step 330; else echo "suite skipped ($(left) s left)" >> "$sum"; fi
  run_variants
else
  suite_step 330
  run_variants
  bench_step dispatch_pre 60 --suite dispatch --tokens 1,4,16,17,64,256
  bench_step st_fp8 120 --suite layer --packed --stages --tokens 16,64,128,256 \
    --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,qwen235-tp4-fp8b,dsv3-ep8-fp8b
fi
mkdir -p "$out/bench" && mv "$out"/v_*.txt "$out"/decode_*.txt "$out"/st_*.txt "$out"/dispatch_*.txt "$out/bench/" 2>/dev/null
tar -czf "$out/bench.tar.gz" -C "$out" bench && rm -rf "$out/bench"
cat "$sum"
