#!/usr/bin/env bash
# Planned for session 57 (not run here), on an H200 if one comes (kind nvidia-h200; the H100 has
# come in every call of sessions 55-56). Carry ["build_pack/gpu_main.tar.xz"], restaged at the final
# commit (session 56's final code differs from call 3's build 6d7daef in host code only: the fused
# interleaved activation's auto rule below 128 rows per expert).
# (a) every point of vLLM's table (dsv3-ep8 routed among its local experts with the hint), from
#     precomputed ids as vLLM's figures are timed; gptoss-tp1 now on CUTLASS from 2048 tokens;
# (b) the decode tables (uniform routing, packed weights, 1-256 tokens), FP8 and BF16;
# (c) gptoss-tp1 at 2048 / 3072 / 4096 tokens with the fused activation forced each way (the rule's
#     edge, one run each in session 56);
# (d) the whole GPU suite, the main job and the torch test.
set -uo pipefail
source scripts/device_prelude.sh
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
bench_step gptoss_act 90 --suite layer --packed --fused-act --tokens 2048,3072,4096 --cases gptoss-tp1
mkdir -p "$out/bench" && mv "$out"/v_*.txt "$out"/decode_*.txt "$out"/gptoss_act.txt "$out/bench/" 2>/dev/null
tar -czf "$out/bench.tar.gz" -C "$out" bench && rm -rf "$out/bench"
if [ "$(left)" -gt 250 ]; then suite_step 330; else echo "suite skipped ($(left) s left)" >> "$sum"; fi
cat "$sum"
