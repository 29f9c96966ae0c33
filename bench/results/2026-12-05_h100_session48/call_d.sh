#!/usr/bin/env bash
# Session 48, call d (one command line, as run on the warm H100 after call c; no carry: main's .gpu and
# build_pack/wip were still there): FP8 stages at 256 tokens, main against the wip branch, alternated.
o=$OUT; for r in 1 2; do for b in .gpu build_pack/wip; do n=$(basename $b)_$r; timeout 60 $b/bin/fusedmoe bench --suite layer --tokens 256 --packed --stages --cases dsv3-tp8-fp8b,qwen235-tp8-fp8c > $o/st_$n.txt 2>&1; echo "== $n $(cat $b/COMMIT)"; grep -E " layer |stage gemm" $o/st_$n.txt | grep -v "packed off" | cut -c1-75; done; done
