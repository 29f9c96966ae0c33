#!/usr/bin/env bash
# Session 26, call 4: the FP8 Swap-AB K loop with two K blocks per tensor-core round trip (both
# stages' WGMMAs, one wait, two promotions; FUSEDMOE_FP8_PAIR=0 restores one block per trip).
# (a) the FP8 GPU tests; (b) the FP8 decode cases at 1-256 tokens, new / old / new / old (stages
# in the first two rounds).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
GPU_TEST_SHARDS=12 GPU_TEST_FILTER='Forward.*Fp8*:Forward.Balanced*:Fp8*:*FP8*:*Fp8*' bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/sass.txt.gz" "$out/run.log"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
B=.gpu/bin/fusedmoe
F=qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
for r in 1 2 3 4; do
  pair=$(( r % 2 )); st=""; [ $r -le 2 ] && st="--stages"
  FUSEDMOE_FP8_PAIR=$pair timeout 150 $B bench --suite layer --cases $F --tokens 1,16,64,128,256 $st > "$out/bench_pair_r$r.txt" 2>&1
  echo "round $r pair=$pair rc=$?"
done
python3 - "$out" <<'PY'
import re, sys, glob
out = sys.argv[1]
t = {}
for r in (1, 2, 3, 4):
    for line in open(f"{out}/bench_pair_r{r}.txt"):
        m = re.match(r"(\S+)\s+layer .*tile \d+\s+(\d+)\s+([\d.]+)\s", line)
        if m and "[" not in line:
            t.setdefault((m.group(1), int(m.group(2))), {})[r] = float(m.group(3))
print("case tokens | new r1 | old r2 | new r3 | old r4 | new/old")
for (c, n), v in sorted(t.items()):
    if len(v) == 4:
        print(f"{c} {n} | {v[1]:.1f} | {v[2]:.1f} | {v[3]:.1f} | {v[4]:.1f} | {(v[1]+v[3])/(v[2]+v[4]):.3f}")
PY
