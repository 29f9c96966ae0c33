#!/usr/bin/env bash
# Session 21, call 3: the staged Swap-AB epilogue (build in .gpu, packed as build_pack/gpu_new.tar.xz)
# against HEAD's kernels (fea00a0's build, .gpu_front): the GEMM tests and the FP8 / small-batch
# forward tests on the new build; then the decode suite (every case, 1/16/64/256 tokens) twice,
# alternating old / new; the stage split of the new build for four cases.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_front.tar.xz
tar -xJf build_pack/gpu_new.tar.xz
GPU_TEST_SHARDS=8 GPU_TEST_FILTER='*GroupedGemm*:Forward.Fp8*:Forward.TokenCountsBothFamilies:Forward.SkewedRouting*:Forward.SwapAbTiles:Forward.EveryActivation:Forward.BoundaryShapes:Forward.BalancedGemm2Dynamic:Forward.SuiteShapesAtSmallBatch:Forward.SplitKClustersFitOneWave' bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/run.log" "$out/info.log"; gzip -f "$out/gpu_tests.log"
for rep in 1 2; do
  for g in .gpu_front .gpu; do
    echo "== $g rep $rep ($(cat $g/COMMIT 2>/dev/null))"
    timeout 100 $g/bin/fusedmoe bench --suite layer --tokens 1,16,64,256 2>&1 | grep -E "^[a-z0-9-]+ +layer bf16|^[a-z0-9-]+ +layer fp8|geometric"
  done
done > "$out/bench_ab.txt"
timeout 60 .gpu/bin/fusedmoe bench --suite layer --cases dsv3-tp8-fp8b,qwen235-tp8-fp8c,dsv3-tp8,qwen235-tp8 --tokens 64,256 --stages > "$out/bench_stages.txt" 2>&1
cat "$out/summary.txt"
zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure" | head -20
