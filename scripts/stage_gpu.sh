#!/usr/bin/env bash
# Copies what the GPU machine needs from a prepared build into .gpu/ (ignored by git):
# bin/ (fusedmoe, test binaries) and lib/ (libfusedmoe.so). Carry `.gpu` with the device call
# and run scripts/gpu_run.sh there. The binaries link the CUDA and C++ runtimes statically and
# find lib/ through their $ORIGIN rpath, so they run from any path.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
rm -rf "$root/.gpu"
mkdir -p "$root/.gpu"
cp -r "$build/bin" "$build/lib" "$root/.gpu/"
# (the device tool carries at most 64 MiB with the tree: the CPU tests run here, and the host
# symbol table is not needed there; dynamic symbols and the device code stay)
rm -f "$root/.gpu/bin/fusedmoe_cpu_tests"
strip --strip-unneeded "$root/.gpu/lib/libfusedmoe.so"
git -C "$root" rev-parse --short HEAD > "$root/.gpu/COMMIT" 2>/dev/null || echo unknown > "$root/.gpu/COMMIT"
du -sh "$root/.gpu"
