#!/usr/bin/env python3
"""The tables of bench/llama/shapes.sh from its results file:

    shapes_table.py RESULTS.tsv LOAD_START

RESULTS.tsv lines (tab-separated):
    pk        MODEL FORMAT THREADS JSON      (pk-llama-bench's Google Benchmark JSON)
    llama2.c  MODEL FORMAT THREADS TOK/S     (run/runq's achieved tok/s, one run)
    torch|torch.compile MODEL FORMAT THREADS prefill|decode T_OR_POS SECONDS
"""

import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import machine  # noqa: E402


def fmt(v, digits=1):
    return "n/a" if v is None else f"{v:.{digits}f}"


def ratio(a, b):
    return "n/a" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


def main():
    path, load_start = sys.argv[1], sys.argv[2]
    rows = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
    pk, layers, bytes_per_token = {}, {}, {}
    read_bound = {}
    peers = {}      # (kind, model, format, threads, what, n) -> [tok/s]
    llama2c = {}    # (model, format, threads) -> [tok/s]
    cells = []      # (model, format, threads) in order
    for r in rows:
        kind, model, fmt_, t = r[0], r[1], r[2], r[3]
        if (model, fmt_, t) not in cells:
            cells.append((model, fmt_, t))
        if kind == "pk":
            doc = json.load(open(r[4]))
            ctx = doc.get("context", {})
            m = re.search(r"(\d+) layers", ctx.get("model", ""))
            layers[model] = int(m.group(1)) if m else None
            bytes_per_token[(model, fmt_)] = int(ctx.get("weight_bytes_per_token", 0))
            # Medians of the repetitions (one repetition: its only run).
            aggregated = any("aggregate_name" in b for b in doc["benchmarks"])
            for b in doc["benchmarks"]:
                if b.get("aggregate_name", "median" if not aggregated
                         else None) != "median":
                    continue
                name = b["run_name"].split("/real_time")[0]
                if name == "read_bandwidth":
                    read_bound[(model, fmt_, t)] = b["GB_s"]
                else:
                    what, n = name.split("/")
                    pk[(model, fmt_, t, what, int(n))] = b
        elif kind == "llama2.c":
            if r[4]:
                llama2c.setdefault((model, fmt_, t), []).append(float(r[4]))
        else:
            what, n, secs = r[4], int(r[5]), float(r[6])
            per_s = (n if what == "prefill" else 1) / secs
            peers.setdefault((kind, model, fmt_, t, what, n), []).append(per_s)

    def peer(kind, model, fmt_, t, what, n):
        v = peers.get((kind, model, fmt_, t, what, n))
        return statistics.median(v) if v else None

    def table(hdr, what):
        """Prints the header; yields (model, format, threads, n, counters)
        of pk's `what` rows, cell by cell, n ascending."""
        print("| " + " | ".join(hdr) + " |")
        print("|" + " --- |" * len(hdr))
        for model, fmt_, t in cells:
            for (m, f, tt, w, n), b in sorted(pk.items(),
                                              key=lambda kv: kv[0][4]):
                if (m, f, tt, w) == (model, fmt_, t, what):
                    yield model, fmt_, t, n, b

    def l2c(model, fmt_, t):
        v = llama2c.get((model, fmt_, t))
        return statistics.median(v) if v else None

    print(machine.describe(load_start))
    print("pk-llama-bench medians (Google Benchmark repetitions); torch: "
          "hf_shapes.py medians; llama2.c: run/runq's achieved tok/s over "
          "128 positions (its prompt speed too: a token a call), median of "
          "its runs\n")
    print("Prefill: T tokens from position 0 in one call (ms per layer: the "
          "call over the layers, embedding and head included)\n")
    hdr = ["model", "weights", "threads", "T", "pk tok/s", "pk GFLOP/s",
           "pk ms/layer", "torch tok/s", "torch.compile tok/s",
           "llama2.c tok/s", "pk ÷ torch", "pk ÷ compile", "pk ÷ llama2.c"]
    for model, fmt_, t, n, b in table(hdr, "prefill"):
        tok = b["tok_s"]
        e = peer("torch", model, fmt_, t, "prefill", n)
        c = peer("torch.compile", model, fmt_, t, "prefill", n)
        q = l2c(model, fmt_, t)
        print("| " + " | ".join([
            model, fmt_, t, str(n), fmt(tok), fmt(b["GFLOP_s"]),
            fmt(b["ms_per_layer"], 2), fmt(e), fmt(c), fmt(q),
            ratio(tok, e), ratio(tok, c), ratio(tok, q)]) + " |")
    print("\nDecode: one token at position P (GB/s: the weight bytes a token "
          "reads over its time; read bound: a parallel sum over as many "
          "bytes, same threads, same run; with KV cache: the share of the "
          "bound when the keys and values the attention reads count too)\n")
    hdr = ["model", "weights", "threads", "P", "pk tok/s", "pk GB/s",
           "read bound GB/s", "of the bound", "with KV cache",
           "pk ms/layer", "torch tok/s",
           "torch.compile tok/s", "llama2.c tok/s", "pk ÷ torch",
           "pk ÷ compile", "pk ÷ llama2.c"]
    for model, fmt_, t, n, b in table(hdr, "decode"):
        tok, gbs = b["tok_s"], b["GB_s"]
        bound = read_bound.get((model, fmt_, t))
        e = peer("torch", model, fmt_, t, "decode", n)
        c = peer("torch.compile", model, fmt_, t, "decode", n)
        q = l2c(model, fmt_, t) if n <= 128 else None
        print("| " + " | ".join([
            model, fmt_, t, str(n), fmt(tok), fmt(gbs), fmt(bound),
            "n/a" if not bound else f"{100 * gbs / bound:.0f}%",
            "n/a" if not bound or "GB_s_with_kv" not in b
            else f"{100 * b['GB_s_with_kv'] / bound:.0f}%",
            fmt(b["ms_per_layer"], 3), fmt(e), fmt(c), fmt(q),
            ratio(tok, e), ratio(tok, c), ratio(tok, q)]) + " |")
    print("\nDecode between formats: bf16's and int8's tok/s over fp32's "
          "(targets: bf16 >= 1.8x, int8 >= 3x)\n")
    print("| model | threads | P | bf16 ÷ fp32 | int8 ÷ fp32 |")
    print("| --- | --- | --- | --- | --- |")
    seen = []
    for (m, f, t, w, n) in pk:
        if w == "decode" and (m, t, n) not in seen:
            seen.append((m, t, n))
    for m, t, n in seen:
        tok = {f: pk[(m, f, t, "decode", n)]["tok_s"]
               for f in ("fp32", "bf16", "int8") if (m, f, t, "decode", n) in pk}
        print(f"| {m} | {t} | {n} | {ratio(tok.get('bf16'), tok.get('fp32'))} "
              f"| {ratio(tok.get('int8'), tok.get('fp32'))} |")


if __name__ == "__main__":
    main()
