#!/usr/bin/env bash
# Session 40, call 5 (carry ["build_pack"]): the final code after the review mend (kernels
# byte-identical to call 3's build, 555/555). Full GPU suite in 12 shards (with the split-K cases of
# Forward.Fp8HQuantInGemm2 and Forward.Fp8HQuantInGemm2Reduced); memcheck of the reduced test; the
# six FP8 cases at 1-256 tokens with the final rule (the decode table, packed weights); the four
# cases it applies to at 1-512 tokens with it forced on and off (--hs), two runs.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
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
timeout 120 compute-sanitizer --tool memcheck $B/fusedmoe_gpu_tests --gtest_filter='Forward.Fp8HQuantInGemm2Reduced' > "$out/memcheck.log" 2>&1
stamp "memcheck rc=$?: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$out/memcheck.log" | tr '\n' ' ')"
timeout 150 $B/fusedmoe bench --suite layer --tokens 1,16,64,256 --packed \
  --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b > "$out/decode.txt" 2>&1
stamp "decode rc=$?"
C=qwen235-tp8-fp8c,dsv3-tp8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
for r in 1 2; do
  timeout 150 $B/fusedmoe bench --suite layer --tokens 1,16,64,256,512 --packed --hs --cases $C > "$out/hs_off_r$r.txt" 2>&1
  stamp "hs off r$r rc=$?"
  grep -E "over .* points" "$out/hs_off_r$r.txt" >> "$out/summary.txt"
done
stamp end
tail -12 "$out/summary.txt"
