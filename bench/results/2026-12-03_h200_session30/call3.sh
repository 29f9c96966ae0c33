#!/usr/bin/env bash
# Session 30, call 3 (the same warm machine): the full GPU suite alone, 12 shards, on the pack of
# 842ef70 (.gpu/COMMIT), for a summary that comes back.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
cat .gpu/COMMIT; t0=$(date +%s)
for i in $(seq 0 11); do GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$i .gpu/bin/fusedmoe_gpu_tests > $OUT/shard$i.log 2>&1 & done; wait
echo "suite $(( $(date +%s)-t0 )) s"; cat $OUT/shard*.log > $OUT/gpu_tests.log; rm $OUT/shard*.log
grep -E "^\[  PASSED  \]|^\[  FAILED  \]|tests ran" $OUT/gpu_tests.log | sort | uniq -c | head -20
grep -c "^\[       OK \]" $OUT/gpu_tests.log; grep -E "^\[  FAILED  \]" $OUT/gpu_tests.log | head; gzip -f $OUT/gpu_tests.log
