#!/usr/bin/env bash
# pk-llama's speed against llama2.c's `run` and PyTorch eager (issue [llama]).
# One command, from the repository root, after the samples are built:
#
#   LLAMA2C_DIR=/path/to/llama2.c bash bench/llama/run.sh
#
# It writes random checkpoints (stories15M and stories110M shapes, version 0)
# and a matching synthetic tokenizer with pk-llama-checkpoint into a work
# directory, then for each model and OMP_NUM_THREADS / torch threads 1 and 2,
# three runs each (the table shows the median):
#   pk-llama   `pk-llama MODEL -z TOK -t 0 -n 128 -i "Once upon a time"`: its
#              stderr line `prefill: N tokens, X tok/s; decode: M tokens, Y tok/s`
#              and `achieved tok/s:` (positions after the first per second)
#   run        llama2.c's run.c (only when LLAMA2C_DIR names its tree), built
#              here as `gcc -O3 -fopenmp run.c -lm` (pk's default build has no
#              -march=native either; the Makefile's runomp adds -Ofast
#              -march=native), the same command line: its `achieved tok/s:`
#   torch      transformers' LlamaForCausalLM from hf_compare.py's loader, fp32,
#              eager attention, torch.set_num_threads(1|2), greedy with its KV
#              cache: the prompt (as many tokens as pk-llama's prompt) in one
#              call, then one token per call up to 128 positions (hf_bench.py);
#              needs the venv of bench/peers/run.sh (bench/peers/.venv, made
#              here when missing: numpy, torch, transformers)
# and prints one markdown table with the CPU's model name and ISA level.
#
# Environment:
#   LLAMA2C_DIR          llama2.c's tree (run.c); unset: no `run` column
#   PK_LLAMA_BUILD       where pk-llama and pk-llama-checkpoint are
#                        (default build/samples/llama)
#   PK_LLAMA_BENCH_WORK  work directory (default a temporary one, removed)
#   PK_LLAMA_BENCH_MODELS  presets (default "stories15M stories110M")
#   PK_LLAMA_BENCH_THREADS thread counts (default "1 2")
#   PK_LLAMA_BENCH_REPS  runs per cell (default 3)
#   PK_LLAMA_BENCH_N     -n, positions (default 128)
#   PK_LLAMA_BENCH_TORCH 0: no torch column
#   PK_PEERS_VENV        the venv (default bench/peers/.venv)
#
# pk-llama runs the kernels pkc compiled for fp32 and bf16 weights (embed,
# layer, head; docs/llama.md); its int8 kernels still run eagerly.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${PK_LLAMA_BUILD:-$root/build/samples/llama}"
models="${PK_LLAMA_BENCH_MODELS:-stories15M stories110M}"
threads="${PK_LLAMA_BENCH_THREADS:-1 2}"
reps="${PK_LLAMA_BENCH_REPS:-3}"
n="${PK_LLAMA_BENCH_N:-128}"
prompt="Once upon a time"
venv="${PK_PEERS_VENV:-$root/bench/peers/.venv}"
say() { echo "llama-bench: $*" >&2; }

for exe in pk-llama pk-llama-checkpoint; do
  [[ -x "$bin/$exe" ]] || { say "no $bin/$exe: build the samples first"; exit 2; }
done
if [[ -n "${PK_LLAMA_BENCH_WORK:-}" ]]; then
  work="$PK_LLAMA_BENCH_WORK"; mkdir -p "$work"
else
  work="$(mktemp -d -t pk-llama-bench.XXXXXX)"; trap 'rm -rf "$work"' EXIT
fi
cut -d' ' -f1-3 /proc/loadavg >"$work/load-start"
results="$work/results.tsv"
: >"$results"; rm -f "$work/same-text" "$work/different-text"

# llama2.c's run, built here (never in LLAMA2C_DIR).
run_exe=""
if [[ -n "${LLAMA2C_DIR:-}" ]]; then
  if gcc -O3 -fopenmp "$LLAMA2C_DIR/run.c" -lm -o "$work/run" 2>"$work/run-build.log"; then
    run_exe="$work/run"
  else
    say "cannot build $LLAMA2C_DIR/run.c (see $work/run-build.log); no run column"
  fi
fi

# The torch venv, made as bench/peers/run.sh makes it (torch from PyTorch's CPU
# index first, PyPI's otherwise).
torch_py=""
if [[ "${PK_LLAMA_BENCH_TORCH:-1}" != 0 ]]; then
  if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import torch, transformers' 2>/dev/null; then
    say "setting up $venv (numpy torch transformers)"
    { [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"; } &&
    { "$venv/bin/python" -c 'import torch' 2>/dev/null ||
      "$venv/bin/python" -m pip install -q --timeout 20 --retries 1 \
        --index-url https://download.pytorch.org/whl/cpu torch ||
      "$venv/bin/python" -m pip install -q torch; } &&
    "$venv/bin/python" -m pip install -q numpy transformers || true
  fi
  if "$venv/bin/python" -c 'import torch, transformers' 2>/dev/null; then
    torch_py="$venv/bin/python"
  else
    say "no torch/transformers in $venv; no torch column"
  fi
fi

# CPU share of each run: (user + sys) / wall time, 100 per busy thread; below
# 100 x threads the run did not get its cores (a loaded machine).
timer=()
[[ -x /usr/bin/time ]] && timer=(/usr/bin/time -f %e_%U_%S -o "$work/time")
cpu_share() {
  [[ ${#timer[@]} -gt 0 && -s "$work/time" ]] || return 0
  awk -F_ '{ if ($1 > 0) printf "%.0f", 100 * ($2 + $3) / $1 }' "$work/time"
}

# field LINE REGEX: the first number after REGEX in LINE.
field() { sed -nE "s#.*$2 *([0-9.]+).*#\1#p" <<<"$1" | head -1; }

for model in $models; do
  ckpt="$work/$model.bin"; tok="$work/$model.tok"
  say "writing $ckpt"
  "$bin/pk-llama-checkpoint" --preset "$model" --version 0 --out "$ckpt" \
    --tokenizer "$tok" >/dev/null
  prompt_tokens=""
  for t in $threads; do
    for ((r = 0; r < reps; r++)); do
      say "$model: pk-llama, $t thread(s), run $((r + 1))/$reps"
      err="$(OMP_NUM_THREADS=$t ${timer[@]+"${timer[@]}"} "$bin/pk-llama" "$ckpt" \
             -z "$tok" -t 0 -n "$n" -i "$prompt" 2>&1 >"$work/$model.pk.txt")" ||
        { say "pk-llama failed: $err"; exit 1; }
      line="$(grep -E '^prefill:' <<<"$err")"
      prompt_tokens="$(field "$line" 'prefill:')"
      printf 'pk\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$model" "$t" "$r" \
        "$prompt_tokens" "$(field "$line" 'prefill: [0-9]+ tokens,')" \
        "$(field "$line" 'decode:')" "$(field "$line" 'decode: [0-9]+ tokens,')" \
        "$(field "$err" 'achieved tok/s:')" "$(cpu_share)" >>"$results"
      if [[ -n "$run_exe" ]]; then
        say "$model: run, $t thread(s), run $((r + 1))/$reps"
        err="$(OMP_NUM_THREADS=$t ${timer[@]+"${timer[@]}"} "$run_exe" "$ckpt" \
               -z "$tok" -t 0 -n "$n" -i "$prompt" 2>&1 >"$work/$model.run.txt")" ||
          { say "run failed: $err"; exit 1; }
        if cmp -s "$work/$model.pk.txt" "$work/$model.run.txt"; then
          echo "$model" >>"$work/same-text"
        else
          say "$model: pk-llama's text differs from run's ($t threads, run $((r + 1)))"
          echo "$model" >>"$work/different-text"
        fi
        printf 'run\t%s\t%s\t%s\t\t\t\t\t%s\t%s\n' "$model" "$t" "$r" \
          "$(field "$err" 'achieved tok/s:')" "$(cpu_share)" >>"$results"
      fi
    done
  done
  if [[ -n "$torch_py" ]]; then
    say "$model: torch, threads ${threads// /,}"
    "$torch_py" "$here/hf_bench.py" "$ckpt" --threads "${threads// /,}" \
      --reps "$reps" --positions "$n" --prompt-len "${prompt_tokens:-5}" |
      while IFS=$'\t' read -r _ t r pt ptps dt dtps cpu; do
        printf 'torch\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\t%s\n' "$model" "$t" "$r" \
          "$pt" "$ptps" "$dt" "$dtps" "$cpu" >>"$results"
      done
  fi
done

# The table: medians over the runs of each cell.
python3 - "$results" "$n" "${run_exe:+1}" "${torch_py:+1}" <<'EOF'
import platform, statistics, subprocess, sys, os
path, n, have_run, have_torch = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
rows = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
cpu, flags = "unknown CPU", set()
for l in open("/proc/cpuinfo"):
    if l.startswith("model name") and cpu == "unknown CPU":
        cpu = l.split(":", 1)[1].strip()
    if l.startswith("flags") and not flags:
        flags = set(l.split(":", 1)[1].split())
isa = ("AVX-512" + (" (+bf16, fp16)" if "avx512_fp16" in flags else "")
       if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE")
if "fma" in flags: isa += " + FMA"
if "amx_tile" in flags: isa += " + AMX"
if "hypervisor" in flags: isa += " (virtual machine)"
cores = os.cpu_count()
load = open("/proc/loadavg").read().split()[:3]
start = os.path.join(os.path.dirname(path), "load-start")
start = open(start).read().split() if os.path.exists(start) else ["?"] * 3
gcc = subprocess.run(["gcc", "-dumpfullversion"], capture_output=True, text=True).stdout.strip()
print(f"CPU: {cpu}, {cores} cores, ISA {isa}; gcc {gcc}; load average "
      f"{' '.join(start)} at the start, {' '.join(load)} at the end")
print(f"greedy (-t 0), -n {n}, prompt \"Once upon a time\"; median of "
      f"{len({r[3] for r in rows})} runs; tok/s; CPU %: (user + sys) / wall of "
      f"each run (torch: of its generation), 100 per thread when it had its cores\n")
def med(kind, model, t, col):
    v = [float(r[col]) for r in rows if r[0] == kind and r[1] == model
         and r[2] == t and len(r) > col and r[col]]
    return f"{statistics.median(v):.2f}" if v else "n/a"
def cpu(kind, model, t):
    v = [float(r[9]) for r in rows if r[0] == kind and r[1] == model
         and r[2] == t and len(r) > 9 and r[9]]
    return f"{statistics.median(v):.0f}" if v else "n/a"
hdr = ["model", "threads", "pk prefill", "pk decode", "pk achieved"]
if have_run: hdr += ["run achieved"]
if have_torch: hdr += ["torch prefill", "torch decode"]
kinds = ["pk"] + (["run"] if have_run else []) + (["torch"] if have_torch else [])
hdr += ["CPU % (" + "/".join(kinds) + ")"]
print("| " + " | ".join(hdr) + " |")
print("|" + " --- |" * len(hdr))
seen = []
for r in rows:
    if (r[1], r[2]) not in seen: seen.append((r[1], r[2]))
for model, t in seen:
    c = [model, t, med("pk", model, t, 5), med("pk", model, t, 7), med("pk", model, t, 8)]
    if have_run: c.append(med("run", model, t, 8))
    if have_torch: c += [med("torch", model, t, 5), med("torch", model, t, 7)]
    c.append("/".join(cpu(k, model, t) for k in kinds))
    print("| " + " | ".join(c) + " |")
work = os.path.dirname(path)
def lines(f):
    f = os.path.join(work, f)
    return set(open(f).read().split()) if os.path.exists(f) else set()
same, diff = lines("same-text"), lines("different-text")
if same or diff:
    print(f"\npk-llama's stdout vs run's, every run: identical for "
          f"{', '.join(sorted(same - diff)) or 'none'}"
          + (f"; DIFFERENT for {', '.join(sorted(diff))}" if diff else ""))
pk = [r for r in rows if r[0] == "pk"]
if pk:
    print(f"\npk-llama: prompt {pk[0][4]} tokens in one prefill call, "
          f"decode {pk[0][6]} tokens (fewer when greedy reaches BOS)")
EOF
