#!/usr/bin/env bash
# Session 55, call 3: an expert-parallel rank whose tokens all route to its 32 local experts
# (--skew local, vLLM's dsv3-ep8 "E32 top-8" figure). Call 2 found dsv3-ep8-fp8b at 64 tokens at
# 63.8 % of its floor there (tile 8, chosen from the uniform 2 rows per expert; the real 16).
# (a) every tile forced (crossover suite) at 16 / 64 / 256 tokens, FP8 blocks;
# (b) the oracle with MoeProblem::expected_local_slots = top_k (--local-hint) against without, at
#     1 / 64 / 256 tokens, FP8 blocks and BF16, from logits and precomputed ids.
set -uo pipefail
source scripts/device_prelude.sh
bench_step xo_fp8 120 --suite crossover --skew local --packed --tokens 16,64,256 --cases dsv3-ep8-fp8b
bench_step hint_on 90 --suite layer --skew local --local-hint --packed --precomputed --tokens 1,64,256 --cases dsv3-ep8-fp8b,dsv3-ep8
bench_step hint_off 90 --suite layer --skew local --packed --precomputed --tokens 1,64,256 --cases dsv3-ep8-fp8b,dsv3-ep8
mkdir -p "$out/bench" && mv "$out"/xo_*.txt "$out"/hint_*.txt "$out/bench/" 2>/dev/null
tar -czf "$out/bench.tar.gz" -C "$out" bench && rm -rf "$out/bench"
cat "$sum"
