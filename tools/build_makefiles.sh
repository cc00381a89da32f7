#!/usr/bin/env bash
# The whole tree (library, command, samples, tests) built with Unix Makefiles at -j2 in
# build-make/, as `cmake -B b && cmake --build b -j2` does for any CMake user; CI runs it
# beside the Ninja build. Prints only on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "== Unix Makefiles: the whole tree (build-make/)"
if [ ! -f build-make/Makefile ]; then
  cmake -S . -B build-make -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
fi
cmake --build build-make -j2 >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
echo "built with Unix Makefiles"
