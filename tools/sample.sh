#!/usr/bin/env bash
# README command 1: install what is missing, build, run the main sample on the default device.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh
build/vkformer info
build/vkformer selftest
