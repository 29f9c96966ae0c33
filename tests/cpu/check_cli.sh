#!/usr/bin/env bash
# The command-line tool on a machine without a GPU (ctest `cli_options`, label cpu): `explain` and
# `run` take --quant (the preset's weights in another scheme) and refuse what cannot run with a
# clear message and exit code 2; `run` falls back to the float64 reference. Usage: check_cli.sh FUSEDMOE_BINARY
set -u
bin=$1
fail=0
check() {  # check NAME EXPECTED_RC PATTERN ARGS...
  local name=$1 want=$2 pat=$3
  shift 3
  local out rc
  out=$("$bin" "$@" 2>&1); rc=$?
  if [ "$rc" != "$want" ] || ! grep -qE -- "$pat" <<< "$out"; then
    echo "FAIL $name: rc=$rc (want $want), pattern '$pat' $(grep -cE -- "$pat" <<< "$out") matches"
    echo "$out" | tail -5
    fail=1
  else
    echo "ok   $name"
  fi
}
check explain_fp8c 0 'weights=fp8e4m3/per-channel' explain --preset qwen235-tp8 --quant fp8c --tokens 256
check explain_fp8t 0 'weights=fp8e4m3/per-tensor' explain --preset qwen235-tp8 --quant fp8t --tokens 16
check explain_bf16 0 'weights=bf16' explain --preset dsv3-tp8 --quant bf16 --tokens 4
check explain_ue8m0 0 'block/ue8m0' explain --preset qwen235-tp4 --quant fp8b-ue8m0 --tokens 64
check quant_unknown 2 "unknown --quant 'int4'" explain --preset qwen235-tp8 --quant int4
check quant_blocks_shape 2 'multiples of 128' explain --preset gptoss-tp1 --quant fp8b
check preset_unknown 2 "unknown preset 'nope'" run --preset nope
check run_cpu_quant 0 'all finite: yes' run --preset tiny-qwen --quant fp8c --tokens 3 --seed 7 --cpu
check run_cpu 0 'all finite: yes' run --seed 5 --cpu
exit $fail
