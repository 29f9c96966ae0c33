#!/usr/bin/env bash
# Session 49, call 3 (the warm machine of calls 1-2, same pack): BF16 layers whose fused front
# runs a grouped sigmoid router (dsv3-tp8, dsv3-ep8) at 12-16 tokens, one routing block against
# the split front (FUSEDMOE_FRONT_SPLIT=13, blocks of 4), two alternated rounds; packed weights.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
[ -d .gpu ] || tar -xJf build_pack/gpu_main.tar.xz
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader > "$sum"
for r in 1 2; do
  for v in 0 4; do
    if [ "$v" = 0 ]; then env=(); else env=(FUSEDMOE_FRONT_SPLIT=13 FUSEDMOE_FRONT_SPLIT_TPB=$v); fi
    echo "== round $r split $v" >> "$sum"
    env ${env[@]+"${env[@]}"} timeout 90 .gpu/bin/fusedmoe bench --suite layer --cases dsv3-tp8,dsv3-ep8 --packed \
      --tokens 12,13,16 > "$out/r${r}_s$v.txt" 2>&1
    grep -E " layer " "$out/r${r}_s$v.txt" | grep -v "packed off" | cut -c1-100 >> "$sum"
  done
done
rm -f "$out"/r*_s*.txt
cat "$sum"
