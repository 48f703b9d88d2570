#!/usr/bin/env bash
# The long mode of pk's differential fuzzer (docs/fuzzing.md):
#
#   test/fuzz/run.sh --programs 5000          # about 5000 kernels
#   test/fuzz/run.sh --hours 8 --no-cuda      # CPU leg only, for 8 hours
#   test/fuzz/run.sh --build-dir build --batches 3 --kernels 60
#
# Configures (if needed) and builds pkc and the CUDA shim's library in the
# build directory (default build-fuzz/), then runs test/fuzz/fuzz.py there.
# Work files, stats.json and findings/ go to <build>/fuzz-long/ unless
# --work says otherwise. Other options are fuzz.py's (fuzz.py --help).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build="$root/build-fuzz"
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build=$(realpath -m "$2"); shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
targets=(pkc)
if cmake --build "$build" --target help 2>/dev/null | grep -q '^pk_cuda_shim:'; then
  targets+=(pk_cuda_shim)
fi
cmake --build "$build" -j"${JOBS:-2}" --target "${targets[@]}"
exec python3 "$here/fuzz.py" --build-dir "$build" "${args[@]}"
