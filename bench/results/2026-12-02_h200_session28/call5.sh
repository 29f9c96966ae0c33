#!/usr/bin/env bash
# Session 28, call 5: the fused front with the routing-blocks-only barrier, no quantising in the
# routing blocks, 4 tokens per cooperative routing block, the interleaved sigmoid and the
# shift/unrolled group selection (all defaults now).
# (a) router / dispatch / plan / combine GPU tests; the fused-front tests again with clusters off
# (4 tokens per block from 17 tokens); (b) bench --suite dispatch: default, FUSEDMOE_FRONT_TPB=8
# (8 tokens per cooperative block, as before), default again. (Call 4 with the cluster path
# and the 8-token blocks back on the one-block-per-lane mask gather.)
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
F='DispatchApi.*:Plan.*:PlanGraph.*:RouterGpu.*:CombineApi.*-*Informational*'
timeout 200 .gpu/bin/fusedmoe_gpu_tests --gtest_filter="$F" > "$out/tests.log" 2>&1
echo "tests rc=$?"; grep -E "^\[  PASSED|^\[  FAILED" "$out/tests.log" | tail -5
echo "==== FUSEDMOE_FRONT_CLUSTER=0" >> "$out/tests.log"
FUSEDMOE_FRONT_CLUSTER=0 timeout 100 .gpu/bin/fusedmoe_gpu_tests --gtest_filter='DispatchApi.*' >> "$out/tests.log" 2>&1
echo "tests nocluster rc=$?"; grep -E "^\[  PASSED|^\[  FAILED" "$out/tests.log" | tail -3
gzip -f "$out/tests.log"
run() {  # label, env...
  local label=$1; shift
  echo "==== $label" >> "$out/bench_dispatch.txt"
  env "$@" timeout 70 .gpu/bin/fusedmoe bench --suite dispatch --tokens 1,2,16,17,32,48,64,128,256 >> "$out/bench_dispatch.txt" 2>&1
  echo "bench $label rc=$?"
}
run default FUSEDMOE_FRONT_TPB=4
run tpb8 FUSEDMOE_FRONT_TPB=8
run default2 FUSEDMOE_FRONT_TPB=4
python3 - "$out/bench_dispatch.txt" <<'PY'
import re, sys
cur = None; t = {}; labels = []
for l in open(sys.argv[1]):
    m = re.match(r'==== (\S+)', l)
    if m: cur = m.group(1); labels.append(cur); continue
    m = re.match(r'(\S+)\s+(route\+plan(?:\+quant token-order)? )\(1 launches\)\s+(\d+)\s+([\d.]+)', l)
    if m: t.setdefault((m.group(1), int(m.group(3))), {})[cur] = float(m.group(4))
    m = re.search(r'(\S+-routing) T=(\d+) (route\+plan(?:\+quant token-order)?): (.*) end ([\d.]+) us', l)
    if m: t.setdefault((m.group(1), int(m.group(2))), {})['k' + cur] = float(m.group(5))
print('case T | per call: ' + ' '.join(labels) + ' | kernel: ' + ' '.join(labels))
for k, v in t.items():
    print(k[0], k[1], '|', ' '.join(f"{v.get(x, 0):.2f}" for x in labels), '|', ' '.join(f"{v.get('k' + x, 0):.2f}" for x in labels))
PY
grep -E "^====|T=(1|16|64|256) .*(token-order|route\+plan):" "$out/bench_dispatch.txt" | sed 's/  */ /g' | cut -c1-230
grep -c "CHECK FAILED" "$out/bench_dispatch.txt"
