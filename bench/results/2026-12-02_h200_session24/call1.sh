#!/usr/bin/env bash
# Prepared in session 23 (not run): the next session's first device call. Stage HEAD first
# (scripts/build.sh && scripts/stage_gpu.sh && tar -cJf build_pack/gpu_head.tar.xz .gpu).
# (a) the full GPU suite on HEAD (session 23's final device code ran 224/224 in its call 4; HEAD
#     adds host-side review mends only, library SASS identical);
# (b) where the three BF16 decode points still under 0.75 lose (issue #4): qwen235-tp8 at 16 and
#     256 tokens (Swap-AB 8 / 32) and mixtral-tp2 at 256 (normal tiles): stage split, then ncu
#     sections of both GEMMs and stall samples per SASS instruction of the weakest one.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
GPU_TEST_SHARDS=12 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/sass.txt.gz" "$out/run.log"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
B=.gpu/bin/fusedmoe
timeout 60 $B bench --suite layer --cases qwen235-tp8,mixtral-tp2 --tokens 16,256 --stages > "$out/bench_stages.txt" 2>&1
echo "stages rc=$?"; grep -E "layer|stage" "$out/bench_stages.txt" | cut -c1-120
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats --metrics dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum"
for ct in qwen235-tp8:16 qwen235-tp8:256 mixtral-tp2:256; do
  c=${ct%%:*}; t=${ct##*:}
  timeout 90 ncu --clock-control none --launch-count 2 -k "regex:sm90_bf16_grouped_gemm" $S $B bench --suite layer --cases $c --tokens $t > "$out/ncu_${c}_$t.txt" 2>&1
  echo "$c $t rc=$?"
done
for f in "$out"/ncu_*.txt; do echo "== $f"; grep -E "grouped_gemm_kernel|Duration|DRAM Throughput|L2 Cache Throughput|dram__bytes|lookup|Issued Warp|No Eligible|Warp Cycles Per Issued|Grid Size|Achieved Occupancy" "$f" | head -40; gzip -f "$f"; done
# GEMM2 of qwen235-tp8 at 256 (K = 192: an epilogue per 3 K steps), per SASS instruction
timeout 90 ncu --clock-control none --launch-skip 1 --launch-count 1 -k "regex:sm90_bf16_grouped_gemm" --section SourceCounters --import-source no --page source --print-source sass --csv $B bench --suite layer --cases qwen235-tp8 --tokens 256 > "$out/ncu_src_qwen256_g2.csv" 2>&1
echo "src rc=$?"; gzip -f "$out/ncu_src_qwen256_g2.csv"
# (c) the existing knobs on the same points (no code change): GEMM1 weight tiles per CTA, GEMM2's
# balanced schedule forced each way, split-K
timeout 90 $B bench --suite layer --cases qwen235-tp8,mixtral-tp2 --tokens 16,256 --tpc1 1,2,3,4 --balanced --splitk > "$out/bench_knobs.txt" 2>&1
echo "knobs rc=$?"; grep -A12 "variants against" "$out/bench_knobs.txt"
