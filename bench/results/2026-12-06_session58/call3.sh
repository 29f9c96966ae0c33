#!/usr/bin/env bash
# Session 58, call 3 (the warm machine of call 2, the same pack: 9676b70): the whole GPU suite, the
# main job and the torch test on the final library code.
set -uo pipefail
source scripts/device_prelude.sh
suite_step 300
cat "$sum"
