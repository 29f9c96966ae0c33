#!/usr/bin/env bash
# Session 28, call 7: the BF16 dense rule widened to GEMM2 on token tile 32 where the reduction is
# long (N >= 2048) over many experts (G >= 16): dsv3-ep8. (a) the full GPU suite; (b) the BF16
# decode cases with tile-32 GEMM2 at 64 / 128 / 256 tokens: the default beside dense forced on
# and off, same process.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
GPU_TEST_SHARDS=12 timeout 250 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/run.log" "$out/sass.txt.gz"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
timeout 200 .gpu/bin/fusedmoe bench --suite layer --cases dsv3-ep8,mixtral-tp2,dsv3-tp8,qwen235-tp8,qwen235-tp4,qwen30-tp1,gptoss-tp1 \
  --tokens 64,128,256 --dense > "$out/bench_dense.txt" 2>&1
echo "bench rc=$?"; grep -E "streaming read" "$out/bench_dense.txt"; grep -A4 "variants against" "$out/bench_dense.txt"
python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]
t = {}
for line in open(f"{out}/bench_dense.txt"):
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
