#!/usr/bin/env bash
# Session 27, call 1: the dense FP8 Swap-AB instances (3-4 CTAs per SM, fewer stages each).
# (a) the full GPU suite on HEAD (the FP8 Swap-AB GEMM tests also run every case on the dense
#     instances); (b) FP8 decode, same binary, FUSEDMOE_FP8_DENSE=0 (the default instances) against
#     =3 (dense GEMM1 and GEMM2), alternated 0/3/0/3; (c) one round of each with --stages.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
GPU_TEST_SHARDS=12 timeout 250 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/run.log" "$out/sass.txt.gz"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
B=.gpu/bin/fusedmoe
C=dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b,qwen235-tp8-fp8c
for r in 1 2 3 4; do
  d=0; [ $((r % 2)) = 0 ] && d=3
  FUSEDMOE_FP8_DENSE=$d timeout 70 $B bench --suite layer --cases $C --tokens 1,16,64,128,256 > "$out/bench_ab_r$r.txt" 2>&1
  echo "round $r dense=$d rc=$?"
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
print("case tokens | base r1 | dense r2 | base r3 | dense r4 | dense/base")
for (c, n), v in sorted(t.items()):
    if len(v) == 4:
        print(f"{c} {n} | {v[1]:.1f} | {v[2]:.1f} | {v[3]:.1f} | {v[4]:.1f} | {(v[2]+v[4])/(v[1]+v[3]):.3f}")
PY
grep -h "streaming read" "$out"/bench_ab_r*.txt
cat "$out"/bench_ab_r*.txt > "$out/bench_ab.txt"; rm -f "$out"/bench_ab_r*.txt
for d in 0 3; do
  FUSEDMOE_FP8_DENSE=$d timeout 110 $B bench --suite layer --cases $C --tokens 16,64,128,256 --stages > "$out/bench_stages_d$d.txt" 2>&1
  echo "stages dense=$d rc=$?"
done
python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]
t = {}
for d in (0, 3):
    for line in open(f"{out}/bench_stages_d{d}.txt"):
        m = re.match(r"(\S+)\s+(layer|stage \S+)", line)
        n = re.search(r"\s(\d+)\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+%", line)
        if m and n and "[" not in line:
            st = "layer" if m.group(2) == "layer" else m.group(2).split()[1]
            t.setdefault((m.group(1), int(n.group(1))), {}).setdefault(st, {})[d] = float(n.group(2))
print("case tokens | layer base/dense | gemm1 base/dense | gemm2 base/dense")
for (c, n), v in sorted(t.items()):
    f = lambda s: f"{v.get(s,{}).get(0,0):.1f}/{v.get(s,{}).get(3,0):.1f}"
    print(f"{c} {n} | {f('layer')} | {f('gemm1')} | {f('gemm2')}")
PY
