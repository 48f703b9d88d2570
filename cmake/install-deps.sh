#!/usr/bin/env bash
# Installs the Debian 12 (bookworm) packages pk's build and tests need.
# Idempotent: only missing packages are installed (apt-get update runs only
# then). Runs as root, or through sudo when it exists.
#
# Not installed: the CUDA toolkit (nvcc). It is optional; when CMake finds
# nvcc (on PATH, $CUDACXX or /usr/local/cuda/bin) the generated .pk.cu files
# are compiled and the nvcc tests run, otherwise they are skipped.
set -euo pipefail

packages=(
  cmake ninja-build g++ python3   # build tools; python3 runs lit
  python3-numpy                   # the fuzz batches' independent oracle (test/fuzz)
  clang-19 libclang-19-dev llvm-19-dev   # Clang LibTooling (pkc)
  libclang-rt-19-dev              # libFuzzer, ASan, UBSan for clang (libfuzzer preset)
  llvm-19-tools                   # lit, FileCheck, not, count
  libomp-19-dev                   # OpenMP when building with clang
  libfmt-dev libgtest-dev         # fmt, GoogleTest
  libbenchmark-dev libeigen3-dev libopenblas-dev  # benchmarks
  libboost-context-dev            # fibers of the CUDA shim (test/cuda_shim)
  ccache                          # the build's compiler cache; test external.ccache
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y --no-install-recommends "${missing[@]}"
