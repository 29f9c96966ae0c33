#!/usr/bin/env bash
# Device call 4 (carry ["build_pack"]): the weight-streaming probe (tests/gpu/test_stream_probe.cu);
# the probe with activation boxes and a holding consumer; the FP8 grouped-GEMM tests with the trimmed rel_l2, session 34's seed and fresh seeds.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
timeout 120 $B/fusedmoe_gpu_tests --gtest_filter=StreamProbe.* > "$out/probe.log" 2>&1
grep probe "$out/probe.log" >> "$out/summary.txt"
for seed in 16296730396128209446 11 12 13; do
  FUSEDMOE_TEST_SEED=$seed timeout 300 $B/fusedmoe_gpu_tests --gtest_filter='Fp8GroupedGemm.*' > "$out/s_$seed.log" 2>&1 &
done
wait
for seed in 16296730396128209446 11 12 13; do
  echo "Fp8GroupedGemm seed $seed: $(grep -c '^\[       OK \]' "$out/s_$seed.log") OK, $(grep -c '^\[  FAILED  \]' "$out/s_$seed.log") FAILED; $(grep 'swapab16_v1 ' "$out/s_$seed.log" | head -1 | grep -oE 'rel_l2=.*carriers'; grep -A1 'swapab16_v1 ' "$out/s_$seed.log" | grep -oE 'largest.*' | head -1)" >> "$out/summary.txt"
  cat "$out/s_$seed.log" >> "$out/fp8_tests.log"; rm -f "$out/s_$seed.log"
done
gzip -f "$out/fp8_tests.log"
cat "$out/summary.txt"
