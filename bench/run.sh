#!/usr/bin/env bash
# The one command of the benchmark (bench/README.md): configure a Release build in
# build-bench/ (tests and samples off), build pk-bench, run it and print the markdown
# table. Extra arguments go to the configure step, e.g.
#   bash bench/run.sh -DPK_BENCH_NATIVE=ON
#   bash bench/run.sh -DPK_BENCH_ARGS=--benchmark_filter=fma -DPK_BENCH_REPETITIONS=3
# (cache variables persist in build-bench/ until changed again). Environment:
# PK_BENCH_BUILD_DIR (default <repo>/build-bench), PK_BENCH_JOBS (default 2).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PK_BENCH_BUILD_DIR:-$root/build-bench}"
jobs="${PK_BENCH_JOBS:-2}"

generator=()
if [[ ! -f "$build/CMakeCache.txt" ]] && command -v ninja >/dev/null; then
  generator=(-G Ninja)
fi
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DPK_BUILD_TESTS=OFF -DPK_BUILD_SAMPLES=OFF -DPK_BUILD_BENCH=ON "$@"
cmake --build "$build" --target bench -j "$jobs"
echo "table: $build/bench/bench.md, raw results: $build/bench/bench.json"
