#!/usr/bin/env bash
# Session 48, call e: carry ["build_pack/gpu_new.tar.xz"] (2958fa4: the epilogue-per-kernel merge and
# the float32-chain combine). In order of priority (the call may be cut at the device budget; every
# step appends to summary.txt):
#  1. info; the combine's GPU tests with the new chain and with FUSEDMOE_COMBINE_F64=1 (the old one);
#  2. decode layers (16 / 64 / 256 tokens, 8 cases) with the float64 combine and the new one, alternated;
#  3. per-stage times at 256 tokens, then at 4096 / 16384 tokens, both ways;
#  4. the whole GPU suite (16 shards).
# Run from the repo root: bash bench/results/2026-12-05_h100_session48/call_e.sh
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
sum="$out/summary.txt"
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$sum"; }
rm -rf .gpu && tar -xJf build_pack/gpu_new.tar.xz
g=.gpu
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat $g/COMMIT)" >> "$sum"
$g/bin/fusedmoe info > "$out/info.log" 2>&1; el "info rc=$?"
for m in new f64; do
  if [ $m = f64 ]; then export FUSEDMOE_COMBINE_F64=1; else unset FUSEDMOE_COMBINE_F64; fi
  timeout 120 $g/bin/fusedmoe_gpu_tests --gtest_filter='Combine.*:Forward.*Graph*' > "$out/combine_tests_$m.log" 2>&1
  el "combine tests ($m): rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$out/combine_tests_$m.log" | tr '\n' ' ')"
done
unset FUSEDMOE_COMBINE_F64
CASES=qwen235-tp8,dsv3-tp8,qwen235-tp4,qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,qwen235-tp4-fp8b,dsv4f-tp4-fp8b
for r in 1 2; do
  for m in f64 new; do
    if [ $m = f64 ]; then export FUSEDMOE_COMBINE_F64=1; else unset FUSEDMOE_COMBINE_F64; fi
    timeout 150 $g/bin/fusedmoe bench --suite layer --tokens 16,64,256 --packed --cases $CASES > "$out/decode_${m}_r$r.txt" 2>&1
    el "decode $m r$r rc=$?"
  done
done
for m in f64 new; do
  if [ $m = f64 ]; then export FUSEDMOE_COMBINE_F64=1; else unset FUSEDMOE_COMBINE_F64; fi
  timeout 60 $g/bin/fusedmoe bench --suite layer --tokens 256 --packed --stages --cases qwen235-tp8,dsv3-tp8,qwen235-tp8-fp8c > "$out/stages256_$m.txt" 2>&1
  el "stages 256 $m rc=$?"
done
for m in f64 new; do
  if [ $m = f64 ]; then export FUSEDMOE_COMBINE_F64=1; else unset FUSEDMOE_COMBINE_F64; fi
  timeout 90 $g/bin/fusedmoe bench --suite layer --tokens 4096,16384 --stages --cases qwen235-tp8,dsv3-tp8 > "$out/prefill_$m.txt" 2>&1
  el "prefill $m rc=$?"
done
unset FUSEDMOE_COMBINE_F64
OUT=$out/t GPU_TEST_SHARDS=16 GPU_TEST_TIMEOUT=300 GPU_TEST_FILTER='-StreamProbe.*' SASS=0 MAIN=1 scripts/gpu_run.sh > /dev/null
cat "$out/t/summary.txt" >> "$sum"; gzip -f "$out/t/gpu_tests.log"; el "suite done"
for f in "$out"/decode_*.txt "$out"/stages256_*.txt "$out"/prefill_*.txt; do
  [ -f "$f" ] || continue
  echo "== $(basename "$f")"; grep -E " layer |stage (combine|gemm)" "$f" | grep -v "packed off" | cut -c1-100
done >> "$sum"
tail -c 6000 "$sum"
