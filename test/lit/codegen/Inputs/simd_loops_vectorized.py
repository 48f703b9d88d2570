"""Checks that every loop pkc marks `#pragma omp simd` was vectorised.

usage: simd_loops_vectorized.py [--only TEXT] <file.pk.cpp> <compiler remarks>

--only TEXT: check only the simd loops with TEXT on one of the three lines
above their pragma (a comment pkc writes there), e.g. the A lambda of an int8
product, where the rest of the file is not the test's subject.

g++ (-fopt-info-vec-optimized) reports `<file>:<line>:<col>: optimized: loop
vectorized` at the first line of the loop body, clang (-Rpass=loop-vectorize)
`<file>:<line>:<col>: remark: vectorized loop` near the pragma: a remark on
the pragma's line, the loop's line or any line of the loop's body (up to its
closing brace; a simd loop has no loop inside) counts for that loop. Prints how
many simd loops there are and exits 1 listing those not vectorised, except
in the fallback copies for a broadcast along the vectorised axis ("general
strides": a run-time stride of 0 or 1, rare, where g++ may keep scalar code)
and the loops that divide integers (pk::scalar::div/rem: x86 has no vector
integer division, so no compiler vectorises them) or convert floats to
int64_t (pk::scalar::convert<int64_t>: no vector instruction below
AVX-512DQ, which the default build does not assume).
Exits 1 too when the file has no simd loop outside those fallbacks (a file
without any, or the wrong file, would otherwise pass with nothing checked).
"""
import re
import sys

args = sys.argv[1:]
only = None
if args[:1] == ['--only']:
    only, args = args[1], args[2:]
source, remarks = args[0], args[1]
name = source.rsplit('/', 1)[-1]
lines = open(source).read().splitlines()
simd = [i + 1 for i, l in enumerate(lines) if l.strip().startswith('#pragma omp') and 'simd' in l]
if only is not None:
    simd = [n for n in simd if any(only in l for l in lines[max(0, n - 4):n - 1])]
done = set()
for l in open(remarks):
    m = re.search(re.escape(name) + r':(\d+):\d+: (optimized: loop vectorized|remark: vectorized loop)', l)
    if m:
        done.add(int(m.group(1)))
def in_fallback(n):
    for l in reversed(lines[:n]):
        if 'general strides' in l:
            return True
        if 'Unit strides along axis' in l or l.startswith('  // Group'):
            return False
    return False

def loop_lines(n):
    """The pragma's line through the line of the loop's closing brace."""
    depth, opened = 0, False
    for i in range(n, len(lines)):  # lines[n] is the line after the pragma
        depth += lines[i].count('{') - lines[i].count('}')
        opened = opened or '{' in lines[i]
        if opened and depth <= 0:
            return range(n, i + 2)
    return range(n, n + 4)

SCALAR_ONLY = ('pk::scalar::div(', 'pk::scalar::rem(', 'pk::scalar::convert<int64_t>(')

def scalar_only(n):
    return any(s in lines[k - 1] for s in SCALAR_ONLY
               for k in loop_lines(n) if k <= len(lines))

missing = [n for n in simd if not any(k in done for k in loop_lines(n))]
tolerated = [n for n in missing if in_fallback(n) or scalar_only(n)]
missing = [n for n in missing if n not in tolerated]
if len(simd) == len(tolerated):
    print('%s: no simd loops to check (%d in broadcast fallbacks)' % (name, len(tolerated)))
    sys.exit(1)
if missing:
    print('%s: %d of %d simd loops not vectorised, at lines %s' % (name, len(missing), len(simd), missing))
    sys.exit(1)
print('%s: all %d simd loops vectorised%s' % (
    name, len(simd) - len(tolerated),
    ' (%d broadcast fallback, integer division or int64 conversion loops scalar)'
    % len(tolerated)
    if tolerated else ''))
