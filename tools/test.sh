#!/usr/bin/env bash
# README command 2: install what is missing, build, run every test through CTest with
# the Khronos validation layer on (any validation message fails a test).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh
ctest --preset default "$@"
