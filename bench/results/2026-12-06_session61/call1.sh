#!/usr/bin/env bash
# Session 61, call 1. Restage first (scripts/build.sh && bash scripts/stage_gpu.sh && git rev-parse
# --short HEAD > .gpu/COMMIT && tar -cJf build_pack/gpu_main.tar.xz .gpu), carry
# ["build_pack/gpu_main.tar.xz"], LIMIT=560.
# 1. The GPU suite on this build (session 60's final library + the front's L2 prefetch blocks, off by
#    default; the new test DispatchApi.FusedFrontWithL2PrefetchMatchesSeparateKernels runs them).
# 2. The L2 prefetch of GEMM1's first weights by the fused front (FUSEDMOE_L2_PREFETCH_MB = 0 / 16 /
#    32, alternated, two rounds): the layer at 1 / 16 / 128 / 256 tokens. During the front (~5-11 us
#    in the layer) HBM is idle; GEMM1's CTAs learn their expert only after it.
# 2c. The new test under the GEMM prefetch too (below).
# 3. The lead on the fused front inside the layer: the dispatch suite with --flushed (rows after an L2
#    flush, and after the flush plus a code sweep that evicts the SMs' instruction caches).
set -uo pipefail
source scripts/device_prelude.sh
mkdir -p "$out/b"
o=$out
if [ "$(left)" -gt 330 ]; then suite_step 290; fi
out=$o/b
for r in 1 2; do
  for mb in 0 16 32; do
    FUSEDMOE_L2_PREFETCH_MB=$mb bench_step pf${mb}_$r 40 --suite layer --packed --tokens 1,16,128,256 \
      --cases qwen235-tp8-fp8c,qwen235-tp4-fp8b,dsv3-tp8-fp8b,qwen235-tp8
  done
done
# 2b. The FP8 Swap-AB GEMMs' per-CTA L2 prefetch of their first run's packed weights before the PDL
#     wait (FUSEDMOE_GEMM_L2_PF_KB=GEMM1,GEMM2 in KB; GEMM1 has early weights only on the permute path)
for v in 0,0 0,64 0,192 96,0 96,192; do
  FUSEDMOE_GEMM_L2_PF_KB=$v bench_step gpf_${v/,/_} 40 --suite layer --packed --tokens 16,128,256 \
    --cases qwen235-tp8-fp8c,qwen235-tp4-fp8b,dsv3-tp8-fp8b
done
tests_step pf_test 40 'DispatchApi.FusedFrontWithL2Prefetch*'
FUSEDMOE_GEMM_L2_PF_KB=96,192 FUSEDMOE_L2_PREFETCH_MB=16 tests_step pf_fwd 60 'Forward.Fp8RowScaledLayers:Forward.GraphReplayMatchesDirectCall'
bench_step dispatch 60 --suite dispatch --flushed --tokens 16,128,256 --cases qwen3-routing,dsv3-routing
grep -E "flushed|swept|T=" "$out/dispatch.txt" | cut -c1-230 >> "$sum"
out=$o
tar -czf "$out/bench.tar.gz" -C "$out" b && rm -rf "$out/b"
cat "$sum"
