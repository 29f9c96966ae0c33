#!/usr/bin/env bash
# Session 22, call 4 (e31259d: ForwardOptions::cutlass_gemm2): its GPU test and the CUTLASS/gather
# tests around it; then the prefill A/B (default = CUTLASS layer, hybrid forced on, forced off) with
# per-stage times, BF16 cases at 1024/4096/16384 tokens.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_head.tar.xz
GPU_TEST_SHARDS=8 GPU_TEST_FILTER='Forward.Cutlass*:CutlassGrouped*:Forward.TokenCountsBothFamilies:Forward.GraphReplayMatchesDirectCall' bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/run.log" "$out/sass.txt.gz"; gzip -f "$out/gpu_tests.log"
timeout 330 .gpu/bin/fusedmoe bench --suite layer --cases dsv3-tp8,qwen235-tp8,qwen235-tp4,qwen30-tp1,mixtral-tp2,dsv4f-tp4,dsv3-ep8 --tokens 1024,4096,16384 --cutlass-gemm2 --stages --json "$out/bench_hybrid.json" > "$out/bench_hybrid.txt" 2>&1
echo "bench rc=$?"
cat "$out/summary.txt"
zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -20
grep -E " layer " "$out/bench_hybrid.txt" | cut -c1-125
