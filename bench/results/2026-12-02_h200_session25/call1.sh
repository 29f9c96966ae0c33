#!/usr/bin/env bash
# Session 25, call 1 (carry ["build_pack"]; build_pack/gpu_s25a.tar.xz = the staged build of the
# commit in .gpu/COMMIT): (a) the full GPU suite; (b) the combine's certified float32 path and
# column chunks against session 24's combine (FUSEDMOE_COMBINE=3: float64 everywhere, old chunk
# rule), the decode table alternated twice; (c) GEMM1's L2 prefetch of leading K steps on
# qwen235-tp8 (gathered rows) at 16-256 tokens; (d) the GEMMs' per-CTA timeline at 256 tokens.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_s25a.tar.xz
GPU_TEST_SHARDS=12 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/sass.txt.gz" "$out/run.log"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure|\[info\]" | head -12
B=.gpu/bin/fusedmoe
for i in 1 2; do
  for m in 0 3; do
    echo "==== run $i FUSEDMOE_COMBINE=$m" >> "$out/bench_combine.txt"
    FUSEDMOE_COMBINE=$m timeout 100 $B bench --suite layer --tokens 1,16,64,256 >> "$out/bench_combine.txt" 2>&1
    echo "combine $i mode $m rc=$?"
  done
done
awk '/^====/{tag=$3" "$4} /^(qwen|dsv|mix|gpt)/{print tag, $1, $(NF-5), $(NF-4)}' "$out/bench_combine.txt" |
  awk '{k=$3" "$4; v[k" "$2]=v[k" "$2]" "$5} END{for (x in v) print x, v[x]}' | sort | column -t
timeout 120 $B bench --suite layer --cases qwen235-tp8 --tokens 16,32,64,128,256 --l2pf 1,2,3,4,6,8 > "$out/bench_l2pf.txt" 2>&1
echo "l2pf rc=$?"; grep -E "^qwen" "$out/bench_l2pf.txt" | cut -c1-110
timeout 60 $B bench --suite layer --cases qwen235-tp8 --tokens 256 --l2pf 0,3 --stages >> "$out/bench_l2pf.txt" 2>&1
echo "l2pf stages rc=$?"; grep -E "^qwen" "$out/bench_l2pf.txt" | tail -16 | cut -c1-110
timeout 60 $B bench --suite layer --cases qwen235-tp8 --tokens 256 --l2pf 3 --trace-csv "$out/trace.csv" > "$out/bench_trace.txt" 2>&1
echo "trace rc=$?"; grep -vE "^(qwen|command)" "$out/bench_trace.txt" | tail -12; gzip -f "$out/trace.csv"
# (e) the FP8 GEMMs at 256 tokens under ncu (sections; SASS stall samples of dsv3-tp8-fp8b's GEMM1)
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats --metrics dram__bytes_read.sum"
for c in dsv3-tp8-fp8b qwen235-tp8-fp8c; do
  echo "==== $c 256" >> "$out/ncu_fp8.txt"
  timeout 90 ncu --clock-control none --launch-count 2 -k "regex:sm90_fp8_grouped_gemm" $S $B bench --suite layer --cases $c --tokens 256 >> "$out/ncu_fp8.txt" 2>&1
  echo "ncu $c rc=$?"
done
grep -E "^====|grouped_gemm_kernel|Duration|DRAM Throughput|dram__bytes|Issued Warp|No Eligible|Warp Cycles Per Issued|Grid Size|Block Size|Registers Per|Achieved Occupancy|Stall" "$out/ncu_fp8.txt" | head -60; gzip -f "$out/ncu_fp8.txt"
timeout 90 ncu --clock-control none --launch-count 1 -k "regex:sm90_fp8_grouped_gemm" --section SourceCounters --import-source no --page source --print-source sass --csv $B bench --suite layer --cases dsv3-tp8-fp8b --tokens 256 > "$out/ncu_src_fp8_g1.csv" 2>&1
echo "src rc=$?"; gzip -f "$out/ncu_src_fp8_g1.csv"
