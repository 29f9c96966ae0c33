#!/usr/bin/env bash
# Session 56, call 3 (final code): CUTLASS auto for biased layers from 64 rows per expert (call 2),
# and GEMM1 with b1 + the activation in its epilogue by auto for interleaved gate / up over >= 16
# tiles of 256 (gptoss-tp1's 2N = 5760), to be measured here.
# (a) the changed GPU tests first: Forward.CutlassBackendExpertBias (auto CUTLASS, forced and auto
#     fused activation with biases), Forward.CutlassFusedActivation, Combine.*;
# (b) gptoss-tp1 at 2048 / 4096 / 16384 tokens, the fused activation forced each way, each backend,
#     with stages;
# (c) vLLM's gptoss-tp1 points from precomputed ids (1 / 64 / 4096 tokens); FP8 prefill stages
#     (qwen235-tp8-fp8c, dsv3-tp8-fp8b at 4096 / 16384 tokens) for the next session;
# (d) the whole GPU suite, the main job and the torch test, if 250 s are left.
set -uo pipefail
source scripts/device_prelude.sh
timeout 150 .gpu/bin/fusedmoe_gpu_tests \
  --gtest_filter='Forward.CutlassBackendExpertBias:Forward.CutlassFusedActivation:Combine.*' > "$out/tests_changed.txt" 2>&1
echo "== changed tests: rc=$? at $(( $(date +%s) - start )) s; $(grep -cE '^\[       OK' "$out/tests_changed.txt") ok, $(grep -cE '^\[  FAILED  \] [A-Z]' "$out/tests_changed.txt") failed" >> "$sum"
grep -E "FAILED|Failure" "$out/tests_changed.txt" | head -20 >> "$sum"
bench_step gptoss_act 120 --suite layer --packed --cutlass --fused-act --stages --tokens 2048,4096,16384 --cases gptoss-tp1
bench_step v_gptoss 60 --suite layer --packed --precomputed --tokens 1,64,4096 --cases gptoss-tp1
bench_step fp8_pre 60 --suite layer --packed --stages --tokens 4096,16384 --cases qwen235-tp8-fp8c,dsv3-tp8-fp8b
mkdir -p "$out/bench" && mv "$out"/gptoss_act.txt "$out"/v_gptoss.txt "$out"/fp8_pre.txt "$out/bench/" 2>/dev/null
tar -czf "$out/bench.tar.gz" -C "$out" bench && rm -rf "$out/bench"
if [ "$(left)" -gt 250 ]; then suite_step 330; else echo "suite skipped ($(left) s left)" >> "$sum"; fi
cat "$sum"
