#!/usr/bin/env bash
# Session 28, call 2: the prefix-table plan of the cooperative front (FUSEDMOE_FRONT_EXP bit 8).
# (a) dispatch/plan GPU tests with experiments 2+4+8 on; (b) bench --suite dispatch: default,
# 2+4, 2+4+8, 2+4+8 with the cluster off (17-48 tokens cooperative too), default again.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
F='DispatchApi.*:Plan.*:PlanGraph.*-*Informational*'
echo "==== FUSEDMOE_FRONT_EXP=14" > "$out/tests.log"
FUSEDMOE_FRONT_EXP=14 timeout 120 .gpu/bin/fusedmoe_gpu_tests --gtest_filter="$F" >> "$out/tests.log" 2>&1
echo "tests exp=14 rc=$?"; grep -E "^\[  PASSED|^\[  FAILED" "$out/tests.log" | tail -5
gzip -f "$out/tests.log"
run() {  # label, env...
  local label=$1; shift
  echo "==== $label" >> "$out/bench_exp.txt"
  t0=$(date +%s)
  env "$@" timeout 70 .gpu/bin/fusedmoe bench --suite dispatch --tokens 1,16,32,64,128,256 >> "$out/bench_exp.txt" 2>&1
  echo "bench $label rc=$? $(( $(date +%s) - t0 )) s"
}
run exp0 FUSEDMOE_FRONT_EXP=0
run exp6 FUSEDMOE_FRONT_EXP=6
run exp14 FUSEDMOE_FRONT_EXP=14
run exp14-nocluster FUSEDMOE_FRONT_EXP=14 FUSEDMOE_FRONT_CLUSTER=0
run exp0b FUSEDMOE_FRONT_EXP=0
python3 - "$out/bench_exp.txt" <<'PY'
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
grep -E "^====|T=(64|256) .*(token-order|route\+plan):" "$out/bench_exp.txt" | sed 's/  */ /g' | cut -c1-230
grep -c "CHECK FAILED" "$out/bench_exp.txt"
