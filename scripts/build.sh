#!/usr/bin/env bash
# Configures and builds fusedmoe (library, CUDA kernels for sm_90a, tool, tests) into build/.
# Installs what the build needs first (scripts/setup.sh): CUTLASS headers, cmake/ninja/gtest.
# Environment: BUILD_DIR (default build), FUSEDMOE_CMAKE_ARGS (extra -D options),
#              JOBS (parallel compile jobs; default 2: nvcc on CUTLASS needs ~4-6 GiB per job).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
start=$(date +%s)
cuda=ON
command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] || cuda=OFF
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p "$build"
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFUSEDMOE_WITH_CUDA=$cuda \
  ${FUSEDMOE_CMAKE_ARGS:-} >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
grep -E "^-- fusedmoe" "$build/configure.log" || true
cmake --build "$build" -j "${JOBS:-2}"
end=$(date +%s)
lib=$(ls "$build"/lib/libfusedmoe.so 2>/dev/null || true)
echo "build: $((end - start)) s; library $( [ -n "$lib" ] && du -h "$lib" | cut -f1 ) ($build)"
