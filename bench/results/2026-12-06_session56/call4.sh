#!/usr/bin/env bash
# Session 56, call 4 (the final code, with the last ~275 s of device budget): the changed GPU tests
# (Forward.CutlassBackendExpertBias, Forward.CutlassFusedActivation, Combine.*), then gptoss-tp1 at
# 2048 / 3072 / 4096 tokens with the fused activation forced each way (the narrowed rule's edge).
set -uo pipefail
source scripts/device_prelude.sh
timeout 100 .gpu/bin/fusedmoe_gpu_tests \
  --gtest_filter='Forward.CutlassBackendExpertBias:Forward.CutlassFusedActivation:Combine.*' > "$out/tests_changed.txt" 2>&1
echo "== changed tests: rc=$? at $(( $(date +%s) - start )) s; $(grep -cE '^\[       OK' "$out/tests_changed.txt") ok, $(grep -cE '^\[  FAILED  \] [A-Z]' "$out/tests_changed.txt") failed" >> "$sum"
grep -E "FAILED|Failure" "$out/tests_changed.txt" | head -20 >> "$sum"
bench_step gptoss_act 90 --suite layer --packed --fused-act --tokens 2048,3072,4096 --cases gptoss-tp1
cat "$sum"
