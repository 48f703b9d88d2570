#!/usr/bin/env python3
"""The GPU table of bench/gpu/run.sh: pk-gpu-bench's JSON (--pk) joined with
torch_peers.py's (--torch), one markdown table, printed and written to -o.
Either file may be missing or partial: its columns then say n/a, and why.

    python3 bench/gpu/table.py --pk pk.json --torch torch.json \
        [--tests "passed"] [--note "..."]... [-o results.md]
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_peers import SAMPLES, shape_str  # noqa: E402  (no torch needed)


def load(path):
    """(data, reason): reason says why data is None."""
    if not path:
        return None, "not run"
    if not os.path.exists(path):
        return None, f"no results ({os.path.basename(path)} missing)"
    try:
        with open(path) as f:
            return json.load(f), ""
    except (OSError, ValueError) as e:
        return None, f"unreadable {os.path.basename(path)}: {e}"


def us(x):
    if x is None:
        return "n/a"
    if x >= 1000:
        return f"{x:,.0f}"
    if x >= 100:
        return f"{x:.0f}"
    return f"{x:.1f}"


def num(x):
    """Two decimals, or two significant digits below 0.01 (never a bare 0.00)."""
    return f"{x:.2f}" if x >= 0.01 or x == 0 else f"{x:.2g}"


def ratio(peer, pk):
    if peer is None or pk is None or pk <= 0:
        return "n/a"
    return num(peer / pk)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pk", default="")
    ap.add_argument("--torch", default="")
    ap.add_argument("--pk-reason", default="", help="why there are no pk results, if known")
    ap.add_argument("--torch-reason", default="", help="why there are no torch results, if known")
    ap.add_argument("--tests", default="", help="the CUDA device tests' outcome, one line")
    ap.add_argument("--note", action="append", default=[], help="a line above the table")
    ap.add_argument("-o", "--output", default="")
    args = ap.parse_args()

    pk, pk_reason = load(args.pk)
    th, th_reason = load(args.torch)
    pk_reason = args.pk_reason or pk_reason
    th_reason = args.torch_reason or th_reason

    lines = ["## pk on the GPU: CUDA launchers against PyTorch", ""]
    for note in args.note:
        lines.append(f"- {note}")
    if pk:
        d = pk.get("device", {})
        lines.append(f"- GPU: {d.get('name')} (cc {d.get('cc')}, {d.get('sms')} SMs, "
                     f"{d.get('mem_gib', 0):.0f} GiB, L2 {d.get('l2_mib', 0):.0f} MiB), "
                     f"CUDA runtime {d.get('cuda_runtime')}, driver {d.get('cuda_driver')}")
        if d.get("peak_copy_median_us"):
            gbs = d["peak_copy_bytes"] / (d["peak_copy_median_us"] * 1e-6) / 1e9
            lines.append(f"- Device-to-device copy of 1 GiB: {gbs:,.0f} GB/s "
                         "(bytes read + written / time)")
        lines.append(f"- pk: {pk.get('warmup')} warm-up + median (and min) of up to "
                     f"{pk.get('reps')} launches timed with CUDA events, each after an L2 flush "
                     f"({pk.get('flush_bytes', 0) >> 20} MiB memset; 0 = none); at most "
                     f"{pk.get('cap_s')} s of timed launches per kernel (column n)"
                     + ("" if pk.get("complete") else "; **run incomplete**"))
    else:
        lines.append(f"- pk: n/a ({pk_reason})")
    if th and th.get("available"):
        comp = "torch.compile (default mode, Inductor)" if th.get("compile_available") \
            else f"torch.compile n/a ({th.get('compile_reason')})"
        lines.append(f"- PyTorch {th.get('torch')}: eager and {comp}, float32, same timing "
                     "scheme" + ("" if th.get("complete") else "; **run incomplete**"))
    else:
        why = (th or {}).get("reason") or th_reason
        lines.append(f"- PyTorch: n/a ({why})")
    if args.tests:
        lines.append(f"- CUDA device tests (ctest -R '^cuda_device\\.'): {args.tests}")
    lines.append("- GB/s = unique bytes read + written by the kernel / pk median; "
                 "% of D2D copy = time of a cudaMemcpyAsync moving the same bytes / pk time; "
                 "÷ pk = peer time / pk time (> 1: pk faster)")
    lines.append("")

    pk_rows = {k["name"]: k for k in (pk or {}).get("kernels", [])}
    th_rows = {k["name"]: k for k in (th or {}).get("kernels", [])}
    names = [n for n, _ in SAMPLES]
    names += [n for n in list(pk_rows) + list(th_rows) if n not in names]
    shapes = dict((n, shape_str(s)) for n, s in SAMPLES)

    lines.append("| sample | shape | pk µs | pk min µs | n | GB/s | % of D2D copy "
                 "| torch eager µs | torch.compile µs | eager ÷ pk | compile ÷ pk | check |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    problems = []
    for name in names:
        p = pk_rows.get(name)
        t = th_rows.get(name)
        if p is None and t is None and (pk_rows or th_rows):
            continue  # filtered out (--only) or not reached in either run
        shape = (p or t or {}).get("shape") or shapes.get(name, "?")
        med = p.get("median_us") if p else None
        if p is None or med is None:
            med = None
        gbs = p["bytes"] / (med * 1e-6) / 1e9 if med else None
        gbs = "n/a" if gbs is None else f"{gbs:,.0f}" if gbs >= 10 else num(gbs)
        copy = p.get("copy_median_us") if p else None
        pct = 100 * copy / med if (med and copy) else None
        pct = "n/a" if pct is None else f"{pct:.0f}%" if pct >= 10 else num(pct) + "%"
        reps = p.get("reps") if p else None
        eager = (t or {}).get("eager") or {}
        comp = (t or {}).get("compile") or {}
        e_us, c_us = eager.get("median_us"), comp.get("median_us")
        check = p.get("check", "n/a") if p else "n/a"
        if check.startswith("MISMATCH") or check == "error":
            problems.append(f"{name}: pk {check}" + (f": {p.get('error')}" if p.get("error") else ""))
            check = "**" + ("mismatch" if check.startswith("MISMATCH") else "error") + "**"
        if t and t.get("eager_error"):
            problems.append(f"{name}: torch eager: {t['eager_error']}")
        if t and t.get("compile_error") and th.get("compile_available"):
            problems.append(f"{name}: torch.compile: {t['compile_error']}")
        lines.append(f"| {name} | {shape} | {us(med)} | {us(p.get('min_us') if p else None)} "
                     f"| {reps or 'n/a'} | {gbs} | {pct} | {us(e_us)} | {us(c_us)} "
                     f"| {ratio(e_us, med)} | {ratio(c_us, med)} | {check} |")
    if problems:
        lines.append("")
        lines.append("Problems:")
        lines.append("")
        lines += [f"- {p}" for p in problems]
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
