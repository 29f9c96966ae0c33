#!/usr/bin/env bash
# Session 36, call 1 (carry ["build_pack"], after scripts/stage_gpu.sh && tar -cJf build_pack/gpu_head.tar.xz .gpu):
# 1. the full GPU suite on session 35's final commit (its device code is byte-identical to 46c6d74,
#    230/230 there; the host changes since: packed images only where a reduction fills its last K
#    step, in the launchers; the packed tests' new shapes);
# 2. qwen235-tp8 FP8 layers with packed weights under that rule (GEMM2, N = 192, stays on the boxes);
# 3. the fused front against the separate router / plan / quantiser on the FP8 cases at 1-64 tokens
#    (the rule "separate with quantised x up to 64 tokens" dates from session 15), packed weights;
# 4. per-stage times and the GEMMs' per-CTA timelines of two FP8 cases at 16 and 256 tokens;
# 5. ncu (sections + SASS stall samples) of both FP8 GEMMs of qwen235-tp8-fp8c at 256 tokens.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
for s in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$s timeout 400 $B/fusedmoe_gpu_tests --gtest_filter='-StreamProbe.*' > "$out/shard_$s.log" 2>&1 &
done
wait
cat "$out"/shard_*.log > "$out/gpu_tests.log"; rm -f "$out"/shard_*.log
{ echo "suite: $(grep -c '^\[       OK \]' "$out/gpu_tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/gpu_tests.log") FAILED lines"
  grep '^\[  FAILED  \]' "$out/gpu_tests.log" | sort -u; } >> "$out/summary.txt"
gzip -f "$out/gpu_tests.log"
F8=qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
timeout 120 $B/fusedmoe bench --suite layer --tokens 1,16,64,256 --packed --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t > "$out/packed_qwen235_fp8.txt" 2>&1
timeout 200 $B/fusedmoe bench --suite layer --tokens 1,4,16,32,64 --packed --front --cases $F8 > "$out/front.txt" 2>&1
timeout 120 $B/fusedmoe bench --suite layer --tokens 16,256 --packed --stages --trace-csv "$out/trace.csv" --cases qwen235-tp8-fp8c,dsv3-tp8-fp8b > "$out/trace.txt" 2>&1
gzip -f "$out/trace.csv"
export PATH=/usr/local/cuda/bin:$PATH
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --metrics dram__bytes_read.sum,dram__bytes_write.sum"
timeout 100 ncu --clock-control none -k regex:sm90_fp8_grouped_gemm_kernel --launch-count 2 $S $B/fusedmoe bench --suite layer --cases qwen235-tp8-fp8c --tokens 256 --packed > "$out/ncu.txt" 2>&1
echo "ncu rc=$?" >> "$out/summary.txt"
timeout 110 ncu --clock-control none -k regex:sm90_fp8_grouped_gemm_kernel --launch-count 2 --section SourceCounters --import-source no --page source --print-source sass --csv $B/fusedmoe bench --suite layer --cases qwen235-tp8-fp8c --tokens 256 --packed > "$out/ncu_src.csv" 2>&1
echo "src rc=$?" >> "$out/summary.txt"
gzip -f "$out/ncu_src.csv"
{ echo "--- packed qwen235-tp8 fp8"; grep -E "layer" "$out/packed_qwen235_fp8.txt"
  echo "--- front"; grep -E "layer" "$out/front.txt" | head -200; } >> "$out/summary.txt"
tail -4 "$out/summary.txt"
