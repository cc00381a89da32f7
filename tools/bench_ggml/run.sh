#!/bin/sh
# vkformer's GEMM beside ggml's Vulkan backend, measured in one run on one device.
#
#   GGML_BUILD=DIR tools/bench_ggml/run.sh GGML_SOURCE_DIR [ROUNDS]
#
# GGML_SOURCE_DIR is a checkout of the peer (ggml-org/ggml; docs/performance.md names the
# commit its figures were measured at) and GGML_BUILD an existing build of it with its
# Vulkan backend, made by you as that project documents: this script builds only
# bench_ggml.cpp against it. It alternates ROUNDS (default 3) rounds of ggml and of
# `vkformer bench ops` and prints the median GFLOP/s per shape, ggml's, vkformer's and
# their ratio, and the median ratio per shape class. On lavapipe GGML_VK_VISIBLE_DEVICES=0
# lets ggml see the CPU device. vkformer's build is build/ (tools/build.sh).
set -eu
src=${1:?usage: GGML_BUILD=DIR tools/bench_ggml/run.sh GGML_SOURCE_DIR [ROUNDS]}
ggml=${GGML_BUILD:?GGML_BUILD must name an existing build of the ggml checkout (its libggml*.so)}
rounds=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$root/build/bench_ggml
mkdir -p "$out"
[ -n "$(find "$ggml" -name 'libggml-vulkan*.so' -print -quit)" ] ||
  { echo "GGML_BUILD=$ggml holds no libggml-vulkan.so: build ggml with its Vulkan backend first" >&2; exit 1; }
libs=$(find "$ggml" -name 'libggml*.so' -printf '%h\n' | sort -u | tr '\n' ':')
c++ -O2 -std=c++17 "$here/bench_ggml.cpp" -I"$src/include" -L"$ggml/src" -L"$ggml/src/ggml-vulkan" \
  -lggml -lggml-base -lggml-vulkan -Wl,-rpath,"$libs" -o "$out/bench_ggml"
export GGML_VK_VISIBLE_DEVICES=${GGML_VK_VISIBLE_DEVICES:-0}
i=1
while [ "$i" -le "$rounds" ]; do
  echo "round $i: ggml" >&2
  "$out/bench_ggml" > "$out/ggml-$i.txt"
  echo "round $i: vkformer" >&2
  "$root/build/vkformer" bench ops --device 0 --max-size 2048 --json-out "$out/vkformer-$i.json" > /dev/null
  i=$((i + 1))
done
/usr/bin/python3 "$here/compare.py" "$out" "$rounds"
