#!/usr/bin/env bash
# Session 57, call 3 (the final code): first the tests of the new defaults (precomputed ids through
# forward() on the fused front's blocks, BF16 and row-scaled FP8; the dispatch cases), then the
# layers from precomputed ids with the new defaults at the decode token counts, then the whole GPU
# suite, the main job and the torch test while time is left.
set -uo pipefail
source scripts/device_prelude.sh
timeout 150 .gpu/bin/fusedmoe_gpu_tests \
  --gtest_filter='Forward.PrecomputedAndHashRouting:Forward.Fp8RowScaledLayers:DispatchApi.*' > "$out/tests_changed.txt" 2>&1
echo "== changed tests: rc=$? at $(( $(date +%s) - start )) s; $(grep -cE '^\[       OK' "$out/tests_changed.txt") ok, $(grep -cE '^\[  FAILED  \] [A-Z]' "$out/tests_changed.txt") failed" >> "$sum"
grep -E "FAILED|Failure" "$out/tests_changed.txt" | head -20 >> "$sum"
bench_step pre_fp8 60 --suite layer --packed --precomputed --tokens 16,32,64,128,256 \
  --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
mkdir -p "$out/bench" && mv "$out"/pre_*.txt "$out/bench/" 2>/dev/null
tar -czf "$out/bench.tar.gz" -C "$out" bench && rm -rf "$out/bench"
if [ "$(left)" -gt 250 ]; then suite_step 300; else echo "suite skipped ($(left) s left)" >> "$sum"; fi
cat "$sum"
