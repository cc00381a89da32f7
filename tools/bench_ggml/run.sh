#!/bin/sh
# vkformer's GEMM beside ggml's Vulkan backend, measured in one run on one device.
#
#   tools/bench_ggml/run.sh GGML_SOURCE_DIR [ROUNDS]
#
# GGML_SOURCE_DIR is a ggml checkout you fetched (ggml-org/ggml; the figures in the
# README are at d99724f). This builds it with its Vulkan backend (Debian 12 needs the
# glslc and spirv-headers packages, and ggml's vk::LayerSettingEXT block put behind
# `#ifdef VK_EXT_layer_settings`, which Vulkan headers 1.3.239 lack), builds
# bench_ggml.cpp against it, then alternates ROUNDS (default 3) rounds of ggml and of
# `vkformer bench ops` and prints the median GFLOP/s per shape, ggml's, vkformer's and
# their ratio, and the median ratio per shape class. On lavapipe GGML_VK_VISIBLE_DEVICES=0
# lets ggml see the CPU device. vkformer's build is build/ (tools/build.sh). GGML_BUILD
# names an existing build of the tree instead of building it again.
set -eu
src=${1:?usage: tools/bench_ggml/run.sh GGML_SOURCE_DIR [ROUNDS]}
rounds=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$root/build/bench_ggml
mkdir -p "$out"
# GGML_BUILD: an existing build of that tree (its Vulkan shaders take a while to compile).
ggml=${GGML_BUILD:-$out/ggml}
if [ -z "${GGML_BUILD:-}" ]; then
  cmake -S "$src" -B "$ggml" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_VULKAN=ON -DGGML_BUILD_EXAMPLES=OFF \
    -DGGML_BUILD_TESTS=OFF > "$out/ggml-configure.log"
  cmake --build "$ggml" > "$out/ggml-build.log"
fi
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
