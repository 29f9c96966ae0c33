#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds + runs tests/install (a project that only
# knows the installed package). Usage: check_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1; src=$2
tmp=$(mktemp -d /tmp/fusedmoe_install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
test -f "$tmp/prefix/include/fusedmoe/fusedmoe.h" && ls "$tmp"/prefix/lib*/libfusedmoe.so > /dev/null
test -x "$tmp/prefix/bin/fusedmoe"
cmake -S "$src/tests/install" -B "$tmp/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" > "$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/consumer" > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
"$tmp/consumer/consumer"
"$tmp/prefix/bin/fusedmoe" presets > /dev/null
echo "install + find_package(fusedmoe) consumer: passed"
