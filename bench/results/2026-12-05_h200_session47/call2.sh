#!/usr/bin/env bash
# Session 47, device call 2 (same pack as call 1): prefill on the H200 and the decode tables.
# (a) CUTLASS FP8 configurations 1 (1x1) and 2 (1x2 clusters), forced on both GEMMs, and the auto
#     rule (unset), 4096 / 16384 tokens with stages, the six FP8 cases, order 1 2 auto 2 1;
# (b) BF16 config 6 (cooperative 128x256 on 1x2 clusters) against the default at 16384 tokens,
#     default / 6 / default / 6;
# (c) the decode tables (packed weights) with the torch._grouped_mm peer column, if time is left.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
CF=dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b,qwen235-tp8-fp8c,qwen235-tp8-fp8t
bench() {  # $1: folder, $2: bench arguments, $3: timeout; FUSEDMOE_* as the caller sets them
  OUT=$out/$1 GPU_TEST_FILTER=- SASS=0 MAIN=0 BENCH=layer BENCH_ARGS="$2" timeout "${3:-120}" scripts/gpu_run.sh > /dev/null
  echo "== $1 (fp8 ${FUSEDMOE_CUTLASS_FP8_CONFIG:-auto}, bf16 ${FUSEDMOE_CUTLASS_CONFIG:-auto}): rc=$?" >> "$out/summary.txt"
}
: > "$out/summary.txt"
i=0
for c in ${CONFIGS:-1 2 auto}; do
  i=$((i + 1))
  if [ $c = auto ]; then bench "p${i}_auto" "--tokens 4096,16384 --stages --cases $CF"
  else FUSEDMOE_CUTLASS_FP8_CONFIG=$c,$c bench "p${i}_c$c" "--tokens 4096,16384 --stages --cases $CF"; fi
done
CB=dsv3-tp8,dsv3-ep8,qwen30-tp1,mixtral-tp2
for r in ${BF16_ROUNDS:-1}; do
  bench "bf16_r${r}_default" "--tokens 16384 --stages --cases $CB"
  FUSEDMOE_CUTLASS_CONFIG=6,6 bench "bf16_r${r}_c6" "--tokens 16384 --stages --cases $CB"
done
for d in "$out"/p* "$out"/bf16_*; do
  echo "== $(basename "$d")"
  grep -E " layer |stage gemm" "$d/bench_layer.txt" |
    awk '{for(i=1;i<=NF;i++) if ($i ~ /^(4096|16384)$/ && $(i+1) ~ /\./) {printf "%s %s %s %s\n", $1, ($2=="stage"?$3:"L"), $i, $(i+1); break}}' | tr '\n' '|'
  echo
done >> "$out/summary.txt"
tar -czf "$out/prefill_logs.tgz" -C "$out" $(cd "$out" && ls -d p* bf16_*) && rm -rf "$out"/p[0-9]* "$out"/bf16_*
[ "${DECODE:-0}" = 1 ] && PEER=1 FUSEDMOE_SWAP_STSM=${STSM:-0} bench decode_fp8 "--tokens 1,16,64,256 --packed --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b" 100
[ "${DECODE:-0}" = 1 ] && PEER=1 FUSEDMOE_SWAP_STSM=${STSM:-0} bench decode_bf16 "--tokens 1,16,64,256 --packed" 100
grep -hE "geometric mean" "$out"/decode_*/bench_layer.txt >> "$out/summary.txt"
cut -c1-5000 "$out/summary.txt"
