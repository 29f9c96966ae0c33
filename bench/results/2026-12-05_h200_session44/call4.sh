#!/usr/bin/env bash
# Session 44, call 4 (carry ["build_pack"]): the Swap-AB epilogues' puts as stmatrix (SwapStage::
# put_matrices, Params::swap_stsm; FUSEDMOE_SWAP_STSM=0 the per-value puts, same binary).
# (a) decode A/B, two rounds each way, BF16 and FP8 at 16 / 64 / 256 tokens (packed weights), stages;
# (b) the GPU suite (12 shards) with stmatrix on (FUSEDMOE_SWAP_STSM=1: the library default is off
# until this call measures it); (c) memcheck of Swap-AB GEMM tests with it.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
CB=qwen235-tp8,dsv3-tp8,qwen235-tp4
CF=qwen235-tp8-fp8c,dsv3-tp8-fp8b,qwen235-tp4-fp8b,dsv4f-tp4-fp8b
for r in 1 2; do
  for st in 1 0; do
    FUSEDMOE_SWAP_STSM=$st timeout 60 $B/fusedmoe bench --suite layer --tokens 16,64,256 --stages --packed --cases $CB,$CF > "$out/ab_r${r}_stsm$st.txt" 2>&1
    stamp "r$r stsm $st rc=$?"
  done
done
export FUSEDMOE_SWAP_STSM=1
for s in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$s timeout 330 $B/fusedmoe_gpu_tests --gtest_filter='-StreamProbe.*' > "$out/shard_$s.log" 2>&1 &
done
wait
cat "$out"/shard_*.log > "$out/gpu_tests.log"; rm -f "$out"/shard_*.log
{ echo "suite: $(grep -c '^\[       OK \]' "$out/gpu_tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/gpu_tests.log") FAILED lines"
  grep '^\[  FAILED  \]' "$out/gpu_tests.log" | sort -u; } >> "$out/summary.txt"
gzip -f "$out/gpu_tests.log"
stamp suite done
timeout 100 compute-sanitizer --tool memcheck $B/fusedmoe_gpu_tests --gtest_filter='Fp8GroupedGemm.SwapAbTiles:Forward.SwapAbTiles:Forward.Fp8HQuantInGemm2Reduced' > "$out/memcheck.log" 2>&1
stamp "memcheck rc=$?: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$out/memcheck.log" | tr '\n' ' ')"
for f in "$out"/ab_*.txt; do echo "== $f"; grep -E " layer |stage gemm" "$f" | grep -v "packed off" | awk '{for(i=1;i<=NF;i++) if ($i ~ /^(16|64|256)$/ && $(i+1) ~ /\./) {printf "%s %s %s %s\n", $1, ($2=="stage"?$3:"L"), $i, $(i+1); break}}' | tr '\n' '|'; echo; done >> "$out/summary.txt"
cat "$out/summary.txt" | cut -c1-3000
