"""Counts the fused multiply-add instructions (vfmadd*, vfmsub*, vfnmadd*,
vfnmsub*) in the x86-64-v4 clones of one function, OpenMP regions included;
or, given a third argument, the instructions that match that regex (`zmm`:
those that use a 64-byte register).

usage: count_fma.py <objdump -d -C output> <function name prefix> [regex]
prints: fma instructions in the v4 clone: <count>
        (<regex> instructions in the v4 clone: <count>)
Exits 1 when the listing has no v4 clone of that function, or an empty one (a
count of 0 would otherwise pass for a clone that is not there).
"""
import re
import sys

listing, name = sys.argv[1], sys.argv[2]
what = sys.argv[3] if len(sys.argv) > 3 else "fma"
header = re.compile(r"^[0-9a-f]+ <(.*)>:$")
fma = re.compile(sys.argv[3] if len(sys.argv) > 3 else r"\bvf(n?)m(add|sub)")
count = 0
clones = 0
instructions = 0
inside = False
with open(listing) as f:
    for line in f:
        m = header.match(line.rstrip("\n"))
        if m:
            symbol = m.group(1)
            inside = name in symbol and "[clone .arch_x86_64_v4]" in symbol
            clones += inside
            continue
        if inside and re.match(r"^\s+[0-9a-f]+:\s", line):
            instructions += 1
        if inside and fma.search(line):
            count += 1
if not clones or not instructions:
    print(f"no v4 clone of {name} in {listing} ({clones} symbols, {instructions} instructions)")
    sys.exit(1)
print(f"{what} instructions in the v4 clone: {count}")
