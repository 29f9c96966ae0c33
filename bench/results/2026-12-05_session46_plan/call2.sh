#!/usr/bin/env bash
# Session 46 plan, call 2 (same pack as call 1): speed, through scripts/gpu_run.sh (benchmarks only).
# (a) the stmatrix Swap-AB epilogue: FUSEDMOE_SWAP_STSM=1 / 0 in alternating runs (two each), BF16
#     and FP8 decode cases at 16 / 64 / 256 tokens, packed weights, with the stages (GEMM2 at 256
#     tokens is where it should show: FP8 at 48-67 % of its floor, BF16 qwen235-tp8 at 70.5 %);
# (b) session 45's FP8 gathered rows: the bench's "gather on" / "gather off" variants, twice;
# (c) the decode tables with stmatrix on, the torch._grouped_mm peer column (PEER=1), for the issue
#     numbers (#4: BF16 >= 0.75 at 16-256 tokens; #5: FP8).
# Each run's logs in its own folder, packed at the end (the device tool returns at most 8 files). ~400 s.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
CB=qwen235-tp8,dsv3-tp8,qwen235-tp4
CF=qwen235-tp8-fp8c,dsv3-tp8-fp8b,qwen235-tp4-fp8b,dsv4f-tp4-fp8b
bench() {  # $1: folder, $2: bench arguments; the environment as the caller sets it
  OUT=$out/$1 GPU_TEST_FILTER=- SASS=0 MAIN=0 BENCH=layer BENCH_ARGS="$2" timeout 150 scripts/gpu_run.sh > /dev/null
  echo "== $1 (${FUSEDMOE_SWAP_STSM:-unset}): rc=$?" >> "$out/summary.txt"
}
: > "$out/summary.txt"
for r in 1 2; do
  for st in 1 0; do FUSEDMOE_SWAP_STSM=$st bench "ab_r${r}_stsm$st" "--tokens 16,64,256 --stages --packed --cases $CB,$CF"; done
done
for r in 1 2; do FUSEDMOE_SWAP_STSM=1 bench "gather_r$r" "--tokens 16,64,256 --packed --gather --cases $CF"; done
export FUSEDMOE_SWAP_STSM=1
PEER=1 bench decode_fp8 "--tokens 1,16,64,256 --packed --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b"
PEER=1 bench decode_bf16 "--tokens 1,16,64,256 --packed"
for d in "$out"/ab_*; do
  echo "== $(basename "$d")"
  grep -E " layer |stage gemm" "$d/bench_layer.txt" | grep -v "packed off" |
    awk '{for(i=1;i<=NF;i++) if ($i ~ /^(16|64|256)$/ && $(i+1) ~ /\./) {printf "%s %s %s %s\n", $1, ($2=="stage"?$3:"L"), $i, $(i+1); break}}' | tr '\n' '|'
  echo
done >> "$out/summary.txt"
grep -hE "gather on\]:|gather off\]:" "$out"/gather_r*/bench_layer.txt >> "$out/summary.txt"
grep -hE "geometric mean" "$out"/decode_*/bench_layer.txt >> "$out/summary.txt"
tar -czf "$out/logs.tgz" -C "$out" $(cd "$out" && ls -d ab_* gather_* decode_*) && rm -rf "$out"/ab_* "$out"/gather_* "$out"/decode_*
cat "$out/summary.txt" | cut -c1-3000
