#!/usr/bin/env bash
# pk-llama's model at the shapes of issue [llama]'s benchmarks, against
# PyTorch eager and torch.compile and llama2.c, in one run:
#
#   LLAMA2C_DIR=/path/to/llama2.c bash bench/llama/shapes.sh
#
# For each model preset (default stories110M and tinyllama: TinyLlama-1.1B's
# shape, 22 layers, 2048 wide, 32 / 4 heads; random weights written by
# pk-llama-checkpoint), each format (fp32, bf16: the fp32 file with --dtype
# bf16, int8: a version-2 file) and each thread count (1, 2):
#   pk             pk-llama-bench (bench/llama/llama_bench.cpp): prefill of
#                  T in {32, 128, 512} tokens, decode of one token at
#                  position P in {128, 1024} (the context's last position
#                  when 1024 is past it), the read bandwidth of a buffer as
#                  large as a token's weights; Google Benchmark, medians
#   torch          hf_shapes.py: transformers' model with the same weights,
#                  fp32 or bf16, eager, the same shapes
#   torch.compile  the same through torch.compile (skip: PK_LLAMA_SHAPES_COMPILE=0)
#   llama2.c       `run` (fp32) / `runq` (int8) on the same file, built -O3
#                  -fopenmp: its achieved tok/s over 128 positions, which is
#                  also its prompt speed (it feeds a prompt a token a call)
# and prints the tables (shapes_table.py): prefill tok/s, GFLOP/s and ms per
# layer; decode tok/s, GB/s of weights, the share of the read bound, ms per
# layer; pk's ratio to each peer.
#
# Environment:
#   LLAMA2C_DIR              llama2.c's tree; unset: no llama2.c column
#   PK_BUILD                 the build (default build/): bench/pk-llama-bench,
#                            samples/llama/pk-llama-checkpoint
#   PK_LLAMA_SHAPES_MODELS   presets (default "stories110M tinyllama")
#   PK_LLAMA_SHAPES_FORMATS  default "fp32 bf16 int8"
#   PK_LLAMA_SHAPES_THREADS  default "1 2"
#   PK_LLAMA_SHAPES_PREFILL  default 32,128,512
#   PK_LLAMA_SHAPES_DECODE   default 128,1024
#   PK_LLAMA_SHAPES_REPS     repetitions (default 3)
#   PK_LLAMA_SHAPES_TORCH    0: no torch columns
#   PK_LLAMA_SHAPES_COMPILE  0: no torch.compile column
#   PK_LLAMA_SHAPES_WORK     work directory (default a temporary one, removed)
#   PK_PEERS_VENV            the venv with torch and transformers (default
#                            bench/peers/.venv; bench/llama/run.sh makes it)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${PK_BUILD:-$root/build}"
models="${PK_LLAMA_SHAPES_MODELS:-stories110M tinyllama}"
formats="${PK_LLAMA_SHAPES_FORMATS:-fp32 bf16 int8}"
threads="${PK_LLAMA_SHAPES_THREADS:-1 2}"
prefill="${PK_LLAMA_SHAPES_PREFILL:-32,128,512}"
decode="${PK_LLAMA_SHAPES_DECODE:-128,1024}"
reps="${PK_LLAMA_SHAPES_REPS:-3}"
venv="${PK_PEERS_VENV:-$root/bench/peers/.venv}"
say() { echo "llama-shapes: $*" >&2; }

bench="$build/bench/pk-llama-bench"
ckpt_tool="$build/samples/llama/pk-llama-checkpoint"
for exe in "$bench" "$ckpt_tool"; do
  [[ -x "$exe" ]] || { say "no $exe: build first (ninja -C $build)"; exit 2; }
done
if [[ -n "${PK_LLAMA_SHAPES_WORK:-}" ]]; then
  work="$PK_LLAMA_SHAPES_WORK"; mkdir -p "$work"
else
  work="$(mktemp -d -t pk-llama-shapes.XXXXXX)"; trap 'rm -rf "$work"' EXIT
fi
cut -d' ' -f1-3 /proc/loadavg >"$work/load-start"
results="$work/results.tsv"
: >"$results"

run_exe=""; runq_exe=""
if [[ -n "${LLAMA2C_DIR:-}" ]]; then
  gcc -O3 -fopenmp "$LLAMA2C_DIR/run.c" -lm -o "$work/run" 2>/dev/null &&
    run_exe="$work/run" || say "cannot build $LLAMA2C_DIR/run.c; no llama2.c fp32 column"
  gcc -O3 -fopenmp "$LLAMA2C_DIR/runq.c" -lm -o "$work/runq" 2>/dev/null &&
    runq_exe="$work/runq" || say "cannot build $LLAMA2C_DIR/runq.c; no llama2.c int8 column"
fi
torch_py=""
if [[ "${PK_LLAMA_SHAPES_TORCH:-1}" != 0 ]]; then
  if "$venv/bin/python" -c 'import torch, transformers' 2>/dev/null; then
    torch_py="$venv/bin/python"
  else
    say "no torch/transformers in $venv (bash bench/llama/run.sh makes it); no torch columns"
  fi
fi
compile_flags=("")
[[ -n "$torch_py" && "${PK_LLAMA_SHAPES_COMPILE:-1}" != 0 ]] && compile_flags+=(--compile)

for model in $models; do
  fp="$work/$model.bin"; q8="$work/$model.q8.bin"; tok="$work/$model.tok"
  say "writing $fp and $q8"
  "$ckpt_tool" --preset "$model" --out "$fp" --tokenizer "$tok" >"$work/$model.ckpt.txt"
  "$ckpt_tool" --preset "$model" --version 2 --out "$q8" >/dev/null
  extended=0; grep -q 'version 1' "$work/$model.ckpt.txt" && extended=1
  for format in $formats; do
    ckpt="$fp"; extra=(); peer=""
    case "$format" in
      fp32) peer="$run_exe" ;;
      bf16) extra=(--dtype bf16) ;;
      int8) ckpt="$q8"; peer="$runq_exe" ;;
      *) say "unknown format $format"; exit 2 ;;
    esac
    [[ $extended == 1 ]] && peer=""
    for t in $threads; do
      say "$model $format: pk-llama-bench, $t thread(s)"
      json="$work/$model.$format.$t.json"
      OMP_NUM_THREADS=$t "$bench" "$ckpt" ${extra[@]+"${extra[@]}"} \
        --prefill "$prefill" --decode-at "$decode" \
        --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
        --benchmark_out="$json" --benchmark_out_format=json \
        >"$work/$model.$format.$t.txt" 2>&1 ||
        { say "pk-llama-bench failed: $(tail -3 "$work/$model.$format.$t.txt")"; exit 1; }
      printf 'pk\t%s\t%s\t%s\t%s\n' "$model" "$format" "$t" "$json" >>"$results"
      if [[ -n "$peer" ]]; then
        say "$model $format: $(basename "$peer"), $t thread(s)"
        for ((r = 0; r < reps; r++)); do
          err="$(OMP_NUM_THREADS=$t "$peer" "$ckpt" -z "$tok" -t 0 -n 128 \
                 -i "Once upon a time" 2>&1 >/dev/null)" || { say "$peer failed: $err"; exit 1; }
          printf 'llama2.c\t%s\t%s\t%s\t%s\n' "$model" "$format" "$t" \
            "$(sed -nE 's/.*achieved tok\/s: *([0-9.]+).*/\1/p' <<<"$err")" >>"$results"
        done
      fi
      if [[ -n "$torch_py" && $format != int8 ]]; then
        for c in "${compile_flags[@]}"; do
          say "$model $format: torch ${c:-eager}, $t thread(s)"
          "$torch_py" "$here/hf_shapes.py" "$fp" --threads "$t" --dtype "$format" \
            --prefill "$prefill" --decode-at "$decode" --reps "$reps" $c 2>/dev/null |
            while IFS=$'\t' read -r kind tt what n secs; do
              printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$model" "$format" \
                "$tt" "$what" "$n" "$secs" >>"$results"
            done
        done
      fi
    done
  done
done

python3 "$here/shapes_table.py" "$results" "$work/load-start"
