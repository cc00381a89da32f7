#!/usr/bin/env bash
# Configures (once) and builds build/ incrementally; prints only on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if [ ! -f build/build.ninja ]; then
  cmake --preset default >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
fi
cmake --build --preset default >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
