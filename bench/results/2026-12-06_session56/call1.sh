#!/usr/bin/env bash
# Session 56 call 1 (session 55's next_call.sh), on an H200 if one comes (kind nvidia-h200): session 55's call 2
# with dsv3-ep8 given the routing hint (--local-hint: its tokens all route locally, as vLLM's E32
# figure), plus row-scaled FP8 from precomputed ids with the fused front + gathered rows forced (the
# rule takes logits only: qwen235-tp8-fp8c at 1 token 23.66 us from ids against 19.13 from logits).
# Also GPT-OSS on the CUTLASS backend forced (expert biases: b2 added by the combine, session 55;
# its GPU test Forward.CutlassBackendExpertBias runs in the suite, never run before).
# Carry ["build_pack/gpu_main.tar.xz"], restaged at the final commit.
# (a) every point of vLLM's table (FP8 and BF16 cases, 1-16384 tokens), our layer with the router
#     and from precomputed top-k as vLLM's figures are timed (--precomputed); dsv3-ep8 routed among
#     its 32 local experts (--skew local), as vLLM's "E32 top-8" figure;
# (b) the decode tables (uniform routing, packed weights, 1-256 tokens), FP8 and BF16;
# (c) the precomputed-ids FP8 front A/B above;
# (d) the whole GPU suite, the main job and the torch test (GPU tests on the H200).
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
bench_step gptoss_cutlass 90 --suite layer --packed --cutlass --stages --tokens 1024,4096,16384 --cases gptoss-tp1
bench_step pre_fg 60 --suite layer --packed --precomputed --front --gather --tokens 1,4,16 --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t
mkdir -p "$out/bench" && mv "$out"/v_*.txt "$out"/decode_*.txt "$out"/pre_fg.txt "$out"/gptoss_cutlass.txt "$out/bench/" 2>/dev/null
tar -czf "$out/bench.tar.gz" -C "$out" bench && rm -rf "$out/bench"
if [ "$(left)" -gt 250 ]; then suite_step 330; else echo "suite skipped ($(left) s left)" >> "$sum"; fi
cat "$sum"
