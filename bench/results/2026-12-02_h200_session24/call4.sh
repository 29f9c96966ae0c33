#!/usr/bin/env bash
# Session 24, call 4 (carry ["build_pack"]; the build of call 3, 9d54ef7): where the weights' L2
# policy evict_first loses. Call 3 had it 4-9 % slower for FP8 at 1 token (faster from 16), and
# mixed on the skewed BF16 dsv3 layers at 256 tokens: FP8 at 1-8 tokens, dsv3-tp8 / dsv3-ep8 BF16 at
# 128 / 256, forced on and off beside the auto rule.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
tar -xJf build_pack/gpu_s24c.tar.xz
B=.gpu/bin/fusedmoe
timeout 200 $B bench --suite layer --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b --tokens 1,2,4,8 --evict > "$out/bench_evict_fp8.txt" 2>&1
echo "fp8 rc=$?"
timeout 150 $B bench --suite layer --cases dsv3-tp8,dsv3-ep8 --tokens 128,256 --evict > "$out/bench_evict_dsv3.txt" 2>&1
echo "dsv3 rc=$?"
timeout 100 $B bench --suite layer --cases dsv3-tp8,dsv3-ep8 --tokens 128,256 --evict > "$out/bench_evict_dsv3_b.txt" 2>&1
echo "dsv3 b rc=$?"
for f in "$out"/bench_evict_*.txt; do grep -E "^(qwen|dsv|mix|gpt)" "$f" | cut -c1-105; grep -A3 "variants against" "$f"; done
