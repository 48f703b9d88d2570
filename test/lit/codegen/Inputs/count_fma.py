"""Counts the fused multiply-add instructions (vfmadd*, vfmsub*, vfnmadd*,
vfnmsub*) in the x86-64-v4 clones of one function, OpenMP regions included.

usage: count_fma.py <objdump -d -C output> <function name prefix>
prints: fma instructions in the v4 clone: <count>
"""
import re
import sys

listing, name = sys.argv[1], sys.argv[2]
header = re.compile(r"^[0-9a-f]+ <(.*)>:$")
fma = re.compile(r"\bvf(n?)m(add|sub)")
count = 0
inside = False
with open(listing) as f:
    for line in f:
        m = header.match(line.rstrip("\n"))
        if m:
            symbol = m.group(1)
            inside = name in symbol and "[clone .arch_x86_64_v4]" in symbol
            continue
        if inside and fma.search(line):
            count += 1
print(f"fma instructions in the v4 clone: {count}")
