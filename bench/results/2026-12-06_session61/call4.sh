#!/usr/bin/env bash
# Session 61, call 4 (run inline on the warm machine right after call 3; this file records the
# command): the two long tests that call 2's suite cut at its 280 s shard timeout, in parallel.
# Carry ["build_pack/gpu_main.tar.xz"] (build ec62acf).
source scripts/device_prelude.sh; for t in Fp8GatherRows Fp8HQuantInGemm2; do timeout 280 .gpu/bin/fusedmoe_gpu_tests --gtest_filter="Forward.$t" > "$out/long_$t.txt" 2>&1 & done; wait; for t in Fp8GatherRows Fp8HQuantInGemm2; do echo "$t: $(grep -E '^\[       OK|^\[  FAILED' "$out/long_$t.txt" | head -2)" >> "$sum"; done; tar -czf "$out/long.tar.gz" -C "$out" long_Fp8GatherRows.txt long_Fp8HQuantInGemm2.txt; rm -f "$out"/long_*.txt; cat "$sum"
