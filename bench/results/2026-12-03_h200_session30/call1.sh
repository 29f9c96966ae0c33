#!/usr/bin/env bash
# Session 30, call 1 (build of the commit in .gpu/COMMIT: the mend of the non-portable cluster opt-in, and the combine's slot
# map prefetch behind FUSEDMOE_COMBINE_PREFETCH, default off; FP8 GEMM trace stamps): (a) the full GPU suite, then the
# combine and layer tests with the prefetch on; (b) diagnosis: per-CTA timelines and stages of the
# decode points under 0.75 or behind vLLM's figure: qwen30-tp1 / mixtral-tp2 at 1-4 tokens (also
# GEMM1 split over 2 / 3 CTAs), qwen235-tp8 (BF16 and fp8c) at 256; (c) the combine prefetch off /
# on alternated (2 rounds) on five cases at 64 / 256 tokens; GEMM2 forced to 2 / 4 / 8 weight tiles per CTA and balanced at 256 tokens (qwen235-tp8 BF16 and fp8c); (d) every case at 1, 2, 4 tokens
# from precomputed ids.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
GPU_TEST_SHARDS=12 timeout 250 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/run.log" "$out/sass.txt.gz"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
FUSEDMOE_COMBINE_PREFETCH=1 timeout 150 .gpu/bin/fusedmoe_gpu_tests --gtest_filter='Combine*:Forward.*Graph*:Forward.DenseSwapAb*' > "$out/prefetch_tests.log" 2>&1
echo "prefetch tests rc=$?"; grep -E "PASSED|FAILED" "$out/prefetch_tests.log" | head -5; gzip -f "$out/prefetch_tests.log"
B=.gpu/bin/fusedmoe
timeout 120 $B bench --suite layer --cases qwen30-tp1,mixtral-tp2 --tokens 1,2,4 --stages --trace --trace-csv "$out/trace_small.csv" > "$out/trace_small.txt" 2>&1
echo "small rc=$?"; grep -E "timeline|front:|gemm[12]:| layer | stage " "$out/trace_small.txt" | sed 's/  */ /g' | cut -c1-230
timeout 100 $B bench --suite layer --cases qwen30-tp1 --tokens 1,2 --ksplits1 2,3 --stages > "$out/ksplits1_small.txt" 2>&1
echo "ksplits1 rc=$?"; grep -E " layer | stage " "$out/ksplits1_small.txt" | sed 's/  */ /g' | cut -c1-120
timeout 120 $B bench --suite layer --cases qwen235-tp8,qwen235-tp8-fp8c --tokens 256 --stages --trace --trace-csv "$out/trace_256.csv" > "$out/trace_256.txt" 2>&1
echo "256 rc=$?"; grep -E "timeline|front:|gemm[12]:| layer | stage " "$out/trace_256.txt" | sed 's/  */ /g' | cut -c1-230
for r in 1 2; do for v in 0 1; do
  FUSEDMOE_COMBINE_PREFETCH=$v timeout 80 $B bench --suite layer --cases qwen235-tp8,dsv3-tp8,gptoss-tp1,qwen235-tp8-fp8c,dsv3-tp8-fp8b --tokens 64,256 > "$out/combine_pf${v}_r$r.txt" 2>&1
  echo "prefetch=$v round $r rc=$?"; grep -E " layer " "$out/combine_pf${v}_r$r.txt" | sed 's/  */ /g' | cut -d" " -f1,8,9 | tr '\n' ';'; echo
done; done
timeout 90 $B bench --suite layer --cases qwen235-tp8-fp8c,qwen235-tp8 --tokens 256 --tpc 2,4,8 --balanced --stages > "$out/tpc_256.txt" 2>&1
echo "tpc rc=$?"; grep -E " layer | stage gemm" "$out/tpc_256.txt" | sed 's/  */ /g' | cut -c1-120
timeout 200 $B bench --suite layer --tokens 1,2,4 --precomputed > "$out/precomputed_1_4.txt" 2>&1
echo "precomputed rc=$?"; grep -E " layer " "$out/precomputed_1_4.txt" | sed 's/  */ /g' | cut -c1-120
gzip -f "$out"/*.csv
