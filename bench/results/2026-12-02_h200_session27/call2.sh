#!/usr/bin/env bash
# Session 27, call 2: the dense Swap-AB rule (ForwardOptions::dense_swapab, auto = FP8's
# dense_fp8_auto; BF16 off). (a) the full GPU suite (new: Forward.DenseSwapAb, BF16 + FP8);
# (b) the FP8 cases at 1-256 tokens: default (the rule) against dense forced on and off, same
# process (bench --dense); (c) the BF16 decode cases at 16-256 tokens, dense forced on / off, stages.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
GPU_TEST_SHARDS=12 timeout 250 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/run.log" "$out/sass.txt.gz"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
B=.gpu/bin/fusedmoe
timeout 150 $B bench --suite layer --cases dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b,qwen235-tp8-fp8c,qwen235-tp8-fp8t \
  --tokens 1,16,64,128,256 --dense > "$out/bench_fp8_dense.txt" 2>&1
echo "fp8 rc=$?"; grep -A4 "variants against" "$out/bench_fp8_dense.txt"
timeout 200 $B bench --suite layer --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4,qwen235-tp8,qwen235-tp4,qwen30-tp1,mixtral-tp2,gptoss-tp1 \
  --tokens 16,64,128,256 --dense --stages > "$out/bench_bf16_dense.txt" 2>&1
echo "bf16 rc=$?"; grep -A4 "variants against" "$out/bench_bf16_dense.txt"
python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]
for f in ("bench_fp8_dense.txt", "bench_bf16_dense.txt"):
    t = {}
    cur = None
    for line in open(f"{out}/{f}"):
        m = re.match(r"(\S+)\s+(layer|stage \S+)", line)
        n = re.search(r"\s(\d+)\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+%", line)
        if not (m and n):
            continue
        if m.group(2) == "layer":
            v = re.search(r"\[([^\]]*)\]", line)
            cur = v.group(1) if v else "default"
            st = "layer"
        else:
            st = m.group(2).split()[1]
        t.setdefault((m.group(1), int(n.group(1))), {}).setdefault(st, {})[cur] = float(n.group(2))
    print(f"== {f}: default / dense on / dense off (layer; gemm1; gemm2 where staged)")
    for (c, k), v in sorted(t.items()):
        def g(s):
            d = v.get(s, {})
            return "/".join(f"{d[x]:.1f}" if x in d else "-" for x in ("default", "dense on", "dense off"))
        extra = f" | g1 {g('gemm1')} | g2 {g('gemm2')}" if "gemm1" in v else ""
        print(f"{c} {k} | {g('layer')}{extra}")
PY
