#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds and runs the minimal C
# sample as separate projects would: with find_package(vkformer) (shared and static,
# the static one beside the application's own Vulkan loader) and with pkg-config. vkformer
# as a subproject (add_subdirectory, tests/consumer/subproject) is CI's Unix Makefiles
# build, tools/build_makefiles.sh.
#   tests/consumer/run.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name 'libvkformer.so' | head -n 1)")
export LD_LIBRARY_PATH=$libdir
model=$src/samples/dates
want="1998-03-03"

cmake -S "$src/tests/consumer" -B "$work/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
      -DSAMPLE="$src/samples/c_translate/translate.c" >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; exit 1; }
cmake --build "$work/cmake" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
out=$("$work/cmake/readme_cpp_shared" "$model")
echo "$out"
grep -q -- "-> $want" <<<"$out" || { echo "FAIL: the README's C++ example (shared library) did not print $want"; exit 1; }
# A C-only project (no C++ compiler enabled) with the static library.
cmake -S "$src/tests/consumer/c_only" -B "$work/c_only" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
      -DSAMPLE="$src/samples/c_translate/translate.c" >"$work/c_only.log" 2>&1 || { cat "$work/c_only.log"; exit 1; }
cmake --build "$work/c_only" >"$work/c_only-build.log" 2>&1 || { cat "$work/c_only-build.log"; exit 1; }
out=$("$work/c_only/translate_c_static" "$model" "3/3/98")
echo "$out"
grep -q -- "-> $want" <<<"$out" || { echo "FAIL: the C-only static build did not print $want"; exit 1; }
# The installed command finds its installed samples, wherever it is run from.
out=$(cd "$work" && "$prefix/bin/vkformer" bench model --quick --json)
grep -q "share/vkformer/samples/dates" <<<"$out" || { echo "FAIL: the installed bench model did not find share/vkformer/samples/dates"; exit 1; }
for app in translate_shared translate_static; do
  out=$("$work/cmake/$app" "$model" "3/3/98")
  echo "$out"
  grep -q -- "-> $want" <<<"$out" || { echo "FAIL: $app did not print $want"; exit 1; }
done
# ldd's output captured first: under pipefail, `ldd | grep -q` fails whenever grep quits
# at its match before ldd has written everything (ldd then dies of SIGPIPE).
libs=$(ldd "$work/cmake/translate_shared")
grep -q "libvkformer.so.0" <<<"$libs" || { echo "FAIL: not linked to libvkformer.so.0"; exit 1; }

# pkg-config as the README gives it for a prefix outside the loader's path: the rpath
# from libdir, no LD_LIBRARY_PATH.
export PKG_CONFIG_PATH=$libdir/pkgconfig
cc -std=c99 -Wall -Wextra -pedantic "$src/samples/c_translate/translate.c" $(pkg-config --cflags --libs vkformer) \
   -Wl,-rpath,"$(pkg-config --variable=libdir vkformer)" -o "$work/translate_pc"
out=$(env -u LD_LIBRARY_PATH "$work/translate_pc" "$model" "March 3, 1998")
echo "$out"
grep -q -- "-> $want" <<<"$out" || { echo "FAIL: the pkg-config build did not print $want"; exit 1; }
# The static library through vkformer-static.pc: no libvkformer.so needed at run time.
cc -std=c99 -Wall -Wextra -pedantic "$src/samples/c_translate/translate.c" $(pkg-config --cflags --libs vkformer-static) \
   -o "$work/translate_pc_static"
libs=$(ldd "$work/translate_pc_static")
! grep -q "libvkformer" <<<"$libs" || { echo "FAIL: vkformer-static.pc linked libvkformer.so"; exit 1; }
out=$(env -u LD_LIBRARY_PATH "$work/translate_pc_static" "$model" "March 3, 1998")
echo "$out"
grep -q -- "-> $want" <<<"$out" || { echo "FAIL: the vkformer-static.pc build did not print $want"; exit 1; }
# The README's streaming C program, as a new user copies it: built through pkg-config, run
# on a GPT-2 directory, its streamed text (the last word included) the command's.
awk '/^```c$/{on=1; next} /^```/{if(on) exit} on' "$src/README.md" >"$work/stream.c"
grep -q "vkf_translate" "$work/stream.c" || { echo "FAIL: no C program found in the README"; exit 1; }
cc -std=c99 -Wall -Wextra -pedantic -Werror "$work/stream.c" $(pkg-config --cflags --libs vkformer) \
   -Wl,-rpath,"$(pkg-config --variable=libdir vkformer)" -o "$work/stream"
gpt2=$src/tests/hf/gpt2/lm
streamed=$(env -u LD_LIBRARY_PATH "$work/stream" "$gpt2" "The date is")
whole=$("$prefix/bin/vkformer" generate --model "$gpt2" --prompt "The date is" 2>/dev/null)
[ -n "$streamed" ] && [ "$streamed" = "$whole" ] ||
  { echo "FAIL: the README's C program streamed '$streamed', the command gives '$whole'"; exit 1; }
echo "the README's streaming C program: $(wc -c <<<"$streamed") bytes, the command's text"
# An app's own C99 program on the installed header alone (tests/consumer/model_facts.c):
# model facts size its buffers, a batch of three sources is tokenized, translated and
# detokenized, and a missing model, bad input and a memory budget give distinct statuses.
cc -std=c99 -Wall -Wextra -pedantic -Werror "$src/tests/consumer/model_facts.c" $(pkg-config --cflags --libs vkformer) \
   -Wl,-rpath,"$(pkg-config --variable=libdir vkformer)" -o "$work/model_facts"
out=$(env -u LD_LIBRARY_PATH "$work/model_facts" "$model")
echo "$out"
grep -q -- "-> 1969-12-25" <<<"$out" && grep -q "all as expected" <<<"$out" ||
  { echo "FAIL: the C API program did not translate its batch or tell the failures apart"; exit 1; }

echo "consumers: find_package (C and C++ shared, static beside the loader, C-only static), pkg-config static (vkformer-static.pc) and with an rpath (the translate sample and a C99 app's model facts, batch and statuses) all translate"
