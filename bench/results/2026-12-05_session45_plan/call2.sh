#!/usr/bin/env bash
# Session 45 plan, call 2 (same pack as call 1): the stmatrix epilogue's speed. Decode A/B,
# FUSEDMOE_SWAP_STSM=1 / 0 in alternating runs (two each), BF16 and FP8 cases at 16 / 64 / 256
# tokens, packed weights, with the stages (GEMM2 at 256 tokens is where it should show: FP8 at
# 48-67 % of its floor, BF16 qwen235-tp8 at 70.5 %). Then the decode tables of both suites with the
# switch on, for the issue numbers (#4: BF16 >= 0.75 at 16-256 tokens; #5: FP8); between them the FP8
# gathered rows (session 45) forced on / off. ~400 s.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
CB=qwen235-tp8,dsv3-tp8,qwen235-tp4
CF=qwen235-tp8-fp8c,dsv3-tp8-fp8b,qwen235-tp4-fp8b,dsv4f-tp4-fp8b
for r in 1 2; do
  for st in 1 0; do
    FUSEDMOE_SWAP_STSM=$st timeout 60 $B/fusedmoe bench --suite layer --tokens 16,64,256 --stages --packed --cases $CB,$CF > "$out/ab_r${r}_stsm$st.txt" 2>&1
    stamp "r$r stsm $st rc=$?"
  done
done
for f in "$out"/ab_*.txt; do echo "== $f"; grep -E " layer |stage gemm" "$f" | grep -v "packed off" | awk '{for(i=1;i<=NF;i++) if ($i ~ /^(16|64|256)$/ && $(i+1) ~ /\./) {printf "%s %s %s %s\n", $1, ($2=="stage"?$3:"L"), $i, $(i+1); break}}' | tr '\n' '|'; echo; done >> "$out/summary.txt"
export FUSEDMOE_SWAP_STSM=1
# session 45's FP8 GEMM1 with gathered rows (forced only; x quantised in token order, no permute):
# the bench's "gather on" / "gather off" variants against the default, twice
for r in 1 2; do
  timeout 60 $B/fusedmoe bench --suite layer --tokens 16,64,256 --packed --gather --cases $CF > "$out/gather_r$r.txt" 2>&1
  stamp "gather r$r rc=$?"
  grep -E "gather on\]:|gather off\]:" "$out/gather_r$r.txt" >> "$out/summary.txt"
done
timeout 150 $B/fusedmoe bench --suite layer --tokens 1,16,64,256 --packed \
  --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b > "$out/decode_fp8.txt" 2>&1
stamp "decode fp8 rc=$?"
timeout 200 $B/fusedmoe bench --suite layer --tokens 1,16,64,256 --packed > "$out/decode_bf16.txt" 2>&1
stamp "decode bf16 rc=$?"
grep -h "geometric" "$out/decode_fp8.txt" "$out/decode_bf16.txt" >> "$out/summary.txt"
cat "$out/summary.txt" | cut -c1-3000
