#!/usr/bin/env bash
# Session 46, device call B (same pack as call A): the CUTLASS FP8 configurations and the FP8 GEMM1
# with the activation in its epilogue.
# (d) the configurations' kernel tests under memcheck (CutlassFp8Gemm.*Ragged*, GatedGemm1);
# (e) the FP8 layer tests on the CUTLASS backend with configurations 2 and 3 forced on both GEMMs
#     (FUSEDMOE_CUTLASS_FP8_CONFIG=c,c);
# (f) prefill speed: the three configurations, rotated (1 2 3), 4096 / 16384 tokens, stages, the six
#     FP8 suite cases; then the fused GEMM1 on / off (bench --fused-act) on the block-FP8 cases.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
: > "$out/summary.txt"
OUT=$out/d GPU_TEST_SHARDS=1 GPU_TEST_TIMEOUT=60 GPU_TEST_FILTER='CutlassFp8Gemm.RejectsAConfigOutOfRange' \
  SANITIZE=1 SANITIZE_TIMEOUT=150 SANITIZE_FILTER='CutlassFp8Gemm.BlockwiseEveryConfigRaggedGroups:CutlassFp8Gemm.GatedGemm1EveryPairing' \
  SASS=0 MAIN=0 scripts/gpu_run.sh > /dev/null
echo "== d"; cat "$out/d/summary.txt" >> "$out/summary.txt"
CF='Forward.CutlassBackendFp8*:Forward.CutlassFp8FusedActivation:Forward.Fp8LargeTokenCounts'
for c in 2 3; do
  FUSEDMOE_CUTLASS_FP8_CONFIG=$c,$c OUT=$out/e$c GPU_TEST_SHARDS=6 GPU_TEST_TIMEOUT=120 GPU_TEST_FILTER="$CF" SASS=0 MAIN=0 \
    scripts/gpu_run.sh > /dev/null
  { echo "== e$c"; cat "$out/e$c/summary.txt"; } >> "$out/summary.txt"
done
CASES=dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b,qwen235-tp8-fp8c,qwen235-tp8-fp8t
bench() {  # $1: folder, $2: bench arguments; FUSEDMOE_CUTLASS_FP8_CONFIG as the caller sets it
  OUT=$out/$1 GPU_TEST_FILTER=- SASS=0 MAIN=0 BENCH=layer BENCH_ARGS="$2" timeout 150 scripts/gpu_run.sh > /dev/null
  echo "== $1 (fp8 config ${FUSEDMOE_CUTLASS_FP8_CONFIG:-auto}): rc=$?" >> "$out/summary.txt"
}
for c in 1 2 3; do FUSEDMOE_CUTLASS_FP8_CONFIG=$c,$c bench "c$c" "--tokens 4096,16384 --stages --cases $CASES"; done
bench fused "--tokens 4096,16384 --stages --fused-act --cases dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b"
for d in "$out"/c1 "$out"/c2 "$out"/c3 "$out"/fused; do
  echo "== $(basename "$d")"
  grep -E " layer |stage gemm" "$d/bench_layer.txt" |
    awk '{for(i=1;i<=NF;i++) if ($i ~ /^(4096|16384)$/ && $(i+1) ~ /\./) {printf "%s %s %s %s\n", $1, ($2=="stage"?$3:"L"), $i, $(i+1); break}}' | tr '\n' '|'
  echo
done >> "$out/summary.txt"
grep -hE "cutlass .*rel_err|FAILED" "$out"/d/*.log "$out"/e*/gpu_tests.log 2>/dev/null | head -40 > "$out/kernel_lines.txt"
tar -czf "$out/logs.tgz" -C "$out" d e2 e3 c1 c2 c3 fused && rm -rf "$out"/d "$out"/e2 "$out"/e3 "$out"/c1 "$out"/c2 "$out"/c3 "$out"/fused
cut -c1-3500 "$out/summary.txt"
