#!/usr/bin/env bash
# The device tool returns at most 8 files from $OUT (16 MiB each, two folders down). Run last in a
# device command: everything under $OUT except the top-level summary.txt goes into
# $OUT/bundle.tar.gz (unpack here with tar -xzf), so no log is left behind however many a call
# writes. Nothing to do when $OUT holds 8 files or fewer (they come back as they are).
#   OUT=/path scripts/bundle_out.sh
set -uo pipefail
out=${OUT:?OUT must name the folder to bundle}
n=$(find "$out" -type f | wc -l)
[ "$n" -le 8 ] && exit 0
tmp=$(mktemp /tmp/bundle.XXXXXX.tar.gz)
tar -czf "$tmp" -C "$out" --exclude=./summary.txt . || { echo "bundle_out: tar failed"; exit 1; }
# (only after the archive is whole; summary.txt files in subfolders are in it and go too)
find "$out" -mindepth 1 -maxdepth 1 ! -name summary.txt -exec rm -rf {} +
mv "$tmp" "$out/bundle.tar.gz"
echo "bundle_out: $n files -> $out/bundle.tar.gz ($(du -h "$out/bundle.tar.gz" | cut -f1))"
