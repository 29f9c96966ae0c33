#!/usr/bin/env bash
# Session 25, call 4 (carry ["build_pack"]; build_pack/gpu_final.tar.xz = the staged build of the
# commit in its .gpu/COMMIT: the kernels of 4759cae, i.e. session 24's, after calls 1-3's
# experiments were reverted). (a) the full GPU suite; (b) the decode table (every layer case, with
# the router, 1 / 16 / 64 / 256 tokens); (c) the FP8 cases' tile crossover at 16-256 tokens.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_final.tar.xz
GPU_TEST_SHARDS=12 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/sass.txt.gz" "$out/run.log"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
B=.gpu/bin/fusedmoe
timeout 150 $B bench --suite layer --tokens 1,16,64,256 --json "$out/bench_decode.json" > "$out/bench_decode.txt" 2>&1
echo "decode rc=$?"; grep -E "^(qwen|dsv|mix|gpt)" "$out/bench_decode.txt" | cut -c1-110
F=qwen235-tp8-fp8c,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
timeout 200 $B bench --suite crossover --cases $F --tokens 16,64,128,256 > "$out/bench_crossover_fp8.txt" 2>&1
echo "crossover rc=$?"; grep -vE "^(qwen|dsv)" "$out/bench_crossover_fp8.txt" | tail -30
