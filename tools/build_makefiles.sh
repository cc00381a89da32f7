#!/usr/bin/env bash
# CI's Unix Makefiles build (build-make/), the generator `cmake -B b && cmake --build b -j`
# picks for any CMake user, whose per-target makefiles once lacked an order Ninja's one
# graph hid. The library is compiled once, at -O0 and by clang (what this checks is the
# generator's order of targets and generated sources and the paths a parent project sees;
# the Ninja build compiles the same sources with GCC at -O3; clang's -O0 takes a third
# less time than GCC's), in the build that covers the most:
#  - vkformer as a subproject (add_subdirectory, tests/consumer/subproject) of a C-only
#    app, with the command and samples opted in: the library (static and shared), the
#    command, both samples and the app, at -j2; then the app and the command run;
#  - configured only: the same subproject as a parent gets it by default (the library
#    alone: its CMakeLists fails otherwise), and the top level (tests included).
# Prints only on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
log=$(mktemp)
trap 'rm -f "$log"' EXIT
run() { "$@" >"$log" 2>&1 || { cat "$log" >&2; echo "FAIL: $*" >&2; exit 1; }; }
sub() {  # build dir, extra configure arguments...
  local dir=$1
  shift
  run cmake -S tests/consumer/subproject -B "$dir" -G "Unix Makefiles" -DVKFORMER_SOURCE="$src" \
      -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
      -DSAMPLE="$src/samples/c_translate/translate.c" "$@"
}
echo "== Unix Makefiles: vkformer as a subproject with its command and samples; the top level configured (build-make/)"
run cmake -S . -B build-make/top -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release
sub build-make/library-only
sub build-make/sub -DVKF_BUILD_CLI=ON
run cmake --build build-make/sub -j2
out=$(build-make/sub/translate samples/dates "25.12.1969")
grep -q -- "-> 1969-12-25" <<<"$out" || { echo "FAIL: the subproject's app did not translate: $out" >&2; exit 1; }
for target in vkformer/vkformer vkformer/c_translate vkformer/frame_loop vkformer/libvkformer.so; do
  [ -x "build-make/sub/$target" ] || { echo "FAIL: build-make/sub/$target was not built" >&2; exit 1; }
done
run build-make/sub/vkformer/vkformer translate --model samples/dates "3/3/98"
grep -q -- "1998-03-03" "$log" || { cat "$log" >&2; echo "FAIL: the subproject's command did not translate" >&2; exit 1; }
echo "built with Unix Makefiles: library, command, samples and a C app; the app and command translate"
