#!/usr/bin/env bash
# Session 27, call 4 (final code): the dense Swap-AB rules (BF16: split-K launches too, GEMM2 on tiles 8-16).
# (a) the full GPU suite; (b) every decode case (14) at 1/16/64/128/256 tokens: the default (the
# decode table) against dense forced on and off, same process (bench --dense); (c) 512 / 1024 tokens on four cases.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
GPU_TEST_SHARDS=12 timeout 250 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/run.log" "$out/sass.txt.gz"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
timeout 300 .gpu/bin/fusedmoe bench --suite layer --tokens 1,16,64,128,256 --dense --json "$out/bench_decode.json" > "$out/bench_decode.txt" 2>&1
echo "decode rc=$?"; grep -E "streaming read|GEMM rate" "$out/bench_decode.txt"; grep -A4 "variants against" "$out/bench_decode.txt"
python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]
t = {}
for line in open(f"{out}/bench_decode.txt"):
    m = re.match(r"(\S+)\s+layer", line)
    n = re.search(r"\s(\d+)\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+([\d.]+)%", line)
    if not (m and n):
        continue
    v = re.search(r"\[([^\]]*)\]", line)
    t.setdefault((m.group(1), int(n.group(1))), {})[v.group(1) if v else "default"] = (float(n.group(2)), float(n.group(4)))
print("case tokens | default us (% floor) | dense on | dense off | default/best")
for (c, k), v in t.items():
    d = v.get("default"); on = v.get("dense on"); off = v.get("dense off")
    if d and on and off:
        print(f"{c} {k} | {d[0]:.1f} ({d[1]:.1f}) | {on[0]:.1f} | {off[0]:.1f} | {d[0]/min(on[0], off[0]):.3f}")
PY
timeout 100 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8,qwen235-tp8 --tokens 512,1024 --dense > "$out/bench_mid.txt" 2>&1
echo "mid rc=$?"; grep -A4 "variants against" "$out/bench_mid.txt"; grep -E " layer " "$out/bench_mid.txt" | cut -c1-110
