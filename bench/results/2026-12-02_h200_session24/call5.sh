#!/usr/bin/env bash
# Session 24, call 5 (carry ["build_pack"]; build_pack/gpu_s24d.tar.xz = the staged build of the
# commit in .gpu/COMMIT, the session's final device code): (a) the full GPU suite; (b) the decode
# table (every layer case, with the router, 1 / 16 / 64 / 256 tokens); (c) the FP8 evict rule at 1-2
# tokens (auto = off up to 40 MB of touched weights) against both forced values; (d) stages of the
# two BF16 points still under 0.75 in call 3.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_s24d.tar.xz
GPU_TEST_SHARDS=12 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/sass.txt.gz" "$out/run.log"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
B=.gpu/bin/fusedmoe
timeout 150 $B bench --suite layer --tokens 1,16,64,256 --json "$out/bench_decode.json" > "$out/bench_decode.txt" 2>&1
echo "decode rc=$?"; grep -E "^(qwen|dsv|mix|gpt)" "$out/bench_decode.txt" | cut -c1-110
timeout 60 $B bench --suite layer --cases qwen235-tp8-fp8c,dsv4f-tp4-fp8b,qwen235-tp4-fp8b --tokens 1,2 --evict > "$out/bench_evict_fp8.txt" 2>&1
echo "evict rc=$?"; grep -E "^(qwen|dsv)" "$out/bench_evict_fp8.txt" | cut -c1-110
timeout 60 $B bench --suite layer --cases qwen235-tp8,dsv3-ep8 --tokens 256 --stages > "$out/bench_stages.txt" 2>&1
echo "stages rc=$?"; grep -E "^(qwen|dsv)" "$out/bench_stages.txt" | cut -c1-110
