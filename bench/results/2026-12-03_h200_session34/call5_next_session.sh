#!/usr/bin/env bash
# NOT RUN (for the next session): settles whether call 3's failing seed predates session 34.
# Build c8daf8c (the kernels before the pair instances) in a worktree and pack only what the test
# needs, beside the current build (both packs together must stay under the 64 MiB carry: pack the old
# one as .gpu_old with bin/fusedmoe_gpu_tests and lib/ only, and carry ["build_pack"] with nothing
# else large in the tree):
#   git worktree add /tmp/old c8daf8c && (cd /tmp/old && scripts/build.sh) &&
#   mkdir -p .gpu_old/bin .gpu_old/lib && cp /tmp/old/build/bin/fusedmoe_gpu_tests .gpu_old/bin/ &&
#   cp /tmp/old/build/lib/libfusedmoe.so .gpu_old/lib/ && strip --strip-unneeded .gpu_old/lib/libfusedmoe.so &&
#   tar -cJf build_pack/gpu_old.tar.xz .gpu_old && rm -rf .gpu_old
# (the test binary finds its library through RUNPATH $ORIGIN/../lib)
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
[ -d .gpu ] || tar -xJf build_pack/gpu_head.tar.xz
[ -d .gpu_old ] || tar -xJf build_pack/gpu_old.tar.xz
for b in .gpu .gpu_old; do
  for seed in 16296730396128209446 1 2 3; do
    FUSEDMOE_TEST_SEED=$seed timeout 60 $b/bin/fusedmoe_gpu_tests --gtest_filter=Fp8GroupedGemm.SwapAbTiles > "$out/s.log" 2>&1
    echo "$b seed $seed rc=$?: $(grep -E 'swapab16_v1 ' "$out/s.log" | grep -oE 'rel_l2=[0-9.e-]+')"
    cat "$out/s.log" >> "$out/seed_repro.log"
  done
done
rm -f "$out/s.log"; gzip -f "$out/seed_repro.log"
