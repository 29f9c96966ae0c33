#!/usr/bin/env bash
# Session 39, call 2 (carry ["build_pack"]): the combine with teams of up to 512 threads for rows
# of more than 512 16-byte units (K > 4096: dsv3's 7168 -> 448 threads x 2 units, 8 slots in
# flight, instead of 224 x 4 units, 2 slots), FUSEDMOE_COMBINE_TS=512. Combine GPU tests with it;
# then prefill stages alternated off / on / off / on (dsv3-tp8, dsv3-ep8 at 4096 and 16384), and the
# decode layers at 64 / 256 tokens (the combine splits rows into column chunks there).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
FUSEDMOE_COMBINE_TS=512 timeout 120 $B/fusedmoe_gpu_tests --gtest_filter='*Combine*:Forward.*Dsv3*:Forward.*Graph*' > "$out/combine_tests.log" 2>&1
stamp "combine tests (512) rc=$? $(grep -c '^\[       OK \]' "$out/combine_tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/combine_tests.log") FAILED lines"
grep '^\[  FAILED  \]' "$out/combine_tests.log" | sort -u >> "$out/summary.txt"
for r in 1 2 3 4; do
  ts=$([ $((r % 2)) -eq 0 ] && echo 512 || echo 256)
  FUSEDMOE_COMBINE_TS=$ts timeout 100 $B/fusedmoe bench --suite layer --tokens 4096,16384 --stages --cases dsv3-tp8,dsv3-ep8 > "$out/prefill_r${r}_ts${ts}.txt" 2>&1
  stamp "prefill r$r ts=$ts rc=$?"
  grep -E "layer|combine" "$out/prefill_r${r}_ts${ts}.txt" | grep -v "\[" >> "$out/summary.txt"
done
for ts in 256 512; do
  FUSEDMOE_COMBINE_TS=$ts timeout 100 $B/fusedmoe bench --suite layer --tokens 64,256 --cases dsv3-tp8,dsv3-ep8,dsv3-tp8-fp8b > "$out/decode_ts${ts}.txt" 2>&1
  stamp "decode ts=$ts rc=$?"
  grep -E "layer" "$out/decode_ts${ts}.txt" >> "$out/summary.txt"
done
gzip -f "$out/combine_tests.log"
stamp end
tail -3 "$out/summary.txt"
