#!/usr/bin/env bash
# Session 25, call 3 (carry ["build_pack"]): build_pack/gpu_new.tar.xz = the staged build of the
# commit in its .gpu/COMMIT (FP8 K loop: one stage at a time again, block scales loaded a K block
# ahead; FP8 GEMM1 chained to one wave as BF16); build_pack/gpu_old.tar.xz = call 1's build
# a919469 (no test binary), run with FUSEDMOE_COMBINE=3 (session 24's combine and FP8 kernels).
# (a) the full GPU suite on the new build; (b) the FP8 decode table old / new / old / new;
# (c) the new build with FP8 GEMM1's one-wave chaining off (--tpc1 1); (d) stages, new build.
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
  awk '{k=$2" "$3; v[k]=v[k]" "$1":"$4; f[k]=$5} END{for (x in v) print x, v[x], "floor(last):", f[x]}' | sort -k1,1 -k2n
run_b new --suite layer --cases $F --tokens 16,64,256 --tpc1 1 > "$out/bench_tpc1.txt" 2>&1
echo "tpc1 rc=$?"; grep -A3 "variants against" "$out/bench_tpc1.txt"; grep -E "^(qwen|dsv)" "$out/bench_tpc1.txt" | cut -c1-100
run_b new --suite layer --cases dsv3-tp8-fp8b,qwen235-tp8-fp8c --tokens 64,256 --stages > "$out/bench_stages.txt" 2>&1
echo "stages rc=$?"; grep -E "stage gemm|layer" "$out/bench_stages.txt" | cut -c1-110
