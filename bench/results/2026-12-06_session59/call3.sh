#!/usr/bin/env bash
# Session 59, call 3: the final GPU test of the tail pairs (call 2's failing auto-rule block removed,
# the rule now a CPU test) on the final build.
set -uo pipefail
source scripts/device_prelude.sh
tests_step tails 150 'Forward.Fp8TailPairs'
cat "$sum"
