#!/usr/bin/env python3
"""Python peers of pk-bench: the sample kernels as NumPy expressions, numexpr,
PyTorch eager, torch.compile and jax.jit, at pk-bench's shapes and thread counts,
float32, on the CPU (bench/README.md, "Python peers").

    python3 bench/peers/peers.py [--json FILE] [--threads 1,2] [--peers a,b]
                                 [--only k1,k2/shape] [--reps 5] [--min-time 0.1]

--only takes kernels (every shape) and kernel/shape cases, e.g.
--only softmax,mlp/1x768x3072.

Usually run by bench/peers/run.sh (which makes the virtual environment), or by
`bash bench/run.sh --peers` (pk-bench and the peers back to back, one table).

Each (peer, thread count) runs in its own process, its thread count set before any
package is imported: the process is pinned to the first `t` CPUs of its affinity
mask (like pk-bench's OMP_PROC_BIND=close OMP_PLACES=cores, whose environment it
also gets), OMP_NUM_THREADS / MKL_NUM_THREADS / OPENBLAS_NUM_THREADS /
NUMEXPR_NUM_THREADS = t, torch.set_num_threads(t), numexpr.set_num_threads(t),
and for JAX at one thread XLA_FLAGS="--xla_cpu_multi_thread_eigen=false
intra_op_parallelism_threads=1" (at t threads XLA's own pool, which the affinity
mask sizes). NumPy's elementwise operations and reductions are serial: it runs at
one thread only, and the table uses that time at every thread count (as Eigen's);
except for the whole-program kernels (mlp, swiglu_mlp), whose matrix products go to
NumPy's BLAS, threaded by OPENBLAS_NUM_THREADS: those run at every thread count.

Timing, as Google Benchmark with pk-bench's settings: for each kernel x shape, one
call on fresh inputs, checked against a float64 NumPy evaluation of the kernel's
formula (|peer - ref| <= 1e-4 |ref| + 1e-5 for every element of every output; mlp
and swiglu_mlp, float32 sums of up to 5632 products, have a tolerance of their own,
compare(); for torch.compile and jax.jit this first call is the compile, not timed,
its time recorded as pk_first_call_s), then warm-up calls (at least 2 and 0.05 s),
then an iteration count n such that n calls last >= --min-time; then --reps
repetitions of n calls each, the repetitions of all kernels x shapes of the process
in a random order (Google Benchmark's --benchmark_enable_random_interleaving: a
burst of load from another process spoils one repetition of many cases rather than
all of a few). The time of a repetition is its wall time / n; the reported time is
the median over the repetitions. Every call is synchronous (JAX: block_until_ready
on every output of every call). Python's garbage collector is off while timing.

Output: JSON shaped like Google Benchmark's, so bench/table.py reads it with
pk-bench's: benchmarks named <kernel>/<shape>/<peer>/threads:<t>, run_type
"aggregate", aggregate_name "median", real_time and cpu_time in seconds (cpu_time:
the process's CPU time, all threads, per call); for mlp and swiglu_mlp also
pk-bench's counters of these kernels, bytes_per_second and "flops" (flop/s), from
the per-call bytes and flops of bench/kernels_programs.cpp; context.pk_peers holds
the package versions, the settings, the packages that were not available and why,
and the cases that failed (a peer that cannot run is never fatal: its cells say
n/a).
"""

import argparse
import datetime
import gc
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

PEERS = ("numpy", "numexpr", "torch", "torch_compile", "jax_jit")
SERIAL_PEERS = ("numpy",)
# ... except for these kernels: NumPy's matmul calls its BLAS (OpenBLAS in NumPy's
# wheels), which runs OPENBLAS_NUM_THREADS threads, so they run at every thread count.
THREADED_NUMPY_KERNELS = ("mlp", "swiglu_mlp", "q_projection", "q_projection_rope")
# The module each peer needs, and the pip package that brings it.
PEER_MODULES = {"numpy": ["numpy"], "numexpr": ["numpy", "numexpr"], "torch": ["numpy", "torch"],
                "torch_compile": ["numpy", "torch"], "jax_jit": ["numpy", "jax"]}

# pk-bench's shapes (bench/bench_main.cpp, kernels_*.cpp), in its order.
ELEMENTWISE = [(1 << 20,), (16 << 20,)]
ROWS = [(1, 4096), (128, 4096), (2048, 4096), (4096, 768)]
BIAS = [(128, 4096), (2048, 4096), (4096, 768)]
REDUCTIONS = [(2048, 4096), (4096, 768)]
# (T, D, F): T tokens, D -> F -> D, GPT-2 small's widths then TinyLlama's
# (kernels_programs.cpp, mlp_shapes(); its labels are 1x768x3072 etc.).
PROGRAMS = [(T, D, F) for D, F in ((768, 3072), (2048, 5632)) for T in (1, 32, 128, 512)]
# kernels_views.cpp: (pos, cache length) of a decode step of 32 query heads over 4 kv
# heads of 64 (KV_HEADS, KV_GROUP, HEAD); (vocab, dim, ids) of the embedding; (T, D,
# head size) of the q projection.
KV_HEADS, KV_GROUP, HEAD = 4, 8, 64
KV_CACHE = [(p, L) for p in (128, 1024, 4096) for L in (p + 1, 8 * p)]
EMBEDDING = [(32000, 1024, 512)]
Q_PROJECTION = [(1, 2048, 64), (32, 2048, 64), (512, 2048, 64)]
KERNELS = [("fma", ELEMENTWISE), ("axpby", ELEMENTWISE), ("gelu", ELEMENTWISE),
           ("relu_where", ELEMENTWISE), ("adam_step", ELEMENTWISE), ("broadcast_bias", BIAS),
           ("rmsnorm", ROWS), ("softmax", ROWS), ("layernorm", ROWS), ("logsumexp", ROWS),
           ("add_rmsnorm", ROWS), ("column_mean", REDUCTIONS), ("sum_all", REDUCTIONS),
           ("mlp", PROGRAMS), ("swiglu_mlp", PROGRAMS),
           ("kv_cache_attention", KV_CACHE), ("embedding", EMBEDDING),
           ("q_projection", Q_PROJECTION), ("q_projection_rope", Q_PROJECTION)]
# The [views] kernels (kernels_views.cpp) run in NumPy and PyTorch only: JAX
# has no in-place cache write or rotating ids that match pk-bench's calls.
VIEW_KERNELS = ("kv_cache_attention", "embedding", "q_projection", "q_projection_rope")
# numexpr evaluates elementwise expressions (its only reductions are a slow,
# serial sum/prod of a whole expression): the elementwise samples only.
NUMEXPR_KERNELS = ("fma", "axpby", "gelu", "relu_where", "adam_step", "broadcast_bias")

# The constants of pk-bench (kernels_elementwise.cpp, kernels_rows.cpp).
ALPHA, BETA = 0.5, 0.5
GELU_K = 0.7978845608
LR, B1, B2, ADAM_EPS = 1e-3, 0.9, 0.999, 1e-8
BIAS1, BIAS2 = 0.65132156, 0.00995512  # 1 - 0.9^10, 1 - 0.999^10
EPS = 1e-5

# Out arrays of each kernel (name, shape from (T, D), (N,) or (T, D, F)), and InOut
# arrays.
OUTS = {
    "fma": [("o", "full")], "axpby": [], "gelu": [("y", "full")], "relu_where": [("y", "full")],
    "adam_step": [], "broadcast_bias": [("y", "full")], "rmsnorm": [("y", "full")],
    "softmax": [("y", "full")], "layernorm": [("out", "full"), ("mean", "T"), ("rstd", "T")],
    "logsumexp": [("out", "T")], "add_rmsnorm": [("y", "full")], "column_mean": [("m", "D")],
    "sum_all": [("total", "scalar")], "mlp": [("y", "TD")], "swiglu_mlp": [("y", "TD")],
    "kv_cache_attention": [("o", "kv_o")], "embedding": [("x", "rows")],
    "q_projection": [("y", "TD")], "q_projection_rope": [("y", "TD")],
}
INOUT = {"axpby": ["y"], "adam_step": ["p", "m", "v"], "add_rmsnorm": ["h"],
         "kv_cache_attention": ["key_cache", "value_cache"]}


def label(shape):
    """pk-bench's shape label: 1M, 16M, 128x4096."""
    if len(shape) == 1:
        n = shape[0]
        if n >= 1 << 20 and n % (1 << 20) == 0:
            return f"{n >> 20}M"
        if n >= 1 << 10 and n % (1 << 10) == 0:
            return f"{n >> 10}K"
        return str(n)
    return "x".join(str(d) for d in shape)


def out_shape(kind, shape):
    if kind == "kv_o":
        return (KV_HEADS, KV_GROUP, 1, HEAD)
    if kind == "rows":
        return (shape[2], shape[1])
    return {"full": shape, "T": shape[:1], "D": shape[1:], "TD": shape[:2], "scalar": ()}[kind]


def checked(kernel):
    """The arrays a call writes, in a fixed order."""
    return INOUT.get(kernel, []) + [n for n, _ in OUTS[kernel]]


def counts(kernel, shape):
    """(bytes, flops) of one call where pk-bench reports them as counters beyond its
    bytes_per_second: min_bytes() and flops() of bench/kernels_programs.cpp (every
    input read once and y written once; 2 flops per multiply-add of each product),
    so that the peers' rows carry the same figures as pk's. None elsewhere."""
    if kernel not in ("mlp", "swiglu_mlp"):
        return None
    T, D, F = shape
    if kernel == "mlp":
        return 4 * (2 * T * D + 2 * D * F + F + D), 4.0 * T * D * F
    return 4 * (2 * T * D + 3 * D * F), 6.0 * T * D * F


def wanted(only, kernel, shape=None):
    """Whether --only selects the kernel (any of its shapes when shape is None)."""
    if not only or kernel in only:
        return True
    if shape is None:
        return any(o.split("/", 1)[0] == kernel for o in only)
    return f"{kernel}/{label(shape)}" in only


# --- inputs and the float64 reference ---------------------------------------------

def make_inputs(np, kernel, shape, seed):
    """The kernel's In and InOut arrays (float32), with pk-bench's value ranges."""
    rng = np.random.default_rng(seed)

    def u(shp, lo=-1.0, hi=1.0):
        a = rng.random(shp, dtype=np.float32)
        a *= np.float32(hi - lo)
        a += np.float32(lo)
        return a

    full, D = shape, shape[-1]
    if kernel == "fma":
        return {"a": u(full), "b": u(full), "c": u(full)}
    if kernel == "axpby":
        return {"x": u(full), "y": u(full)}
    if kernel == "gelu":
        return {"x": u(full, -6.0, 6.0)}
    if kernel == "relu_where":
        return {"x": u(full)}
    if kernel == "adam_step":
        g = u(full)
        g[np.abs(g) < 1e-3] = np.float32(1e-3)  # v away from denormals, as pk-bench
        return {"p": u(full), "m": u(full, -0.1, 0.1), "v": u(full, 0.0, 0.1), "g": g}
    if kernel == "broadcast_bias":
        return {"x": u(full), "b": u((D,))}
    if kernel == "rmsnorm":
        return {"x": u(full), "w": u((D,))}
    if kernel in ("softmax", "logsumexp"):
        return {"x": u(full, -8.0, 8.0)}
    if kernel == "layernorm":
        return {"x": u(full, -2.0, 3.0), "w": u((D,)), "b": u((D,))}
    if kernel == "add_rmsnorm":
        return {"h": u(full), "x": u(full), "w": u((D,))}
    if kernel == "column_mean":
        return {"x": u(full)}
    if kernel == "sum_all":
        return {"x": u(full, 0.0, 1.0)}
    if kernel in ("mlp", "swiglu_mlp"):
        # Weights [out, in] with nn.Linear's initialisation scale, U(±1/sqrt(in)),
        # biases U(±0.1), x U(-1, 1), as kernels_programs.cpp.
        T, D, F = shape
        sd, sf = 1 / math.sqrt(D), 1 / math.sqrt(F)
        if kernel == "mlp":
            return {"x": u((T, D)), "w1": u((F, D), -sd, sd), "b1": u((F,), -0.1, 0.1),
                    "w2": u((D, F), -sf, sf), "b2": u((D,), -0.1, 0.1)}
        return {"x": u((T, D)), "w_gate": u((F, D), -sd, sd), "w_up": u((F, D), -sd, sd),
                "w_down": u((D, F), -sf, sf)}
    if kernel == "kv_cache_attention":
        pos, L = shape
        return {"q": u((KV_HEADS, KV_GROUP, 1, HEAD)), "k": u((KV_HEADS, 1, HEAD)),
                "v": u((KV_HEADS, 1, HEAD)), "key_cache": u((KV_HEADS, L, HEAD)),
                "value_cache": u((KV_HEADS, L, HEAD)), "pos": np.array(pos, np.int64)}
    if kernel == "embedding":
        # The ids of successive calls: a permutation of the rows (the stride of
        # kernels_views.cpp), read 512 at a time, so no row is read twice before
        # all were (every read from DRAM: the table is past the last-level cache).
        V, D, T = shape
        perm = ((np.arange(V, dtype=np.int64) * 7919 + 13) % V).astype(np.int64)
        return {"table": u((V, D)), "perm": perm}
    if kernel in ("q_projection", "q_projection_rope"):
        T, D, hs = shape
        return {"x": u((T, D)), "w": u((D, D), -0.02, 0.02), "cos_t": u((T, hs // 2)),
                "sin_t": u((T, hs // 2))}
    raise ValueError(kernel)


def reference(np, kernel, arrays):
    """The kernel's formula (samples/<kernel>/<kernel>.cpp) in float64, from the
    initial arrays: {name: array} for checked(kernel)."""
    a = {k: v.astype(np.float64) for k, v in arrays.items()}
    f = np.float64

    def gelu(x):  # the tanh form, as samples/gelu and samples/mlp
        return 0.5 * x * (1.0 + np.tanh(GELU_K * (x + 0.044715 * x * x * x)))

    if kernel == "fma":
        return {"o": a["a"] * a["b"] + a["c"]}
    if kernel == "axpby":
        return {"y": f(ALPHA) * a["x"] + f(BETA) * a["y"]}
    if kernel == "gelu":
        return {"y": gelu(a["x"])}
    if kernel == "relu_where":
        return {"y": np.where(a["x"] > 0, a["x"], 0.0)}
    if kernel == "adam_step":
        m = B1 * a["m"] + (1 - B1) * a["g"]
        v = B2 * a["v"] + (1 - B2) * a["g"] * a["g"]
        p = a["p"] - LR * (m / BIAS1) / (np.sqrt(v / BIAS2) + ADAM_EPS)
        return {"p": p, "m": m, "v": v}
    if kernel == "broadcast_bias":
        return {"y": a["x"] + a["b"]}
    if kernel in ("rmsnorm", "add_rmsnorm"):
        h = a["h"] + a["x"] if kernel == "add_rmsnorm" else a["x"]
        y = h / np.sqrt(np.mean(h * h, -1, keepdims=True) + EPS) * a["w"]
        return {"h": h, "y": y} if kernel == "add_rmsnorm" else {"y": y}
    if kernel == "softmax":
        e = np.exp(a["x"] - a["x"].max(-1, keepdims=True))
        return {"y": e / e.sum(-1, keepdims=True)}
    if kernel == "layernorm":
        mu = a["x"].mean(-1, keepdims=True)
        d = a["x"] - mu
        rstd = 1.0 / np.sqrt((d * d).mean(-1, keepdims=True) + EPS)
        return {"out": d * rstd * a["w"] + a["b"], "mean": mu[:, 0], "rstd": rstd[:, 0]}
    if kernel == "logsumexp":
        m = a["x"].max(-1, keepdims=True)
        return {"out": (np.log(np.exp(a["x"] - m).sum(-1, keepdims=True)) + m)[:, 0]}
    if kernel == "column_mean":
        return {"m": a["x"].mean(0)}
    if kernel == "sum_all":
        return {"total": np.array(a["x"].sum())}
    if kernel == "mlp":
        return {"y": gelu(a["x"] @ a["w1"].T + a["b1"]) @ a["w2"].T + a["b2"]}
    if kernel == "swiglu_mlp":
        g = a["x"] @ a["w_gate"].T
        return {"y": (g / (1.0 + np.exp(-g)) * (a["x"] @ a["w_up"].T)) @ a["w_down"].T}
    if kernel == "kv_cache_attention":
        pos = int(arrays["pos"])
        kc, vc = a["key_cache"].copy(), a["value_cache"].copy()
        kc[:, pos:pos + 1], vc[:, pos:pos + 1] = a["k"], a["v"]
        keys, values = kc[:, None, :pos + 1], vc[:, None, :pos + 1]
        sc = a["q"] @ keys.transpose(0, 1, 3, 2) / np.sqrt(HEAD)
        e = np.exp(sc - sc.max(-1, keepdims=True))
        return {"key_cache": kc, "value_cache": vc, "o": (e / e.sum(-1, keepdims=True)) @ values}
    if kernel == "embedding":
        T = EMBEDDING[0][2]
        return {"x": a["table"][arrays["perm"][:T]]}
    if kernel in ("q_projection", "q_projection_rope"):
        y = a["x"] @ a["w"].T
        if kernel == "q_projection_rope":
            y = rope_half(np, y, a["cos_t"], a["sin_t"])
        return {"y": y}
    raise ValueError(kernel)


def rope_half(xp, y, c, s):
    """Hugging Face's rotate_half RoPE of y [T, H * hs] with tables [T, hs/2],
    as bench/views/q_rope.cpp: returns [T, H * hs]."""
    T, D = y.shape
    hs = 2 * c.shape[1]
    p = y.reshape(T, D // hs, hs)
    a, b = p[..., :hs // 2], p[..., hs // 2:]
    c, s = c[:, None, :], s[:, None, :]
    return xp.concatenate([a * c - b * s, b * c + a * s], -1).reshape(T, D)


# The tolerance of the matrix-product kernels (mlp, swiglu_mlp): each output is a
# float32 sum of F products (up to 5632) of hidden values that are themselves float32
# sums of D (up to 2048). With terms of random sign, the rounding error of a sum of
# K terms grows like u·sqrt(K)·rms(sum) (u = 2^-24: each partial sum is rounded,
# partial sums grow like sqrt(k); a BLAS's blocked accumulators do better; the
# worst-case bound u·K·sum|terms|, ~2e-3 here, is never approached), and it does not
# shrink with |ref|: where an output cancels to ~0, no relative tolerance holds. So
# the absolute term is scaled to the outputs' size: |peer - ref| <= 1e-4 |ref| +
# 1e-4 rms(ref), ~22x u·sqrt(5632), an absolute floor of 1.2e-5 (mlp, rms 0.12) and
# 3.3e-6 (swiglu_mlp, rms 0.033) at these value ranges. Measured at every shape
# (2026-12-01, NumPy 2.4 with its OpenBLAS, torch 2.15 eager and compiled, jax 0.10):
# largest errors 9.3e-7 (mlp, XLA at T = 1) and 4.2e-7 (swiglu_mlp), every element
# within 0.035 of its tolerance; a wrong formula fails (checked at 1x768x3072 and
# 32x2048x5632): erf's GELU for the tanh form (up to 6e-5 off), ReLU for GELU, a
# missing b2, gate and up swapped, sigmoid or GELU for SiLU.
MATMUL_TOLERANCE = {"mlp": 1e-4, "swiglu_mlp": 1e-4, "q_projection": 1e-4,
                    "q_projection_rope": 1e-4}


def compare(np, kernel, ref, got):
    """'' when every output agrees with the float64 reference, else why not:
    |peer - ref| <= 1e-4 |ref| + 1e-5 for every element (the elementwise and row
    kernels: a few float32 roundings, or sums of up to 4096 well-scaled terms), and
    for the matrix-product kernels 1e-4 |ref| + 1e-4 rms(ref) (MATMUL_TOLERANCE)."""
    for name in checked(kernel):
        r = ref[name]
        g = np.asarray(got[name], dtype=np.float64).reshape(r.shape)
        err = np.abs(g - r)
        floor = 1e-5
        if kernel in MATMUL_TOLERANCE:
            floor = MATMUL_TOLERANCE[kernel] * float(np.sqrt(np.mean(r * r)))
        bad = ~(err <= 1e-4 * np.abs(r) + floor)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            return (f"wrong result: {name}[{i}] = {g.flat[i]:.9g}, expected {r.flat[i]:.9g} "
                    f"({int(bad.sum())} elements off)")
    return ""


# --- the peers --------------------------------------------------------------------
#
# build_<peer>(kernel, shape, arrays) -> (step, result): step() makes one
# synchronous call of the kernel (InOut arrays updated, Out arrays written); result()
# returns {name: array-like} of checked(kernel) after the last call. Each computes
# the kernel's formula as a user of that library writes it.

def out_arrays(np, kernel, shape):
    return {n: np.empty(out_shape(k, shape), np.float32) for n, k in OUTS[kernel] if k != "scalar"}


def build_numpy(kernel, shape, arrays):
    """NumPy expressions, one temporary per operation; the last operation writes
    into the Out array (out=) where NumPy's function takes one (np.where does not:
    relu_where returns a new array); InOut arrays are written in place."""
    import numpy as np
    a, o = arrays, out_arrays(np, kernel, shape)
    box = {}
    if kernel == "fma":
        def step(): np.add(a["a"] * a["b"], a["c"], out=o["o"])
    elif kernel == "axpby":
        def step(): np.add(ALPHA * a["x"], BETA * a["y"], out=a["y"])
    elif kernel == "gelu":
        def step():
            x = a["x"]
            np.multiply(0.5 * x, 1.0 + np.tanh(GELU_K * (x + 0.044715 * x * x * x)), out=o["y"])
    elif kernel == "relu_where":
        def step(): box["y"] = np.where(a["x"] > 0, a["x"], np.float32(0))
    elif kernel == "adam_step":
        def step():
            p, m, v, g = a["p"], a["m"], a["v"], a["g"]
            np.add(B1 * m, (1 - B1) * g, out=m)
            np.add(B2 * v, (1 - B2) * g * g, out=v)
            np.subtract(p, LR * (m / BIAS1) / (np.sqrt(v / BIAS2) + ADAM_EPS), out=p)
    elif kernel == "broadcast_bias":
        def step(): np.add(a["x"], a["b"], out=o["y"])
    elif kernel == "rmsnorm":
        def step():
            x = a["x"]
            ms = np.mean(x * x, axis=-1, keepdims=True)
            np.multiply(x * (1.0 / np.sqrt(ms + EPS)), a["w"], out=o["y"])
    elif kernel == "softmax":
        def step():
            x = a["x"]
            e = np.exp(x - x.max(axis=-1, keepdims=True))
            np.divide(e, e.sum(axis=-1, keepdims=True), out=o["y"])
    elif kernel == "layernorm":
        def step():
            x = a["x"]
            mu = x.mean(axis=-1, keepdims=True)
            d = x - mu
            rstd = 1.0 / np.sqrt((d * d).mean(axis=-1, keepdims=True) + EPS)
            np.add(d * rstd * a["w"], a["b"], out=o["out"])
            o["mean"][:] = mu[:, 0]
            o["rstd"][:] = rstd[:, 0]
    elif kernel == "logsumexp":
        def step():
            x = a["x"]
            m = x.max(axis=-1, keepdims=True)
            np.add(np.log(np.exp(x - m).sum(axis=-1)), m[:, 0], out=o["out"])
    elif kernel == "add_rmsnorm":
        def step():
            h = a["h"]
            h += a["x"]
            ms = np.mean(h * h, axis=-1, keepdims=True)
            np.multiply(h * (1.0 / np.sqrt(ms + EPS)), a["w"], out=o["y"])
    elif kernel == "column_mean":
        def step(): np.mean(a["x"], axis=0, out=o["m"])
    elif kernel == "sum_all":
        def step(): box["total"] = np.sum(a["x"])
    elif kernel == "mlp":
        def step():
            h = a["x"] @ a["w1"].T + a["b1"]
            h = 0.5 * h * (1.0 + np.tanh(GELU_K * (h + 0.044715 * h * h * h)))
            np.add(h @ a["w2"].T, a["b2"], out=o["y"])
    elif kernel == "swiglu_mlp":
        def step():
            g = a["x"] @ a["w_gate"].T
            np.matmul(g / (1.0 + np.exp(-g)) * (a["x"] @ a["w_up"].T), a["w_down"].T, out=o["y"])
    elif kernel == "kv_cache_attention":
        def step():
            p, kc, vc = int(a["pos"]), a["key_cache"], a["value_cache"]
            kc[:, p:p + 1], vc[:, p:p + 1] = a["k"], a["v"]
            s = a["q"] @ kc[:, None, :p + 1].transpose(0, 1, 3, 2) * np.float32(1 / math.sqrt(HEAD))
            e = np.exp(s - s.max(-1, keepdims=True))
            np.matmul(e / e.sum(-1, keepdims=True), vc[:, None, :p + 1], out=o["o"])
    elif kernel == "embedding":
        at = {"next": 0}

        def step():
            T = o["x"].shape[0]
            if at["next"] + T > len(a["perm"]):
                at["next"] = 0
            np.take(a["table"], a["perm"][at["next"]:at["next"] + T], axis=0, out=o["x"])
            at["next"] += T
    elif kernel == "q_projection":
        def step(): np.matmul(a["x"], a["w"].T, out=o["y"])
    elif kernel == "q_projection_rope":
        def step(): o["y"][...] = rope_half(np, a["x"] @ a["w"].T, a["cos_t"], a["sin_t"])
    else:
        raise ValueError(kernel)
    return step, lambda: {**a, **o, **box}


def build_numexpr(kernel, shape, arrays):
    """numexpr.evaluate of the kernel's expression into the Out/InOut array
    (out=); adam_step as three evaluations (m, v, then p), one per updated array.
    The constants are float32 scalars in local_dict (a literal such as 0.5 is a
    double to numexpr and would make the whole expression float64);
    casting='safe' into the float32 out array checks that it stays float32."""
    import numpy as np
    import numexpr as ne
    a, o = arrays, out_arrays(np, kernel, shape)
    f32 = np.float32
    k = {"alpha": f32(ALPHA), "beta": f32(BETA), "half": f32(0.5), "one": f32(1.0),
         "kg": f32(GELU_K), "c3": f32(0.044715), "zero": f32(0.0), "b1": f32(B1),
         "nb1": f32(1 - B1), "b2": f32(B2), "nb2": f32(1 - B2), "lr": f32(LR),
         "bias1": f32(BIAS1), "bias2": f32(BIAS2), "eps": f32(ADAM_EPS)}
    env = {**a, **k}

    def ev(expr, out):
        ne.evaluate(expr, local_dict=env, out=out, casting="safe")

    if kernel == "fma":
        def step(): ev("a * b + c", o["o"])
    elif kernel == "axpby":
        def step(): ev("alpha * x + beta * y", a["y"])
    elif kernel == "gelu":
        def step(): ev("half * x * (one + tanh(kg * (x + c3 * x * x * x)))", o["y"])
    elif kernel == "relu_where":
        def step(): ev("where(x > zero, x, zero)", o["y"])
    elif kernel == "adam_step":
        def step():
            ev("b1 * m + nb1 * g", a["m"])
            ev("b2 * v + nb2 * g * g", a["v"])
            ev("p - lr * (m / bias1) / (sqrt(v / bias2) + eps)", a["p"])
    elif kernel == "broadcast_bias":
        def step(): ev("x + b", o["y"])
    else:
        raise ValueError(f"numexpr: {kernel} is not elementwise")
    return step, lambda: {**a, **o}


def torch_functions(torch, kernel):
    """(eager, compiled): the kernel in PyTorch, both writing every Out array into
    a preallocated tensor (the arguments after ARGS[kernel]) and updating InOut
    arrays in place, as pk does: a fresh 32 MiB output costs more than the kernel
    here (bench/README.md, "Python peers"). eager uses PyTorch's functions with
    out= (torch.softmax, F.gelu and torch.logsumexp included); layernorm is
    torch.native_layer_norm, which has no out= and returns new tensors; mlp and
    swiglu_mlp are F.linear, F.gelu(approximate="tanh") and F.silu, the last
    product as torch.addmm / torch.mm with out= (F.linear has no out=; for 2-D
    input it is addmm(b, x, w.t())). compiled is the formula written functionally,
    its results copy_()'d into the Out arguments, which Inductor fuses into the
    kernel's stores; not for mlp and swiglu_mlp (TORCH_LOGS=output_code, torch 2.15):
    there it calls ATen's addmm / mm per product, runs GELU or SiLU·up as one C++ loop
    over the hidden buffer, and the copy_ into y as a loop of its own (T x D floats,
    small next to the products)."""
    F = torch.nn.functional
    if kernel == "fma":
        def eager(a, b, c, o): torch.add(a * b, c, out=o)
        def comp(a, b, c, o): o.copy_(a * b + c)
    elif kernel == "axpby":
        def eager(x, y): y.mul_(BETA).add_(x, alpha=ALPHA)
        comp = eager
    elif kernel == "gelu":
        def eager(x, y): F.gelu(x, approximate="tanh", out=y)
        def comp(x, y): y.copy_(F.gelu(x, approximate="tanh"))
    elif kernel == "relu_where":
        zero = torch.zeros((), dtype=torch.float32)  # where(out=) takes no Python scalar

        def eager(x, y): torch.where(x > 0, x, zero, out=y)
        def comp(x, y): y.copy_(torch.where(x > 0, x, 0.0))
    elif kernel == "adam_step":
        def eager(p, m, v, g):
            m.mul_(B1).add_(g, alpha=1 - B1)
            v.mul_(B2).addcmul_(g, g, value=1 - B2)
            p.addcdiv_(m / BIAS1, (v / BIAS2).sqrt_().add_(ADAM_EPS), value=-LR)
        comp = eager
    elif kernel == "broadcast_bias":
        def eager(x, b, y): torch.add(x, b, out=y)
        def comp(x, b, y): y.copy_(x + b)
    elif kernel == "rmsnorm":
        def eager(x, w, y):
            torch.mul(x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS), w, out=y)
        def comp(x, w, y): y.copy_(x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w)
    elif kernel == "softmax":
        def eager(x, y): torch.softmax(x, -1, out=y)
        def comp(x, y): y.copy_(torch.softmax(x, -1))
    elif kernel == "layernorm":
        def eager(x, w, b):
            out, mean, rstd = torch.native_layer_norm(x, (x.shape[-1],), w, b, EPS)
            return out, mean.squeeze(-1), rstd.squeeze(-1)
        def comp(x, w, b, out, mean, rstd):
            mu = x.mean(-1, keepdim=True)
            d = x - mu
            rs = torch.rsqrt((d * d).mean(-1, keepdim=True) + EPS)
            out.copy_(d * rs * w + b)
            mean.copy_(mu.squeeze(-1))
            rstd.copy_(rs.squeeze(-1))
    elif kernel == "logsumexp":
        def eager(x, out): torch.logsumexp(x, -1, out=out)
        def comp(x, out): out.copy_(torch.logsumexp(x, -1))
    elif kernel == "add_rmsnorm":
        def eager(h, x, w, y):
            h.add_(x)
            torch.mul(h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + EPS), w, out=y)
        def comp(h, x, w, y):
            h.add_(x)
            y.copy_(h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + EPS) * w)

        # Inductor (torch 2.15) fails on the above from 128 rows on (KeyError in
        # try_outer_loop_fusion_with_local_buf, with two mutated inputs): the
        # fall-back returns y, a new tensor per call.
        def comp_returning_y(h, x, w):
            h.add_(x)
            return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + EPS) * w
        comp.fallback = comp_returning_y
    elif kernel == "column_mean":
        def eager(x, m): torch.mean(x, 0, out=m)
        def comp(x, m): m.copy_(x.mean(0))
    elif kernel == "sum_all":
        def eager(x): return torch.sum(x)
        comp = eager
    elif kernel == "mlp":
        def eager(x, w1, b1, w2, b2, y):
            h = F.gelu(F.linear(x, w1, b1), approximate="tanh")
            torch.addmm(b2, h, w2.t(), out=y)
        def comp(x, w1, b1, w2, b2, y):
            y.copy_(F.linear(F.gelu(F.linear(x, w1, b1), approximate="tanh"), w2, b2))
    elif kernel == "swiglu_mlp":
        def eager(x, w_gate, w_up, w_down, y):
            torch.mm(F.silu(F.linear(x, w_gate)) * F.linear(x, w_up), w_down.t(), out=y)
        def comp(x, w_gate, w_up, w_down, y):
            y.copy_(F.linear(F.silu(F.linear(x, w_gate)) * F.linear(x, w_up), w_down))
    elif kernel == "kv_cache_attention":
        # The cache prefix as views, the query heads grouped over the kv heads by
        # scaled_dot_product_attention's enable_gqa; one query row sees every key
        # of the prefix (no mask). sdpa has no out=: its [1, 32, 1, 64] result is
        # copied into o.
        def eager(q, k, v, key_cache, value_cache, pos, o):
            p = int(pos)
            key_cache[:, p:p + 1].copy_(k)
            value_cache[:, p:p + 1].copy_(v)
            r = F.scaled_dot_product_attention(
                q.view(1, KV_HEADS * KV_GROUP, 1, HEAD), key_cache[None, :, :p + 1],
                value_cache[None, :, :p + 1], enable_gqa=True)
            o.view(1, KV_HEADS * KV_GROUP, 1, HEAD).copy_(r)
        comp = eager
    elif kernel == "embedding":
        at = {"next": 0}

        def eager(table, perm, x):
            T = x.shape[0]
            if at["next"] + T > perm.shape[0]:
                at["next"] = 0
            torch.index_select(table, 0, perm[at["next"]:at["next"] + T], out=x)
            at["next"] += T
        comp = eager
    elif kernel == "q_projection":
        def eager(x, w, cos_t, sin_t, y): torch.mm(x, w.t(), out=y)
        comp = eager
    elif kernel == "q_projection_rope":
        # transformers' apply_rotary_pos_emb on the projection's heads, written
        # with the half-width tables (q * cos + rotate_half(q) * sin).
        def eager(x, w, cos_t, sin_t, y):
            T, D = y.shape
            hs = 2 * cos_t.shape[1]
            p = F.linear(x, w).view(T, D // hs, hs)
            a, b = p[..., :hs // 2], p[..., hs // 2:]
            c, s = cos_t[:, None, :], sin_t[:, None, :]
            torch.cat([a * c - b * s, b * c + a * s], -1, out=y.view(T, D // hs, hs))
        comp = eager
    else:
        raise ValueError(kernel)
    return eager, comp


# Argument order of each kernel's functions: In and InOut arrays; the Out arrays
# follow (all non-scalar ones for the compiled and JAX functions, those in
# TORCH_EAGER_RETURNS excepted for eager PyTorch).
ARGS = {"fma": ["a", "b", "c"], "axpby": ["x", "y"], "gelu": ["x"], "relu_where": ["x"],
        "adam_step": ["p", "m", "v", "g"], "broadcast_bias": ["x", "b"], "rmsnorm": ["x", "w"],
        "softmax": ["x"], "layernorm": ["x", "w", "b"], "logsumexp": ["x"],
        "add_rmsnorm": ["h", "x", "w"], "column_mean": ["x"], "sum_all": ["x"],
        "mlp": ["x", "w1", "b1", "w2", "b2"], "swiglu_mlp": ["x", "w_gate", "w_up", "w_down"],
        "kv_cache_attention": ["q", "k", "v", "key_cache", "value_cache", "pos"],
        "embedding": ["table", "perm"], "q_projection": ["x", "w", "cos_t", "sin_t"],
        "q_projection_rope": ["x", "w", "cos_t", "sin_t"]}
TORCH_EAGER_RETURNS = {"layernorm": ["out", "mean", "rstd"]}


def build_torch(kernel, shape, arrays, compiled=False):
    import numpy as np
    import torch
    t = {k: torch.from_numpy(v) for k, v in arrays.items()}  # shares the memory
    eager, comp = torch_functions(torch, kernel)
    returned = [n for n, k in OUTS[kernel] if k == "scalar"]
    if not compiled:
        returned += TORCH_EAGER_RETURNS.get(kernel, [])
    outs = {n: torch.from_numpy(v) for n, v in out_arrays(np, kernel, shape).items()
            if n not in returned}
    args = [t[n] for n in ARGS[kernel]] + [outs[n] for n, _ in OUTS[kernel] if n in outs]
    box = dict(outs)

    def compile_fresh(f):
        # A fresh code object per kernel x shape: its own Dynamo cache, so every
        # case is compiled for its static shape (torch.compile's default on a
        # first call) rather than recompiled as dynamic when a second shape of
        # the same function comes.
        import types
        return torch.compile(types.FunctionType(f.__code__.replace(), f.__globals__, f.__name__,
                                                f.__defaults__, f.__closure__))

    state = {"fn": compile_fresh(comp) if compiled else eager, "args": args, "returned": returned}

    def step():
        try:
            r = state["fn"](*state["args"])
        except Exception as e:  # noqa: BLE001 - a compile failure: the fall-back, if any
            fallback = getattr(comp, "fallback", None)
            if not compiled or fallback is None or state.get("fell_back"):
                raise
            state["fell_back"] = True
            # The fall-back returns the last Out array instead of writing it.
            last = [n for n, k in OUTS[kernel] if k != "scalar"][-1]
            NOTES.append(f"torch_compile {kernel}/{label(shape)}: {type(e).__name__}: "
                         f"{str(e).splitlines()[0][:160]}; compiled {fallback.__name__} instead "
                         f"({last} returned, a new tensor per call)")
            state["fn"] = compile_fresh(fallback)
            state["args"] = state["args"][:len(ARGS[kernel])]
            state["returned"] = state["returned"] + [last]
            r = state["fn"](*state["args"])
        if state["returned"]:
            box.update(zip(state["returned"], r if isinstance(r, tuple) else (r,)))

    return step, lambda: {**t, **{k: v.numpy() for k, v in box.items()}}


def build_jax(kernel, shape, arrays):
    """jax.jit of the kernel's formula in jax.numpy. InOut and Out arrays are
    donated (donate_argnums, with keep_unused=True so that an Out argument the
    function does not read is kept): XLA writes the results into their buffers, as
    pk writes into the caller's, instead of allocating new ones (a fresh 32 MiB
    output costs ~40 ms here). Every call ends with block_until_ready."""
    import numpy as np
    import jax
    import jax.numpy as jnp
    lax = jax.lax

    def rms(h, w):
        return h * lax.rsqrt(jnp.mean(h * h, -1, keepdims=True) + EPS) * w

    # f(*inputs, *donated outs) -> new values of (InOut arrays..., Out arrays...)
    if kernel == "fma":
        def f(a, b, c, o): return a * b + c
    elif kernel == "axpby":
        def f(x, y): return ALPHA * x + BETA * y
    elif kernel == "gelu":
        def f(x, y): return 0.5 * x * (1.0 + jnp.tanh(GELU_K * (x + 0.044715 * x * x * x)))
    elif kernel == "relu_where":
        def f(x, y): return jnp.where(x > 0, x, 0.0)
    elif kernel == "adam_step":
        def f(p, m, v, g):
            m = B1 * m + (1 - B1) * g
            v = B2 * v + (1 - B2) * g * g
            return p - LR * (m / BIAS1) / (jnp.sqrt(v / BIAS2) + ADAM_EPS), m, v
    elif kernel == "broadcast_bias":
        def f(x, b, y): return x + b
    elif kernel == "rmsnorm":
        def f(x, w, y): return rms(x, w)
    elif kernel == "softmax":
        def f(x, y):
            e = jnp.exp(x - jnp.max(x, -1, keepdims=True))
            return e / jnp.sum(e, -1, keepdims=True)
    elif kernel == "layernorm":
        def f(x, w, b, out, mean, rstd):
            mu = jnp.mean(x, -1, keepdims=True)
            d = x - mu
            rs = lax.rsqrt(jnp.mean(d * d, -1, keepdims=True) + EPS)
            return d * rs * w + b, mu[:, 0], rs[:, 0]
    elif kernel == "logsumexp":
        def f(x, out):
            m = jnp.max(x, -1, keepdims=True)
            return (jnp.log(jnp.sum(jnp.exp(x - m), -1, keepdims=True)) + m)[:, 0]
    elif kernel == "add_rmsnorm":
        def f(h, x, w, y):
            h = h + x
            return h, rms(h, w)
    elif kernel == "column_mean":
        def f(x, m): return jnp.mean(x, 0)
    elif kernel == "sum_all":
        def f(x): return jnp.sum(x)
    elif kernel == "mlp":  # jax.nn.gelu(approximate=True): the tanh form
        def f(x, w1, b1, w2, b2, y):
            return jax.nn.gelu(x @ w1.T + b1, approximate=True) @ w2.T + b2
    elif kernel == "swiglu_mlp":
        def f(x, w_gate, w_up, w_down, y):
            return (jax.nn.silu(x @ w_gate.T) * (x @ w_up.T)) @ w_down.T
    else:
        raise ValueError(kernel)

    ins = ARGS[kernel]
    inout = INOUT.get(kernel, [])
    outs = [n for n, k in OUTS[kernel] if k != "scalar"]
    results = inout + [n for n, _ in OUTS[kernel]]  # what f returns, in order
    params = ins + outs
    donate = tuple(i for i, n in enumerate(params) if n in inout or n in outs)
    jf = jax.jit(f, donate_argnums=donate, keep_unused=True)
    init = {**arrays, **out_arrays(np, kernel, shape)}
    state = {n: jax.device_put(init[n]) for n in params}
    jax.block_until_ready(list(state.values()))

    def step():
        r = jf(*[state[n] for n in params])
        r = r if isinstance(r, tuple) else (r,)
        jax.block_until_ready(r)
        state.update(zip(results, r))

    return step, lambda: {n: np.asarray(state[n]) for n in results}


NOTES = []  # what a worker reports besides its results (fall-backs taken)

BUILDERS = {
    "numpy": build_numpy,
    "numexpr": build_numexpr,
    "torch": build_torch,
    "torch_compile": lambda k, s, a: build_torch(k, s, a, compiled=True),
    "jax_jit": build_jax,
}


def applies(peer, kernel, skip_serial=False):
    """Whether the peer runs the kernel; skip_serial: a serial peer (NumPy) at more
    than one thread, where only its threaded kernels run (its others' 1-thread time
    stands for every thread count)."""
    if skip_serial and peer in SERIAL_PEERS and kernel not in THREADED_NUMPY_KERNELS:
        return False
    if kernel in VIEW_KERNELS:
        return peer in ("numpy", "torch")
    return peer != "numexpr" or kernel in NUMEXPR_KERNELS


# --- the worker: one peer at one thread count ----------------------------------------

def pin(threads):
    """Run on the first `threads` CPUs of the affinity mask (all of them if fewer)."""
    cpus = sorted(os.sched_getaffinity(0))
    if threads < len(cpus):
        os.sched_setaffinity(0, cpus[:threads])
    return sorted(os.sched_getaffinity(0))


def versions():
    """Installed versions of the peers' packages (read from their metadata: importing
    torch or jax in another peer's process would load their runtimes there)."""
    from importlib import metadata
    v = {}
    for pkg in ("numpy", "numexpr", "torch", "jax", "jaxlib"):
        try:
            v[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return v


def worker(peer, threads, args):
    """Times every kernel x shape of one peer at one thread count; returns a dict
    (results, errors, unavailable, versions, setup)."""
    cpus = pin(threads)
    res = {"peer": peer, "threads": threads, "cpus": cpus, "results": [], "errors": [],
           "unavailable": None, "setup": {}}
    try:
        for mod in PEER_MODULES[peer]:
            __import__(mod)
    except Exception as e:  # noqa: BLE001
        res["unavailable"] = f"import {PEER_MODULES[peer][-1]} failed: {type(e).__name__}: {e}"
        res["versions"] = versions()
        return res
    import numpy as np
    try:  # the SIMD code NumPy dispatches to at run time (pk-bench: SSE2 unless native)
        from numpy._core import _multiarray_umath as um
        res["setup"]["numpy_simd"] = [d for d in um.__cpu_dispatch__ if um.__cpu_features__.get(d)]
    except Exception:  # noqa: BLE001 - older NumPy: not recorded
        pass
    if peer == "numpy":  # the BLAS of its matmul (mlp, swiglu_mlp): OPENBLAS_NUM_THREADS
        try:
            blas = np.__config__.CONFIG["Build Dependencies"]["blas"]
            res["setup"]["numpy_blas"] = f"{blas['name']} {blas.get('version', '')}".strip()
        except Exception:  # noqa: BLE001 - not recorded
            pass
    if peer == "numexpr":
        import numexpr
        numexpr.set_num_threads(threads)
        res["setup"]["numexpr_threads"] = threads
    if peer.startswith("torch"):
        import torch
        torch.set_num_threads(threads)
        res["setup"]["torch_threads"] = torch.get_num_threads()
        res["setup"]["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
        if peer == "torch_compile":
            try:
                from torch._inductor import cpu_vec_isa
                res["setup"]["inductor_vec_isa"] = str(cpu_vec_isa.pick_vec_isa())
            except Exception:  # noqa: BLE001 - not recorded
                pass
    if peer == "jax_jit":
        import jax
        jax.config.update("jax_platforms", "cpu")
        res["setup"]["jax_devices"] = str(jax.devices())
        res["setup"]["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "")
    res["versions"] = versions()

    build = BUILDERS[peer]
    cases = []
    failures = 0
    for ki, (kernel, shapes) in enumerate(KERNELS):
        if not wanted(args.only, kernel) or not applies(peer, kernel, args.worker_skip_serial):
            continue
        for si, shape in enumerate(shapes):
            if not wanted(args.only, kernel, shape):
                continue
            name = f"{kernel}/{label(shape)}"
            try:
                arrays = make_inputs(np, kernel, shape, seed=1000 * ki + si)
                ref = reference(np, kernel, arrays)
                step, result = build(kernel, shape, arrays)
                del arrays
                t0 = time.perf_counter()
                step()
                first = time.perf_counter() - t0
                err = compare(np, kernel, ref, result())
                del ref
                if err:
                    raise RuntimeError(err)
                # Warm-up: at least 2 calls and 0.05 s; its mean calls per repetition.
                n_warm, t0 = 0, time.perf_counter()
                while True:
                    step()
                    n_warm += 1
                    el = time.perf_counter() - t0
                    if n_warm >= 2 and el >= min(0.05, args.min_time):
                        break
                per_call = el / n_warm
                iters = max(1, math.ceil(args.min_time / per_call))
                cases.append({"name": name, "step": step, "iters": iters, "first": first,
                              "wall": [], "cpu": [], "counts": counts(kernel, shape)})
                failures = 0
                print(f"peers: {peer} t={threads} {name}: first call {first * 1e3:.1f} ms, "
                      f"{per_call * 1e6:.1f} us/call, {iters} calls/repetition",
                      file=sys.stderr, flush=True)
            except Exception as e:  # noqa: BLE001 - one failed case is reported, not fatal
                msg = f"{type(e).__name__}: {e}".strip().splitlines()
                msg = " ".join(msg[:3])[:400]
                res["errors"].append({"case": name, "reason": msg})
                print(f"peers: {peer} t={threads} {name}: FAILED: {msg}", file=sys.stderr, flush=True)
                if args.verbose:
                    traceback.print_exc()
                failures += 1
                if failures >= 2 and not cases:
                    res["unavailable"] = f"the first cases failed: {msg}"
                    return res
            gc.collect()

    rng = random.Random(args.seed + 7919 * threads + PEERS.index(peer))
    for rep in range(args.reps):
        order = list(cases)
        rng.shuffle(order)
        for c in order:
            step, n = c["step"], c["iters"]
            gc.collect()
            gc.disable()
            try:
                w0, c0 = time.perf_counter(), time.process_time()
                for _ in range(n):
                    step()
                w1, c1 = time.perf_counter(), time.process_time()
            finally:
                gc.enable()
            c["wall"].append((w1 - w0) / n)
            c["cpu"].append((c1 - c0) / n)
    res["notes"] = NOTES
    for c in cases:
        res["results"].append({
            "case": c["name"], "iterations": c["iters"], "first_call_s": c["first"],
            "real_time": statistics.median(c["wall"]), "cpu_time": statistics.median(c["cpu"]),
            "reps": c["wall"], "counts": c["counts"],
        })
    return res


# --- the driver ----------------------------------------------------------------------

def worker_env(peer, threads):
    env = dict(os.environ)
    omp = os.environ.get("PK_BENCH_OMP_ENV", "OMP_PROC_BIND=close;OMP_PLACES=cores")
    for item in omp.split(";"):
        if "=" in item:
            k, v = item.split("=", 1)
            env[k.strip()] = v.strip()
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                "NUMEXPR_NUM_THREADS", "NUMEXPR_MAX_THREADS"):
        env[var] = str(threads)
    env.setdefault("JAX_PLATFORMS", "cpu")
    if peer == "jax_jit" and threads == 1:
        flags = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + flags).strip()
    return env


def install_reason(logs, peer):
    """pip's reasons, from run.sh's logs, for the packages the peer needs."""
    if not logs:
        return ""
    reasons = []
    for mod in PEER_MODULES[peer]:
        f = os.path.join(logs, f"{mod}.failed")
        if os.path.exists(f):
            with open(f) as fh:
                line = fh.read().strip()
            if line:
                reasons.append(f"pip install {mod} failed: {line}")
    return "; ".join(reasons)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def run_all(args):
    threads = [int(t) for t in args.threads.split(",") if t.strip()]
    peers = [p for p in args.peers.split(",") if p]
    started = datetime.datetime.now(datetime.timezone.utc)
    load_start = os.getloadavg()
    benchmarks, errors, unavailable, vers, setups, notes = [], [], {}, {}, {}, []
    wall0 = time.perf_counter()
    for t in threads:
        for peer in peers:
            # A serial peer runs at 1 thread (its time stands for every count), and at
            # the others only its threaded kernels, if any is selected.
            skip_serial = peer in SERIAL_PEERS and t != threads[0] and threads[0] == 1
            if skip_serial and not any(applies(peer, k, True) and wanted(args.only, k)
                                       for k, _ in KERNELS):
                continue
            print(f"peers: --- {peer}, {t} thread{'s' if t > 1 else ''}", file=sys.stderr, flush=True)
            with tempfile.NamedTemporaryFile("r", suffix=".json", delete=False) as tf:
                out_path = tf.name
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", peer, "--worker-threads",
                   str(t), "--worker-out", out_path, "--reps", str(args.reps),
                   "--min-time", str(args.min_time), "--seed", str(args.seed)]
            if args.only:
                cmd += ["--only", ",".join(args.only)]
            if skip_serial:
                cmd.append("--worker-skip-serial")
            if args.verbose:
                cmd.append("--verbose")
            t0 = time.perf_counter()
            try:
                proc = subprocess.run(cmd, env=worker_env(peer, t), timeout=args.timeout)
                rc = proc.returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
            took = time.perf_counter() - t0
            res = None
            try:
                with open(out_path) as f:
                    res = json.load(f)
            except (OSError, ValueError):
                pass
            finally:
                try:
                    os.unlink(out_path)
                except OSError:
                    pass
            if res is None:
                why = (f"timed out after {args.timeout} s" if rc == "timeout"
                       else f"the worker process exited with status {rc}")
                unavailable.setdefault(peer, why)
                print(f"peers: {peer} at {t} threads: {why}", file=sys.stderr, flush=True)
                continue
            vers.update(res.get("versions", {}))
            setups[f"{peer}/threads:{t}"] = {**res.get("setup", {}), "cpus": res.get("cpus"),
                                             "seconds": round(took, 1)}
            if res.get("unavailable"):
                reason = res["unavailable"]
                pip_reason = install_reason(args.install_logs, peer)
                if pip_reason and reason.startswith("import"):
                    reason = pip_reason
                unavailable.setdefault(peer, reason)
                print(f"peers: {peer} not available: {reason}", file=sys.stderr, flush=True)
            for e in res.get("errors", []):
                errors.append({"peer": peer, "threads": t, **e})
            notes.extend(f"{n} (at {t} thread{'s' if t > 1 else ''})" for n in res.get("notes", []))
            for r in res.get("results", []):
                name = f"{r['case']}/{peer}/threads:{t}"
                b = {
                    "name": name, "run_name": name, "run_type": "aggregate",
                    "aggregate_name": "median", "repetitions": len(r["reps"]),
                    "iterations": r["iterations"], "real_time": r["real_time"],
                    "cpu_time": r["cpu_time"], "time_unit": "s",
                    "pk_first_call_s": r["first_call_s"], "pk_repetition_times": r["reps"],
                }
                if r.get("counts"):  # pk-bench's counters: per-call figures / median time
                    nbytes, nflops = r["counts"]
                    b["bytes_per_second"] = nbytes / r["real_time"]
                    b["flops"] = nflops / r["real_time"]
                benchmarks.append(b)
    context = {
        "date": started.isoformat(timespec="seconds"),
        "host_name": platform.node(),
        "num_cpus": os.cpu_count(),
        "pk_cpu_model": cpu_model(),
        "pk_peers": {
            "python": platform.python_version(),
            "versions": vers,
            "threads": threads,
            "peers": peers,
            "repetitions": args.reps,
            "min_time_s": args.min_time,
            "omp_env": os.environ.get("PK_BENCH_OMP_ENV", "OMP_PROC_BIND=close;OMP_PLACES=cores"),
            "xla_flags_1_thread": worker_env("jax_jit", 1).get("XLA_FLAGS", ""),
            "setup": setups,
            "unavailable": unavailable,
            "errors": errors,
            "notes": notes,
            "seconds": round(time.perf_counter() - wall0, 1),
            # 1-minute load average at the start and the end: other processes' load.
            "loadavg": [round(load_start[0], 2), round(os.getloadavg()[0], 2)],
        },
    }
    return {"context": context, "benchmarks": benchmarks}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results here (default: stdout)")
    ap.add_argument("--threads", default=os.environ.get("PK_BENCH_THREADS", "1,2"),
                    help="thread counts (default $PK_BENCH_THREADS or 1,2)")
    ap.add_argument("--peers", default=",".join(PEERS), help=f"subset of {','.join(PEERS)}")
    ap.add_argument("--only", type=lambda s: [k for k in s.split(",") if k],
                    help="only these kernels or kernel/shape cases (comma-separated), "
                         "e.g. softmax,mlp/1x768x3072")
    ap.add_argument("--reps", type=int, default=5, help="repetitions; the median is reported")
    ap.add_argument("--min-time", type=float, default=0.1, help="seconds per repetition (at least)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the interleaving order")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per (peer, threads) process")
    ap.add_argument("--install-logs", help="run.sh's pip logs (why a package is missing)")
    ap.add_argument("--verbose", action="store_true", help="tracebacks of failed cases")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--worker-threads", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    ap.add_argument("--worker-skip-serial", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        res = worker(args.worker, args.worker_threads, args)
        with open(args.worker_out, "w") as f:
            json.dump(res, f)
        return
    bad = [p for p in args.peers.split(",") if p and p not in PEERS]
    if bad:
        ap.error(f"unknown peers {bad}; known: {', '.join(PEERS)}")
    data = run_all(args)
    text = json.dumps(data, indent=1)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            f.write(text + "\n")
        print(f"peers: {len(data['benchmarks'])} results in {args.json} "
              f"({data['context']['pk_peers']['seconds']} s)", file=sys.stderr)
    else:
        sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
