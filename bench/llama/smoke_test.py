#!/usr/bin/env python3
"""ctest llama.bench.smoke: pk-llama-bench and shapes_table.py on a tiny
random checkpoint, so that bench/llama/shapes.sh's two halves keep working
(the benchmark itself is too slow for CI):

    smoke_test.py --bench pk-llama-bench --make-checkpoint pk-llama-checkpoint
                  --work-dir DIR

Checks that every requested shape ran (a decode position past the context
is run at its last position), that the counters are positive and that the
bytes with the KV cache exceed the weights' alone, and that the table has a
row per shape."""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--make-checkpoint", required=True)
    ap.add_argument("--work-dir", required=True)
    args = ap.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    ckpt = os.path.join(args.work_dir, "tiny.bin")
    out = subprocess.run([args.make_checkpoint, "--out", ckpt],
                         capture_output=True, text=True, check=True).stdout
    seq_len = int(out.split("seq_len ")[1].split(",")[0])
    js = os.path.join(args.work_dir, "tiny.json")
    run = subprocess.run(
        [args.bench, ckpt, "--prefill", "4,8", "--decode-at",
         f"3,{seq_len + 100}", "--benchmark_min_time=0.01",
         f"--benchmark_out={js}", "--benchmark_out_format=json"],
        capture_output=True, text=True, env=dict(os.environ,
                                                 OMP_NUM_THREADS="2"))
    if run.returncode != 0:
        fail(f"pk-llama-bench exited {run.returncode}: {run.stderr[-500:]}")
    doc = json.load(open(js))
    names = {b["run_name"].split("/real_time")[0]: b for b in doc["benchmarks"]}
    want = ["read_bandwidth", "prefill/4", "prefill/8", "decode/3",
            f"decode/{seq_len - 1}"]
    for w in want:
        if w not in names:
            fail(f"no {w} in {sorted(names)}")
    for w in want[1:]:
        if not names[w]["tok_s"] > 0 or not names[w]["ms_per_layer"] > 0:
            fail(f"{w}: counters {names[w]}")
    for w in want[3:]:
        b = names[w]
        if not b["GB_s_with_kv"] > b["GB_s"] > 0:
            fail(f"{w}: GB_s {b['GB_s']}, GB_s_with_kv {b['GB_s_with_kv']}")
    if not names["read_bandwidth"]["GB_s"] > 0:
        fail("read_bandwidth has no GB_s")

    results = os.path.join(args.work_dir, "results.tsv")
    with open(results, "w") as f:
        f.write(f"pk\ttiny\tfp32\t2\t{js}\n")
        f.write("torch\ttiny\tfp32\t2\tprefill\t4\t0.5\n")
    table = subprocess.run(
        [sys.executable, os.path.join(HERE, "shapes_table.py"), results,
         os.path.join(args.work_dir, "no-load-file")],
        capture_output=True, text=True)
    if table.returncode != 0:
        fail(f"shapes_table.py: {table.stderr[-500:]}")
    rows = [l for l in table.stdout.splitlines() if l.startswith("| tiny |")]
    # prefill 4 and 8, decode 3 and seq_len - 1, one formats row each.
    if len(rows) != 6:
        fail(f"{len(rows)} table rows:\n{table.stdout}")
    prefill4 = [r for r in rows if r.startswith("| tiny | fp32 | 2 | 4 |")]
    if not prefill4 or "| 8.0 |" not in prefill4[0]:
        fail(f"the torch column of prefill/4 (4 tokens in 0.5 s): {prefill4}")
    print("ok: pk-llama-bench and shapes_table.py")


if __name__ == "__main__":
    main()
