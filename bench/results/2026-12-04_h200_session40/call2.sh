#!/usr/bin/env bash
# Session 40, call 2 (carry ["build_pack"]: gpu_head.tar.xz = 2656303's build, gpu_old.tar.xz =
# the clean-clone build of 9618e11, the previous final code). Is the default path of 2656303 slower
# than before (call 1's defaults were 2-14 % slower than session 37's at 256 tokens)? The four FP8
# cases at 1-256 tokens, alternated old / new (default + --hs) twice; then GEMM timelines at 16
# and 64 tokens with and without H quantised by GEMM2.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
[ -d .gpu_old ] || tar -xJf build_pack/gpu_old.tar.xz
echo "build $(cat .gpu/COMMIT), old $(cat .gpu_old/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
C=qwen235-tp8-fp8c,dsv3-tp8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
for r in 1 2; do
  timeout 120 .gpu_old/bin/fusedmoe bench --suite layer --tokens 1,16,64,256 --packed --cases $C > "$out/old_r$r.txt" 2>&1
  stamp "old r$r rc=$?"
  timeout 120 .gpu/bin/fusedmoe bench --suite layer --tokens 1,16,64,256 --packed --hs --cases $C > "$out/new_r$r.txt" 2>&1
  stamp "new r$r rc=$?"
  grep -E "over .* points" "$out/new_r$r.txt" >> "$out/summary.txt"
done
timeout 150 .gpu/bin/fusedmoe bench --suite layer --tokens 16,64 --packed --hs --trace --cases qwen235-tp8-fp8c,dsv3-tp8-fp8b > "$out/trace.txt" 2>&1
stamp "trace rc=$?"
stamp end
cat "$out/summary.txt"
