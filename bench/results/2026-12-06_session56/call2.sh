#!/usr/bin/env bash
# Session 56, call 2, build 88d3395+ (the combine's bias kernels reworked: group offsets in shared
# memory, bias rows after the expert rows with float4 loads; CUTLASS auto for biased layers from 128
# rows per expert; row-scaled FP8 from precomputed ids up to 16 tokens on the fused front with
# gathered rows).
# (a) the changed kernels' GPU tests first (Combine.*, the bias timing, Forward.CutlassBackendExpertBias);
# (b) gptoss-tp1 on each backend at 1024-16384 tokens with stages (where CUTLASS starts to win);
# (c) the vLLM points of row-scaled FP8 from precomputed ids (the new default at 1-16 tokens);
# (d) every switch forced on the FP8 decode points under 0.75 (dsv3-ep8-fp8b 16, qwen235-tp8-fp8t
#     128, qwen235-tp4-fp8b 256 tokens);
# (e) the whole GPU suite, the main job and the torch test, if 250 s are left.
set -uo pipefail
source scripts/device_prelude.sh
timeout 120 .gpu/bin/fusedmoe_gpu_tests --gtest_filter='Combine.*:CombineTiming.*:Forward.CutlassBackendExpertBias' \
  > "$out/tests_changed.txt" 2>&1
echo "== changed tests: rc=$? at $(( $(date +%s) - start )) s; $(grep -cE '^\[       OK' "$out/tests_changed.txt") ok, $(grep -cE '^\[  FAILED  \] [A-Z]' "$out/tests_changed.txt") failed" >> "$sum"
grep -E "\[timing\] combine T=.*groups|FAILED" "$out/tests_changed.txt" >> "$sum"
bench_step gptoss 120 --suite layer --packed --cutlass --stages --tokens 1024,2048,3072,4096,16384 --cases gptoss-tp1
bench_step pre_rs 60 --suite layer --packed --precomputed --tokens 1,4,16,64 --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t
bench_step sw_fp8 120 --suite layer --packed --balanced --dense --splitk --scales --front --gather --evict --pdl \
  --tokens 16 --cases dsv3-ep8-fp8b
bench_step sw_fp8b 120 --suite layer --packed --balanced --dense --splitk --scales --front --gather --evict --pdl \
  --tokens 128,256 --cases qwen235-tp8-fp8t,qwen235-tp4-fp8b
mkdir -p "$out/bench" && mv "$out"/gptoss.txt "$out"/pre_rs.txt "$out"/sw_*.txt "$out/bench/" 2>/dev/null
tar -czf "$out/bench.tar.gz" -C "$out" bench && rm -rf "$out/bench"
if [ "$(left)" -gt 250 ]; then suite_step 330; else echo "suite skipped ($(left) s left)" >> "$sum"; fi
cat "$sum"
