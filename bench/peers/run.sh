#!/usr/bin/env bash
# The Python peers of pk-bench (bench/README.md, "Python peers"): NumPy, numexpr,
# PyTorch eager, torch.compile and jax.jit on the sample kernels at pk-bench's
# shapes and thread counts. Creates (once) a virtual environment with the
# packages, then runs peers.py, which writes Google-Benchmark-like JSON that
# bench/table.py joins with pk-bench's:
#
#   bash bench/peers/run.sh [--json FILE] [peers.py options...]
#   python3 bench/table.py build-bench/bench/bench.json --peers FILE
#
# `bash bench/run.sh --peers` does both in one run and prints the combined table.
#
# A package that cannot be installed is left out with its reason (its columns say
# n/a, the table lists why); the run goes on. The exit status is non-zero only when
# no virtual environment can be made or peers.py itself fails.
#
# Environment:
#   PYTHON                 interpreter for the venv (default python3)
#   PK_PEERS_VENV          the venv (default bench/peers/.venv, git-ignored; kept
#                          between runs: delete it to reinstall)
#   PK_PEERS_PACKAGES      what to install, default "numpy numexpr torch jax"
#   PK_PEERS_TORCH_INDEX   PyTorch's CPU wheel index, tried first for torch
#                          (default https://download.pytorch.org/whl/cpu; "" skips
#                          it); PyPI's torch is the fall-back
#   PK_PEERS_PIP_TIMEOUT   pip's --timeout for that index (default 20 s)
#   PK_BENCH_THREADS       thread counts, as for pk-bench (default 1,2)
#   PK_BENCH_OMP_ENV       OpenMP environment, as pk-bench's bench target
#                          (default "OMP_PROC_BIND=close;OMP_PLACES=cores")
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3}"
venv="${PK_PEERS_VENV:-$here/.venv}"
packages="${PK_PEERS_PACKAGES:-numpy numexpr torch jax}"
torch_index="${PK_PEERS_TORCH_INDEX-https://download.pytorch.org/whl/cpu}"
pip_timeout="${PK_PEERS_PIP_TIMEOUT:-20}"
logs="$venv/pk-install"

say() { echo "peers: $*" >&2; }

if [[ ! -x "$venv/bin/python" ]]; then
  say "creating the virtual environment $venv"
  if ! "$python" -m venv "$venv"; then
    say "cannot create a virtual environment with $python -m venv; no Python peers"
    exit 1
  fi
fi
vpy="$venv/bin/python"
mkdir -p "$logs"

# importable MODULE: the package is there (a venv kept from an earlier run).
importable() { "$vpy" -c "import $1" >/dev/null 2>&1; }

# install NAME LOG PIP-ARGS...: one pip install; its log in $logs/NAME.log, the
# reason of a failure (pip's last error line) in $logs/NAME.failed.
install() {
  local name="$1"; shift
  local log="$logs/$name.log"
  if "$vpy" -m pip install --disable-pip-version-check "$@" >>"$log" 2>&1; then
    rm -f "$logs/$name.failed"
    return 0
  fi
  { grep -E '^(ERROR|error):' "$log" | tail -1 || true; } >"$logs/$name.failed"
  [[ -s "$logs/$name.failed" ]] || tail -1 "$log" >"$logs/$name.failed"
  return 1
}

for pkg in $packages; do
  case "$pkg" in
    torch) module=torch ;;
    jax) module=jax ;;
    *) module="$pkg" ;;
  esac
  if importable "$module"; then
    rm -f "$logs/$pkg.failed"
    continue
  fi
  : >"$logs/$pkg.log"
  say "installing $pkg (log: $logs/$pkg.log)"
  case "$pkg" in
    torch)
      # The CPU-only wheel (about 200 MB) where its index is reachable; PyPI's
      # torch otherwise (CUDA build: several GB with its nvidia-* dependencies,
      # runs on the CPU all the same).
      if [[ -n "$torch_index" ]] &&
         install torch --timeout "$pip_timeout" --retries 1 --index-url "$torch_index" torch; then
        :
      else
        [[ -n "$torch_index" ]] && say "torch: $torch_index not usable ($(cat "$logs/torch.failed")); trying PyPI"
        install torch torch || true
      fi
      ;;
    jax) install jax 'jax[cpu]' || true ;;
    *) install "$pkg" "$pkg" || true ;;
  esac
  if [[ -s "$logs/$pkg.failed" ]]; then
    say "$pkg could not be installed: $(cat "$logs/$pkg.failed"); its columns will say n/a"
  fi
done

# torch.compile compiles C++ with the system compiler; it needs g++ and Python's
# headers, which peers.py reports if missing. Everything else is peers.py's.
exec "$vpy" "$here/peers.py" --install-logs "$logs" "$@"
