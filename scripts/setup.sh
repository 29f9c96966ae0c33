#!/usr/bin/env bash
# Installs what building fusedmoe needs on a fresh Debian/Ubuntu machine, then the pinned
# CUTLASS headers. Idempotent: does nothing that is already there.
#   system: cmake (>= 3.25), ninja, g++, GoogleTest (libgtest-dev), python3 + pip
#   CUDA 13 toolkit (nvcc, cuBLAS, NCCL): expected at /usr/local/cuda; not installed here.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v ninja >/dev/null 2>&1 || need+=(ninja-build)
command -v g++ >/dev/null 2>&1 || need+=(g++)
[ -f /usr/include/gtest/gtest.h ] || need+=(libgtest-dev)
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
"$root/scripts/fetch_deps.sh"
# The Python module (nanobind) and its tests (numpy): built unless FUSEDMOE_WITH_PYTHON=OFF is
# given; a machine where pip cannot install them builds without it (scripts/build.sh says so).
case "${FUSEDMOE_CMAKE_ARGS:-}" in
  *FUSEDMOE_WITH_PYTHON=OFF*) ;;
  *)
    python3 -c "import nanobind, numpy" 2>/dev/null ||
      python3 -m pip install -q --disable-pip-version-check nanobind==3.1.0 numpy 2>&1 | grep -v "as the 'root' user" ||
      true ;;
esac
