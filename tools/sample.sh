#!/usr/bin/env bash
# README command 1: install what is missing, build, and run the main samples on the
# default device: the device list, a self-test, and the shipped date translator.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh
build/vkformer info
build/vkformer selftest
echo
build/vkformer forecast --model samples/forecast
echo
build/vkformer translate --model samples/dates \
  "the 3rd of March 1998" "3/3/98" "March 3, 1998" "1998年3月3日" "Tuesday, July 4, 2023" "25.12.1969"
