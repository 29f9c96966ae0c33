#!/usr/bin/env bash
# Session 23, call 3. v2 = 8ee2058 (gpu_v2: active activation boxes, tile 8 unchanged at compile
# time, bench --zero-bias) vs old = 06493da (gpu_head).
# (a) call 2's one failure, Fp8GroupedGemm.Gemm1ActivationSweep, with its seed on both builds;
# (b) defaults alternated old / v2 / old / v2 at decode;
# (c) every tile forced (v2): balanced routing at 8 rows per expert (dsv3 with zero bias at 256,
#     qwen cases at 128) and the default (skewed) dsv3 data at 128 tokens.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_v2.tar.xz
mkdir -p old && tar -xJf build_pack/gpu_head.tar.xz -C old
for b in old/.gpu .gpu; do
  echo "== $b $(cat $b/COMMIT)"
  FUSEDMOE_TEST_SEED=9737647375288112084 timeout 60 $b/bin/fusedmoe_gpu_tests --gtest_filter=Fp8GroupedGemm.Gemm1ActivationSweep 2>&1 | grep -E "gemm1_gelu_t64 |PASSED|FAILED  \]" | cut -c1-260
done > "$out/seed_test.txt" 2>&1
cat "$out/seed_test.txt"
for b in old/.gpu .gpu old/.gpu .gpu; do
  echo "== $b $(cat $b/COMMIT)"
  timeout 60 $b/bin/fusedmoe bench --suite layer --cases dsv3-tp8,qwen235-tp8,qwen30-tp1 --tokens 16,64,256 2>&1 | grep -E "layer" | cut -c1-120
done > "$out/bench_ab.txt" 2>&1
cat "$out/bench_ab.txt"
timeout 100 .gpu/bin/fusedmoe bench --suite crossover --zero-bias --cases dsv3-tp8,dsv3-ep8 --tokens 256 > "$out/bench_x_zero_bias.txt" 2>&1
echo "rc=$?"; grep "T=" "$out/bench_x_zero_bias.txt" | cut -c1-150
timeout 100 .gpu/bin/fusedmoe bench --suite crossover --cases qwen235-tp8,qwen30-tp1,qwen235-tp4,dsv3-tp8,dsv3-ep8 --tokens 128 > "$out/bench_x_128.txt" 2>&1
echo "rc=$?"; grep "T=" "$out/bench_x_128.txt" | cut -c1-150
for f in bench_x_zero_bias bench_x_128; do grep -E "^(dsv3|qwen)" "$out/$f.txt" | sed -E 's/layer bf16 (swap-ab|normal), token tile [0-9]+ //' | awk '{print $1, $2, $3, $4, $5, $6}'; done
