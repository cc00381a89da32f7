#!/usr/bin/env bash
# The GPU session's checks in one device call each (../shared/gpu/README.md has the setup).
# Here, after tools/build.sh:  ../shared/gpu/bundle.sh && tools/gpu_check.sh pack
# There (device `run`, carry .gpu):  tools/gpu_check.sh bench|tests|probe|diag|all [SECONDS]
#
#   bench  GEMM beside cuBLAS (torch.matmul, fp16 and fp32 with TF32 off) after tuning
#          for the card, and Transformer-base greedy decoding at batch 32 and 1 beside
#          PyTorch eager and PyTorch with a static KV cache replayed as a CUDA graph
#   tests  the GPU suites with the Khronos validation layer, as they are and under
#          VKF_PROFILE=portable, sharded across the machine's cores; then the
#          device-lost sweep alone
#   probe  Transformer-base's per-dispatch GPU times (generate --profile), every
#          LayerNorm folded (VKF_FOLD_NORMS=1) and none (0), and decoding at batch 1
#          and 32 with the attention's output projection fused or a GEMM of its own
#          (VKF_DECODE_PROJECTION): on the H200 a folded encoder GEMM took 2.5 ms and
#          decode_attention with its projection ~50 us
#   diag   tests, then what the driver offers and does: vulkaninfo, the memory types
#          tensors use, clocks sampled during bench ops, every GEMM design's pipeline
#          statistics (VKF_PIPELINE_STATS=1: registers, spills), decoding as defaulted
#   all    tests, then bench, then probe where 150 s are left, then the device-lost
#          fault sweep alone with its open files sampled (it once exhausted the driver
#          when run among the suites)
#
# Every step has a time limit inside SECONDS (default 420) so that one slow step cannot
# cost the others; logs go to /tmp/gpulogs and, after every step, to $OUT/logs.tgz, so
# what ran comes back even when the call is cut off. The last lines printed are the
# summary: each step's exit status and seconds.
set -u
cd "$(dirname "$(readlink -f "$0")")/.."
here=$PWD

if [ "${1:-}" = pack ]; then  # here: the goldens the model tests read, beside the bundle
  [ -d .gpu ] || { echo "run ../shared/gpu/bundle.sh first" >&2; exit 1; }
  # case_3 and case_11 (35 of 46 MB) stay behind to keep the call under its 64 MiB
  mkdir -p .gpu/lib
  for l in libsentencepiece.so.0 libutf8proc.so.2 libpcre2-8.so.0; do cp -L "/usr/lib/x86_64-linux-gnu/$l" .gpu/lib/; done
  # vulkaninfo (diag: the memory types and extensions the driver offers) and what it links
  cp -L /usr/bin/vulkaninfo .gpu/lib/
  for l in libwayland-client.so.0 libxcb.so.1 libX11.so.6 libffi.so.8 libXau.so.6 libXdmcp.so.6 libbsd.so.0 libmd.so.0; do
    cp -L "/usr/lib/x86_64-linux-gnu/$l" .gpu/lib/
  done
  tar -C build -cJf .gpu/goldens.tar.xz --exclude=goldens/case_3 --exclude=goldens/case_11 goldens
  du -sh .gpu
  exit 0
fi

L=/tmp/gpulogs
if [ "${1:-}" = _suites ]; then  # the tests step's body (called through `step`, so under its time limit)
  pids=()
  for profile in asis portable; do
    for t in gpu_tests ops_tests model_tests capi_tests; do
      for s in 0 1 2; do
        (export VKF_VALIDATION=1 GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$s VKF_CACHE_DIR=/tmp/vkf-cache-$profile-$t-$s
         [ $profile = portable ] && export VKF_PROFILE=portable
         # (the device-lost sweep runs alone afterwards: `all`)
         exec build/tests/$t --gtest_brief=1 --gtest_filter=-InjectedFaultsTest.ADeviceLost* > "$L/${t}_${profile}_$s.log" 2>&1) &
        pids+=($!)
      done
    done
  done
  bad=0
  for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
  echo "$bad of ${#pids[@]} shards failed"
  grep -h -E '^\[  FAILED  \]|alidation|VUID' "$L"/*_tests_*.log | sort | uniq -c | head -80
  [ "$bad" = 0 ]
  exit
fi

what=${1:?usage: tools/gpu_check.sh pack|bench|tests|probe|diag|all [SECONDS]}
budget=${2:-420}
start=${EPOCHREALTIME%.*}
mkdir -p "$L" "${OUT:=/tmp/gpu-out}"
. .gpu/setup.sh > "$L/setup.log" 2>&1
export LD_LIBRARY_PATH=$here/.gpu/lib:$LD_LIBRARY_PATH  # what the bundle lacks: sentencepiece, utf8proc, pcre2
cd "$VKF_ROOT" || exit 1
tar -xJf "$here/.gpu/goldens.tar.xz" -C build 2>>"$L/setup.log"
export VKF_CACHE_DIR=/tmp/vkf-cache PYTHONUNBUFFERED=1
mkdir -p "$VKF_CACHE_DIR"

save() { tar -czf "$OUT/logs.tgz" -C /tmp gpulogs 2>/dev/null; }
# step NAME LIMIT COMMAND...: runs COMMAND within LIMIT seconds and what is left of the budget
step() {
  local name=$1 limit=$2; shift 2
  local now=${EPOCHREALTIME%.*} left
  left=$((budget - (now - start)))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -lt 5 ]; then printf '%-34s skipped: out of time\n' "$name" >> "$L/summary.txt"; return; fi
  local t0=$EPOCHREALTIME
  timeout -k 5 "$limit" "$@" > "$L/$name.log" 2>&1
  local rc=$? t1=$EPOCHREALTIME
  printf '%-34s rc %3d %7.1f s (limit %d)\n' "$name" "$rc" "$(python3 -c "print($t1 - $t0)")" "$limit" >> "$L/summary.txt"
  save
}

step nvidia_smi 20 nvidia-smi
step info 30 build/vkformer info
bench() {  # tuned first, so the benchmarks and decoding run what the card's tuning chose
  # (VKF_PIPELINE_STATS=1: each design's registers and local memory in the tune's log)
  step tune_fp16 150 env VKF_PIPELINE_STATS=1 build/vkformer tune --precision fp16 --budget-s "${TUNE_FP16_S:-90}"
  step bench_ops_fp16 100 build/vkformer bench ops --precision fp16 --max-size 4096 --json-out "$L/ops_fp16.json"
  step torch_gemm_fp16 60 python3 tools/bench_gemm_torch.py "$L/ops_fp16.json" --json-out "$L/torch_fp16.json"
  step decode_b32_fp16 120 python3 tools/bench_transformer_base.py --rounds 1 --torch-device cuda --precision fp16 --batch 32 --tokens 32
  step decode_b1_fp16 90 python3 tools/bench_transformer_base.py --rounds 1 --torch-device cuda --precision fp16 --batch 1 --tokens 32
  step profile_b1_fp16 40 build/vkformer generate --model build/transformer-base --precision fp16 --warmup --profile \
    --src-ids 3,10,17,24,31,38,45,52,59,66,73,80,87,94,101,108,115,122,129,136,143,150,157,164 --max-new-tokens 32
  step tune_fp32 100 env VKF_PIPELINE_STATS=1 build/vkformer tune --precision fp32 --budget-s "${TUNE_FP32_S:-40}"
  step bench_ops_fp32 100 build/vkformer bench ops --precision fp32 --max-size 4096 --json-out "$L/ops_fp32.json"
  step torch_gemm_fp32 60 python3 tools/bench_gemm_torch.py "$L/ops_fp32.json" --json-out "$L/torch_fp32.json"
  cp -r "$VKF_CACHE_DIR" "$L/cache" 2>/dev/null; save
}
tests() {  # each suite in 3 shards, as-is and portable: 24 processes on 16 cores and one GPU
  step suites "${SUITES_S:-240}" tools/gpu_check.sh _suites
  for f in "$L"/*_tests_*.log; do tail -n 3 "$f" | sed "s|^|$(basename "$f" .log): |"; done > "$L/tails.txt"; save
}
probe() {  # what bounds decoding: per-dispatch times with every LayerNorm folded and with none,
  # and a decode step's attention projection fused (decode_attention) or a GEMM after it
  local src=3,10,17,24,31,38,45,52,59,66,73,80,87,94,101,108,115,122,129,136,143,150,157,164 b32 i
  b32=$src; for i in $(seq 31); do b32="$b32;$src"; done
  for route in attention gemm; do
    step "profile_fold1_${route}_b1" 40 env VKF_FOLD_NORMS=1 VKF_DECODE_PROJECTION=$route build/vkformer generate \
      --model build/transformer-base --precision fp16 --warmup --profile --src-ids "$src" --max-new-tokens 32
    step "decode_${route}_b32" 40 env VKF_DECODE_PROJECTION=$route build/vkformer generate \
      --model build/transformer-base --precision fp16 --warmup --src-ids "$b32" --max-new-tokens 32
  done
  step profile_fold0_b1 40 env VKF_FOLD_NORMS=0 build/vkformer generate --model build/transformer-base \
    --precision fp16 --warmup --profile --src-ids "$src" --max-new-tokens 32
}
faults() {  # the device-lost sweep alone (it creates a context per submit), open files sampled
  VKF_VALIDATION=1 build/tests/model_tests --gtest_filter='InjectedFaultsTest.ADeviceLost*' > "$L/faults.log" 2>&1 &
  local pid=$! t=0
  while kill -0 "$pid" 2>/dev/null && [ "$t" -lt "$1" ]; do
    echo "$t s: $(ls /proc/$pid/fd 2>/dev/null | wc -l) fds, $(grep VmRSS /proc/$pid/status 2>/dev/null)" >> "$L/faults_fds.log"
    sleep 5; t=$((t + 5))
  done
  kill "$pid" 2>/dev/null; wait "$pid"; echo "faults rc $?" >> "$L/faults_fds.log"; save
}
diag() {  # what the driver offers and does with our kernels: memory types, clocks, registers
  step vulkaninfo 20 "$here/.gpu/lib/vulkaninfo"
  step memory_types 60 env VKF_LOG=info build/vkformer bench ops --precision fp16 --max-size 64
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu,pstate --format=csv -lms 100 \
    > "$L/clocks.csv" 2>&1 &
  local smi=$!
  step bench_ops_fp16_clocks 100 build/vkformer bench ops --precision fp16 --max-size 4096
  kill "$smi" 2>/dev/null
  step pipeline_stats 120 env VKF_PIPELINE_STATS=1 VKF_CACHE_DIR=/tmp/vkf-cache-stats build/vkformer tune \
    --precision fp16 --budget-s 30
  step decode_b1_defaults 90 python3 tools/bench_transformer_base.py --rounds 1 --torch-device cuda --precision fp16 --batch 1 --tokens 32
  step decode_b32_defaults 120 python3 tools/bench_transformer_base.py --rounds 1 --torch-device cuda --precision fp16 --batch 32 --tokens 32
  step profile_b1_defaults 40 build/vkformer generate --model build/transformer-base --precision fp16 --warmup --profile \
    --src-ids 3,10,17,24,31,38,45,52,59,66,73,80,87,94,101,108,115,122,129,136,143,150,157,164 --max-new-tokens 32
  save
}
case $what in
  bench) bench ;;
  diag) SUITES_S=${SUITES_S:-120} tests; diag ;;
  probe) probe ;;
  tests)  # the suites, then the device-lost sweep alone
    tests; left=$((budget - (${EPOCHREALTIME%.*} - start) - 5)); [ "$left" -gt 20 ] && faults "$left" ;;
  all)  # the suites first (they check the build), then the benchmarks, the probe and the fault sweep
    SUITES_S=150 tests; TUNE_FP16_S=${TUNE_FP16_S:-110} TUNE_FP32_S=${TUNE_FP32_S:-50} bench
    left=$((budget - (${EPOCHREALTIME%.*} - start) - 5)); [ "$left" -gt 150 ] && probe
    left=$((budget - (${EPOCHREALTIME%.*} - start) - 5)); [ "$left" -gt 20 ] && faults "$left" ;;
  *) echo "usage: tools/gpu_check.sh pack|bench|tests|probe|diag|all [SECONDS]" >&2; exit 2 ;;
esac
echo "== $what: summary (logs in \$OUT/logs.tgz)"
cat "$L/summary.txt"
for f in "$L"/suites.log "$L"/faults_fds.log "$L"/faults.log; do
  [ -f "$f" ] && { echo "== $(basename "$f")"; tail -n 30 "$f"; }
done
for f in "$L"/profile_fold*_b1.log "$L"/decode_*_b32.log; do  # probe: the figures, not the tables
  [ -f "$f" ] || continue
  echo "== $(basename "$f")"; grep -E "tokens/s|per token" "$f"
  # the last decoder step's dispatches by kind: count and mean microseconds
  sed -n '/^last decoder step:/,$p' "$f" | awk '$NF ~ /^[0-9.]+$/ && $1 != "total" {n[$1]++; t[$1] += $NF}
    END {for (k in n) printf "  %-24s %3d x %7.1f us\n", k, n[k], t[k] / n[k]}' 
done
for f in "$L"/decode_b32_fp16.log "$L"/decode_b1_fp16.log; do
  [ -f "$f" ] && { echo "== $(basename "$f")"; grep -v "stopped at --max-new-tokens" "$f" | tail -n 16; }
done
for f in "$L"/tune_fp16.log "$L"/tune_fp32.log; do
  [ -f "$f" ] && { echo "== $(basename "$f")"; grep -E "^M |^attention|->" "$f"; }
done
