#!/usr/bin/env bash
# Session 20, call 2 (diagnosis, no tests; build afa9eac = .gpu, session 15's f3a5d19 = .gpu15):
# where the BF16 decode points under 0.75 of the floor lose (qwen235-tp8 16 / 256, mixtral-tp2 256,
# dsv3-tp8 256): stages and the forced switches (tiles per CTA, balanced GEMM2), the tile families
# at 128-512 tokens (crossover); mixtral-tp2 at 4 tokens against session 15's build (stages and
# timelines); the BF16 decode suite with the router (every case, 1-256 tokens).
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
tar -xJf build_pack/gpu_new.tar.xz && tar -xJf build_pack/gpu_s15.tar.xz
B=.gpu/bin/fusedmoe
timeout 100 $B bench --suite layer --cases qwen235-tp8,dsv3-tp8,mixtral-tp2,gptoss-tp1 --tokens 16,256 --precomputed --stages \
  --balanced --tpc 1,2,4 > "$out/bench_switches.txt" 2>&1
echo "switches rc=$?"
timeout 120 $B bench --suite crossover --cases mixtral-tp2,qwen235-tp8,dsv3-tp8,gptoss-tp1 --tokens 128,256,512 \
  > "$out/bench_crossover.txt" 2>&1
echo "crossover rc=$?"
for b in .gpu15 .gpu; do
  echo "== $b ($(cat $b/COMMIT))"
  timeout 40 $b/bin/fusedmoe bench --suite layer --cases mixtral-tp2,qwen235-tp8 --tokens 4,256 --precomputed --stages --trace
done > "$out/bench_mixtral4.txt" 2>&1
echo "mixtral4 rc=$?"
timeout 120 $B bench --suite layer --tokens 1,4,16,64,256 --json "$out/bench_decode.json" > "$out/bench_decode.txt" 2>&1
echo "decode rc=$?"
