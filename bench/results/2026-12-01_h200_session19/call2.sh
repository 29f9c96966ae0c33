#!/usr/bin/env bash
# Session 19, call 2: (a) the CUTLASS FP8 row-scaled grouped GEMM (per-tensor / per-channel weight
# scales in the epilogue): its GPU tests and the FP8 / CUTLASS tests around it; prefill layer of the
# row-scaled cases on both backends (--cutlass) and the two CUTLASS configurations per GEMM
# (FUSEDMOE_CUTLASS_FP8_ROW_CONFIG, --stages). (b) The 1-token regression since session 15: session
# 15's final build (f3a5d19, .gpu15) and this one, same cases, same run, alternating.
# The builds travel compressed in build_pack/ (two libraries exceed the carry limit uncompressed).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_cur.tar.xz && tar -xJf build_pack/gpu_s15.tar.xz
GPU_TEST_SHARDS=8 GPU_TEST_FILTER='Forward.CutlassBackend*:Forward.Fp8*:CutlassGroupedGemm.*:KernelRegistry*:Preload*:Forward.DeviceTokenCountOneGraph' \
  bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
B=.gpu/bin/fusedmoe
timeout 120 $B bench --suite layer --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b --tokens 512,1024,4096,16384 --cutlass \
  > "$out/bench_cutlass_fp8row.txt" 2>&1
echo "bench cutlass rc=$?"
for c in 1,1 2,2 1,2 2,1; do
  echo "== FUSEDMOE_CUTLASS_FP8_ROW_CONFIG=$c"
  FUSEDMOE_CUTLASS_FP8_ROW_CONFIG=$c timeout 60 $B bench --suite layer --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t --tokens 1024,4096,16384 --stages
done > "$out/bench_fp8row_configs.txt" 2>&1
echo "bench configs rc=$?"
for rep in 1 2; do
  for b in .gpu15 .gpu; do
    echo "== $b rep $rep ($(cat $b/COMMIT 2>/dev/null))"
    timeout 60 $b/bin/fusedmoe bench --suite layer --cases qwen30-tp1,mixtral-tp2,gptoss-tp1,qwen235-tp8,dsv4f-tp4 --tokens 1,4 --precomputed --stages
  done
done > "$out/bench_1tok_ab.txt" 2>&1
echo "bench ab rc=$?"
cat "$out/summary.txt"
grep -E "FAILED|Failure" <(zcat "$out/gpu_tests.log.gz") | head -20
