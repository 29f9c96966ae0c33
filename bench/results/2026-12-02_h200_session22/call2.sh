#!/usr/bin/env bash
# Session 22, call 2: branch fc2 (wip/fused-combine rebased on a0c391d; staged as
# build_pack/gpu_fc.tar.xz, extracting to .gpu): the full GPU suite (with
# Forward.FusedCombineMatchesCombineKernelBitwise), then the decode A/B of the fused combine
# (default = off, forced on, forced off; variants alternate per case in one run).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_fc.tar.xz
GPU_TEST_SHARDS=12 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/run.log"; gzip -f "$out/gpu_tests.log"
timeout 300 .gpu/bin/fusedmoe bench --suite layer --tokens 1,16,64,256 --fused-combine --json "$out/bench_fc.json" > "$out/bench_fc.txt" 2>&1
echo "bench rc=$?"
cat "$out/summary.txt"
zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -20
