#!/usr/bin/env python3
"""PyTorch eager's column of bench/llama/run.sh: greedy generation with
transformers' LlamaForCausalLM (built by hf_compare.build_hf_model from a
llama2.c checkpoint: fp32, eager attention, KV cache), one token per forward
call after a one-call prefill, as pk-llama does.

    python hf_bench.py CHECKPOINT --threads 1,2 --reps 3 --positions 128 --prompt-len 5

Prints one tab-separated line per run:
    torch THREADS REP PREFILL_TOKENS PREFILL_TOK/S DECODE_TOKENS DECODE_TOK/S CPU%
(CPU%: the process's CPU time over the generation's wall time, x100.)
Decode tok/s counts the forward calls after the prefill (positions - prompt
length of them) over their time, as pk-llama's `decode:` figure.
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_compare  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--positions", type=int, default=128,
                    help="prompt plus generated tokens, as pk-llama's -n")
    ap.add_argument("--prompt-len", type=int, default=5)
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32",
                    help="the model's weights and compute: torch.float32, "
                         "or torch.bfloat16 (model.to(torch.bfloat16))")
    args = ap.parse_args()

    import torch
    ck = hf_compare.load_checkpoint(args.checkpoint)
    model = hf_compare.build_hf_model(ck)
    if args.dtype == "bf16":
        model = model.to(torch.bfloat16)
    rng = np.random.default_rng(0)
    prompt = [1] + [int(t) for t in
                    rng.integers(3, ck.vocab_size, args.prompt_len - 1)]
    positions = min(args.positions, ck.seq_len)
    # n greedy tokens take n - 1 decode calls: prompt + n - 1 = positions
    n = positions - len(prompt) + 1
    for threads in [int(t) for t in args.threads.split(",")]:
        torch.set_num_threads(threads)
        hf_compare.hf_greedy(model, prompt, 4)  # warm-up
        for rep in range(args.reps):
            c0, w0 = time.process_time(), time.perf_counter()
            _, _, t_prefill, t_decode = hf_compare.hf_greedy(model, prompt, n)
            cpu = 100 * (time.process_time() - c0) / (time.perf_counter() - w0)
            print(f"torch\t{threads}\t{rep}\t{len(prompt)}\t"
                  f"{len(prompt) / t_prefill:.3f}\t{n - 1}\t"
                  f"{(n - 1) / t_decode:.3f}\t{cpu:.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
