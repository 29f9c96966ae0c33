#!/usr/bin/env bash
# Session 52, call 1b, right after call1.sh on the same warm machine (carry the same pack):
#  1. the decode tables with the torch peer under the bench's default routing (uniform for every
#     router since session 51: correction biases zero), BF16 then FP8, 1 / 16 / 64 / 256 tokens;
#  2. the old default (--skew bias) for the three bias-router FP8 cases, for the record;
#  3. the stages of dsv3-tp8-fp8b / dsv4f-tp4-fp8b at 256 tokens;
#  4. the bias-router BF16 cases with each Swap-AB token tile forced (crossover suite) at 64 and
#     256 tokens: the oracle gives them 8x the expected rows (tuned on skewed loads), 2x otherwise.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
py=/opt/torch/.venv/bin/python3
$py bench/peers/torch_grouped_mm.py --tokens 1,16,64,256 --json /tmp/peer.json > "$out/peer.txt" 2>&1
echo "peer: rc=$?" >> "$sum"
timeout 150 .gpu/bin/fusedmoe bench --suite layer --tokens 1,16,64,256 --packed --peer /tmp/peer.json \
  --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4,qwen235-tp8,qwen235-tp4,qwen30-tp1,mixtral-tp2,gptoss-tp1 > "$out/decode_bf16.txt" 2>&1
echo "== bf16: rc=$?" >> "$sum"
grep -E " layer " "$out/decode_bf16.txt" | grep -v "packed off" | cut -c1-150 >> "$sum"
timeout 150 .gpu/bin/fusedmoe bench --suite layer --tokens 1,16,64,256 --packed --peer /tmp/peer.json \
  --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b > "$out/decode_fp8.txt" 2>&1
echo "== fp8: rc=$?" >> "$sum"
grep -E " layer " "$out/decode_fp8.txt" | grep -v "packed off" | cut -c1-150 >> "$sum"
timeout 90 .gpu/bin/fusedmoe bench --suite layer --tokens 16,64,256 --packed --skew bias \
  --cases dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b > "$out/decode_fp8_bias.txt" 2>&1
echo "== fp8 --skew bias: rc=$?" >> "$sum"
grep -E " layer " "$out/decode_fp8_bias.txt" | grep -v "packed off" | cut -c1-120 >> "$sum"
# stages of the FP8 point nearest vLLM's figure under uniform routing (dsv3-tp8-fp8b at 256 tokens)
timeout 60 .gpu/bin/fusedmoe bench --suite layer --tokens 256 --packed --stages --cases dsv3-tp8-fp8b,dsv4f-tp4-fp8b \
  > "$out/stages_fp8.txt" 2>&1
echo "== fp8 stages at 256 tokens: rc=$?" >> "$sum"
grep -E " layer | stage " "$out/stages_fp8.txt" | grep -v "packed off" | cut -c1-120 >> "$sum"
timeout 110 .gpu/bin/fusedmoe bench --suite crossover --tokens 64,256 --packed \
  --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4 > "$out/crossover_bias_bf16.txt" 2>&1
echo "== crossover (bias routers, BF16, uniform): rc=$?" >> "$sum"
grep -E "ratio|faster" "$out/crossover_bias_bf16.txt" >> "$sum"
grep -E " swap-ab | normal " "$out/crossover_bias_bf16.txt" | cut -c1-110 >> "$sum"
OUT=$out scripts/bundle_out.sh >> "$sum"
cat "$sum"
