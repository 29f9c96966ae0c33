#!/usr/bin/env bash
# Session 30, call 2 (the same warm machine right after call 1, whose summary and timelines did not
# come back: the device tool returns at most 8 files): the timelines again, without stages.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
cat .gpu/COMMIT
B=.gpu/bin/fusedmoe
timeout 60 $B bench --suite layer --cases qwen30-tp1,mixtral-tp2 --tokens 1,2,4 --stages --trace --trace-csv $OUT/trace_small.csv > $OUT/trace_small.txt 2>&1
timeout 40 $B bench --suite layer --cases qwen235-tp8,qwen235-tp8-fp8c --tokens 256 --trace --trace-csv $OUT/trace_256.csv > $OUT/trace_256.txt 2>&1
gzip -f $OUT/*.csv
grep -E "timeline|front:|gemm[12]:| layer | stage " $OUT/trace_small.txt $OUT/trace_256.txt | sed 's/  */ /g' | cut -c1-250
# (the call also ran `scripts/gpu_run.sh` under `timeout 200` first, which was cut off before its
# summary; call 3 ran the suite alone)
