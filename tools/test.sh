#!/usr/bin/env bash
# README command 2: install what is missing, build, run every test through CTest with
# the Khronos validation layer on (any validation message fails a test), then the
# sanitizer runs (ASan+UBSan over the whole suite, TSan over the threaded tests) and a
# libFuzzer smoke run of every fuzz target, and the library and command built once more
# with Unix Makefiles. VKF_SANITIZERS=0 skips those three for a quick local run; CI runs everything.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh
# lavapipe runs each dispatch on one thread (unless the caller chose): its tests' small
# dispatches lose more to handing work between threads than they gain, and CTest's two
# runners fill the two cores. (On CI's 2 cores the main suite took 489 s so against 583.)
export LP_NUM_THREADS=${LP_NUM_THREADS:-0}
ctest --preset default "$@"
if [ "${VKF_SANITIZERS:-1}" != 0 ]; then
  # The build every CMake user runs: the default generator (Unix Makefiles), whose
  # per-target makefiles once lacked an order Ninja's one graph hid.
  tools/build_makefiles.sh
  tools/sanitize.sh
  tools/fuzz.sh
fi
