#!/usr/bin/env bash
# Session 58, call 2 (the final code; carry ["build_pack/gpu_main.tar.xz"], staged at the commit in
# summary.txt): `fusedmoe run` at 0 tokens (call 1 found check_device_errors reading the poisoned
# flag there; fixed on the host), the main job and other presets through the new GPU run; on an H200
# also vLLM's table and the decode tables (the H200 evidence issues #4 / #5 owe).
set -uo pipefail
source scripts/device_prelude.sh
runs() {
  local i=0
  for args in "" "--preset qwen30-tp1 --tokens 0" "--preset qwen235-tp8 --tokens 0 --quant fp8c" \
              "--preset qwen235-tp4 --tokens 65" "--preset kimi-k2-tp8 --tokens 16" "--preset llama4-scout --tokens 7" \
              "--preset nemotron-nano --tokens 300" "--preset dsv4f-tp4 --quant fp8b-ue8m0 --tokens 128"; do
    i=$((i + 1))
    [ "$(left)" -lt 45 ] && { echo "run $i skipped ($(left) s left)" >> "$sum"; continue; }
    timeout 100 .gpu/bin/fusedmoe run $args --seed 12 > "$out/run_$i.txt" 2>&1
    echo "run $i ($args): rc=$? $(grep -E 'GPU layer|rel error|time per call' "$out/run_$i.txt" | cut -c1-170 | tr '\n' ' ')" >> "$sum"
  done
  tar -czf "$out/runs.tar.gz" -C "$out" $(cd "$out" && ls run_*.txt) && rm -f "$out"/run_*.txt
}
runs
if grep -q H200 "$sum"; then
  bench_step v_dsv3tp8 70 --suite layer --packed --precomputed --tokens 1,16,256,4096,16384 --cases dsv3-tp8-fp8b
  bench_step v_q235fp8 50 --suite layer --packed --precomputed --tokens 1,256,16384 --cases qwen235-tp8-fp8c,qwen235-tp8
  bench_step decode_fp8 80 --suite layer --tokens 1,16,64,128,256 --packed \
    --cases qwen235-tp8-fp8c,qwen235-tp8-fp8t,dsv3-tp8-fp8b,dsv3-ep8-fp8b,dsv4f-tp4-fp8b,qwen235-tp4-fp8b
  bench_step decode_bf16 80 --suite layer --tokens 1,16,64,128,256 --packed \
    --cases dsv3-tp8,dsv3-ep8,dsv4f-tp4,qwen235-tp8,qwen235-tp4,qwen30-tp1,mixtral-tp2,gptoss-tp1
  bench_step v_rest 90 --suite layer --packed --precomputed --tokens 1,64,1024,4096,16384 --cases dsv4f-tp4-fp8b,qwen235-tp4-fp8b,qwen30-tp1,mixtral-tp2,gptoss-tp1
  mkdir -p "$out/bench" && mv "$out"/v_*.txt "$out"/decode_*.txt "$out/bench/" 2>/dev/null
  tar -czf "$out/bench.tar.gz" -C "$out" bench && rm -rf "$out/bench"
fi
cat "$sum"
