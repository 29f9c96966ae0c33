#!/usr/bin/env bash
# Session 52, call 1b, right after call1.sh on the same warm machine (carry the same pack):
#  1. the decode tables with the torch peer under the bench's default routing (uniform for every
#     router since session 51: correction biases zero), BF16 then FP8, 1 / 16 / 64 / 256 tokens;
#  2. the old default (--skew bias) for the three bias-router FP8 cases, for the record;
#  3. stages of qwen235-tp8-fp8c and dsv3-tp8-fp8b at 64 / 256 tokens, the permute loading x's
#     first rows before its PDL wait (new default) or after it (FUSEDMOE_PQ_EARLY_X=0).
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
# permute A/B: x's first rows loaded before the PDL wait (PermuteQuantArgs::x_ready, default) or
# after it (FUSEDMOE_PQ_EARLY_X=0), stages (dispatch = route + plan + permute/quantise); AB="0 1"
# runs it (a pack built with the switch)
for v in ${AB:-}; do
  FUSEDMOE_PQ_EARLY_X=$v timeout 60 .gpu/bin/fusedmoe bench --suite layer --tokens 64,256 --packed --stages \
    --cases qwen235-tp8-fp8c,dsv3-tp8-fp8b >> "$out/ab_early_x$v.txt" 2>&1
  echo "== permute early x=$v: rc=$?" >> "$sum"
done
for v in ${AB:-}; do
  echo "-- early x=$v" >> "$sum"
  grep -E " layer | stage dispatch" "$out/ab_early_x$v.txt" | grep -v "packed off" | cut -c1-100 >> "$sum"
done
OUT=$out scripts/bundle_out.sh >> "$sum"
cat "$sum"
