#!/usr/bin/env bash
# Session 57, call 2: precomputed ids through the fused front at 17-256 tokens (several routing
# blocks: a cluster or a cooperative grid). (a) the changed GPU tests (DispatchApi.*: every fused-
# front and precomputed case), memcheck of the bad-id tests; (b) the dispatch suite from
# precomputed ids (fused vs separate kernels, 1-256 tokens) and the logits routers (unchanged
# paths, regression); (c) the layers from precomputed ids with the front forced each way
# (17-256 tokens), FP8 row-scaled also with gathered rows.
set -uo pipefail
source scripts/device_prelude.sh
timeout 200 .gpu/bin/fusedmoe_gpu_tests --gtest_filter='DispatchApi.*:Forward.PrecomputedAndHashRouting' > "$out/tests_changed.txt" 2>&1
echo "== changed tests: rc=$? at $(( $(date +%s) - start )) s; $(grep -cE '^\[       OK' "$out/tests_changed.txt") ok, $(grep -cE '^\[  FAILED  \] [A-Z]' "$out/tests_changed.txt") failed" >> "$sum"
grep -E "FAILED|Failure" "$out/tests_changed.txt" | head -20 >> "$sum"
timeout 120 compute-sanitizer --tool memcheck .gpu/bin/fusedmoe_gpu_tests \
  --gtest_filter='DispatchApi.PrecomputedIdsOutOfRangeAreReportedNotWritten:DispatchApi.FusedFrontPrecomputedDuplicateIds:DispatchApi.DeviceTokenCountPrecomputedFusedFront' > "$out/memcheck.txt" 2>&1
echo "== memcheck: rc=$? at $(( $(date +%s) - start )) s; $(grep -E 'ERROR SUMMARY' "$out/memcheck.txt" | tail -1)" >> "$sum"
bench_step dispatch_pre 60 --suite dispatch --tokens 1,16,17,32,48,49,64,72,73,128,129,256
grep -E "routing|precomputed" "$out/dispatch_pre.txt" | grep -v "^ *command" | cut -c1-150 >> "$sum"
bench_step front_fp8 150 --suite layer --packed --precomputed --front --tokens 17,32,64,128,256 \
  --cases qwen235-tp8-fp8c,dsv3-tp8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b,dsv3-ep8-fp8b
bench_step front_bf16 150 --suite layer --packed --precomputed --front --tokens 17,32,64,128,256 \
  --cases qwen235-tp8,qwen30-tp1,dsv3-tp8,mixtral-tp2,gptoss-tp1
bench_step front_gather 90 --suite layer --packed --precomputed --front --gather --tokens 17,32,64,128 \
  --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t
cat "$sum"
