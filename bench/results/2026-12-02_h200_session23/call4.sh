#!/usr/bin/env bash
# Session 23, call 4: the session's final device code (gpu_final) vs 06493da (gpu_head).
# (a) the full GPU suite; call 2's failing FP8 case with its seed (the test's new bound);
# (b) BF16 layers behind a correction-bias router (the new tile rule), old / new alternated;
# (c) the decode table, every case, 1-256 tokens (new build).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_final.tar.xz
mkdir -p old && tar -xJf build_pack/gpu_head.tar.xz -C old
GPU_TEST_SHARDS=12 bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/info.log" "$out/sass.txt.gz"; gzip -f "$out/gpu_tests.log"
FUSEDMOE_TEST_SEED=9737647375288112084 timeout 60 .gpu/bin/fusedmoe_gpu_tests --gtest_filter=Fp8GroupedGemm.Gemm1ActivationSweep 2>&1 | grep -E "gemm1_gelu_t64 |PASSED|FAILED  \]" | cut -c1-280 >> "$out/summary.txt"
cat "$out/summary.txt"; zcat "$out/gpu_tests.log.gz" | grep -E "FAILED|Failure|illegal|misaligned" | head -20
for b in old/.gpu .gpu old/.gpu .gpu; do
  echo "== $b $(cat $b/COMMIT)"
  timeout 60 $b/bin/fusedmoe bench --suite layer --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4 --tokens 64,128,256 2>&1 | grep -E "layer" | cut -c1-120
done > "$out/bench_ab_bias.txt" 2>&1
cat "$out/bench_ab_bias.txt"
timeout 200 .gpu/bin/fusedmoe bench --suite layer --tokens 1,16,64,256 --json "$out/bench_decode.json" > "$out/bench_decode.txt" 2>&1
echo "decode rc=$?"; grep -E "layer|mean" "$out/bench_decode.txt" | cut -c1-130
