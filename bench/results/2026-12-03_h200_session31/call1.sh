#!/usr/bin/env bash
# Session 31, call 1 (13ed215): (a) GPU tests of the new GEMM1 L2 prefetch and the layer tests
# around it; (b) qwen235-tp8 (BF16, GEMM1 gathers x's rows after the fused front) at 1-256 tokens
# with GEMM1's first weight stages prefetched into L2 while the front runs, 0 / 8 / 16 / 32 / 48 MB
# forced (two rounds, stages in the first), and the timeline at 256 tokens with 0 / 32 MB;
# (c) session 30's call 4: GEMM1 at 3 / 4 weight tiles per CTA and the dense instances forced, at
# 4 / 8 tokens (qwen30-tp1, qwen235-tp4), with stages.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin/fusedmoe
F='Forward.Gemm1L2Prefetch:Forward.OverlappedLaunches*:Forward.GraphReplay*:Forward.Gemm1SplitKOnly:Forward.SuiteShapes*:Forward.DenseSwapAb'
t0=$(date +%s)
for i in 0 1 2 3; do GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 200 .gpu/bin/fusedmoe_gpu_tests --gtest_filter="$F" > "$out/t$i.log" 2>&1 & done; wait
cat "$out"/t?.log > "$out/tests.log"; rm -f "$out"/t?.log
echo "tests $(( $(date +%s) - t0 )) s: $(grep -E '^\[  PASSED  \]' "$out/tests.log" | tr '\n' ' ') $(grep -E '^\[  FAILED  \]' "$out/tests.log" | sort -u | tr '\n' ' ')"
grep -E "Failure|differs" "$out/tests.log" | head -5; gzip -f "$out/tests.log"
timeout 150 $B bench --suite layer --cases qwen235-tp8 --tokens 1,4,16,64,128,256 --l2pf 0,8,16,32,48 --stages > "$out/l2pf_r1.txt" 2>&1
echo "l2pf r1 rc=$?"; grep -E " layer | stage gemm1" "$out/l2pf_r1.txt" | sed 's/  */ /g' | cut -c1-120
timeout 100 $B bench --suite layer --cases qwen235-tp8 --tokens 16,64,128,256 --l2pf 0,16,32,48,0 > "$out/l2pf_r2.txt" 2>&1
echo "l2pf r2 rc=$?"; grep -E " layer " "$out/l2pf_r2.txt" | sed 's/  */ /g' | cut -c1-110
timeout 100 $B bench --suite layer --cases qwen235-tp8 --tokens 256 --l2pf 0,32 --trace --trace-csv "$out/trace_256.csv" > "$out/trace_256.txt" 2>&1
echo "trace rc=$?"; grep -E "timeline|front:|gemm[12]:| layer " "$out/trace_256.txt" | sed 's/  */ /g' | cut -c1-230
gzip -f "$out"/*.csv
timeout 120 $B bench --suite layer --cases qwen30-tp1,qwen235-tp4 --tokens 4,8 --tpc1 3,4 --dense --stages > "$out/tpc1_small.txt" 2>&1
echo "tpc1 rc=$?"; grep -E " layer | stage gemm1" "$out/tpc1_small.txt" | sed 's/  */ /g' | cut -c1-110
