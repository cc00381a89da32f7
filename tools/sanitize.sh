#!/usr/bin/env bash
# The sanitizer runs of CI (called by tools/test.sh; VKF_SANITIZERS=0 there skips them):
#  1. AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/): the whole suite, leaks
#     checked, with suppressions naming only the driver's and the validation layer's frames
#     (tests/sanitizers/lsan.supp). -fno-sanitize=vptr: Debian's glslang has no RTTI.
#  2. ThreadSanitizer (build-tsan/): the tests that share a context between threads.
# Any report fails the run. ASan compiles at -O0 and TSan at -O1 (CMakePresets.json),
# for CI's time on 2 cores: with GCC, ASan's build took 237 s at -O0 against 297 at -O1 and its
# suite 252 s against 234 (one run each); TSan's took longer at -O0 (111 s against 99).
# Under both, the test code is at -O0 (VKF_TEST_CODE_O0), and under ASan without UBSan's
# checks, which stay on the library's code (VKF_TEST_CODE_OPTIONS: tests/CMakeLists.txt). Both
# build with clang: ASan's tree in 288 s against GCC's 437 on CI's 2 cores (GCC's
# UndefinedBehaviorSanitizer adds 40% to a file's compile), TSan's targets in 107 s
# against 135, each suite as fast.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
build() {  # preset, targets...
  local preset=$1
  shift
  if [ ! -f "build-$preset/build.ninja" ]; then
    cmake --preset "$preset" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
  fi
  cmake --build --preset "$preset" ${1:+--target "$@"} >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
}
supp=$PWD/tests/sanitizers

echo "== AddressSanitizer + UndefinedBehaviorSanitizer: the whole suite (build-asan/)"
build asan
# Not run here: what compiles other projects or documents (no vkformer code runs in them),
# and reruns whose host code the suite already runs under the sanitizers: the model
# suite again under the portable profile (it changes which kernels run on the device, not
# the host's code paths; 3 minutes here) and the GPT-2 contract through the command (the
# same library calls as tests/model/gpt2_test.cpp, 60 processes), bench_gemm_torch
# (PyTorch's timings beside `bench ops`, whose code bench_json_schema runs here), the
# model suite's folded-norm rerun (other kernels, the same host code), the frame loop
# streaming GPT-2 (the C API's per-token callback, which capi_tests runs here), the
# date sample's whole held-out set (16 s under ASan; the goldens run the same beam search),
# the goldens with the decode steps' attention projection fused (23 s under ASan; its
# host path, Ops::decode_attention with the projection, runs in ops_tests here) and the
# cooperative-matrix kernel emulated (13 s; other kernels, the host code of
# GemmCoopMat* here), and every op test's portable-profile parameters (/fp32_portable,
# /fp16_portable: the profile's clamps take other branches of kernel choice, through
# the same buffer, view and dispatch code the other parameters run here; 60 s) and /fp16
# ones (`*Test.*/fp16`: the op tests' suites; the same host code as /fp32 but for the
# tests' own conversions, 61 s; the library's conversions run here in the model tests'
# fp16 cases, which stay), and the
# 256-wide Llama and Marian in the 4-, 5- and 6-bit types and mixes, in fp32 and (the Llama in Q4_K_M) fp16 (each 5-10 s of
# kernel compiles; the same host code as their Q8_0 cases and GPT-2's and BART's in
# every type, which run here), the date sample in every block type (34 s under ASan:
# the blocks' quantization and upload that the Wide models in every type run here), and
# the schema check of what every command prints with --json (64 s under ASan: 40
# processes of the command; its JSON writer runs here in cli_tests' CommandLine and
# BadInput tests, and the schema itself is Python's). Those keep CI's time down (its
# 30 minutes on 2 cores: docs/testing.md); the main suite runs all of them, validated.
# (CTest's tests, then the gtests of the binaries that run as whole-binary shards:
# tests/CMakeLists.txt's VKF_TESTS_IN_SHARDS.)
asan_skips_gtests='GpuTest.DateTranslatorAgreesWithPyTorchOnEveryHeldOutExample:GpuTest.DateTranslatorWithWeightsInBlocksScoresAsInFp32'
for type in q4_ q5_ q6_; do
  asan_skips_gtests+=":Wide/*WeightsInBlocks.*/llama_$type*:Wide/*WeightsInBlocks.*/marian_$type*"
done
asan_skips_gtests+=':Fp16WeightsInBlocks.*:*/fp16_portable:*/fp32_portable:*Test.*/fp16'
GTEST_FILTER="-$asan_skips_gtests" \
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0 \
LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan -j2 --timeout 900 --output-on-failure --progress \
        -E '^(layering\.|consumer_projects|api_docs|glslangValidator\.|kernel_files|model_goldens_portable_profile|model_goldens_folded_norms|model_goldens_decode_projection_fused|ops_coopmat_emulated|gpt2_command_line_contract|bench_gemm_torch|frame_loop_streams_|cli_json_schemas)' "$@"

echo "== ThreadSanitizer: threads sharing one context (build-tsan/)"
# (model_thread_tests and capi_thread_tests: the files of model_tests and capi_tests that
# hold these tests, compiled alone.)
build tsan model_thread_tests capi_thread_tests
TSAN_OPTIONS="suppressions=$supp/tsan.supp:halt_on_error=1:second_deadlock_stack=1" VKF_VALIDATION=1 VKF_GOLDEN_DIR=$PWD/build/goldens \
  build-tsan/tests/model_thread_tests --gtest_filter='*/Threads.*:*SessionsOnSeveralThreads*:InjectedFaultsTest.Cancellation*'
TSAN_OPTIONS="suppressions=$supp/tsan.supp:halt_on_error=1" VKF_VALIDATION=1 \
  build-tsan/tests/capi_thread_tests --gtest_filter='CApi.Threads*:CApi.LastErrorIsPerThread:CApi.Jobs*:CBoundary.TwoThreads*'
