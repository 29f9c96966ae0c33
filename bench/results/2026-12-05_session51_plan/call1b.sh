#!/usr/bin/env bash
# Second half of call1.sh (see there), on the same warm machine: items 2-4, ~4 min.
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
OUT=$out scripts/bundle_out.sh >> "$sum"
cat "$sum"
