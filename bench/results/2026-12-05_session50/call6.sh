#!/usr/bin/env bash
# Session 50, call 6 (carry ["build_pack/gpu_main.tar.xz"], the final build: bench --cases takes
# any preset). The presets outside the suite at decode, three of them with a shared expert folded in
# as one expert in every token (qwen3next-tp1, llama4-scout, nemotron-nano) and kimi-k2-tp8 (FP8
# blocks, 384 experts): layers at 1 / 16 / 64 / 256 tokens and stages at 256; then where one hot
# expert costs qwen235-tp8 at 256 tokens (call 4: 307.7 against 243.4 µs uniform): stages and
# the per-CTA GEMM timeline with --skew onehot against uniform.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
B=.gpu/bin/fusedmoe
timeout 150 $B bench --suite layer --tokens 1,16,64,256 --packed --cases qwen3next-tp1,llama4-scout,nemotron-nano,kimi-k2-tp8 \
  --json "$out/presets.json" > "$out/presets.txt" 2>&1
echo "presets: rc=$?" >> "$sum"
grep -E " layer " "$out/presets.txt" | grep -v "packed off" | cut -c1-120 >> "$sum"
timeout 100 $B bench --suite layer --tokens 256 --packed --stages --cases qwen3next-tp1,llama4-scout,nemotron-nano,kimi-k2-tp8 \
  > "$out/presets_stages.txt" 2>&1
echo "presets stages: rc=$?" >> "$sum"
grep -E " layer | stage " "$out/presets_stages.txt" | cut -c1-120 >> "$sum"
for m in uniform onehot; do
  timeout 60 $B bench --suite layer --tokens 256 --packed --stages --trace --skew $m --cases qwen235-tp8 > "$out/onehot_$m.txt" 2>&1
  echo "qwen235-tp8 $m: rc=$?" >> "$sum"
  grep -E " layer | stage |gemm1:|gemm2:|front:" "$out/onehot_$m.txt" | cut -c1-230 >> "$sum"
done
OUT=$out scripts/bundle_out.sh >> "$sum"
cat "$sum"
