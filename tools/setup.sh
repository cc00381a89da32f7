#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages vkformer needs, and nothing when all are present.
# On Debian 12 it takes lavapipe (mesa-vulkan-drivers) from bookworm-backports: Mesa
# 25 is 2-3.5x faster at compute than bookworm's 22.3 and fixes a queue-thread crash.
set -euo pipefail

packages=(build-essential cmake ninja-build pkg-config
  libvulkan-dev libvulkan-volk-dev glslang-dev glslang-tools spirv-tools
  mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  libgtest-dev nlohmann-json3-dev libopenblas-dev doxygen libsentencepiece-dev libpcre2-dev libutf8proc-dev
  python3-torch python3-numpy python3-jsonschema
  librsvg2-bin  # rsvg-convert: the bench chart test renders its SVG
  clang)  # libFuzzer (tools/fuzz.sh)

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "vkformer setup: need root (or sudo) to run: $*" >&2; exit 1; fi
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

want_backports=0
if grep -q '^VERSION_CODENAME=bookworm' /etc/os-release 2>/dev/null; then
  mesa=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true)
  case "$mesa" in *bpo12*) ;; *) want_backports=1 ;; esac
fi

[ ${#missing[@]} -eq 0 ] && [ $want_backports -eq 0 ] && exit 0

export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
run() { "$@" >>"$log" 2>&1 || { cat "$log" >&2; echo "vkformer setup: failed: $*" >&2; exit 1; }; }

if [ $want_backports -eq 1 ] && [ ! -f /etc/apt/sources.list.d/bookworm-backports.sources ] &&
   ! grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/; then
  echo "vkformer setup: adding bookworm-backports for Mesa 25 (lavapipe)"
  as_root tee /etc/apt/sources.list.d/bookworm-backports.sources >/dev/null <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
note=""; [ $want_backports -eq 1 ] && note=" mesa-vulkan-drivers (from bookworm-backports)"
echo "vkformer setup: installing ${missing[*]:-}${note}"
run as_root apt-get update -q
[ ${#missing[@]} -eq 0 ] || run as_root apt-get install -y -q --no-install-recommends "${missing[@]}"
if [ $want_backports -eq 1 ]; then
  run as_root apt-get install -y -q -t bookworm-backports mesa-vulkan-drivers
fi
