#!/usr/bin/env bash
# libFuzzer smoke run (called by tools/test.sh; VKF_SANITIZERS=0 there skips it): builds
# tests/fuzz with clang into build-fuzz/ and runs each target for VKF_FUZZ_SECONDS (6)
# from its committed seed corpus (tests/fuzz/corpus/<target>). New inputs go to
# build-fuzz/corpus/; a crash leaves build-fuzz/crash-* and fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${VKF_FUZZ_SECONDS:-6}  # a smoke run in CI's 20 minutes; longer runs: set it
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if [ ! -f build-fuzz/build.ninja ]; then
  cmake -S tests/fuzz -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
        -DVKF_MAIN_BUILD="$PWD/build" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
fi
cmake --build build-fuzz >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
for target in safetensors gguf config tokenizer cache tuning; do
  mkdir -p "build-fuzz/corpus/$target"
  # The GGUF reader checks every count against the bytes left before it allocates: no
  # input of up to 64 KiB may take one allocation of more than 4 MB.
  limit=()
  [ "$target" = gguf ] && limit=(-malloc_limit_mb=4)
  if ! (cd build-fuzz && ./fuzz_$target -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 "${limit[@]}" \
          "corpus/$target" "../tests/fuzz/corpus/$target" >"fuzz_$target.log" 2>&1); then
    tail -40 "build-fuzz/fuzz_$target.log" >&2
    echo "fuzz_$target: FAILED (log: build-fuzz/fuzz_$target.log)" >&2
    exit 1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "build-fuzz/fuzz_$target.log" | grep -o '[0-9]*$' || echo "?")
  echo "fuzz_$target: $runs executions in ${seconds} s, no crash"
done
