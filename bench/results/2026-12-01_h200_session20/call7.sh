#!/usr/bin/env bash
# Session 20, call 7 (branch wip/front-one-block, build fea00a0 = .gpu_front; d8a2982 = .gpu): the
# fused front in one-block / several-block instances. GPU tests of the front's users (router,
# dispatch API, plan, the forward tests at small token counts); the dispatch suite (fused front per
# call) and the 1-token layer, both builds alternating.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
for f in build_pack/*.tar.xz; do tar -xJf "$f"; done
rm -rf .gpu_base && mv .gpu .gpu_base && mv .gpu_front .gpu
GPU_TEST_SHARDS=12 GPU_TEST_FILTER='DispatchApi.*:RouterGpu.*:Plan*:KernelRegistry*:Preload*:Forward.SuiteShapesAtSmallBatch:Forward.DeviceTokenCountOneGraph:Forward.OverlappedLaunchesMatchPlainBitwise:Forward.TokenCountsBothFamilies:Forward.SkewedRoutingSharedExpertAndExpertMap:Forward.GraphReplayMatchesDirectCall:Forward.EveryActivation:Forward.BoundaryShapes:Forward.Fp8SwapAbTiles:Forward.Fp8DynamicPerTensor' \
  bash scripts/gpu_run.sh > /dev/null 2>&1
rm -f "$out/sass.txt.gz" "$out/run.log" "$out/info.log"
gzip -f "$out/gpu_tests.log"
for rep in 1 2; do
  for b in .gpu_base .gpu; do
    echo "== $b rep $rep ($(cat $b/COMMIT))"
    timeout 40 $b/bin/fusedmoe bench --suite dispatch --tokens 1,16
    timeout 40 $b/bin/fusedmoe bench --suite layer --cases qwen30-tp1,qwen235-tp8,mixtral-tp2,dsv3-tp8-fp8b --tokens 1,16 --precomputed
  done
done > "$out/bench_front_ab.txt" 2>&1
echo "bench rc=$?"
cat "$out/summary.txt"
grep -E "FAILED|Failure" <(zcat "$out/gpu_tests.log.gz") | head -20
