#!/usr/bin/env bash
# Session 46 plan, call 3 (same pack as call 1): the CUTLASS FP8 configurations at prefill, through
# scripts/gpu_run.sh (benchmarks only). FUSEDMOE_CUTLASS_FP8_CONFIG=c,c forces both GEMMs
# (kernels::CutlassFp8Config): 1 = cooperative 128x128 on 1x1 clusters (today's only configuration,
# the auto choice), 2 = the same on 1x2 clusters (each activation tile multicast to the two CTAs of
# neighbouring N tiles: half the activation traffic from L2), 3 = ping-pong 64x128 on 1x2 clusters
# (one warpgroup's epilogue under the other's main loop: GEMM2's short K). The four block-FP8 cases
# and the two row-scaled ones at 4096 / 16384 tokens with the stages (GEMM1 and GEMM2 per
# configuration), the three configurations in rotating order, two rounds. Then the GEMM1 / GEMM2
# mixes the stages suggest are decided from these rows (the auto rule: cutlass_fp8_auto_config()).
# Then the FP8 blockwise GEMM1 with the activation in its epilogue (fused_activation forced on / off,
# bench --fused-act). Last, BF16 (FUSEDMOE_CUTLASS_CONFIG): the cooperative 128x256 on 1x2 clusters
# (config 6, both GEMMs) against the default at 16384 tokens, default / 6 / default / 6. ~500 s.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
CF=dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b,qwen235-tp8-fp8c,qwen235-tp8-fp8t
bench() {  # $1: folder, $2: bench arguments; FUSEDMOE_CUTLASS_{FP8_,}CONFIG as the caller sets them
  OUT=$out/$1 GPU_TEST_FILTER=- SASS=0 MAIN=0 BENCH=layer BENCH_ARGS="$2" timeout 200 scripts/gpu_run.sh > /dev/null
  echo "== $1 (fp8 ${FUSEDMOE_CUTLASS_FP8_CONFIG:-unset}, bf16 ${FUSEDMOE_CUTLASS_CONFIG:-unset}): rc=$?" >> "$out/summary.txt"
}
: > "$out/summary.txt"
for r in 1 2; do
  for c in $( [ $r = 1 ] && echo "1 2 3" || echo "3 2 1" ); do
    FUSEDMOE_CUTLASS_FP8_CONFIG=$c,$c bench "r${r}_c$c" "--tokens 4096,16384 --stages --cases $CF"
  done
done
# FP8 GEMM1 with the activation in its epilogue (ForwardOptions::fused_activation, forced only): the
# bench's "fused act on" / "fused act off" variants of each block-FP8 case, timed in rounds
bench fp8_fused_act "--tokens 4096,16384 --stages --fused-act --cases dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b"
CB=dsv3-tp8,dsv3-ep8,qwen30-tp1,mixtral-tp2
for r in 1 2; do
  bench "bf16_r${r}_default" "--tokens 16384 --stages --cases $CB"
  FUSEDMOE_CUTLASS_CONFIG=6,6 bench "bf16_r${r}_c6" "--tokens 16384 --stages --cases $CB"
done
# per case and token count: layer, GEMM1 and GEMM2 µs of each configuration and round
for d in "$out"/r*_c* "$out"/fp8_fused_act "$out"/bf16_*; do
  echo "== $(basename "$d")"
  grep -E " layer |stage gemm" "$d/bench_layer.txt" |
    awk '{for(i=1;i<=NF;i++) if ($i ~ /^(4096|16384)$/ && $(i+1) ~ /\./) {printf "%s %s %s %s\n", $1, ($2=="stage"?$3:"L"), $i, $(i+1); break}}' | tr '\n' '|'
  echo
done >> "$out/summary.txt"
grep -hE "fused act (on|off)\]" "$out"/fp8_fused_act/bench_layer.txt >> "$out/summary.txt"
tar -czf "$out/logs.tgz" -C "$out" $(cd "$out" && ls -d r*_c* fp8_fused_act bf16_*) && rm -rf "$out"/r*_c* "$out"/fp8_fused_act "$out"/bf16_*
cat "$out/summary.txt" | cut -c1-4000
