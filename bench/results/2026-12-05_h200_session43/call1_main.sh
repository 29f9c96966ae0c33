#!/usr/bin/env bash
# Session 43's plan for the next device call (NOT RUN: no machine was lent in sessions 42-43). Build
# main here (scripts/build.sh && scripts/stage_gpu.sh && mkdir -p build_pack && rm -f build_pack/*.tar.xz
# && tar -cJf build_pack/gpu_main.tar.xz .gpu; ~29 MB), run with carry ["build_pack"]:
# (a) the full GPU suite in 12 shards (session 40: 317 s; the first run of the uncleared-workspace
#     tests DispatchApi.FusedFrontAcrossCallsOnOneWorkspace and the second sweep of
#     DispatchApi.DeviceTokenCountOneGraphServesEveryCount in their final form; session 43's
#     CutlassGatedGemm1.* and Forward.CutlassFusedActivation for the first time);
# (b) memcheck of the multi-call dispatch test (the gated CUTLASS GEMM1's: call3_fused_act.sh);
# (c) bench --suite dispatch twice: the front's kernel time now that it triggers its dependents at
#     its start when it quantises x (session 42: late_trigger removed; session 41 call 1 with it:
#     dsv3 + FP8 7.71 us at 256 tokens, 4.38 at 1; session 29 without it: 7.10 / 4.00);
# (d) the FP8 and BF16 decode tables (packed weights), for the README;
# (e) the fused front forced on / off for FP8 at 1-16 tokens.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
rm -rf .gpu && tar -xJf build_pack/gpu_main.tar.xz  # (always: a warm machine keeps the last call's .gpu)
B=.gpu/bin
echo "build $(cat .gpu/COMMIT)" > "$out/summary.txt"
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$out/summary.txt"; }
for s in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$s timeout 400 $B/fusedmoe_gpu_tests --gtest_filter='-StreamProbe.*' > "$out/shard_$s.log" 2>&1 &
done
wait
cat "$out"/shard_*.log > "$out/gpu_tests.log"; rm -f "$out"/shard_*.log
{ echo "suite: $(grep -c '^\[       OK \]' "$out/gpu_tests.log") OK, $(grep -c '^\[  FAILED  \]' "$out/gpu_tests.log") FAILED lines"
  grep '^\[  FAILED  \]' "$out/gpu_tests.log" | sort -u; } >> "$out/summary.txt"
gzip -f "$out/gpu_tests.log"
stamp suite done
timeout 150 compute-sanitizer --tool memcheck $B/fusedmoe_gpu_tests --gtest_filter='DispatchApi.FusedFrontAcrossCallsOnOneWorkspace' > "$out/memcheck.log" 2>&1
stamp "memcheck rc=$?: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$out/memcheck.log" | tr '\n' ' ')"
T=1,16,17,32,48,64,72,73,96,128,129,192,256
for r in 1 2; do
  echo "==== run $r" >> "$out/bench_dispatch.txt"
  timeout 80 $B/fusedmoe bench --suite dispatch --tokens $T >> "$out/bench_dispatch.txt" 2>&1
  stamp "dispatch r$r rc=$?"
done
echo "check failures: $(grep -c 'CHECK FAILED' "$out/bench_dispatch.txt")" >> "$out/summary.txt"
grep -E "^====|T=.*(token-order|route\+plan):" "$out/bench_dispatch.txt" | sed 's/  */ /g' | sed 's/all in.*| end/end/' | cut -c1-70 > "$out/front_end.txt"
timeout 150 $B/fusedmoe bench --suite layer --tokens 1,16,64,256 --packed \
  --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b > "$out/decode_fp8.txt" 2>&1
stamp "decode fp8 rc=$?"
timeout 200 $B/fusedmoe bench --suite layer --tokens 1,16,64,256 --packed > "$out/decode_bf16.txt" 2>&1
stamp "decode bf16 rc=$?"
# (e) the fused front forced on / off for the FP8 cases at 1-16 tokens (auto: separate kernels
#     there since session 36; its stated reason predates the permute that now always follows the
#     front for FP8, so the rule is worth a fresh look)
timeout 150 $B/fusedmoe bench --suite layer --tokens 1,4,16 --packed --front \
  --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b > "$out/front_fp8.txt" 2>&1
stamp "front fp8 rc=$?"
grep -E "over .* points" "$out/front_fp8.txt" >> "$out/summary.txt"
stamp end
cat "$out/summary.txt"; cat "$out/front_end.txt" | head -60
