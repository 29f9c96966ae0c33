#!/usr/bin/env bash
# CPU test of the built library (runs in CI): nothing in it can compile at run time.
#   1. no run-time compiler is linked: no NVRTC / nvJitLink / PTX-compiler library among its
#      DT_NEEDED entries and no such symbol in its symbol tables;
#   2. the fatbinary holds no PTX (nothing a driver could JIT at load time) ...
#   3. ... and only sm_90a machine code (every cubin), at least one per kernel family file.
# Fails if someone adds a JIT path, embeds PTX, or drops/changes the 90a target.
# usage: check_binary.sh LIBRARY CUOBJDUMP
set -uo pipefail
lib=$1
cuobjdump=$2
pass=0
fail=0
ok() { echo "ok: $1"; pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; fail=$((fail + 1)); }

needed=$(readelf -d "$lib" | grep NEEDED)
if echo "$needed" | grep -qiE 'nvrtc|nvjitlink|nvptxcompiler'; then
  bad "run-time compiler or driver JIT library linked: $(echo "$needed" | grep -iE 'nvrtc|nvjitlink|nvptxcompiler')"
else
  ok "no NVRTC / nvJitLink / PTX compiler among DT_NEEDED ($(echo "$needed" | grep -o '\[[^]]*\]' | tr '\n' ' '))"
fi
syms=$( { nm -D "$lib"; nm "$lib" 2>/dev/null; } | grep -E ' (nvrtc[A-Z]|nvJitLink[A-Z]|nvPTXCompiler[A-Z]|cuLinkCreate|cuLinkAddData)' | head -5)
if [ -n "$syms" ]; then bad "run-time compiler symbols present: $syms"; else ok "no nvrtc*/nvJitLink*/nvPTXCompiler*/cuLink* symbols"; fi

ptx=$("$cuobjdump" --list-ptx "$lib" 2>&1)
if echo "$ptx" | grep -qE '^PTX file'; then bad "PTX embedded (a driver could JIT it): $(echo "$ptx" | head -3)"
else ok "no PTX in the fatbinary"; fi

elf=$("$cuobjdump" --list-elf "$lib" 2>&1)
n_elf=$(echo "$elf" | grep -c '^ELF file')
n_90a=$(echo "$elf" | grep -c '\.sm_90a\.cubin$')
if [ "$n_elf" -gt 0 ] && [ "$n_elf" = "$n_90a" ]; then ok "$n_elf cubins, all sm_90a"
else bad "cubins not all sm_90a ($n_90a of $n_elf): $(echo "$elf" | grep -v '\.sm_90a\.cubin$' | head -3)"; fi

n_kernels=$("$cuobjdump" --dump-resource-usage "$lib" 2>/dev/null | grep -c 'Function ')
if [ "$n_kernels" -gt 0 ]; then ok "$n_kernels kernels with sm_90a machine code"; else bad "no kernel machine code found"; fi

echo "binary checks: $pass passed, $fail failed"
[ "$fail" = 0 ]
