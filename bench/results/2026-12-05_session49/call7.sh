#!/usr/bin/env bash
# Session 49, call 7 (pack a413b02: the final library + the combine chunk switch, unset here): does
# the FP8 combine stage owe its ~7 us (against BF16's ~10-14 at the same shape) to its blocks being
# placed in GEMM2's long tail under PDL? Stages with PDL forced on / off for qwen235-tp8-fp8c and
# qwen235-tp8 at 256 tokens, two rounds.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
[ -d .gpu ] || tar -xJf build_pack/gpu_main.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
for r in 1 2; do
  echo "== round $r" >> "$sum"
  timeout 90 .gpu/bin/fusedmoe bench --suite layer --tokens 256 --packed --stages --pdl \
    --cases qwen235-tp8-fp8c,qwen235-tp8 > "$out/pdl_r$r.txt" 2>&1
  grep -E " layer |stage gemm2|stage combine" "$out/pdl_r$r.txt" | cut -c1-110 >> "$sum"
done
rm -f "$out"/pdl_r*.txt
cat "$sum"
