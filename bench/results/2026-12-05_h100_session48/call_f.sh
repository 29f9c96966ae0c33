#!/usr/bin/env bash
# Session 48, call f (one command line, on the warm H100 after call e, no carry: call e's .gpu of
# 2958fa4 still there): the GPU suite with the combine's float64 chain (FUSEDMOE_COMBINE_F64=1, the
# code of every element before 2958fa4), i.e. the merged epilogue-per-kernel build, cut at the budget.
export FUSEDMOE_COMBINE_F64=1; OUT=$OUT/t GPU_TEST_SHARDS=16 GPU_TEST_TIMEOUT=235 GPU_TEST_FILTER='-StreamProbe.*' SASS=0 MAIN=0 timeout 245 scripts/gpu_run.sh > /dev/null; cat $OUT/t/summary.txt; gzip -f $OUT/t/gpu_tests.log; grep -h "FAILED\|Timeout\|timed out" $OUT/t/*.log 2>/dev/null | head
