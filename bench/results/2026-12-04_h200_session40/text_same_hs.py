#!/usr/bin/env python3
"""Compares the machine code of two fusedmoe libraries kernel by kernel: every .text.<kernel>
section of every sm_90a cubin (extracted with `cuobjdump -xelf all`, .deps/cuobjdump), byte for
byte. Anonymous-namespace names, which hash the source path, are normalised. Needs no nvdisasm.
Session 40: the FP8 grouped GEMM kernel gained a fifth template argument (kHs, false in every
kernel the old library has): the new names' explicit `false` is dropped before comparing, and the
new kernels (kHs = true) are listed apart.
Usage: text_same_hs.py OLD.so NEW.so"""
import os
import re
import struct
import subprocess
import sys
import tempfile

CUOBJDUMP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../.deps/cuobjdump/bin/cuobjdump")


def cubins(lib, into):
    subprocess.run([CUOBJDUMP, "-xelf", "all", os.path.abspath(lib)], cwd=into, check=True, capture_output=True)
    return {f: os.path.join(into, f) for f in os.listdir(into)}


def texts(path, new=False):
    b = open(path, "rb").read()
    shoff = struct.unpack_from("<Q", b, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]
    stro = secs[shstrndx][4]

    def name(o):
        return b[stro + o:b.index(b"\0", stro + o)].decode()

    out = {}
    for s in secs:
        n = name(s[0])
        if n.startswith(".text."):
            n = re.sub(r"_GLOBAL__N__[0-9a-f]+_[0-9]+_\w+?_cu_[0-9a-f]+", "ANON", n)
            if new:
                n = re.sub(r"(ELb[01]ELb[01]ELb[01])ELb0(EEEv14CUtensorMap)", r"\1\2", n)
            out[n] = b[s[4]:s[4] + s[5]]
    return out


def main():
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        old, new = cubins(sys.argv[1], a), cubins(sys.argv[2], b)
        total = same = 0
        for f in sorted(set(old) | set(new)):
            if f not in old or f not in new:
                print("only in one:", f)
                continue
            to, tn = texts(old[f]), texts(new[f], True)
            for k in sorted(set(tn) - set(to)):
                print("new:", f, k[:160])
            for k in sorted(set(to)):
                total += 1
                if to.get(k) == tn.get(k):
                    same += 1
                else:
                    print("differs:", f, k[:200])
        print(f"{len(old)} / {len(new)} cubins, {total} kernels, {same} identical")
        return 0 if same == total and set(old) == set(new) else 1


if __name__ == "__main__":
    sys.exit(main())
