#!/usr/bin/env bash
# The library, the command and the samples built with Unix Makefiles at -j2 in
# build-make/, as `cmake -B b && cmake --build b -j2` builds them for any CMake user; CI
# runs it beside the Ninja build. The test binaries, the same sources again with no
# cross-target ordering of their own, are left out to keep CI within its time, and it
# compiles without optimisation (-O0: what it checks is the generator's order of
# targets and generated sources; the Ninja build compiles the same sources at -O3).
# Prints only on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "== Unix Makefiles: library, command and samples (build-make/)"
if [ ! -f build-make/Makefile ]; then
  cmake -S . -B build-make -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release \
        "-DCMAKE_CXX_FLAGS_RELEASE=-O0 -DNDEBUG" "-DCMAKE_C_FLAGS_RELEASE=-O0 -DNDEBUG" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
fi
cmake --build build-make -j2 --target vkformer vkformer_shared vkformer_cli c_translate frame_loop >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
echo "built with Unix Makefiles"
