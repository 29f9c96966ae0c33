#!/usr/bin/env bash
# Session 47, device call 1 (carry ["build_pack"], pack of the commit in .gpu/COMMIT):
# (a) the whole GPU suite with FUSEDMOE_SWAP_STSM=1 (every Swap-AB test runs the stmatrix puts),
#     12 shards, memcheck of Swap-AB and the FP8 gathered rows, the main job;
# (b) decode A/B, alternated: stmatrix on / off (two rounds each, BF16 + FP8 cases at 16/64/256
#     tokens, packed weights, stages), FP8 gathered rows on / off (bench --gather, two rounds).
# Each step's logs in its own folder, packed at the end (the device tool returns at most 8 files).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
FUSEDMOE_SWAP_STSM=1 OUT=$out/a GPU_TEST_SHARDS=12 GPU_TEST_TIMEOUT=220 GPU_TEST_FILTER='-StreamProbe.*' \
  SANITIZE=1 SANITIZE_TIMEOUT=100 SANITIZE_FILTER='Fp8GroupedGemm.SwapAbTiles:Forward.SwapAbTiles:Forward.Fp8GatherRows' \
  SASS=0 scripts/gpu_run.sh > /dev/null
{ echo "== a"; cat "$out/a/summary.txt"; } > "$out/summary.txt"
cat "$out/summary.txt"
CB=qwen235-tp8,dsv3-tp8,qwen235-tp4
CF=qwen235-tp8-fp8c,dsv3-tp8-fp8b,qwen235-tp4-fp8b,dsv4f-tp4-fp8b
bench() {  # $1: folder, $2: bench arguments
  OUT=$out/$1 GPU_TEST_FILTER=- SASS=0 MAIN=0 BENCH=layer BENCH_ARGS="$2" timeout 110 scripts/gpu_run.sh > /dev/null
  echo "== $1 (stsm ${FUSEDMOE_SWAP_STSM:-unset}): rc=$?" >> "$out/summary.txt"
}
for r in 1 2; do
  for st in 1 0; do FUSEDMOE_SWAP_STSM=$st bench "ab_r${r}_stsm$st" "--tokens 16,64,256 --stages --packed --cases $CB,$CF"; done
done
for r in 1 2; do bench "gather_r$r" "--tokens 1,16,64,256 --packed --gather --cases $CF"; done
for d in "$out"/ab_*; do
  echo "== $(basename "$d")"
  grep -E " layer |stage gemm" "$d/bench_layer.txt" | grep -v "packed off" |
    awk '{for(i=1;i<=NF;i++) if ($i ~ /^(16|64|256)$/ && $(i+1) ~ /\./) {printf "%s %s %s %s\n", $1, ($2=="stage"?$3:"L"), $i, $(i+1); break}}' | tr '\n' '|'
  echo
done >> "$out/summary.txt"
for d in "$out"/gather_r*; do echo "== $(basename "$d")"; grep -E " layer " "$d/bench_layer.txt" | grep -v "packed off" | cut -c1-160; done >> "$out/summary.txt"
gzip -f "$out/a/gpu_tests.log"
tar -czf "$out/logs.tgz" -C "$out" $(cd "$out" && ls -d a ab_* gather_*) && rm -rf "$out"/a "$out"/ab_* "$out"/gather_*
tail -n +3 "$out/summary.txt" | cut -c1-6000
