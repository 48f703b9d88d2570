#!/usr/bin/env bash
# pk-llama's speed against llama2.c's `run`/`runq` and PyTorch eager (issue
# [llama]), in fp32, bf16 and int8.
# One command, from the repository root, after the samples are built:
#
#   LLAMA2C_DIR=/path/to/llama2.c bash bench/llama/run.sh
#
# It writes random checkpoints (stories15M and stories110M shapes; version 0
# for fp32 and bf16, version 2 for int8; a Qwen2 preset such as qwen2.5-0.5b
# in version 1 and 2 with pk's extension) and a matching synthetic tokenizer
# with pk-llama-checkpoint into a work directory, then for each model, format
# and OMP_NUM_THREADS / torch threads 1 and 2, three runs each (the table
# shows the median):
#   pk-llama   `pk-llama MODEL -z TOK -t 0 -n 128 -i "Once upon a time"`
#              (`--dtype bf16` for bf16, the version 2 file for int8): its
#              stderr line `prefill: N tokens, X tok/s; decode: M tokens, Y tok/s`
#              and `achieved tok/s:` (positions after the first per second)
#   run        llama2.c's run.c for fp32 and runq.c for int8 (only when
#              LLAMA2C_DIR names its tree; not for Qwen2's files, which it
#              cannot read), built here as `gcc -O3 -fopenmp run.c -lm` (pk's
#              default build has no -march=native either; the Makefile's
#              runomp adds -Ofast -march=native), the same command line: its
#              `achieved tok/s:`; llama2.c has no bf16
#   torch      transformers' LlamaForCausalLM (Qwen2ForCausalLM for Qwen2)
#              from hf_compare.py's loader, fp32 or bf16 (no int8 column),
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
#   PK_LLAMA_BENCH_FORMATS weight formats (default "fp32 bf16 int8")
#   PK_LLAMA_BENCH_THREADS thread counts (default "1 2")
#   PK_LLAMA_BENCH_REPS  runs per cell (default 3)
#   PK_LLAMA_BENCH_N     -n, positions (default 128)
#   PK_LLAMA_BENCH_TORCH 0: no torch column
#   PK_PEERS_VENV        the venv (default bench/peers/.venv)
#
# pk-llama runs the kernels pkc compiled for every format (docs/llama.md).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${PK_LLAMA_BUILD:-$root/build/samples/llama}"
models="${PK_LLAMA_BENCH_MODELS:-stories15M stories110M}"
threads="${PK_LLAMA_BENCH_THREADS:-1 2}"
formats="${PK_LLAMA_BENCH_FORMATS:-fp32 bf16 int8}"
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

# llama2.c's run and runq, built here (never in LLAMA2C_DIR).
run_exe=""; runq_exe=""
if [[ -n "${LLAMA2C_DIR:-}" ]]; then
  if gcc -O3 -fopenmp "$LLAMA2C_DIR/run.c" -lm -o "$work/run" 2>"$work/run-build.log"; then
    run_exe="$work/run"
  else
    say "cannot build $LLAMA2C_DIR/run.c (see $work/run-build.log); no run column"
  fi
  if [[ -f "$LLAMA2C_DIR/runq.c" ]] &&
     gcc -O3 -fopenmp "$LLAMA2C_DIR/runq.c" -lm -o "$work/runq" 2>"$work/runq-build.log"; then
    runq_exe="$work/runq"
  else
    say "cannot build $LLAMA2C_DIR/runq.c; no runq cells"
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
  fp="$work/$model.bin"; q8="$work/$model.q8.bin"; tok="$work/$model.tok"
  say "writing $fp and $q8"
  # A Qwen2 preset needs pk's header extension: version 1, not llama2.c's 0.
  "$bin/pk-llama-checkpoint" --preset "$model" --out "$fp" --tokenizer "$tok" \
    >"$work/$model.ckpt.txt"
  extended=0; grep -q 'version 1' "$work/$model.ckpt.txt" && extended=1
  [[ " $formats " == *" int8 "* ]] &&
    "$bin/pk-llama-checkpoint" --preset "$model" --version 2 --out "$q8" >/dev/null
  prompt_tokens=""
  for format in $formats; do
    ckpt="$fp"; extra=(); peer=""
    case "$format" in
      fp32) peer="$run_exe" ;;
      bf16) extra=(--dtype bf16) ;;
      int8) ckpt="$q8"; peer="$runq_exe" ;;
      *) say "unknown format $format"; exit 2 ;;
    esac
    [[ $extended == 1 ]] && peer=""  # llama2.c cannot read pk's extension
    cell="$model $format"
    for t in $threads; do
      for ((r = 0; r < reps; r++)); do
        say "$cell: pk-llama, $t thread(s), run $((r + 1))/$reps"
        err="$(OMP_NUM_THREADS=$t ${timer[@]+"${timer[@]}"} "$bin/pk-llama" "$ckpt" \
               -z "$tok" -t 0 -n "$n" -i "$prompt" ${extra[@]+"${extra[@]}"} \
               2>&1 >"$work/$model.$format.pk.txt")" ||
          { say "pk-llama failed: $err"; exit 1; }
        line="$(grep -E '^prefill:' <<<"$err")"
        prompt_tokens="$(field "$line" 'prefill:')"
        printf 'pk\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$cell" "$t" "$r" \
          "$prompt_tokens" "$(field "$line" 'prefill: [0-9]+ tokens,')" \
          "$(field "$line" 'decode:')" "$(field "$line" 'decode: [0-9]+ tokens,')" \
          "$(field "$err" 'achieved tok/s:')" "$(cpu_share)" >>"$results"
        if [[ -n "$peer" ]]; then
          say "$cell: $(basename "$peer"), $t thread(s), run $((r + 1))/$reps"
          err="$(OMP_NUM_THREADS=$t ${timer[@]+"${timer[@]}"} "$peer" "$ckpt" \
                 -z "$tok" -t 0 -n "$n" -i "$prompt" 2>&1 >"$work/$model.$format.run.txt")" ||
            { say "$(basename "$peer") failed: $err"; exit 1; }
          if cmp -s "$work/$model.$format.pk.txt" "$work/$model.$format.run.txt"; then
            echo "$model/$format" >>"$work/same-text"
          else
            say "$cell: pk-llama's text differs from $(basename "$peer")'s ($t threads, run $((r + 1)))"
            echo "$model/$format" >>"$work/different-text"
          fi
          printf 'run\t%s\t%s\t%s\t\t\t\t\t%s\t%s\n' "$cell" "$t" "$r" \
            "$(field "$err" 'achieved tok/s:')" "$(cpu_share)" >>"$results"
        fi
      done
    done
    if [[ -n "$torch_py" && $format != int8 ]]; then
      say "$cell: torch, threads ${threads// /,}"
      "$torch_py" "$here/hf_bench.py" "$fp" --threads "${threads// /,}" \
        --reps "$reps" --positions "$n" --prompt-len "${prompt_tokens:-5}" \
        --dtype "$format" |
        while IFS=$'\t' read -r _ t r pt ptps dt dtps cpu; do
          printf 'torch\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\t%s\n' "$cell" "$t" "$r" \
            "$pt" "$ptps" "$dt" "$dtps" "$cpu" >>"$results"
        done
    fi
  done
done

# The table: medians over the runs of each cell.
python3 - "$results" "$n" "${run_exe:+1}" "${torch_py:+1}" "$here" <<'EOF'
import statistics, sys, os
path, n, have_run, have_torch, here = sys.argv[1:6]
rows = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
sys.path.insert(0, here)
import machine
print(machine.describe(os.path.join(os.path.dirname(path), "load-start")))
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
hdr = ["model", "weights", "threads", "pk prefill", "pk decode", "pk achieved"]
if have_run: hdr += ["run/runq achieved"]
if have_torch: hdr += ["torch prefill", "torch decode"]
kinds = ["pk"] + (["run"] if have_run else []) + (["torch"] if have_torch else [])
hdr += ["CPU % (" + "/".join(kinds) + ")"]
print("| " + " | ".join(hdr) + " |")
print("|" + " --- |" * len(hdr))
seen = []
for r in rows:
    if (r[1], r[2]) not in seen: seen.append((r[1], r[2]))
for model, t in seen:
    c = model.split(" ") + [t, med("pk", model, t, 5), med("pk", model, t, 7),
                            med("pk", model, t, 8)]
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
    print(f"\npk-llama's stdout vs run's (runq's for int8), every run: identical for "
          f"{', '.join(sorted(same - diff)) or 'none'}"
          + (f"; DIFFERENT for {', '.join(sorted(diff))}" if diff else ""))
pk = [r for r in rows if r[0] == "pk"]
if pk:
    print(f"\npk-llama: prompt {pk[0][4]} tokens in one prefill call, "
          f"decode {pk[0][6]} tokens (fewer when greedy reaches BOS)")
EOF
