#!/usr/bin/env bash
# Session 20, call 5 (final device code): the full GPU suite (12 shards); the decode suite with the
# router (every case, 1-256 tokens); GEMM1's one-wave chains against one tile per CTA (--tpc1 1) where
# the rule applies (qwen235-tp8 64/256 tokens, mixtral-tp2 256).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_new.tar.xz
GPU_TEST_SHARDS=12 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
B=.gpu/bin/fusedmoe
timeout 150 $B bench --suite layer --tokens 1,4,16,64,256 --json "$out/bench_decode.json" > "$out/bench_decode.txt" 2>&1
echo "decode rc=$?"
timeout 60 $B bench --suite layer --cases qwen235-tp8,mixtral-tp2 --tokens 64,256 --precomputed --tpc1 1 > "$out/bench_onewave.txt" 2>&1
echo "onewave rc=$?"
cat "$out/summary.txt"
grep -E "FAILED|Failure" <(zcat "$out/gpu_tests.log.gz") | head -20
