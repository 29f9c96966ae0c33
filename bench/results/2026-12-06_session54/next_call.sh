#!/usr/bin/env bash
# Planned for the next session (not run here): restage the final commit (scripts/build.sh &&
# scripts/stage_gpu.sh && tar -cJf build_pack/gpu_main.tar.xz .gpu), carry
# ["build_pack/gpu_main.tar.xz"], on an H200 if one comes. The whole GPU suite (its new test
# Forward.Gemm2TokenTile: GEMM2 on its own token tile, never run yet; shards need >= 330 s: the
# longest test takes ~195 s of CPU reference), the main job and the torch test; then GEMM2's own
# token tile on the FP8 points it aims at (qwen235-tp8-fp8c / fp8t and qwen235-tp4-fp8b at 128 /
# 256 tokens, token tile 32 there), and the decode tables (the vLLM comparison wants H200 numbers).
set -uo pipefail
source scripts/device_prelude.sh
suite_step 330
bench_step tile2 60 --suite layer --tile2 16,8 --stages --tokens 128,256 --packed \
  --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,qwen235-tp4-fp8b,qwen235-tp8
bench_step decode_fp8 90 --suite layer --tokens 1,16,64,128,256 --packed \
  --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
bench_step decode_bf16 90 --suite layer --tokens 1,16,64,128,256 --packed \
  --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4,qwen235-tp8,qwen235-tp4,qwen30-tp1,mixtral-tp2,gptoss-tp1
mkdir -p "$out/bench" && mv "$out"/decode_*.txt "$out"/tile2.txt "$out/bench/" 2>/dev/null
tar -czf "$out/bench.tar.gz" -C "$out" bench && rm -rf "$out/bench"
cat "$sum"
