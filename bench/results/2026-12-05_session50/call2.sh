#!/usr/bin/env bash
# Session 50, call 2 (carry ["build_pack/gpu_exp.tar.xz"]: bin/fusedmoe + lib of the experiment
# build, 46091ee + the FUSEDMOE_EXP_TRUNC_TAIL switch of call2_trunc_tail.patch).
#  1. Where each GEMM2 and combine of qwen235-tp8 (BF16) and qwen235-tp8-fp8c at 256 tokens read
#     from: ncu without cache control (the L2 as the layer leaves it after the bench's flush),
#     one-pass metrics: duration, L2 hit rate, DRAM bytes read / written.
#  2. The most a shared tail stage could save on the K = 192 GEMM2s: FUSEDMOE_EXP_TRUNC_TAIL=1
#     drops the ragged last K step (timing only: wrong results), two alternated rounds.
set -uo pipefail
out=${OUT:-out}; mkdir -p "$out"
sum="$out/summary.txt"
rm -rf .gpu && tar -xJf build_pack/gpu_exp.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$sum"
echo "build $(cat .gpu/COMMIT)" >> "$sum"
B=.gpu/bin/fusedmoe
export PATH=/usr/local/cuda/bin:$PATH
m=gpu__time_duration.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_write.sum
for c in qwen235-tp8 qwen235-tp8-fp8c; do
  timeout 150 ncu --cache-control none --metrics "$m" --kernel-name regex:'combine|grouped_gemm' \
    --launch-skip 40 --launch-count 12 $B bench --suite layer --tokens 256 --packed --cases "$c" > "$out/ncu_$c.txt" 2>&1
  echo "ncu $c: rc=$?" >> "$sum"
  grep -E "^  [a-z_]|gpu__time|hit_rate|dram__bytes|srcunit" "$out/ncu_$c.txt" | sed -E 's/ +/ /g' | cut -c1-140 >> "$sum"
done
for r in 1 2; do
  for v in 0 1; do
    echo "== round $r trunc $v" >> "$sum"
    FUSEDMOE_EXP_TRUNC_TAIL=$v timeout 150 $B bench --suite layer --tokens 16,64,256 --packed --stages \
      --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t > "$out/trunc_r${r}_$v.txt" 2>&1
    grep -E " layer | stage gemm2 " "$out/trunc_r${r}_$v.txt" | grep -v "packed off" | cut -c1-110 >> "$sum"
  done
done
OUT=$out scripts/bundle_out.sh >> "$sum"
cat "$sum"
