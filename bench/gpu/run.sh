#!/usr/bin/env bash
# pk on a real GPU, in one command (bench/README.md, "GPU"), meant to finish
# in under 8 minutes on a machine with an NVIDIA GPU, nvcc and the Debian
# packages of cmake/install-deps.sh (no network needed):
#
#   1. configure build-gpu/ for the local GPU (CUDA architecture "native",
#      Release, PK_CUDA_DEVICE_TESTS=ON, PK_BUILD_GPU_BENCH=ON) and build only
#      pk-cuda-device-tests and pk-gpu-bench, with all cores;
#   2. run the CUDA differential tests: ctest -R '^cuda_device\.';
#   3. time every sample kernel's CUDA launcher (pk-gpu-bench), with a
#      device-to-device copy of the same bytes for the achieved bandwidth;
#   3b. pk-llama (samples/llama) on a random stories110M checkpoint, fp32,
#      bf16 and int8, on the CPU and with --cuda: decode tok/s and whether the
#      greedy text is the CPU's (notes above the table; never a failure);
#   4. time PyTorch eager and torch.compile on the same computations
#      (torch_peers.py; "n/a" with the reason when torch or its CUDA is missing);
#   5. print one markdown table (table.py) and write it to $OUT (a folder: the
#      file goes inside it, with the raw results and logs; otherwise the file
#      itself), or else to bench/gpu/results-<date>.md.
#
# A failing step is reported and the next one still runs where it can; the
# exit status is non-zero when the configure, a build, the device tests or
# pk-gpu-bench (a kernel whose GPU result differs from pk's CPU result) failed.
# A missing or failing PyTorch never changes it.
#
#   bash bench/gpu/run.sh [--quick] [--budget S]
#
#   --quick     2 warm-up + 10 timed calls per kernel (smoke run), instead of
#               10 + 100
#   --budget S  seconds for the whole script (default 470); each step's
#               timeout is cut to leave time for the steps after it
#
# Environment: PK_GPU_BUILD_DIR (default <repo>/build-gpu), PK_GPU_JOBS
# (default: all cores), PK_GPU_CUDA_ARCHITECTURES (default native), PYTHON
# (default python3), OUT (see 5).
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${PK_GPU_BUILD_DIR:-$root/build-gpu}"
jobs="${PK_GPU_JOBS:-$(nproc 2>/dev/null || echo 4)}"
python="${PYTHON:-python3}"
cuda_arch="${PK_GPU_CUDA_ARCHITECTURES:-native}"
quick=0
budget=470

while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=1 ;;
    --budget)
      [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || { echo "run.sh: --budget needs seconds" >&2; exit 2; }
      budget="$2"; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

start=$SECONDS
stamp="$(date -u +%Y-%m-%d-%H%M)"
failures=()          # what makes the exit status non-zero
notes=()             # lines above the table
work="$build/gpu-run"
mkdir -p "$work" || { echo "run.sh: cannot create $work" >&2; exit 1; }
rm -f "$work"/pk.json "$work"/torch.json

say() { printf '\n=== [%3ds] %s\n' "$((SECONDS - start))" "$*"; }
# Seconds a step may take: at most $1, leaving $2 for the steps after it
# (never under 30).
step_timeout() {
  local t=$((budget - (SECONDS - start) - $2))
  ((t > $1)) && t=$1
  ((t < 30)) && t=30
  echo "$t"
}
# Runs "$@" under a timeout of $1 s, output to the terminal and to log $2.
run_logged() {
  local secs=$1 log=$2
  shift 2
  timeout --kill-after=10 "$secs" "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  if ((rc == 124 || rc == 137)); then
    echo "run.sh: timed out after ${secs} s: $*" | tee -a "$log"
  fi
  return "$rc"
}

quick_flag=()
reps_note="10 warm-up + 100 timed calls"
if ((quick)); then
  quick_flag=(--quick)
  reps_note="--quick: 2 warm-up + 10 timed calls (smoke run, not for quoting)"
fi

# --- 0. the machine --------------------------------------------------------------
say "machine"
commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [[ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
  commit+=" (with local changes)"
fi
notes+=("Run: $(date -u '+%Y-%m-%d %H:%M UTC'), pk at $commit, $reps_note")
if command -v nvidia-smi >/dev/null 2>&1; then
  smi="$(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total \
         --format=csv,noheader 2>&1 | head -1)"
  echo "nvidia-smi: $smi"
  notes+=("nvidia-smi: $smi (name, driver, max SM clock, max memory clock, memory)")
else
  echo "nvidia-smi not found: is there an NVIDIA GPU and driver?"
  notes+=("nvidia-smi not found")
fi
nvcc_bin="$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)"
if [[ -n "$nvcc_bin" ]]; then
  echo "nvcc: $nvcc_bin, $("$nvcc_bin" --version | grep -o 'release [^,]*' || true)"
else
  echo "nvcc not found (PATH, /usr/local/cuda/bin): pk's CUDA code will not be compiled"
fi
echo "build dir: $build, $jobs jobs, budget ${budget} s"

# --- 1. configure and build ----------------------------------------------------------
say "1. configure $build (CUDA architectures: $cuda_arch)"
generator=()
if [[ ! -f "$build/CMakeCache.txt" ]] && command -v ninja >/dev/null; then
  generator=(-G Ninja)
fi
configured=0
tests_status=""
configure() {
  run_logged 120 "$work/$1" cmake -S "$root" -B "$build" "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$cuda_arch" \
    -DPK_BUILD_BENCH=OFF -DPK_BUILD_GPU_BENCH=ON "${@:2}"
}
if configure configure.log -DPK_BUILD_TESTS=ON -DPK_CUDA_DEVICE_TESTS=ON; then
  configured=1
else
  failures+=("configure failed (log: $work/configure.log)")
  # Without the tests (GoogleTest, lit), the benchmark may still configure.
  say "1. configure again without the tests, for the benchmark"
  if configure configure-no-tests.log -DPK_BUILD_TESTS=OFF -DPK_CUDA_DEVICE_TESTS=OFF; then
    configured=1
    tests_status="not run: the configure with tests failed (log: $work/configure.log)"
  fi
fi

# Whether the build directory defines target $1.
has_target() {
  if [[ -f "$build/build.ninja" ]]; then
    ninja -C "$build" -t query "$1" >/dev/null 2>&1
  else
    cmake --build "$build" --target help 2>/dev/null | grep -qE "(^|[ .])$1( |$)"
  fi
}

tests_target=0
bench_target=0
bench_reason=""
if ((configured)); then
  if [[ -n "$tests_status" ]]; then
    :
  elif ! grep -q '^PK_CUDA_DEVICE_TESTS:BOOL=' "$build/CMakeCache.txt"; then
    tests_status="skipped: this checkout has no PK_CUDA_DEVICE_TESTS option (no CUDA device tests yet)"
  elif ! has_target pk-cuda-device-tests; then
    tests_status="skipped: PK_CUDA_DEVICE_TESTS=ON defines no pk-cuda-device-tests target here (CUDA not enabled? see $work/configure.log)"
  else
    tests_target=1
  fi
  if has_target pk-gpu-bench; then
    bench_target=1
  else
    bench_reason="no pk-gpu-bench target: CUDA is not enabled in $build (see $work/configure.log)"
    failures+=("$bench_reason")
  fi
else
  tests_status="not run: the configure failed"
  bench_reason="the configure failed"
fi

# Builds target $1 (log $work/build-$1.log); prints the log's tail on failure.
build_target() {
  local t0=$SECONDS secs
  secs=$(step_timeout 330 150)
  echo "building $1 (-j$jobs, at most ${secs} s)"
  if timeout --kill-after=10 "$secs" cmake --build "$build" -j "$jobs" --target "$1" \
       >"$work/build-$1.log" 2>&1; then
    echo "built $1 in $((SECONDS - t0)) s"
    return 0
  fi
  echo "BUILD FAILED: $1 after $((SECONDS - t0)) s; the last 40 lines of $work/build-$1.log:"
  tail -n 40 "$work/build-$1.log"
  return 1
}

if ((tests_target || bench_target)); then
  say "1. build"
fi
if ((tests_target)) && ! build_target pk-cuda-device-tests; then
  tests_target=0
  tests_status="FAILED: pk-cuda-device-tests did not build (log: $work/build-pk-cuda-device-tests.log)"
  failures+=("pk-cuda-device-tests did not build")
fi
if ((bench_target)) && ! build_target pk-gpu-bench; then
  bench_target=0
  bench_reason="pk-gpu-bench did not build (log: $work/build-pk-gpu-bench.log)"
  failures+=("$bench_reason")
fi

# --- 2. the CUDA differential tests ---------------------------------------------
say "2. CUDA device tests"
if ((tests_target)); then
  secs=$(step_timeout 150 110)
  if run_logged "$secs" "$work/ctest.log" ctest --test-dir "$build" -R '^cuda_device\.' \
       --output-on-failure --no-tests=error -j "$jobs" --timeout 120; then
    summary="$(grep -Eo '[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+' "$work/ctest.log" | tail -1)"
    tests_status="passed${summary:+ ($summary)}"
  else
    summary="$(grep -Eo '[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+' "$work/ctest.log" | tail -1)"
    tests_status="FAILED${summary:+ ($summary)}; log: $work/ctest.log"
    failures+=("CUDA device tests failed")
  fi
fi
echo "CUDA device tests: $tests_status"

# --- 3. pk's CUDA launchers --------------------------------------------------------
say "3. pk-gpu-bench ${quick_flag[*]}"
if ((bench_target)); then
  secs=$(step_timeout 150 70)
  run_logged "$secs" "$work/pk-gpu-bench.log" "$build/bench/gpu/pk-gpu-bench" \
    "${quick_flag[@]}" --json "$work/pk.json"
  rc=$?
  if ((rc != 0)); then
    if [[ -f "$work/pk.json" ]]; then
      failures+=("pk-gpu-bench exited with $rc: a kernel's check or run failed, or it timed out (log: $work/pk-gpu-bench.log)")
    else
      bench_reason="pk-gpu-bench exited with $rc before any result: $(tail -n 1 "$work/pk-gpu-bench.log")"
      failures+=("$bench_reason")
    fi
  fi
else
  echo "skipped: $bench_reason"
fi

# --- 3b. pk-llama --cuda -------------------------------------------------------------
# The whole model through the kernels' CUDA launchers (docs/llama.md, "On
# CUDA"), against the same binary on the CPU. Notes only: a missing target,
# a failed build or run is reported above the table, not counted.
say "3b. pk-llama --cuda"
llama_note() { notes+=("pk-llama: $*"); echo "pk-llama: $*"; }
if ((configured)) && has_target pk-llama && has_target pk-llama-checkpoint; then
  if build_target pk-llama && build_target pk-llama-checkpoint; then
    lb="$build/samples/llama"
    if "$lb/pk-llama-checkpoint" --preset stories110M --out "$work/s110.bin"          --tokenizer "$work/s110.tok" >/dev/null &&
       "$lb/pk-llama-checkpoint" --preset stories110M --version 2          --out "$work/s110q8.bin" >/dev/null; then
      for fmt in fp32 bf16 int8; do
        ck="$work/s110.bin"; extra=()
        [[ $fmt == bf16 ]] && extra=(--dtype bf16)
        [[ $fmt == int8 ]] && ck="$work/s110q8.bin"
        cells=()
        for dev in cpu cuda; do
          flag=(); [[ $dev == cuda ]] && flag=(--cuda)
          timeout 120 "$lb/pk-llama" "$ck" -z "$work/s110.tok" -t 0 -n 128             -i "Once upon a time" "${extra[@]}" "${flag[@]}"             >"$work/llama-$fmt-$dev.txt" 2>"$work/llama-$fmt-$dev.log"
          line="$(grep -m1 '^prefill:' "$work/llama-$fmt-$dev.log")"
          cells+=("$dev: ${line:-failed: $(tail -n 1 "$work/llama-$fmt-$dev.log")}")
        done
        same="text not compared (a run failed)"
        if [[ "${cells[0]}${cells[1]}" != *failed:* ]]; then
          same="different text"
          cmp -s "$work/llama-$fmt-cpu.txt" "$work/llama-$fmt-cuda.txt" &&
            same="same text"
        fi
        llama_note "stories110M (random) $fmt, -n 128 -t 0: ${cells[0]} | ${cells[1]} | $same"
      done
    else
      llama_note "pk-llama-checkpoint failed"
    fi
  else
    llama_note "pk-llama did not build (logs: $work/build-pk-llama*.log)"
  fi
else
  llama_note "skipped: no pk-llama target in $build"
fi

# --- 4. PyTorch ------------------------------------------------------------------------
say "4. PyTorch eager and torch.compile ${quick_flag[*]}"
torch_reason=""
if command -v "$python" >/dev/null 2>&1; then
  secs=$(step_timeout 600 10)
  if ! run_logged "$secs" "$work/torch.log" "$python" "$root/bench/gpu/torch_peers.py" \
       "${quick_flag[@]}" --json "$work/torch.json" --budget-s $((secs > 60 ? secs - 45 : 15)); then
    torch_reason="torch_peers.py failed or timed out (log: $work/torch.log); not counted as a failure"
    echo "$torch_reason"
  fi
else
  torch_reason="$python not found"
  echo "skipped: $torch_reason"
fi

# --- 5. the table ------------------------------------------------------------------------
say "5. table"
if [[ -n "${OUT:-}" && -d "$OUT" ]]; then
  table="$OUT/gpu-results-$stamp.md"
elif [[ -n "${OUT:-}" ]]; then
  table="$OUT"
else
  table="$root/bench/gpu/results-$stamp.md"
fi
echo
table_args=(--pk "$work/pk.json" --torch "$work/torch.json" --tests "$tests_status" -o "$table")
[[ -n "$bench_reason" ]] && table_args+=(--pk-reason "$bench_reason")
[[ -n "$torch_reason" ]] && table_args+=(--torch-reason "$torch_reason")
for n in "${notes[@]}"; do table_args+=(--note "$n"); done
if ! "$python" "$root/bench/gpu/table.py" "${table_args[@]}"; then
  failures+=("table.py failed; raw results: $work/pk.json, $work/torch.json")
fi
if [[ -n "${OUT:-}" && -d "$OUT" ]]; then
  # The raw results and logs come back with the table.
  mkdir -p "$OUT/gpu-run-$stamp"
  cp -f "$work"/*.json "$work"/*.log "$OUT/gpu-run-$stamp/" 2>/dev/null || true
fi

echo
echo "run.sh: done in $((SECONDS - start)) s; table: $table"
if ((${#failures[@]})); then
  echo "run.sh: FAILED:"
  printf '  - %s\n' "${failures[@]}"
  exit 1
fi
exit 0
