#!/usr/bin/env bash
# Session 26, call 5: the FP8 K-block pairs (HEAD) against the true old kernels (723d950's FP8 GEMM,
# build_pack/gpu_old.tar.xz: the same tree with the old sm90_fp8_grouped_gemm.cuh), same run,
# alternated old / new / old / new; then the full GPU suite on HEAD.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_old.tar.xz && mv .gpu .gpu_old
tar -xJf build_pack/gpu_head.tar.xz
C=dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b,qwen235-tp8-fp8c
for r in 1 2 3 4; do
  d=.gpu_old; [ $((r % 2)) = 0 ] && d=.gpu
  LD_LIBRARY_PATH=$PWD/$d/lib timeout 60 $d/bin/fusedmoe bench --suite layer --cases $C --tokens 64,128,256 > "$out/bench_ab_r$r.txt" 2>&1
  echo "round $r $d rc=$?"
done
python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]
t = {}
for r in (1, 2, 3, 4):
    for line in open(f"{out}/bench_ab_r{r}.txt"):
        m = re.match(r"(\S+)\s+layer .*tile \d+\s+(\d+)\s+([\d.]+)\s", line)
        if m and "[" not in line:
            t.setdefault((m.group(1), int(m.group(2))), {})[r] = float(m.group(3))
print("case tokens | old r1 | new r2 | old r3 | new r4 | new/old")
for (c, n), v in sorted(t.items()):
    if len(v) == 4:
        print(f"{c} {n} | {v[1]:.1f} | {v[2]:.1f} | {v[3]:.1f} | {v[4]:.1f} | {(v[2]+v[4])/(v[1]+v[3]):.3f}")
PY
grep -h "streaming read" "$out"/bench_ab_r*.txt
GPU_TEST_SHARDS=12 timeout 250 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/sass.txt.gz" "$out/run.log"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
