#!/usr/bin/env bash
# Session 22, call 1: the full GPU suite on a0c391d (session 21's HEAD: device code = ff3e41e's,
# host-side reference/test-data changes not yet run on a GPU); prefill stage split of the FP8
# row-scaled and BF16 fine-grained cases on the CUTLASS backend (where prefill time goes now).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
GPU_TEST_SHARDS=12 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log"; gzip -f "$out/gpu_tests.log"
timeout 120 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8-fp8c,dsv3-tp8-fp8b,qwen235-tp8,dsv3-tp8 --tokens 4096,16384 --stages > "$out/bench_prefill_stages.txt" 2>&1
echo "bench rc=$?"
cat "$out/summary.txt"
zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -20
