#!/usr/bin/env python3
"""Compares the SASS of two objects function by function (cuobjdump --dump-sass; nvdisasm on PATH).
Encodings and whitespace are ignored. `--drop S`: a new-object function whose name is an old one
with S inserted (e.g. a template argument added with its old value as default: --drop Lb0E) is
compared with that old function; other names are left as they are.
Usage: sass_same.py OLD.o NEW.o [--drop S ...]"""
import collections
import re
import subprocess
import sys


def load(path):
    out = subprocess.run([sys.argv[0].rsplit("/", 1)[0] + "/../../../.deps/cuobjdump/bin/cuobjdump", "--dump-sass", path],
                         capture_output=True, text=True, check=True).stdout
    d, cur = collections.defaultdict(list), None
    for line in out.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = m.group(1)
            continue
        if "Fatbin" in line or "identifier =" in line:  # the next cubin's header (its source path)
            cur = None
            continue
        t = re.sub(r"\s+", " ", re.sub(r"/\*[0-9a-fx]*\*/", "", line)).strip()
        if cur and t:
            d[cur].append(t)
    return d


def main():
    args = sys.argv[1:]
    drops = [args[i + 1] for i, a in enumerate(args) if a == "--drop"]
    files = [a for i, a in enumerate(args) if a != "--drop" and (i == 0 or args[i - 1] != "--drop")]
    a, b = load(files[0]), load(files[1])
    for name in list(b):
        for s in drops:
            old = name.replace(s, "")
            if old != name and old in a and old not in b:
                b[old] = b.pop(name)
                break
    bad = 0
    for k in sorted(a):
        same = a[k] == b.get(k)
        bad += not same
        print(("same " if same else "DIFF ") + k)
    print("%d of %d functions differ; %d only in the new object" % (bad, len(a), len(set(b) - set(a))))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
