#!/usr/bin/env bash
# Session 47, device call 7 (two calls on one warm machine; the packs are too large to carry
# together with the tree): is BF16 qwen235-tp8 at 256 tokens slower in today's code than in session
# 37's (173.4-175.0 us then, 179.3-181.5 in sessions 43-47, while every other BF16 decode point is
# level within ~2 %)? The same bench command on one machine, builds alternated.
#   7a: carry ["build_pack/gpu_s37.tar.xz"] (the library and tool of 583a3be, session 37's final
#       code): extracted into build_pack/s37 (ignored: kept on the warm machine), one run (old).
#   7b: carry ["build_pack/gpu_main.tar.xz"] (de76ee6): new, old (if build_pack/s37 is still
#       there), new.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
step=${1:-a}
one() {  # $1: run label, $2: build folder
  timeout 80 $2/bin/fusedmoe bench --suite layer --tokens 64,256 --packed --stages --cases qwen235-tp8,dsv3-tp8 \
    > "$out/$1.txt" 2>&1
  local rc=$?
  echo "== $1 $2 ($(cat $2/COMMIT 2>/dev/null)) rc=$rc" >> "$out/summary.txt"
  grep -E " layer |stage " "$out/$1.txt" | grep -v "packed off" | cut -c1-110 >> "$out/summary.txt"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader > "$out/summary.txt"
if [ "$step" = a ]; then
  rm -rf build_pack/s37 && mkdir -p build_pack/s37 && tar -xJf build_pack/gpu_s37.tar.xz -C build_pack/s37
  one r1_old build_pack/s37
else
  rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz
  one r2_new .gpu
  [ -x build_pack/s37/bin/fusedmoe ] && one r3_old build_pack/s37
  one r4_new .gpu
fi
cat "$out/summary.txt"
