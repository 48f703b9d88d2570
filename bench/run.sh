#!/usr/bin/env bash
# The one command of the benchmark (bench/README.md): configure a Release build in
# build-bench/ (tests and samples off), build pk-bench, run it and print the markdown
# table. Extra arguments go to the configure step, e.g.
#   bash bench/run.sh -DPK_BENCH_NATIVE=ON
#   bash bench/run.sh -DPK_BENCH_ARGS=--benchmark_filter=fma -DPK_BENCH_REPETITIONS=3
# (cache variables persist in build-bench/ until changed again). Environment:
# PK_BENCH_BUILD_DIR (default <repo>/build-bench), PK_BENCH_JOBS (default 2).
#
#   bash bench/run.sh --peers [-D...]
# then also runs the Python peers (bench/peers/run.sh: NumPy, numexpr, torch,
# torch.compile, jax.jit in a venv it creates) right after pk-bench, and prints the
# combined table (build-bench/bench/bench-peers.md; the peers' JSON is
# build-bench/bench/peers.json). A peer that cannot be installed or run shows n/a
# with its reason; it never fails the run. PK_PEERS_ARGS: more peers.py options,
# e.g. PK_PEERS_ARGS="--only softmax,rmsnorm --reps 3".
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PK_BENCH_BUILD_DIR:-$root/build-bench}"
jobs="${PK_BENCH_JOBS:-2}"

peers=0
args=()
for a in "$@"; do
  if [[ "$a" == "--peers" ]]; then peers=1; else args+=("$a"); fi
done
set -- "${args[@]+"${args[@]}"}"

generator=()
if [[ ! -f "$build/CMakeCache.txt" ]] && command -v ninja >/dev/null; then
  generator=(-G Ninja)
fi
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DPK_BUILD_TESTS=OFF -DPK_BUILD_SAMPLES=OFF -DPK_BUILD_BENCH=ON "$@"
cmake --build "$build" --target bench -j "$jobs"
echo "table: $build/bench/bench.md, raw results: $build/bench/bench.json"
[[ "$peers" == 1 ]] || exit 0

# The Python peers, back to back with pk-bench, then one table of both.
peers_json="$build/bench/peers.json"
rm -f "$peers_json"
echo "peers: running bench/peers/run.sh (log: $build/bench/peers.log)"
read -r -a peers_args <<<"${PK_PEERS_ARGS:-}"
if ! bash "$root/bench/peers/run.sh" --json "$peers_json" "${peers_args[@]+"${peers_args[@]}"}" 2> >(tee "$build/bench/peers.log" >&2); then
  echo "peers: bench/peers/run.sh failed (see $build/bench/peers.log); their columns say n/a" >&2
fi
echo
echo "=== pk-bench and the Python peers ==="
python3 "$root/bench/table.py" "$build/bench/bench.json" --peers "$peers_json" -o "$build/bench/bench-peers.md"
echo "table: $build/bench/bench-peers.md, raw results: $build/bench/bench.json, $peers_json"
