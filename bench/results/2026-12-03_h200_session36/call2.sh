#!/usr/bin/env bash
# Session 36, call 2 (carry ["build_pack"]): H re-quantised in the FP8 Swap-AB GEMM1's epilogue
# (ForwardOptions::fused_h_quant, auto on), the fused front at 17-64 tokens with quantised x, and
# the front's late trigger when it quantises x. The full GPU suite (new: Forward.Fp8HQuantInGemm1),
# memcheck on the new test, the FP8 layers with packed weights against "fused h quant off" in one
# run, and the GEMM timelines of two FP8 cases at 16 tokens.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
export PATH=/usr/local/cuda/bin:$PATH
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
for s in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$s timeout 400 $B/fusedmoe_gpu_tests --gtest_filter='-StreamProbe.*' > "$out/shard_$s.log" 2>&1 &
done
wait
cat "$out"/shard_*.log > "$out/gpu_tests.log"; rm -f "$out"/shard_*.log
{ echo "suite: $(grep -c '^\[       OK \]' "$out/gpu_tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/gpu_tests.log") FAILED lines"
  grep '^\[  FAILED  \]' "$out/gpu_tests.log" | sort -u; grep "Fp8HQuantInGemm1 (" "$out/gpu_tests.log"; } >> "$out/summary.txt"
gzip -f "$out/gpu_tests.log"
timeout 150 compute-sanitizer --tool memcheck $B/fusedmoe_gpu_tests --gtest_filter='Forward.Fp8HQuantInGemm1' > "$out/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$out/memcheck.log" | tail -1)" >> "$out/summary.txt"
gzip -f "$out/memcheck.log"
F8=qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
timeout 200 $B/fusedmoe bench --suite layer --tokens 1,4,16,32,64,256 --packed --hq --cases $F8 --json "$out/hq.json" > "$out/hq.txt" 2>&1
timeout 100 $B/fusedmoe bench --suite layer --tokens 16 --packed --hq --stages --trace-csv "$out/trace.csv" --cases qwen235-tp8-fp8c,dsv3-tp8-fp8b > "$out/trace.txt" 2>&1
gzip -f "$out/trace.csv"
{ echo "--- hq"; grep -E "layer" "$out/hq.txt"; tail -3 "$out/hq.txt"; } >> "$out/summary.txt"
head -8 "$out/summary.txt"
