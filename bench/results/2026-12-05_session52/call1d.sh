#!/usr/bin/env bash
# Session 52: after call1c.sh on the same warm machine (carry the same pack): the torch peer on the
# decode points (its JSON; the ratios against call1c's tables are taken here, same machine), the
# bias-router FP8 cases with the old skewed routing (--skew bias), the bias-router BF16 token tiles
# forced (crossover suite, uniform routing), and the permute A/B (x's first rows before the PDL
# wait, the default, or after it: FUSEDMOE_PQ_EARLY_X=0), stages at 64 / 256 tokens.
set -uo pipefail
start=$(date +%s)
left() { echo $((575 - ($(date +%s) - start))); }
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
run() {  # name timeout env args...
  local name=$1 t=$2 env=$3; shift 3
  local l; l=$(left)
  if [ "$l" -lt 30 ]; then echo "== $name: skipped (${l} s left)" >> "$sum"; return; fi
  [ "$t" -gt $((l - 10)) ] && t=$((l - 10))
  env $env timeout "$t" .gpu/bin/fusedmoe bench "$@" > "$out/$name.txt" 2>&1
  echo "== $name: rc=$? at $(( $(date +%s) - start )) s" >> "$sum"
  grep -E " layer | stage dispatch|ratio|faster at" "$out/$name.txt" | grep -v "packed off" | cut -c1-130 >> "$sum"
}
run ab_early_x0 70 FUSEDMOE_PQ_EARLY_X=0 --suite layer --tokens 64,256 --packed --stages --cases qwen235-tp8-fp8c,dsv3-tp8-fp8b
run ab_early_x1 70 FUSEDMOE_PQ_EARLY_X=1 --suite layer --tokens 64,256 --packed --stages --cases qwen235-tp8-fp8c,dsv3-tp8-fp8b
run decode_fp8_bias 90 X=1 --suite layer --tokens 16,64,256 --packed --skew bias --cases dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b
run crossover_bias_bf16 110 X=1 --suite crossover --tokens 64,256 --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4
l=$(left)
if [ "$l" -gt 60 ]; then
  timeout $((l - 5)) /opt/torch/.venv/bin/python3 bench/peers/torch_grouped_mm.py --tokens 1,16,64,256 --json "$out/peer.json" > "$out/peer.txt" 2>&1
  echo "peer: rc=$?" >> "$sum"
fi
OUT=$out scripts/bundle_out.sh >> "$sum"
cat "$sum"
