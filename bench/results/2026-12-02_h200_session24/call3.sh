#!/usr/bin/env bash
# Session 24, call 3 (carry ["build_pack"]; build_pack/gpu_s24c.tar.xz = the staged build of the
# commit in .gpu/COMMIT): (a) the full GPU suite; (b) the decode table (every layer case, with the
# router, 1 / 16 / 64 / 256 tokens) with the weights' L2 policy evict_first forced on and off
# beside the new auto rule (ForwardOptions::weights_evict_first).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_s24c.tar.xz
GPU_TEST_SHARDS=12 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/sass.txt.gz" "$out/run.log"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
B=.gpu/bin/fusedmoe
timeout 330 $B bench --suite layer --tokens 1,16,64,256 --evict --json "$out/bench_decode.json" > "$out/bench_decode.txt" 2>&1
echo "decode rc=$?"
grep -E "^(qwen|dsv|mix|gpt)" "$out/bench_decode.txt" | grep -v "evict-first" | cut -c1-110
grep -A4 "variants against" "$out/bench_decode.txt"
