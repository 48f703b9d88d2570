#!/usr/bin/env python3
"""PyTorch's bfloat16 nn.Linear product at pk-bench's linear_prefill_bf16 shapes.

    bench/peers/.venv/bin/python bench/peers/bf16_linear.py [--threads 1,2]
                                 [--rows 16,32,64,128,512] [--reps 5] [--min-time 0.1]

torch.nn.functional.linear(x, w) with x [M, K] and w [N, K] both torch.bfloat16 (a
bf16 model's projection: oneDNN's AMX-BF16 kernels where the CPU has them), the
weights rotating through distinct matrices totalling about 1 GiB, as pk-bench's
rotate through its pool. Each thread count runs in its own process (its thread
count set before torch is imported). Per shape: one warm-up call, then --reps
repetitions of n calls lasting >= --min-time each; prints the median time and
GFLOP/s (2 M N K per call), one markdown row per shape and thread count, to put
beside pk-bench's linear_prefill_bf16_amx rows of the same run (bench/README.md).
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

WEIGHTS = ((768, 2048), (2048, 2048), (2048, 5632), (5632, 2048))  # K, N


def child(threads, rows, reps, min_time):
    import torch
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    for m, n, k in [(m, n, k) for k, n in WEIGHTS for m in rows]:
        count = max(2, (1 << 30) // (2 * n * k))
        pool = (torch.rand(count, n, k) * 2 - 1).to(torch.bfloat16)
        x = (torch.rand(m, k) * 2 - 1).to(torch.bfloat16)
        state = {"i": 0}

        def call():
            w = pool[state["i"]]
            state["i"] = (state["i"] + 1) % count
            return torch.nn.functional.linear(x, w)

        with torch.inference_mode():
            call()
            t0 = time.perf_counter()
            calls = 0
            while time.perf_counter() - t0 < 0.05 or calls < 2:
                call()
                calls += 1
            per = (time.perf_counter() - t0) / calls
            n_calls = max(1, int(min_time / per))
            times = []
            for _ in range(reps):
                t0 = time.perf_counter()
                for _ in range(n_calls):
                    call()
                times.append((time.perf_counter() - t0) / n_calls)
        t = statistics.median(times)
        print(f"| torch bf16 linear | {m}x{n}x{k} | {threads} | {t * 1e3:.3f} ms "
              f"| {2 * m * n * k / t / 1e9:.1f} |", flush=True)
        del pool


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rows", default="16,32,64,128,512")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.1)
    ap.add_argument("--child", type=int, default=0)
    a = ap.parse_args()
    if a.child:
        child(a.child, [int(v) for v in a.rows.split(",")], a.reps, a.min_time)
        return
    print("| peer | M x N x K | threads | median | GFLOP/s |")
    print("| --- | --- | --- | --- | --- |")
    for t in (int(v) for v in a.threads.split(",")):
        env = dict(os.environ, OMP_NUM_THREADS=str(t), MKL_NUM_THREADS=str(t))
        subprocess.run([sys.executable, __file__, "--child", str(t), "--rows", a.rows,
                        "--reps", str(a.reps), "--min-time", str(a.min_time)],
                       env=env, check=True)


if __name__ == "__main__":
    main()
