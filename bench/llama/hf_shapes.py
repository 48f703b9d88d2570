#!/usr/bin/env python3
"""PyTorch's columns of bench/llama/shapes.sh: transformers' model (built by
hf_compare.build_hf_model from a llama2.c checkpoint, the same weights
pk-llama-bench reads) at the shapes pk-llama-bench times:

    python hf_shapes.py CHECKPOINT --threads 1 --prefill 32,128,512 \
        --decode-at 128,1023 [--dtype bf16] [--compile] [--reps 3]

prefill/T: one forward call over T tokens from an empty cache; decode/P: one
forward call of one token at position P after a prefill of 0..P-1 (the cache
cropped back to P after each call, so every call attends over P + 1 keys).
--compile runs the model through torch.compile (its default mode) and warms
each shape first. Prints one tab-separated line per shape:

    torch|torch.compile  THREADS  prefill|decode  T_or_P  MEDIAN_SECONDS
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_compare  # noqa: E402


def ints(text):
    return [int(t) for t in text.split(",") if t]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--prefill", type=ints, default=[32, 128, 512])
    ap.add_argument("--decode-at", type=ints, default=[128, 1023])
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--decode-calls", type=int, default=16,
                    help="decode calls timed per repetition")
    args = ap.parse_args()

    import torch
    from transformers import DynamicCache
    torch.set_num_threads(args.threads)
    ck = hf_compare.load_checkpoint(args.checkpoint)
    model = hf_compare.build_hf_model(ck)
    if args.dtype == "bf16":
        model = model.to(torch.bfloat16)
    run = torch.compile(model) if args.compile else model
    name = "torch.compile" if args.compile else "torch"
    kwarg = hf_compare._cache_kwarg(model)
    g = torch.Generator().manual_seed(0)

    def ids(n):
        t = torch.randint(3, ck.vocab_size, (1, n), generator=g)
        t[0, 0] = 1
        return t

    with torch.no_grad():
        for t in args.prefill:
            if t > ck.seq_len:
                continue
            x = ids(t)
            run(input_ids=x, use_cache=True, **{kwarg: DynamicCache()})
            times = []
            for _ in range(args.reps):
                t0 = time.perf_counter()
                run(input_ids=x, use_cache=True, **{kwarg: DynamicCache()})
                times.append(time.perf_counter() - t0)
            print(f"{name}\t{args.threads}\tprefill\t{t}\t"
                  f"{statistics.median(times):.6f}", flush=True)
        for p in args.decode_at:
            p = min(p, ck.seq_len - 1)  # as pk-llama-bench: the last position
            x = ids(p + 1)
            cache = DynamicCache()
            model(input_ids=x[:, :p], use_cache=True, **{kwarg: cache})
            one = x[:, p:p + 1]
            pos = torch.tensor([p])

            def step():
                run(input_ids=one, use_cache=True, cache_position=pos,
                    **{kwarg: cache})
                cache.crop(-1)  # back to positions 0..p-1

            step()
            step()
            times = []
            for _ in range(args.reps):
                t0 = time.perf_counter()
                for _ in range(args.decode_calls):
                    step()
                times.append((time.perf_counter() - t0) / args.decode_calls)
            print(f"{name}\t{args.threads}\tdecode\t{p}\t"
                  f"{statistics.median(times):.6f}", flush=True)


if __name__ == "__main__":
    main()
