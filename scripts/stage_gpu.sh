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
# The Python module for the device's interpreter (Python 3.12 with torch there, KINDS.md): built
# by a Python 3.12 here (PY_DEVICE, default pyenv's 3.12 when it has nanobind; the build dir is
# reconfigured for it and back), into .gpu/python. Skipped otherwise.
py_dev=${PY_DEVICE:-$(ls -d /root/.pyenv/versions/3.12*/bin/python3 2>/dev/null | head -1)}
if [ -n "$py_dev" ] && "$py_dev" -c "import nanobind" 2>/dev/null &&
   grep -q '^FUSEDMOE_WITH_PYTHON:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  py_now=$(sed -n 's/^Python_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt")
  reconf() { cmake "$build" -U 'Python_*' -U '_Python*' -DPython_EXECUTABLE="$1" > /dev/null && cmake --build "$build" --target _fusedmoe > /dev/null; }
  suffix=$("$py_dev" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
  if reconf "$py_dev" 2>/dev/null; then
    mkdir -p "$root/.gpu/python/fusedmoe"
    cp "$build"/python/fusedmoe/*.py "$root/.gpu/python/fusedmoe/"
    cp "$build/python/fusedmoe/_fusedmoe$suffix" "$root/.gpu/python/fusedmoe/" 2>/dev/null ||
      cp "$build"/python/fusedmoe/_fusedmoe.abi3.so "$root/.gpu/python/fusedmoe/"
    echo "staged the Python module for $("$py_dev" --version)"
  fi
  [ -n "$py_now" ] && { reconf "$py_now" || echo "stage: could not restore the build's Python ($py_now)"; }
else
  echo "stage: no Python 3.12 with nanobind here (PY_DEVICE): the Python module is not staged"
fi
git -C "$root" rev-parse --short HEAD > "$root/.gpu/COMMIT" 2>/dev/null || echo unknown > "$root/.gpu/COMMIT"
du -sh "$root/.gpu"
