#!/usr/bin/env bash
# Planned for session 59 (not run here): the first device call on session 58's final code. Restage
# first (scripts/build.sh && bash scripts/stage_gpu.sh && git rev-parse --short HEAD > .gpu/COMMIT &&
# tar -cJf build_pack/gpu_main.tar.xz .gpu), carry ["build_pack/gpu_main.tar.xz"], LIMIT=570.
# The final commit changed `fusedmoe run` after its last GPU run (review fixes): the main job and the
# run variants first, then the suite; on an H200 also vLLM's table and the decode tables (the H200
# evidence issues #4 / #5 owe).
set -uo pipefail
source scripts/device_prelude.sh
runs_step 13 "" "--preset qwen30-tp1 --tokens 0" "--preset qwen235-tp8 --quant fp8c --tokens 64" \
  "--preset gptoss-tp1 --tokens 16" "--preset dsv3-ep8 --tokens 33"
if grep -q H200 "$sum"; then
  bench_step v_dsv3tp8 70 --suite layer --packed --precomputed --tokens 1,16,256,4096,16384 --cases dsv3-tp8-fp8b
  bench_step v_q235fp8 50 --suite layer --packed --precomputed --tokens 1,256,16384 --cases qwen235-tp8-fp8c,qwen235-tp8
  bench_step decode_fp8 80 --suite layer --tokens 1,16,64,128,256 --packed \
    --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
  bench_step decode_bf16 80 --suite layer --tokens 1,16,64,128,256 --packed \
    --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4,qwen235-tp8,qwen235-tp4,qwen30-tp1,mixtral-tp2,gptoss-tp1
  mkdir -p "$out/bench" && mv "$out"/v_*.txt "$out"/decode_*.txt "$out/bench/" 2>/dev/null
  tar -czf "$out/bench.tar.gz" -C "$out" bench && rm -rf "$out/bench"
fi
if [ "$(left)" -gt 250 ]; then suite_step 300; else echo "suite skipped ($(left) s left)" >> "$sum"; fi
cat "$sum"
