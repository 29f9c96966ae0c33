#!/usr/bin/env bash
# Session 52, call 1c: the whole GPU suite, the main job, the Python GPU test and the decode tables
# in ONE call (device starts were scarce), each later step run only while the call's 600 s leave it
# room. Carry ["build_pack/gpu_main.tar.xz"]. call1d.sh follows on the same warm machine.
set -uo pipefail
start=$(date +%s)
left() { echo $((${LIMIT:-575} - ($(date +%s) - start))); }  # LIMIT: the call's limit_s less ~25
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
OUT=$out/t GPU_TEST_SHARDS=16 GPU_TEST_TIMEOUT=300 GPU_TEST_FILTER='-StreamProbe.*' SASS=0 MAIN=1 \
  scripts/gpu_run.sh > /dev/null
gzip -f "$out/t/gpu_tests.log"
cat "$out/t/summary.txt" >> "$sum"
echo "suite done at $(( $(date +%s) - start )) s" >> "$sum"
tar -czf "$out/suite.tar.gz" -C "$out" t && rm -rf "$out/t"  # (few files at the top, should the call be cut)
step() {  # name timeout args...
  local name=$1 t=$2; shift 2
  local l; l=$(left)
  if [ "$l" -lt 40 ]; then echo "== $name: skipped (${l} s left)" >> "$sum"; return; fi
  [ "$t" -gt $((l - 10)) ] && t=$((l - 10))
  timeout "$t" .gpu/bin/fusedmoe bench "$@" > "$out/$name.txt" 2>&1
  echo "== $name: rc=$? at $(( $(date +%s) - start )) s" >> "$sum"
  grep -E " layer " "$out/$name.txt" | grep -v "packed off" | cut -c1-150 >> "$sum"
}
step decode_fp8 150 --suite layer --tokens 1,16,64,256 --packed \
  --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
step decode_bf16 150 --suite layer --tokens 1,16,64,256 --packed \
  --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4,qwen235-tp8,qwen235-tp4,qwen30-tp1,mixtral-tp2,gptoss-tp1
OUT=$out scripts/bundle_out.sh >> "$sum"
cat "$sum"
