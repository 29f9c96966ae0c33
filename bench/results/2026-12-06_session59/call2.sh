#!/usr/bin/env bash
# Session 59, call 2: the final code (tail pairs on token tile 32 by the rule, tile-16 config dropped):
# qwen235-tp8 FP8 at 256 / 512 tokens (tails by the rule at 256, plain pairs at 512), GEMM2 on token
# tile 16 and the dense instances at 256 (leads for the next session), then the whole suite.
set -uo pipefail
source scripts/device_prelude.sh
bench_step q235 60 --suite layer --packed --stages --tokens 256,512 --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t
bench_step q235_tile2 40 --suite layer --packed --stages --tokens 256 --cases qwen235-tp8-fp8c --tile2 16
bench_step q235_dense 50 --suite layer --packed --stages --dense --tokens 256 --cases qwen235-tp8-fp8c
if [ "$(left)" -gt 250 ]; then suite_step 300; else echo "suite skipped ($(left) s left)" >> "$sum"; fi
cat "$sum"
