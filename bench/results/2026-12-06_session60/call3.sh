#!/usr/bin/env bash
# Session 60, call 3 (LIMIT=120; build in the summary): the combine's new chunk rule (2 chunks at
# 65-132 tokens) — its tests, an A/B against one chunk (FUSEDMOE_COMBINE_CHUNKS=1) at 96 / 128
# tokens, two rounds — then the dispatch suite with --flushed (call 2 named layer cases there).
set -uo pipefail
source scripts/device_prelude.sh
mkdir -p "$out/b"
o=$out; out=$out/b
tests_step comb_tests 40 'Combine.*'
for r in 1 2; do
  bench_step ab_new$r 30 --suite layer --packed --tokens 96,128 --cases qwen235-tp8-fp8c,qwen235-tp8,dsv3-tp8-fp8b
  FUSEDMOE_COMBINE_CHUNKS=1 bench_step ab_old$r 30 --suite layer --packed --tokens 96,128 --cases qwen235-tp8-fp8c,qwen235-tp8,dsv3-tp8-fp8b
done
bench_step dispatch 40 --suite dispatch --flushed --tokens 1,16,128,256 --cases dsv3-routing,qwen3-routing
grep -E "token-order|route\+plan " "$out/dispatch.txt" | cut -c1-140 >> "$sum"
out=$o
tar -czf "$out/bench.tar.gz" -C "$out" b && rm -rf "$out/b"
cat "$sum"
