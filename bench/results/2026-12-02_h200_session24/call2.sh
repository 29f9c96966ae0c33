#!/usr/bin/env bash
# Session 24, call 2 (carry ["build_pack"]; build_pack/gpu_s24b.tar.xz = the staged build of the
# commit in .gpu/COMMIT): (a) the full GPU suite; (b) GEMM2's early weights across the first run's
# tiles, against the first tile only (--early2 n = n stages = the old count: BF16 qwen235-tp8 3,
# dsv3 4, dsv4f 8; FP8 2 (qwen235-tp8, dsv3), 3 (qwen235-tp4), 4 (dsv4f)); (c) GEMM1's one-wave
# tile chaining under half a token tile of rows per expert, against one tile (--tpc1 1 = the old
# choice at the points the rule changed); (d) the weights' L2 policy evict_first (--evict) and
# gathered GEMM1 rows forced each way (--gather) on the three BF16 points under 0.75.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_s24b.tar.xz
GPU_TEST_SHARDS=12 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/sass.txt.gz" "$out/run.log"; gzip -f "$out/gpu_tests.log"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -10
B=.gpu/bin/fusedmoe
run() { local f=$1; shift; timeout 150 $B bench --suite layer "$@" >> "$out/$f" 2>&1; echo "rc=$? $*"; }
run bench_early.txt --cases qwen235-tp8 --tokens 16,64,256 --early2 3
run bench_early.txt --cases dsv3-tp8,dsv3-ep8 --tokens 16,64,256 --early2 4
run bench_early.txt --cases dsv4f-tp4 --tokens 16,64 --early2 8
run bench_early.txt --cases qwen235-tp8-fp8c,dsv3-tp8-fp8b --tokens 16,64,256 --early2 2
run bench_early.txt --cases qwen235-tp4-fp8b --tokens 16,64,256 --early2 3
grep -E "^(qwen|dsv|mix|gpt)" "$out/bench_early.txt" | cut -c1-100
run bench_tpc.txt --cases qwen235-tp8 --tokens 16,48,96,192 --tpc1 1
run bench_tpc.txt --cases qwen30-tp1 --tokens 3,6,8 --tpc1 1
run bench_tpc.txt --cases qwen235-tp4,gptoss-tp1,dsv4f-tp4 --tokens 2,6,8 --tpc1 1
grep -E "^(qwen|dsv|mix|gpt)" "$out/bench_tpc.txt" | cut -c1-100
run bench_evict.txt --cases qwen235-tp8,mixtral-tp2 --tokens 16,256 --evict --gather
run bench_evict.txt --cases dsv3-tp8,qwen235-tp8-fp8c,dsv3-tp8-fp8b --tokens 16,256 --evict
grep -E "^(qwen|dsv|mix|gpt)" "$out/bench_evict.txt" | cut -c1-100
