#!/usr/bin/env bash
# Session 17, call 3 (experiment build): weight K steps issued in groups (FUSEDMOE_GEMM_KGROUP=n:
# the producer waits until n ring stages are free, then issues their loads back to back, so the n
# consecutive 128-byte pieces of each weight row reach the memory together). The grouped GEMM
# tests with n = 4; then the decode layer with n = 1, 2, 4, 1 (the repeat: run-to-run noise).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
FUSEDMOE_GEMM_KGROUP=4 GPU_TEST_SHARDS=8 GPU_TEST_FILTER='GroupedGemm*:Fp8GroupedGemm.*:Forward.SwapAbTiles:Forward.Fp8SwapAbTiles:Forward.OverlappedLaunchesMatchPlainBitwise' \
  bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
i=0
for g in 1 2 4 1; do
  i=$((i + 1))
  FUSEDMOE_GEMM_KGROUP=$g timeout 100 .gpu/bin/fusedmoe bench --suite layer --cases qwen235-tp8,dsv3-tp8,qwen235-tp4,mixtral-tp2,dsv4f-tp4,qwen30-tp1,gptoss-tp1,dsv3-tp8-fp8b,qwen235-tp8-fp8c,dsv4f-tp4-fp8b \
    --tokens 16,64,256 > "$out/bench_kgroup${g}_$i.txt" 2>&1
  echo "bench kgroup $g rc=$?"
done
cat "$out/summary.txt"
grep -E "FAILED|Failure" <(zcat "$out/gpu_tests.log.gz") | head -20
paste <(grep -E "^(dsv|qwen|mixtral|gptoss)" "$out/bench_kgroup1_1.txt" | awk '{print $1, $(NF-5), $(NF-4)}') \
  <(grep -E "^(dsv|qwen|mixtral|gptoss)" "$out/bench_kgroup2_2.txt" | awk '{print $(NF-4)}') \
  <(grep -E "^(dsv|qwen|mixtral|gptoss)" "$out/bench_kgroup4_3.txt" | awk '{print $(NF-4)}') \
  <(grep -E "^(dsv|qwen|mixtral|gptoss)" "$out/bench_kgroup1_4.txt" | awk '{print $(NF-4)}')
