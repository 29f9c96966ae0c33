#!/usr/bin/env bash
# Plan for the next session (written in session 50 on branch wip/gemm1-split-chains, copied here in
# session 51; not run): the split-chains branch's GPU test, memcheck and A/B. Run from main's tree
# with the branch's build: PACK=build_pack/gpu_split.tar.xz bash bench/results/2026-12-05_session51_plan/call2.sh
# and carry ["build_pack/gpu_split.tar.xz"]: the branch with main merged in (a888bec, built and
# staged in session 51 in the worktree /work/wt-split; its 135 CPU tests pass). The A/B is within
# that one build (split on / off).
#  1. the new GPU test Forward.SplitChains (every chain split, and split only past one wave, bitwise
#     against whole chains and against the reference), under compute-sanitizer memcheck too;
#  2. BF16 and FP8 decode layers with the split decided on the device (bench --split-chains: variants
#     "split chains" = 1 and "split chains always" = 2 against the default, whole chains) under
#     uniform, one-hot and Zipf routing at 16 / 64 / 256 tokens (session 50, call 6: one hot expert
#     made qwen235-tp8's GEMM1 run 270 chain CTAs for 264 slots, a second wave of whole chains,
#     layer 309.8 against 244.2 us uniform);
#  3. then, in another call, the whole GPU suite on that build (call2b: GPU_TEST_* as in call1.sh).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
rm -rf .gpu && tar -xJf "${PACK:-build_pack/gpu_split.tar.xz}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
B=.gpu/bin/fusedmoe
export PATH=/usr/local/cuda/bin:$PATH
timeout 120 .gpu/bin/fusedmoe_gpu_tests --gtest_filter='Forward.SplitChains' > "$out/split_test.log" 2>&1
echo "Forward.SplitChains: rc=$? $(grep -E 'PASSED|FAILED' "$out/split_test.log" | head -2 | tr '\n' ' ')" >> "$sum"
timeout 200 compute-sanitizer --tool memcheck .gpu/bin/fusedmoe_gpu_tests --gtest_filter='Forward.SplitChains' \
  > "$out/memcheck.log" 2>&1
echo "memcheck: rc=$? $(grep -E 'ERROR SUMMARY' "$out/memcheck.log" | tail -1)" >> "$sum"
cases=qwen235-tp8,dsv3-tp8,dsv3-ep8,mixtral-tp2,qwen235-tp8-fp8c,dsv3-tp8-fp8b,dsv3-ep8-fp8b
for m in uniform onehot zipf; do
  timeout 120 $B bench --suite layer --tokens 16,64,256 --packed --split-chains --skew $m --cases "$cases" \
    > "$out/layers_$m.txt" 2>&1
  echo "== $m: rc=$?" >> "$sum"
  grep -E " layer " "$out/layers_$m.txt" | grep -v "packed off" | cut -c1-120 >> "$sum"
  grep -A4 "variants against" "$out/layers_$m.txt" >> "$sum"
done
OUT=$out scripts/bundle_out.sh >> "$sum"
cat "$sum"
