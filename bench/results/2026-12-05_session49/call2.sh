#!/usr/bin/env bash
# Session 49, call 2 (the warm machine of call 1, same pack): the split front's crossover for
# dsv3 + FP8 at 10-16 tokens, blocks of 4 and 8 tokens against one block, two alternated rounds.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
[ -d .gpu ] || tar -xJf build_pack/gpu_main.tar.xz
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader > "$sum"
for r in 1 2; do
  for v in 0 4 8; do
    if [ "$v" = 0 ]; then env=(); else env=(FUSEDMOE_FRONT_SPLIT=2 FUSEDMOE_FRONT_SPLIT_TPB=$v); fi
    echo "== round $r tpb $v" >> "$sum"
    env ${env[@]+"${env[@]}"} timeout 60 .gpu/bin/fusedmoe bench --suite dispatch --cases dsv3-routing \
      --tokens 10,11,12,13,14,15,16 > "$out/r${r}_tpb$v.txt" 2>&1
    grep -E "token-order \(" "$out/r${r}_tpb$v.txt" | cut -c1-80 >> "$sum"
    grep -E "T=.*token-order:" "$out/r${r}_tpb$v.txt" | sed 's/.*T=/T=/' | cut -c1-170 >> "$sum"
  done
done
rm -f "$out"/r*_tpb*.txt
cat "$sum"
