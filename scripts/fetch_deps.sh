#!/usr/bin/env bash
# Installs the pinned CUTLASS/CuTe headers into .deps/cutlass (include/ + tools/util/include/)
# and the pinned cuobjdump into .deps/cuobjdump/bin (used by a CPU test of the built library).
# Steps: pip-download the hash-pinned wheel listed in deps/cutlass.txt, unpack its headers.
# Skips the work when .deps/cutlass already holds the pinned version.
# Override: configure with -DFUSEDMOE_CUTLASS_DIR=/path/to/cutlass (a checkout) instead.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/.deps/cutlass"
pin=$(grep -v '^#' "$root/deps/cutlass.txt" | head -n1 | awk '{print $1}')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# cuobjdump: one binary from its wheel.
cpin=$(grep -v '^#' "$root/deps/cuobjdump.txt" | head -n1 | awk '{print $1}')
cdest="$root/.deps/cuobjdump"
if ! { [ -f "$cdest/PIN" ] && [ "$(cat "$cdest/PIN")" = "$cpin" ] && [ -x "$cdest/bin/cuobjdump" ]; }; then
  python3 -m pip download --quiet --no-deps --require-hashes -r "$root/deps/cuobjdump.txt" -d "$tmp/cuobjdump" >&2
  rm -rf "$cdest" && mkdir -p "$cdest/bin"
  python3 - "$tmp/cuobjdump" "$cdest/bin/cuobjdump" <<'PY'
import glob, os, sys, zipfile
whl = glob.glob(os.path.join(sys.argv[1], "*.whl"))[0]
with zipfile.ZipFile(whl) as z:
    name = next(n for n in z.namelist() if n.endswith("/bin/cuobjdump"))
    with z.open(name) as f, open(sys.argv[2], "wb") as g:
        g.write(f.read())
os.chmod(sys.argv[2], 0o755)
PY
  echo "$cpin" > "$cdest/PIN"
fi

if [ -f "$dest/PIN" ] && [ "$(cat "$dest/PIN")" = "$pin" ] && [ -f "$dest/include/cute/tensor.hpp" ]; then
  exit 0
fi
python3 -m pip download --quiet --no-deps --require-hashes -r "$root/deps/cutlass.txt" -d "$tmp/cutlass" >&2
python3 - "$tmp/cutlass" "$dest" <<'PY'
import sys, zipfile, glob, os, shutil
tmp, dest = sys.argv[1], sys.argv[2]
whl = glob.glob(os.path.join(tmp, "*.whl"))[0]
shutil.rmtree(dest, ignore_errors=True)
prefixes = {"cutlass_library/source/include/": "include/",
            "cutlass_library/source/tools/util/include/": "tools/util/include/"}
n = 0
with zipfile.ZipFile(whl) as z:
    for name in z.namelist():
        for src, dst in prefixes.items():
            if name.startswith(src) and not name.endswith("/"):
                out = os.path.join(dest, dst, name[len(src):])
                os.makedirs(os.path.dirname(out), exist_ok=True)
                with z.open(name) as f, open(out, "wb") as g:
                    g.write(f.read())
                n += 1
print(f"fetch_deps: {n} CUTLASS header files -> {dest}", file=sys.stderr)
PY
echo "$pin" > "$dest/PIN"
