#!/usr/bin/env python3
"""PyTorch peers of pk-gpu-bench: the sample kernels' computations in PyTorch
eager and under torch.compile (default mode, Inductor), float32, on the GPU,
at the samples' shapes, timed the same way as pk-gpu-bench: warm-up calls,
then `reps` timed calls between CUDA events, each after a write of a buffer
larger than the L2 cache; median and min (bench/README.md, "GPU").

    python3 bench/gpu/torch_peers.py [--quick] [--json FILE] [--budget-s S]

Never fails for a missing peer: without torch, without CUDA, or when a kernel
does not compile, the affected entries are null with the reason, and the exit
status is 0. bench/gpu/table.py joins the JSON with pk-gpu-bench's.

SAMPLES (name, shape) is also read by table.py (it imports this module
without torch).
"""

import argparse
import json
import math
import os
import sys
import time
import traceback

# The shapes of samples/<name>/main.cpp, in pk-gpu-bench's order.
N = 1 << 22
SAMPLES = [
    ("fma", (N,)),
    ("axpby", (N,)),
    ("gelu", (N,)),
    ("relu_where", (N,)),
    ("adam_step", (N,)),
    ("broadcast_bias", (2048, 1024)),
    ("rmsnorm", (2048, 4096)),
    ("softmax", (2048, 4096)),
    ("layernorm", (4096, 768)),
    ("logsumexp", (2048, 4096)),
    ("causal_softmax", (1024, 1024)),
    ("column_mean", (4096, 768)),
    ("add_rmsnorm", (2048, 4096)),
    ("sum_all", (2048, 4096)),
]


def shape_str(shape):
    return "x".join(str(d) for d in shape)


def make_case(torch, name, shape, dev):
    """(inputs, fn): the computation as a PyTorch user writes it, with the
    sample's constants. Out arrays are returned; InOut arrays are updated in
    place (as the kernels do)."""
    F = torch.nn.functional
    gen = torch.Generator(device=dev)
    gen.manual_seed(1)

    def rand(shp, lo=-2.0, hi=2.0):
        return torch.rand(shp, device=dev, dtype=torch.float32, generator=gen) * (hi - lo) + lo

    if name == "fma":
        return [rand(shape), rand(shape), rand(shape)], lambda a, b, c: a * b + c
    if name == "axpby":
        def axpby(x, y):
            y.mul_(-0.5).add_(x, alpha=2.5)  # y = 2.5 x - 0.5 y
        return [rand(shape), rand(shape)], axpby
    if name == "gelu":
        return [rand(shape, -6, 6)], lambda x: F.gelu(x, approximate="tanh")
    if name == "relu_where":
        return [rand(shape)], lambda x: torch.relu(x)
    if name == "adam_step":
        lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8
        bias1, bias2 = 1 - 0.9 * 0.9, 1 - 0.999 * 0.999

        def adam_step(p, m, v, g):
            m.mul_(b1).add_(g, alpha=1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            p.addcdiv_(m / bias1, (v / bias2).sqrt_().add_(eps), value=-lr)
        return [rand(shape), rand(shape, -0.1, 0.1), rand(shape, 0, 0.1), rand(shape)], adam_step
    if name == "broadcast_bias":
        return [rand(shape), rand(shape[1:])], lambda x, b: x + b
    if name == "rmsnorm":
        def rmsnorm(x, w):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
        return [rand(shape), rand(shape[1:])], rmsnorm
    if name == "softmax":
        return [rand(shape, -8, 8)], lambda x: torch.softmax(x, -1)
    if name == "layernorm":
        # out, mean and rstd, like the kernel.
        def layernorm(x, w, b):
            return torch.native_layer_norm(x, [x.shape[-1]], w, b, 1e-5)
        return [rand(shape), rand(shape[1:]), rand(shape[1:])], layernorm
    if name == "logsumexp":
        return [rand(shape, -8, 8)], lambda x: torch.logsumexp(x, -1)
    if name == "causal_softmax":
        # The mask is built once, outside the timed call, as models keep it.
        hidden = torch.ones(shape, dtype=torch.bool, device=dev).triu(1)

        def causal_softmax(s, hidden):
            return s.masked_fill(hidden, float("-inf")).softmax(-1)
        return [rand(shape, -8, 8), hidden], causal_softmax
    if name == "column_mean":
        return [rand(shape)], lambda x: x.mean(0)
    if name == "add_rmsnorm":
        def add_rmsnorm(h, x, w):
            h.add_(x)
            return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * w
        return [rand(shape), rand(shape), rand(shape[1:])], add_rmsnorm
    if name == "sum_all":
        return [rand(shape, 0, 1)], lambda x: x.sum()
    raise ValueError(name)


class Timer:
    def __init__(self, torch, args):
        self.torch = torch
        self.args = args
        self.flush_buf = None
        if not args.no_flush:
            props = torch.cuda.get_device_properties(0)
            l2 = getattr(props, "L2_cache_size", 0) or 0
            self.flush_buf = torch.empty(max(256 << 20, 4 * l2), dtype=torch.int8, device="cuda")

    def flush(self):
        if self.flush_buf is not None:
            self.flush_buf.fill_(1)

    def calls(self, fn, inputs, n):
        torch = self.torch
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        stops = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        for i in range(n):
            self.flush()
            starts[i].record()
            fn(*inputs)
            stops[i].record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) * 1e3 for s, e in zip(starts, stops)]

    def time(self, fn, inputs):
        """Warm-up, then args.reps timed calls (fewer, at least 3, when they
        would take more than args.cap_s seconds). Same scheme as pk-gpu-bench."""
        for _ in range(self.args.warmup):
            self.flush()
            fn(*inputs)
        self.torch.cuda.synchronize()
        first = self.calls(fn, inputs, 1)[0]
        reps = self.args.reps
        if first * 1e-6 * reps > self.args.cap_s:
            reps = max(3, int(self.args.cap_s / (first * 1e-6)))
        us = sorted(self.calls(fn, inputs, reps))
        mid = len(us) // 2
        median = us[mid] if len(us) % 2 else 0.5 * (us[mid - 1] + us[mid])
        return {"median_us": median, "min_us": us[0], "reps": reps}


def write(path, result):
    if not path:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
    os.replace(tmp, path)


def short(exc):
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 warm-up + 10 timed calls")
    ap.add_argument("--warmup", type=int, default=None)
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--cap-s", type=float, default=None,
                    help="most seconds of timed calls per kernel and peer")
    ap.add_argument("--no-flush", action="store_true", help="no L2 flush before each call")
    ap.add_argument("--no-compile", action="store_true", help="eager only")
    ap.add_argument("--only", default="", help="comma-separated kernel names")
    ap.add_argument("--budget-s", type=float, default=math.inf,
                    help="stop starting torch.compile after this many seconds (n/a after)")
    ap.add_argument("--json", default="", help="write the results here")
    args = ap.parse_args()
    args.warmup = args.warmup if args.warmup is not None else (2 if args.quick else 10)
    args.reps = max(1, args.reps if args.reps is not None else (10 if args.quick else 100))
    args.cap_s = args.cap_s if args.cap_s is not None else (2.0 if args.quick else 10.0)
    t0 = time.monotonic()

    result = {"available": False, "reason": "", "torch": None, "device": None,
              "compile_available": False, "compile_reason": "",
              "warmup": args.warmup, "reps": args.reps, "cap_s": args.cap_s,
              "flush": not args.no_flush, "kernels": []}

    def unavailable(reason):
        result["reason"] = reason
        result["compile_reason"] = reason
        write(args.json, result)
        print(f"torch_peers: n/a: {reason}")
        return 0

    try:
        import torch
    except Exception as e:  # ImportError, or a broken install
        return unavailable(f"import torch failed ({short(e)})")
    result["torch"] = torch.__version__
    try:
        if not torch.cuda.is_available():
            return unavailable(f"torch {torch.__version__} has no CUDA device "
                               f"(torch.version.cuda = {torch.version.cuda})")
        result["device"] = torch.cuda.get_device_name(0)
        timer = Timer(torch, args)
    except Exception as e:
        return unavailable(f"torch {torch.__version__}: CUDA unusable ({short(e)})")
    result["available"] = True
    if args.no_compile:
        result["compile_reason"] = "--no-compile"
    elif not hasattr(torch, "compile"):
        result["compile_reason"] = f"torch {torch.__version__} has no torch.compile"
    else:
        result["compile_available"] = True
    print(f"torch_peers: torch {torch.__version__} (CUDA {torch.version.cuda}) on "
          f"{result['device']}; {args.warmup} warm-up + {args.reps} timed calls, "
          f"{'L2 flushed before each' if timer.flush_buf is not None else 'no L2 flush'}")
    write(args.json, result)

    only = [s for s in args.only.split(",") if s]
    for name, shape in SAMPLES:
        if only and name not in only:
            continue
        entry = {"name": name, "shape": shape_str(shape), "eager": None, "eager_error": "",
                 "compile": None, "compile_error": "", "compile_s": None}
        result["kernels"].append(entry)
        try:
            inputs, fn = make_case(torch, name, shape, "cuda")
        except Exception as e:
            entry["eager_error"] = entry["compile_error"] = f"inputs: {short(e)}"
            write(args.json, result)
            continue
        try:
            entry["eager"] = timer.time(fn, inputs)
        except Exception as e:
            entry["eager_error"] = short(e)
        if not result["compile_available"]:
            entry["compile_error"] = result["compile_reason"]
        elif time.monotonic() - t0 > args.budget_s:
            entry["compile_error"] = f"time budget ({args.budget_s:.0f} s) spent"
        else:
            try:
                compiled = torch.compile(fn)
                c0 = time.monotonic()
                compiled(*inputs)  # compiles
                torch.cuda.synchronize()
                entry["compile_s"] = time.monotonic() - c0
                entry["compile"] = timer.time(compiled, inputs)
            except Exception as e:
                entry["compile_error"] = short(e)
                traceback.print_exc(limit=3)
        del inputs
        e, c = entry["eager"], entry["compile"]
        print(f"{name:15s} {entry['shape']:10s} eager "
              + (f"{e['median_us']:10.1f} us (min {e['min_us']:.1f}, n={e['reps']})" if e
                 else f"n/a ({entry['eager_error']})")
              + "  compile "
              + (f"{c['median_us']:10.1f} us (min {c['min_us']:.1f}, n={c['reps']}; "
                 f"compiled in {entry['compile_s']:.1f} s)" if c
                 else f"n/a ({entry['compile_error']})"),
              flush=True)
        write(args.json, result)
    result["complete"] = True
    write(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
