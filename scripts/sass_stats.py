#!/usr/bin/env python3
"""Static SASS statistics of compiled kernel instances, and their difference between two builds.

For kernel work without a GPU: what ptxas made of a change, read from the object files.
Per kernel instance (optionally only those whose mangled name contains every --match string):
  total    instructions in the function
  loop     instructions of the smallest backward-branch loop that holds a WGMMA (HGMMA / QGMMA
           in SASS): the K loop's body, both of its branches counted (a static size, not the
           instructions a given problem executes)
  r2ur     R2UR moves in that loop (WGMMA descriptors built in vector registers instead of
           uniform ones: extra instructions per K step)
  stsm     STSM (stmatrix) instructions in the function
  local    STL / LDL instructions (register spills) in the function
With two object files (old, new), prints both and the differences.

Uses the pinned cuobjdump that scripts/fetch_deps.sh puts in .deps/cuobjdump/bin (the CUDA 13
toolkit install of this project's machines has none), else one on PATH or given by --cuobjdump.
cuobjdump -sass runs nvdisasm, which is not pinned (CI does not need it): --fetch-nvdisasm
downloads the wheel of the pinned cuobjdump's version from PyPI into the same directory.

  scripts/sass_stats.py build/src/CMakeFiles/fusedmoe.dir/kernels/gemm/sm90_fp8_grouped_gemm_swapab.cu.o
  scripts/sass_stats.py old.o new.o --match ILb1ELi32
"""
import argparse
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import zipfile


def find_cuobjdump(given):
    pinned = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".deps", "cuobjdump", "bin", "cuobjdump")
    for c in [given, pinned, shutil.which("cuobjdump"), "/usr/local/cuda/bin/cuobjdump"]:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    sys.exit("sass_stats: no cuobjdump (scripts/fetch_deps.sh installs the pinned one in .deps/cuobjdump/bin)")


def fetch_nvdisasm(cuobjdump):
    bindir = os.path.dirname(cuobjdump)
    pin = os.path.join(bindir, "..", "PIN")
    if not os.path.isfile(pin):
        sys.exit("sass_stats: --fetch-nvdisasm needs the pinned cuobjdump (.deps/cuobjdump/PIN)")
    version = open(pin).read().split("==")[-1].strip()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", tmp,
                        f"nvidia-cuda-nvdisasm=={version}"], check=True)
        whl = glob.glob(os.path.join(tmp, "*.whl"))[0]
        with zipfile.ZipFile(whl) as z:
            name = next(n for n in z.namelist() if n.endswith("/bin/nvdisasm"))
            out = os.path.join(bindir, "nvdisasm")
            with z.open(name) as f, open(out, "wb") as g:
                g.write(f.read())
            os.chmod(out, 0o755)
    print(f"sass_stats: nvdisasm {version} -> {bindir}", file=sys.stderr)


def functions(cuobjdump, path):
    env = dict(os.environ, PATH=os.path.dirname(cuobjdump) + os.pathsep + os.environ.get("PATH", ""))
    r = subprocess.run([cuobjdump, "-sass", path], capture_output=True, text=True, env=env)
    if r.returncode != 0 or "Function :" not in r.stdout:
        sys.exit(f"sass_stats: cuobjdump -sass {path} gave no SASS (is nvdisasm beside it? --fetch-nvdisasm)\n{r.stderr}")
    out = r.stdout
    funcs, cur = {}, None
    for line in out.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = m.group(1)
            funcs[cur] = []
            continue
        m = re.match(r"\s*/\*([0-9a-f]+)\*/\s+(.*?)\s*;", line)
        if m and cur is not None:
            funcs[cur].append((int(m.group(1), 16), m.group(2)))
    return funcs


def stats(ins):
    loop = None
    for addr, text in ins:
        m = re.search(r"\bBRA (0x[0-9a-f]+)", text)
        if not m:
            continue
        target = int(m.group(1), 16)
        if target >= addr:
            continue
        body = [t for a, t in ins if target <= a <= addr]
        if any("GMMA" in t for t in body) and (loop is None or len(body) < len(loop)):
            loop = body
    return {
        "total": len(ins),
        "loop": len(loop) if loop else 0,
        "r2ur": sum("R2UR" in t for t in loop) if loop else 0,
        "stsm": sum(t.lstrip("@!P0123456789T ").startswith("STSM") for _, t in ins),
        "local": sum(bool(re.search(r"\b(STL|LDL)\b", t)) for _, t in ins),
    }


def short_name(mangled):
    try:
        name = subprocess.run(["c++filt", mangled], capture_output=True, text=True).stdout.strip()
    except OSError:
        return mangled
    name = re.sub(r"fusedmoe::kernels::\w+::", "", name)
    return re.sub(r"\(CUtensorMap_st.*|\(.*", "", name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("objects", nargs="+", help="one object file, or two (old new) to compare")
    ap.add_argument("--match", action="append", default=[], help="only instances whose mangled name contains this")
    ap.add_argument("--cuobjdump", default=None)
    ap.add_argument("--fetch-nvdisasm", action="store_true", help="download nvdisasm beside the pinned cuobjdump first")
    a = ap.parse_args()
    if len(a.objects) > 2:
        sys.exit("sass_stats: one or two object files")
    tool = find_cuobjdump(a.cuobjdump)
    if a.fetch_nvdisasm:
        fetch_nvdisasm(tool)
    builds = [functions(tool, p) for p in a.objects]
    keys = ["total", "loop", "r2ur", "stsm", "local"]
    print("instance".ljust(96) + "".join(k.rjust(8) for k in keys) + ("   (old -> new)" if len(builds) == 2 else ""))
    for name, ins in builds[0].items():
        if not all(m in name for m in a.match):
            continue
        s0 = stats(ins)
        row = short_name(name)[:95].ljust(96)
        if len(builds) == 2:
            if name not in builds[1]:
                print(row + "  (not in the second build)")
                continue
            s1 = stats(builds[1][name])
            row += "".join((f"{s1[k]}" if s0[k] == s1[k] else f"{s0[k]}>{s1[k]}").rjust(8) for k in keys)
        else:
            row += "".join(str(s0[k]).rjust(8) for k in keys)
        print(row)


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # (piped into head)
    main()
