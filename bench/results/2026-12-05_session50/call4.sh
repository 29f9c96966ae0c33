#!/usr/bin/env bash
# Session 50, call 4 (carry ["build_pack/gpu_main.tar.xz"], restaged at the final code: the library
# as 46091ee, the bench with --skew). Decode layers under the routings of
# ../shared/benchmark-protocol.md: uniform (default), zipf and one hot expert (--skew), and the bias
# routers with a zero bias (--zero-bias), BF16 and FP8 cases at 16 / 64 / 256 tokens, packed
# weights, one run; then the main job.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
B=.gpu/bin/fusedmoe
bf=dsv3-tp8,dsv3-ep8,dsv4f-tp4,qwen235-tp8,qwen235-tp4,qwen30-tp1,mixtral-tp2,gptoss-tp1
f8=qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
modes=("" "--skew zipf" "--skew onehot" "--zero-bias")
names=(uniform zipf onehot zerobias)
for i in 0 1 2 3; do
  echo "== ${names[$i]}" >> "$sum"
  timeout 100 $B bench --suite layer --tokens 16,64,256 --packed ${modes[$i]} --cases "$bf,$f8" \
    --json "$out/${names[$i]}.json" > "$out/${names[$i]}.txt" 2>&1
  echo "rc=$?" >> "$sum"
  grep -E " layer " "$out/${names[$i]}.txt" | grep -v "packed off" | cut -c1-110 >> "$sum"
done
timeout 60 $B run > "$out/run.log" 2>&1; echo "fusedmoe run: rc=$?" >> "$sum"
tail -3 "$out/run.log" >> "$sum"
OUT=$out scripts/bundle_out.sh >> "$sum"
cat "$sum"
