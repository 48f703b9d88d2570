#!/usr/bin/env python3
"""Markdown table of a pk-bench run.

    table.py bench.json [--peers peers.json] [--cpu-time] [-o bench.md]

Reads Google Benchmark's JSON output (--benchmark_out=... --benchmark_out_format=json)
of pk-bench. Benchmark names are <kernel>/<shape>/<peer>/threads:<t>[/real_time]; the
STREAM triad is stream/<N>/triad/threads:<t>. With --benchmark_repetitions the "median"
aggregate is used, otherwise the median of the iteration runs.

One row per kernel x shape x threads. Columns (bench/README.md says the same):
  pk time       median wall time of one call of the compiled kernel
  pk GB/s       minimum bytes (every input read once, every output written once) / pk time
  hand/eigen/eager ÷ pk
                t_peer / t_pk: how many times faster pk is than that peer
                (> 1: pk faster, < 1: pk slower). Eigen and eager are serial: their
                1-thread time is used at every thread count. "—": not run at this
                shape (eager only at small shapes); "n/a": peer not built.
  % STREAM      pk GB/s / STREAM triad GB/s at the same thread count
A † marks a measurement whose CPU time was under 80% of its wall time: the thread waited
for a core (another process), so the figure is noise.

With --peers (the JSON of bench/peers/peers.py, `bash bench/run.sh --peers`), the same
table gets the Python peers' columns, NumPy / numexpr / torch / torch.compile / jax.jit
÷ pk (NumPy is serial: its 1-thread time at every thread count; "—": not run for this
kernel, e.g. numexpr on reductions; "n/a": the package is not available or the case
failed, the reason listed under the table), the peers' versions and settings above it,
and, under it, the issue's targets for the row kernels at [2048, 4096] and [4096, 768]:
pk >= 3x NumPy, >= 1.2x torch.compile and jax.jit. The whole-program table (below) gets
pk ÷ NumPy / torch / torch.compile / jax.jit too: t_peer / t_pk at the same thread count
(NumPy's matmul is threaded by its BLAS: these kernels' NumPy rows are its own at every
thread count).

The kernels whose benchmarks carry a "flops" counter (the matmul kernels of
kernels_matmul.cpp: matmul, linear_bias_gelu, batched_matmul, batched_matmul_shared) get
a table of their own below the first: pk time, then GFLOP/s (2*M*N*K [*B] / median wall
time) of pk, naive, Eigen, OpenBLAS and eager, and pk ÷ OpenBLAS (t_OpenBLAS / t_pk,
> 1: pk faster). A run of only those (--benchmark_filter='matmul|linear_bias_gelu')
prints only that table.

The attention kernel (kernels_attention.cpp: attention_causal, shape H x T x d) also
carries "flops" and gets a third table: pk time, GFLOP/s (2·H·T²·d, the causal half of
q kT and p v, / median wall time) of pk, hand (the unfused three-pass loops over an
[H, T, T] score buffer), online (a hand-written online softmax) and eager, and
pk ÷ hand, pk ÷ online (t_peer / t_pk, > 1: pk faster). --benchmark_filter=attention
prints only that table.

--cpu-time: the 1-thread rows only, every time (pk's, its peers', the Python peers') the
CPU time of the measurement instead of its wall time. On a machine where other processes
take the cores, this leaves out the time spent waiting for a core (not the cache and
memory bandwidth they take): a load-robust estimate for one thread. (pk-bench's CPU time
is its calling thread's; a Python peer's is its process's, which runs on one CPU at one
thread.) No such estimate exists for several threads.
"""

import argparse
import json
import statistics
import sys

SERIAL_PEERS = ("eigen", "eager", "numpy")
PEER_COLUMNS = (("hand", "hand ÷ pk"), ("eigen", "Eigen ÷ pk"), ("eager", "eager ÷ pk"))
PYTHON_COLUMNS = (("numpy", "NumPy ÷ pk"), ("numexpr", "numexpr ÷ pk"), ("torch", "torch ÷ pk"),
                  ("torch_compile", "torch.compile ÷ pk"), ("jax_jit", "jax.jit ÷ pk"))
# The targets (bench/README.md, "Python peers"): on every row kernel at
# these shapes, pk at least this many times faster than the peer.
TARGET_KERNELS = ("rmsnorm", "softmax", "layernorm", "logsumexp", "add_rmsnorm")
TARGET_SHAPES = ("2048x4096", "4096x768")
TARGETS = (("numpy", "NumPy", 3.0), ("torch_compile", "torch.compile", 1.2), ("jax_jit", "jax.jit", 1.2))
PREEMPTED = "†"
UNIT_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def parse_name(run_name):
    """'fma/1M/pk/threads:2/real_time' -> ('fma', '1M', 'pk', 2)."""
    parts = run_name.split("/")
    if len(parts) < 3:
        return None
    threads = 1
    for p in parts[3:]:
        if p.startswith("threads:"):
            threads = int(p.split(":", 1)[1])
    return parts[0], parts[1], parts[2], threads


def load(path):
    with open(path) as f:
        data = json.load(f)
    medians, iterations, order = {}, {}, []
    for b in data.get("benchmarks", []):
        if b.get("error_occurred"):
            continue
        key = parse_name(b.get("run_name", b["name"]))
        if key is None:
            continue
        if key not in order:
            order.append(key)
        t = b["real_time"] * UNIT_S[b.get("time_unit", "ns")]
        busy = b["cpu_time"] / b["real_time"] if b.get("real_time") else 1.0
        bps = b.get("bytes_per_second")
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                medians[key] = (t, bps, busy)
        else:
            iterations.setdefault(key, []).append((t, bps, busy))
    results = dict(medians)
    for key, runs in iterations.items():
        if key not in results:
            results[key] = tuple(statistics.median(r[i] for r in runs) for i in range(3))
    return data.get("context", {}), results, order


def load_flops(path):
    """{(kernel, shape): floating-point operations per call} of the benchmarks with a
    "flops" counter (the matmul kernels: a rate, flop/s, times the time of one call)."""
    with open(path) as f:
        data = json.load(f)
    flops = {}
    for b in data.get("benchmarks", []):
        if b.get("error_occurred") or not b.get("flops") or not b.get("real_time"):
            continue
        # An iteration run gives it exactly (rate = flop / its time); of the aggregates
        # only the median (stddev and cv of a rate times those of a time mean nothing).
        aggregate = b.get("run_type") == "aggregate"
        if aggregate and b.get("aggregate_name") != "median":
            continue
        key = parse_name(b.get("run_name", b["name"]))
        if key is None or (aggregate and key[:2] in flops):
            continue
        flops[key[:2]] = b["flops"] * b["real_time"] * UNIT_S[b.get("time_unit", "ns")]
    return flops


def fmt_time(s):
    if s >= 1e-1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def fmt_ratio(r):
    return f"{r:.2f}" if r < 10 else f"{r:.0f}" if r < 1000 else f"{r:.3g}"


def peer_cell(results, k, shape, peer, th):
    """The time of a peer for a row (its 1-thread time for a serial peer), or None."""
    got = results.get((k, shape, peer, th))
    if got is None and peer in SERIAL_PEERS:
        got = results.get((k, shape, peer, 1))
    return got


def cpu_time_view(results):
    """The 1-thread results with CPU time in place of wall time (--cpu-time)."""
    view = {}
    for key, (t, bps, busy) in results.items():
        if key[3] == 1:
            view[key] = (t * busy, bps / busy if bps and busy else bps, 1.0)
    return view


def render(context, results, order, peers=None, cpu_time=False, flops=None):
    """peers: (context of bench/peers/peers.py's JSON, its results) or None.
    flops: load_flops() of the run: those kernels go into the matmul table."""
    out = []
    flops = flops or {}
    matmul_kernels = {k for (k, _) in flops}
    columns = PEER_COLUMNS + (PYTHON_COLUMNS if peers else ())
    pctx = peers[0].get("pk_peers", {}) if peers else {}
    unavailable = pctx.get("unavailable", {})
    failed = {(e["case"], e["peer"], e["threads"]): e["reason"] for e in pctx.get("errors", [])}
    stream = {th: (bps, PREEMPTED if busy < 0.8 else "")
              for (k, _, p, th), (_, bps, busy) in results.items() if k == "stream" and p == "triad"}
    stream_n = next((s for (k, s, _, _) in order if k == "stream"), "?")

    caches = context.get("caches", [])
    l3 = [c for c in caches if c.get("level") == 3]
    l3s = f"{l3[0]['size'] // 1024 // 1024} MiB" if l3 else "?"
    out.append(f"- date: {context.get('date', '?')}")
    out.append(f"- machine: {context.get('pk_cpu_model', '?')}, {context.get('num_cpus', '?')} CPUs, "
               f"L3 {l3s}; host {context.get('host_name', '?')}")
    out.append(f"- build: g++ {context.get('pk_compiler', '?')}, -O3, -march=native "
               f"{context.get('pk_native', '?')}; Eigen {context.get('pk_eigen', 'n/a')}")
    omp = ", ".join(f"{v}={context[f'pk_env_{v}']}" for v in ("OMP_PROC_BIND", "OMP_PLACES", "OMP_WAIT_POLICY")
                    if f"pk_env_{v}" in context)
    out.append(f"- OpenMP: {omp or 'default environment'}")
    if stream:
        s = ", ".join(f"{th} thread{'s' if th > 1 else ''} {bps / 1e9:.1f} GB/s{mark}"
                      for th, (bps, mark) in sorted(stream.items()))
        out.append(f"- STREAM triad ({stream_n} floats, 12 B/element): {s}")
    out.append("- ratios are t_peer / t_pk: > 1 means pk is faster; Eigen and eager are serial "
               "(their 1-thread time is used at every thread count); — not run at this shape")
    out.append(f"- {PREEMPTED}: the calling thread was on a CPU for under 80% of the median wall "
               "time (another process took a core): that measurement is noise")
    if cpu_time:
        out.append("- --cpu-time: 1-thread rows only; every time is the measurement's CPU time, not "
                   "its wall time (time waiting for a core left out), so no † marks")
    if peers:
        v = pctx.get("versions", {})
        vs = ", ".join(f"{m} {v[m]}" for m in ("numpy", "numexpr", "torch", "jax", "jaxlib") if m in v)
        out.append(f"- Python peers (bench/peers/peers.py): {peers[0].get('date', '?')}, Python "
                   f"{pctx.get('python', '?')}; {vs or 'no package'}; median of "
                   f"{pctx.get('repetitions', '?')} repetitions of >= {pctx.get('min_time_s', '?')} s "
                   f"({pctx.get('seconds', '?')} s in all, load average {pctx.get('loadavg', '?')} at "
                   "start and end); "
                   f"threads {pctx.get('threads', '?')} (process pinned to that many CPUs, "
                   "OMP/MKL/OPENBLAS/NUMEXPR_NUM_THREADS, torch.set_num_threads; jax at 1 thread: "
                   f"XLA_FLAGS=\"{pctx.get('xla_flags_1_thread', '')}\"); NumPy is serial (its 1-thread "
                   "time at every thread count) but for its matmul (mlp, swiglu_mlp: its BLAS's "
                   "threads); numexpr: elementwise kernels only (— elsewhere); "
                   f"{PREEMPTED} on a peer: its process CPU time was under 80% of its wall time")
        isa = {}
        for setup in pctx.get("setup", {}).values():
            for key, what in (("numpy_simd", "NumPy dispatches to"), ("torch_cpu_capability", "ATen"),
                              ("inductor_vec_isa", "Inductor")):
                if key in setup:
                    v = setup[key]
                    isa[what] = " ".join(v) if isinstance(v, list) else str(v)
        if isa:
            out.append("- the peers' SIMD, chosen at run time (pk-bench's is its build's, above): "
                       + "; ".join(f"{w} {v}" for w, v in isa.items())
                       + "; XLA compiles for the host CPU")
    out.append("")

    cols = ["kernel", "shape", "threads", "pk time", "pk GB/s"] + [c for _, c in columns] + ["% STREAM"]

    peers_of = {}
    for (k, _, p, _) in results:
        peers_of.setdefault(k, set()).add(p)
    losses = []
    cases = [c for c in context.get("pk_cases", "").split(",") if c]
    for (k, shape, _, _) in order:
        if f"{k}/{shape}" not in cases:
            cases.append(f"{k}/{shape}")
    rows = [key for key in results if key[0] != "stream" and key[2] == "pk"]
    rows.sort(key=lambda key: (cases.index(f"{key[0]}/{key[1]}"), key[3]))
    attention_rows = [key for key in rows if key[0] in matmul_kernels and key[0] in ATTENTION_KERNELS]
    program_rows = [key for key in rows if key[0] in PROGRAM_KERNELS]
    matmul_rows = [key for key in rows if key[0] in matmul_kernels and key[0] not in ATTENTION_KERNELS
                   and key[0] not in PROGRAM_KERNELS]
    decode_rows = [key for key in rows if key[0] in (DECODE_KERNEL, BF16_KERNEL)]
    rows = [key for key in rows if key[0] not in matmul_kernels and key[0] not in DECODE_KERNELS
            and key[0] not in PROGRAM_KERNELS]
    if rows:
        out.append("| " + " | ".join(cols) + " |")
        out.append("|" + "|".join(["---"] * 3 + ["---:"] * (len(cols) - 3)) + "|")
    for (k, shape, _, th) in rows:
        t_pk, bps_pk, busy_pk = results[(k, shape, "pk", th)]
        mark_pk = PREEMPTED if busy_pk < 0.8 else ""
        cells = [k, shape, str(th), fmt_time(t_pk) + mark_pk, f"{bps_pk / 1e9:.1f}{mark_pk}"]
        for peer, _ in columns:
            got = peer_cell(results, k, shape, peer, th)
            if got is None:
                if any(p == peer for p, _ in PYTHON_COLUMNS):
                    fail = failed.get((f"{k}/{shape}", peer, th)) or failed.get((f"{k}/{shape}", peer, 1))
                    cells.append("n/a" if peer in unavailable or fail else "—")
                else:
                    cells.append("—" if peer in peers_of.get(k, ()) else "n/a")
                continue
            r = got[0] / t_pk
            noisy = busy_pk < 0.8 or got[2] < 0.8
            cells.append(fmt_ratio(r) + (PREEMPTED if noisy else ""))
            if peer != "eager" and r < 0.9:
                losses.append(f"{k} {shape} at {th} thread{'s' if th > 1 else ''}: "
                              f"{peer} is {1 / r:.2f}x faster than pk"
                              + (f" ({PREEMPTED}: noise)" if noisy else ""))
        cells.append(f"{100 * bps_pk / stream[th][0]:.0f}%{mark_pk or stream[th][1]}"
                     if th in stream else "n/a")
        out.append("| " + " | ".join(cells) + " |")
    if losses:
        out.append("")
        out.append("pk slower than a peer by more than 10%:")
        out.extend(f"- {l}" for l in losses)
    if matmul_rows:
        out.extend(render_matmul(context, results, matmul_rows, flops, bool(rows)))
    if attention_rows:
        out.extend(render_attention(results, attention_rows, flops, bool(rows or matmul_rows)))
    if decode_rows:
        out.extend(render_decode(results, decode_rows, bool(rows or matmul_rows or attention_rows)))
    if program_rows:
        out.extend(render_programs(results, program_rows, flops,
                                   bool(rows or matmul_rows or attention_rows or decode_rows),
                                   (unavailable, failed) if peers else None))
    if peers:
        if unavailable or failed:
            out.append("")
            out.append("Python peers not available (n/a):")
            out.extend(f"- {p}: {why}" for p, why in unavailable.items())
            out.extend(f"- {p} {c} at {t} thread{'s' if t > 1 else ''}: {why}"
                       for (c, p, t), why in failed.items())
        if pctx.get("notes"):
            out.append("")
            out.append("Python peers' notes (fall-backs taken):")
            out.extend(f"- {n}" for n in pctx["notes"])
        out.extend(render_targets(results, rows))
    return "\n".join(out) + "\n"


PROGRAM_KERNELS = ("mlp", "swiglu_mlp", "rmsnorm_linear")
PROGRAM_PEERS = (("hand", "separate"), ("openblas", "OpenBLAS"))
# The Python peers of these kernels (bench/peers/peers.py; numexpr has no matmul).
PROGRAM_PYTHON_PEERS = (("numpy", "NumPy"), ("torch", "torch"), ("torch_compile", "torch.compile"),
                        ("jax_jit", "jax.jit"))


def render_programs(results, rows, flops, after_table, python=None):
    """The whole-program table (kernels_programs.cpp): GFLOP/s of pk's one kernel, of the
    same products as separate pk kernels, of OpenBLAS with loops; pk ÷ separate, pk ÷
    OpenBLAS. python: (unavailable, failed) of the Python peers' JSON, or None; when
    given, also pk ÷ NumPy, torch, torch.compile and jax.jit, each peer's own time at the
    row's thread count (no serial fall-back: NumPy's BLAS is threaded)."""
    out = [""] if after_table else []
    out.append("Whole-program kernels (shape T x D x F: T tokens, D -> F -> D; GFLOP/s = "
               "4·T·D·F (mlp), 6·T·D·F (swiglu_mlp) or 2·T·D·F (rmsnorm_linear: RMSNorm, then D -> F) "
               "/ median wall time; separate = the same "
               "products as separate pk kernels with caller-allocated buffers (rmsnorm_linear: "
               "RMSNorm into a buffer, then the product); OpenBLAS = "
               "cblas_sgemm per product, bias and activation as OpenMP loops)")
    out.append("")
    pypeers = PROGRAM_PYTHON_PEERS if python else ()
    cols = (["kernel", "shape", "threads", "pk time", "pk GFLOP/s"]
            + [f"{name} GFLOP/s" for _, name in PROGRAM_PEERS] + ["pk ÷ separate", "pk ÷ OpenBLAS"]
            + [f"pk ÷ {name}" for _, name in pypeers])
    out.append("| " + " | ".join(cols) + " |")
    out.append("|" + "|".join(["---"] * 3 + ["---:"] * (len(cols) - 3)) + "|")
    for (k, shape, _, th) in rows:
        f = flops.get((k, shape))
        t_pk, _, busy_pk = results[(k, shape, "pk", th)]
        mark_pk = PREEMPTED if busy_pk < 0.8 else ""
        gf = (lambda t: f"{f / t / 1e9:.3g}") if f else (lambda t: "?")
        cells = [k, shape, str(th), fmt_time(t_pk) + mark_pk, gf(t_pk) + mark_pk]
        for peer, _ in PROGRAM_PEERS:
            got = results.get((k, shape, peer, th))
            cells.append("n/a" if got is None else gf(got[0]))
        for peer, _ in PROGRAM_PEERS:
            got = results.get((k, shape, peer, th))
            cells.append("n/a" if got is None else fmt_ratio(got[0] / t_pk))
        for peer, _ in pypeers:
            got = results.get((k, shape, peer, th))
            if got is None:
                unavailable, failed = python
                cells.append("n/a" if peer in unavailable or (f"{k}/{shape}", peer, th) in failed
                             else "—")
            else:
                noisy = busy_pk < 0.8 or got[2] < 0.8
                cells.append(fmt_ratio(got[0] / t_pk) + (PREEMPTED if noisy else ""))
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    note = "pk ÷ X = t_X / t_pk: > 1 means pk's one kernel is faster."
    if pypeers:
        note += (" pk ÷ NumPy, torch, torch.compile, jax.jit: the Python peers "
                 "(bench/peers/peers.py) at the same thread count; —: not run (e.g. not in "
                 "--only); n/a: not available or failed, the reason listed below.")
    out.append(note)
    return out


DECODE_KERNEL, READ_KERNEL = "linear_decode", "weights_read"
BF16_KERNEL = "linear_decode_bf16"
DECODE_KERNELS = (DECODE_KERNEL, READ_KERNEL, BF16_KERNEL)
DECODE_PEERS = (("naive", "naive"), ("openblas", "OpenBLAS"))


def render_decode(results, rows, after_table):
    """The decode table (kernels_decode.cpp): GB/s of weights of pk and its peers, the
    read bandwidth at the same shape and threads, pk ÷ read and pk ÷ OpenBLAS."""
    out = [""] if after_table else []
    out.append("Decode products (linear_decode, y = x wᵀ, shape M x N x K: M rows, w [N, K] "
               "rotating through a pool of 4x the last-level cache; GB/s = bytes of w, x and y / "
               "median wall time; GFLOP/s = 2·M·N·K / time; read = weights_read, a loop summing "
               "the same weights, same threads)")
    out.append("")
    cols = (["shape", "threads", "pk time", "pk GB/s", "pk GFLOP/s"]
            + [f"{name} GB/s" for _, name in DECODE_PEERS] + ["read GB/s", "pk ÷ read", "pk ÷ OpenBLAS"])
    out.append("| " + " | ".join(cols) + " |")
    out.append("|" + "|".join(["---"] * 2 + ["---:"] * (len(cols) - 2)) + "|")
    for (k, shape, _, th) in rows:
        if k != DECODE_KERNEL:
            continue
        t_pk, bps_pk, busy_pk = results[(k, shape, "pk", th)]
        mark = PREEMPTED if busy_pk < 0.8 else ""
        m, n, kk = (int(v) for v in shape.split("x"))
        cells = [shape, str(th), fmt_time(t_pk) + mark, f"{bps_pk / 1e9:.1f}{mark}",
                 f"{2 * m * n * kk / t_pk / 1e9:.3g}{mark}"]
        for peer, _ in DECODE_PEERS:
            got = results.get((k, shape, peer, th))
            cells.append("n/a" if got is None else
                         f"{got[1] / 1e9:.1f}" + (PREEMPTED if got[2] < 0.8 and not
                                                  (peer == "openblas" and th > 1) else ""))
        read = results.get((READ_KERNEL, shape, "pk", th))
        cells.append("n/a" if read is None else f"{read[1] / 1e9:.1f}" + (PREEMPTED if read[2] < 0.8 else ""))
        cells.append("n/a" if read is None else fmt_ratio(bps_pk / read[1]))
        blas = results.get((k, shape, "openblas", th))
        cells.append("n/a" if blas is None else fmt_ratio(blas[0] / t_pk))
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    out.append("pk ÷ read = pk GB/s / read GB/s (the issue's target: >= 0.9); pk ÷ OpenBLAS = "
               "t_OpenBLAS / t_pk (> 1: pk faster).")
    bf16 = [key for key in rows if key[0] == BF16_KERNEL]
    if bf16:
        out.append("")
        out.append("The same products with bfloat16 weights (linear_decode_bf16; GB/s = bytes of "
                   "the bf16 w, x and y / median wall time; ÷ fp32 = t_fp32 / t_bf16, pk's "
                   "linear_decode at the same shape and threads)")
        out.append("")
        cols = ["shape", "threads", "pk time", "pk GB/s", "naive GB/s", "fp32 pk time",
                "÷ fp32"]
        out.append("| " + " | ".join(cols) + " |")
        out.append("|" + "|".join(["---"] * 2 + ["---:"] * (len(cols) - 2)) + "|")
        for (k, shape, _, th) in bf16:
            t_pk, bps_pk, busy_pk = results[(k, shape, "pk", th)]
            mark = PREEMPTED if busy_pk < 0.8 else ""
            naive = results.get((k, shape, "naive", th))
            fp32 = results.get((DECODE_KERNEL, shape, "pk", th))
            out.append("| " + " | ".join([
                shape, str(th), fmt_time(t_pk) + mark, f"{bps_pk / 1e9:.1f}{mark}",
                "n/a" if naive is None else f"{naive[1] / 1e9:.1f}",
                "n/a" if fp32 is None else fmt_time(fp32[0]),
                "n/a" if fp32 is None else fmt_ratio(fp32[0] / t_pk)]) + " |")
        out.append("")
        out.append("÷ fp32: the issue's target for bfloat16 weights is >= 1.8.")
    return out


ATTENTION_KERNELS = ("attention_causal",)
ATTENTION_PEERS = (("hand", "hand (3-pass)"), ("online", "online"), ("eager", "eager"))


def render_attention(results, rows, flops, after_table):
    """The attention table: GFLOP/s of pk and each peer, pk ÷ hand and pk ÷ online."""
    out = [""] if after_table else []
    out.append("Attention (shape H x T x d; GFLOP/s = 2·H·T²·d / median wall time: q kT and p v "
               "over the causal half j <= i, 4·H·T·T·d / 2 flops, 10⁹ flop/s; eager serial, its "
               "1-thread figure in every row)")
    out.append("")
    cols = (["kernel", "shape", "threads", "pk time", "pk GFLOP/s"]
            + [f"{name} GFLOP/s" for _, name in ATTENTION_PEERS] + ["pk ÷ hand", "pk ÷ online"])
    out.append("| " + " | ".join(cols) + " |")
    out.append("|" + "|".join(["---"] * 3 + ["---:"] * (len(cols) - 3)) + "|")
    peers_of = {}
    for (k, _, p, _) in results:
        peers_of.setdefault(k, set()).add(p)
    for (k, shape, _, th) in rows:
        f = flops.get((k, shape))
        t_pk, _, busy_pk = results[(k, shape, "pk", th)]
        mark_pk = PREEMPTED if busy_pk < 0.8 else ""
        gf = (lambda t: f"{f / t / 1e9:.3g}") if f else (lambda t: "?")
        cells = [k, shape, str(th), fmt_time(t_pk) + mark_pk, gf(t_pk) + mark_pk]
        for peer, _ in ATTENTION_PEERS:
            got = peer_cell(results, k, shape, peer, th)
            if got is None:
                cells.append("—" if peer in peers_of.get(k, ()) else "n/a")
            else:
                cells.append(gf(got[0]) + (PREEMPTED if got[2] < 0.8 else ""))
        for peer in ("hand", "online"):
            got = results.get((k, shape, peer, th))
            if got is None:
                cells.append("n/a")
            else:
                noisy = busy_pk < 0.8 or got[2] < 0.8
                cells.append(fmt_ratio(got[0] / t_pk) + (PREEMPTED if noisy else ""))
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    out.append("pk ÷ hand = t_hand / t_pk (> 1: pk faster), likewise pk ÷ online. —: not run at this "
               "shape (eager only up to H·T²·d = 2^27). pk, hand and online all stop at key "
               "j = i (pk since 50b48d2: the causal mask bounds its key loop).")
    return out


MATMUL_PEERS = (("naive", "naive"), ("eigen", "Eigen"), ("openblas", "OpenBLAS"), ("eager", "eager"))


def render_matmul(context, results, rows, flops, after_table):
    """The matmul table: GFLOP/s of pk and each peer, and pk ÷ OpenBLAS."""
    out = [""] if after_table else []
    out.append("Matmul kernels (shape M x N x K, batched B x M x N x K; GFLOP/s = 2·M·N·K (·B) / "
               f"median wall time, 10⁹ flop/s; OpenBLAS: {context.get('pk_openblas', 'n/a')}, its "
               "threads = the OpenMP threads; Eigen's GEMM threaded by OpenMP; eager serial, "
               "its 1-thread figure in every row)")
    out.append("")
    cols = (["kernel", "shape", "threads", "pk time", "pk GFLOP/s"]
            + [f"{name} GFLOP/s" for _, name in MATMUL_PEERS] + ["pk ÷ OpenBLAS"])
    out.append("| " + " | ".join(cols) + " |")
    out.append("|" + "|".join(["---"] * 3 + ["---:"] * (len(cols) - 3)) + "|")
    peers_of = {}
    for (k, _, p, _) in results:
        peers_of.setdefault(k, set()).add(p)
    for (k, shape, _, th) in rows:
        f = flops.get((k, shape))
        t_pk, _, busy_pk = results[(k, shape, "pk", th)]
        mark_pk = PREEMPTED if busy_pk < 0.8 else ""
        gf = (lambda t: f"{f / t / 1e9:.3g}") if f else (lambda t: "?")
        cells = [k, shape, str(th), fmt_time(t_pk) + mark_pk, gf(t_pk) + mark_pk]
        for peer, _ in MATMUL_PEERS:
            got = peer_cell(results, k, shape, peer, th)
            if got is None:
                cells.append("—" if peer in peers_of.get(k, ()) else "n/a")
            else:
                # No † from OpenBLAS's CPU time: at several threads it works on its
                # own pthreads while the calling thread (the one measured) waits.
                noisy = got[2] < 0.8 and not (peer == "openblas" and th > 1)
                cells.append(gf(got[0]) + (PREEMPTED if noisy else ""))
        got = results.get((k, shape, "openblas", th))
        if got is None:
            cells.append("n/a")
        else:
            noisy = busy_pk < 0.8 or (got[2] < 0.8 and th == 1)
            cells.append(fmt_ratio(got[0] / t_pk) + (PREEMPTED if noisy else ""))
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    out.append("pk ÷ OpenBLAS = pk GFLOP/s / OpenBLAS GFLOP/s (t_OpenBLAS / t_pk): > 1 means pk is "
               "faster. —: not run at this shape (eager only up to 2^27 multiply-adds); n/a: the "
               "peer is not built (no Eigen, no OpenBLAS). OpenBLAS at several threads never gets a "
               "†: its calling thread, the one whose CPU time is measured, waits for its pool.")
    return out


def render_targets(results, rows):
    """The issue's targets on the row kernels at TARGET_SHAPES, per thread count; nothing
    when the run has none of those rows (e.g. peers.py --only mlp)."""
    if not any(k in TARGET_KERNELS and shape in TARGET_SHAPES for (k, shape, _, _) in rows):
        return []
    out = ["", "Targets (row kernels at " + " and ".join(TARGET_SHAPES) + "): pk >= "
           + ", ".join(f"{x:g}x {name}" for _, name, x in TARGETS) + " (t_peer / t_pk)", ""]
    out.append("| kernel | shape | threads | " + " | ".join(f"{name} ÷ pk (≥ {x:g})" for _, name, x in TARGETS) + " |")
    out.append("|---|---|---|" + "---:|" * len(TARGETS))
    met = {p: [0, 0] for p, _, _ in TARGETS}
    for (k, shape, _, th) in rows:
        if k not in TARGET_KERNELS or shape not in TARGET_SHAPES:
            continue
        t_pk, _, busy_pk = results[(k, shape, "pk", th)]
        cells = [k, shape, str(th)]
        for peer, _, x in TARGETS:
            got = peer_cell(results, k, shape, peer, th)
            if got is None:
                cells.append("n/a")
                continue
            r = got[0] / t_pk
            ok = r >= x
            met[peer][0] += ok
            met[peer][1] += 1
            noisy = busy_pk < 0.8 or got[2] < 0.8
            cells.append(f"{fmt_ratio(r)}{PREEMPTED if noisy else ''} {'met' if ok else 'NOT met'}")
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    out.append("Met: " + "; ".join(f"{name} {met[p][0]} of {met[p][1]}" for p, name, _ in TARGETS))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="Google Benchmark JSON output of pk-bench")
    ap.add_argument("--peers", help="JSON of bench/peers/peers.py: add the Python peers' columns")
    ap.add_argument("--cpu-time", action="store_true",
                    help="1-thread rows only, CPU time instead of wall time (a loaded machine)")
    ap.add_argument("-o", "--output", help="also write the markdown here")
    args = ap.parse_args()
    context, results, order = load(args.json)
    flops = load_flops(args.json)
    if not any(p == "pk" for (_, _, p, _) in results):
        sys.exit(f"table.py: no pk results in {args.json}")
    peers = None
    if args.peers:
        try:
            pcontext, presults, _ = load(args.peers)
        except (OSError, ValueError, KeyError) as e:
            # Never lose pk's table for the peers: their columns say n/a.
            print(f"table.py: cannot read {args.peers} ({e}); Python peers n/a", file=sys.stderr)
            pcontext, presults = {"pk_peers": {"unavailable": {
                p: f"no peers results ({e})" for p, _ in PYTHON_COLUMNS}}}, {}
        results.update({key: v for key, v in presults.items() if key[2] != "pk"})
        peers = (pcontext, presults)
        try:  # the peers carry pk-bench's "flops" counter too (mlp, swiglu_mlp)
            for case, f in load_flops(args.peers).items():
                flops.setdefault(case, f)
        except (OSError, ValueError, KeyError):
            pass
    if args.cpu_time:
        results = cpu_time_view(results)
    md = render(context, results, order, peers, args.cpu_time, flops)
    sys.stdout.write(md)
    if args.output:
        with open(args.output, "w") as f:
            f.write(md)


if __name__ == "__main__":
    main()
