#!/usr/bin/env bash
# Configures and builds fusedmoe (library, CUDA kernels for sm_90a, tool, tests) into build/.
# Installs what the build needs first (scripts/setup.sh): CUTLASS headers, cmake/ninja/gtest.
# Environment: BUILD_DIR (default build), FUSEDMOE_CMAKE_ARGS (extra -D options; the Python module
#              is on where python3 has nanobind + numpy, unless -DFUSEDMOE_WITH_PYTHON=... is given),
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
# The Python module: on where nanobind, numpy and the Python headers are there (scripts/setup.sh
# installs the first two), unless FUSEDMOE_CMAKE_ARGS decides.
py=""
case "${FUSEDMOE_CMAKE_ARGS:-}" in
  *FUSEDMOE_WITH_PYTHON=*) ;;
  *)
    if python3 -c "import nanobind, numpy, sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" 2>/dev/null; then
      py="-DFUSEDMOE_WITH_PYTHON=ON -DPython_EXECUTABLE=$(python3 -c 'import sys; print(sys.executable)')"
    else
      echo "build: the Python module is skipped (python3 with nanobind, numpy and its headers not found)"
      py="-DFUSEDMOE_WITH_PYTHON=OFF"
    fi ;;
esac
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFUSEDMOE_WITH_CUDA=$cuda \
  $py ${FUSEDMOE_CMAKE_ARGS:-} >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
grep -E "^-- fusedmoe" "$build/configure.log" || true
cmake --build "$build" -j "${JOBS:-2}"
end=$(date +%s)
lib=$(ls "$build"/lib/libfusedmoe.so 2>/dev/null || true)
echo "build: $((end - start)) s; library $( [ -n "$lib" ] && du -h "$lib" | cut -f1 ) ($build)"
