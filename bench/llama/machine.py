"""The machine line of bench/llama's tables: the CPU's model name, its
cores, its ISA level (AVX-512 / AVX2 / SSE, FMA, AMX, a virtual machine),
gcc's version and the load average at the start (a file the script wrote)
and at the end."""

import os
import subprocess


def describe(load_start_path):
    cpu, flags = "unknown CPU", set()
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name") and cpu == "unknown CPU":
            cpu = line.split(":", 1)[1].strip()
        if line.startswith("flags") and not flags:
            flags = set(line.split(":", 1)[1].split())
    isa = ("AVX-512" + (" (+bf16, fp16)" if "avx512_fp16" in flags else "")
           if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE")
    if "fma" in flags:
        isa += " + FMA"
    if "amx_tile" in flags:
        isa += " + AMX"
    if "hypervisor" in flags:
        isa += " (virtual machine)"
    load = open("/proc/loadavg").read().split()[:3]
    start = (open(load_start_path).read().split()
             if os.path.exists(load_start_path) else ["?"] * 3)
    gcc = subprocess.run(["gcc", "-dumpfullversion"], capture_output=True,
                         text=True).stdout.strip()
    return (f"CPU: {cpu}, {os.cpu_count()} cores, ISA {isa}; gcc {gcc}; load "
            f"average {' '.join(start)} at the start, {' '.join(load)} at "
            f"the end")
