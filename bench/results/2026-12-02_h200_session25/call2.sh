#!/usr/bin/env bash
# Session 25, call 2 (carry ["build_pack"]): build_pack/gpu_new.tar.xz = the staged build of the
# commit in its .gpu/COMMIT (the FP8 Swap-AB K loop with two stages on the tensor core and the
# block scales loaded a K block ahead); build_pack/gpu_old.tar.xz = call 1's build a919469 without
# its test binary, run with FUSEDMOE_COMBINE=3 (session 24's combine; its FP8 kernels = session
# 24's). (a) the full GPU suite on the new build; (b) the FP8 decode table old / new / old / new;
# (c) stages of two FP8 cases at 64 / 256, old and new; (d) ncu of the new FP8 GEMMs at 256.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_new.tar.xz
GPU_TEST_SHARDS=12 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/sass.txt.gz" "$out/run.log"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -12
F=qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
run_b() {  # $1 = old|new, rest: bench args
  local b=$1; shift
  rm -rf .gpu; tar -xJf build_pack/gpu_$b.tar.xz
  FUSEDMOE_COMBINE=3 timeout 100 .gpu/bin/fusedmoe bench "$@"
}
for i in 1 2; do
  for b in old new; do
    echo "==== run $i $b" >> "$out/bench_fp8.txt"
    run_b $b --suite layer --cases $F --tokens 1,16,64,256 >> "$out/bench_fp8.txt" 2>&1
    echo "fp8 $i $b rc=$?"
  done
done
awk '/^====/{tag=$3"-"$4} /^(qwen|dsv)/ && / layer /{n=NF; print tag, $1, $(n-5), $(n-4), $(n-1)}' "$out/bench_fp8.txt" |
  awk '{k=$2" "$3; v[k]=v[k]" "$1":"$4; f[k]=$5} END{for (x in v) print x, v[x], "floor%(last):", f[x]}' | sort -k1,1 -k2n
for b in old new; do
  echo "==== stages $b" >> "$out/bench_stages.txt"
  run_b $b --suite layer --cases dsv3-tp8-fp8b,qwen235-tp8-fp8c --tokens 64,256 --stages >> "$out/bench_stages.txt" 2>&1
  echo "stages $b rc=$?"
done
grep -E "^====|stage gemm|layer" "$out/bench_stages.txt" | cut -c1-110
rm -rf .gpu; tar -xJf build_pack/gpu_new.tar.xz; B=.gpu/bin/fusedmoe
S="--section SpeedOfLight --section WarpStateStats --section LaunchStats --metrics dram__bytes_read.sum"
for c in dsv3-tp8-fp8b qwen235-tp8-fp8c; do
  echo "==== $c 256" >> "$out/ncu_fp8.txt"
  timeout 90 ncu --clock-control none --launch-count 2 -k "regex:sm90_fp8_grouped_gemm" $S $B bench --suite layer --cases $c --tokens 256 >> "$out/ncu_fp8.txt" 2>&1
  echo "ncu $c rc=$?"
done
grep -E "^====|grouped_gemm_kernel|Duration|DRAM Throughput|Issued Warp|No Eligible|Registers Per" "$out/ncu_fp8.txt" | head -40; gzip -f "$out/ncu_fp8.txt"
timeout 90 ncu --clock-control none --launch-count 1 -k "regex:sm90_fp8_grouped_gemm" --section SourceCounters --import-source no --page source --print-source sass --csv $B bench --suite layer --cases dsv3-tp8-fp8b --tokens 256 > "$out/ncu_src_fp8_g1.csv" 2>&1
echo "src rc=$?"; gzip -f "$out/ncu_src_fp8_g1.csv"
