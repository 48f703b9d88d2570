#!/usr/bin/env python3
"""Checks of the NumPy twins' own model (gen.py's numpy_text, fz_numpy.py)
on cases the random batches found or rarely reach (ctest fuzz.twin.selftest).

- Rounding to the 16-bit storage types (fz_numpy.round16), at the edges the
  language fixes (language.md, "16-bit storage types"): ties to even,
  half's overflow to infinity and its subnormals, NaN kept.
- A store that does not fit its ref makes the twin refuse the call even
  when a later store to the same ref fits (long-mode finding
  numpy-accepted-9004-k14-c9, 2026-12-04: the twin checked each ref's last
  store only, and accepted a call eager refuses).

- reshape with a -1 whose other extents multiply to 0 is refused, also for
  an empty array, as eager, the compiled guard and NumPy refuse it
  (long-mode finding numpy-accepted-9109-k0-c1, 2026-12-04: the twin
  inferred 0 there, after a line of docs/design.md that said pk does).

- A double literal the generator made for a float context keeps its double
  value where it meets a double array (long-mode finding
  numpy-mismatch-9112-k34-c2, 2026-12-04: `0.1 + ceil(x2[_] + x1[_])` with
  x1 double; the twin added 0.1 rounded to float, 0.10000000149011612).

- A window's negative bound is an error, not a count from the end (long-mode
  finding numpy-accepted-9119-k39-c1, 2026-12-04: `o0.slice(0, 0,
  o0.extent(0) - s0)` with s0 past the extent; eager refused, the twin took
  -1 as the last row, following a row of docs/design.md that treated
  windows as value slices).

- `-INFINITY` is -inf in the twins, not the -1e30 the generator's ranges
  use (long-mode finding numpy-mismatch-9128-k39-c8, 2026-12-04: a causal
  mask's -1e30 let the twin's softmax weigh masked keys where the one
  unmasked score of a row was -inf; pk's row is NaN).

Exit status 0 when every check holds, 1 otherwise (each failure printed).
"""

import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, 'harness'))
import fz_numpy as F  # noqa: E402
import gen  # noqa: E402

FAILURES = []


def check(what, ok):
    if not ok:
        FAILURES.append(what)
        print('FAIL: ' + what)


def rounding():
    half = [  # (value, its half)
        (1.0 + 2.0 ** -11, 1.0),  # a tie: to the even neighbour
        (1.0 + 3 * 2.0 ** -11, 1.0 + 2.0 ** -9),  # a tie: up to even
        (1.0 + 2.0 ** -11 + 2.0 ** -20, 1.0 + 2.0 ** -10),  # above the tie
        (65519.0, 65504.0),  # below the overflow tie: the largest half
        (65520.0, math.inf),  # the tie to 2^16: infinity
        (-70000.0, -math.inf),
        (2.0 ** -25, 0.0),  # half the least subnormal: a tie, to 0
        (3 * 2.0 ** -26, 2.0 ** -24),  # above it: the least subnormal
        (5 * 2.0 ** -24, 5 * 2.0 ** -24),  # a subnormal, exact
        (-0.0, -0.0),
    ]
    bf16 = [
        (1.0 + 2.0 ** -8, 1.0),  # a tie: to even
        (1.0 + 3 * 2.0 ** -8, 1.0 + 2.0 ** -6),  # a tie: up to even
        (3.140625 + 2.0 ** -10, 3.140625),
        (3.4e38, math.inf),  # above the largest bfloat16's tie
    ]
    # 1e-40, a float subnormal: its bfloat16 is its top 16 bits, rounded
    # (0x000116C2 -> 0x0001)
    bf16.append((1e-40, float(np.uint32(0x00010000).view(np.float32))))
    for dt, table in (('f16', half), ('bf16', bf16)):
        got = F.round16(np.array([v for v, _ in table]), dt)
        check('round16 gives float32 (%s)' % dt, got.dtype == np.float32)
        for (v, want), g in zip(table, got):
            same = (g == want and math.copysign(1, g) == math.copysign(
                1, want)) or (math.isnan(g) and math.isnan(want))
            check('round16(%r, %s) = %r, expected %r' % (v, dt, float(g),
                                                         want), same)
        n = F.round16(np.array([math.nan, math.inf, -math.inf]), dt)
        check('%s keeps NaN and infinities' % dt,
              math.isnan(n[0]) and n[1] == math.inf and n[2] == -math.inf)
    # storing into a 16-bit ref and casting to one round alike
    x = np.array([0.1, 1.0 / 3, 1e4, -2.5e-5], dtype=np.float64)
    for dt in ('f16', 'bf16'):
        check('conv to %s rounds' % dt, np.array_equal(
            F.conv(x, dt), F.round16(x, dt)))
        check('window_store into %s rounds' % dt, np.array_equal(
            F.window_store(np.zeros(4, np.float32), x, 0, 0, 4, dt),
            F.round16(x, dt)))


def every_store_checked():
    seed, index = '9004', 14
    k = gen.generate(seed, index)
    it = gen.Interp(k)
    it.run(k.stmts)
    # the kernel the finding named: two whole stores into o0[A, B], a row
    # reduction's [A, 1] and then x0's [A, 1] (x0 may be [1, 1] at run time)
    stores = [(p.name, n.shape) for p, n in it.whole_stores]
    if stores != [('o0', ('A', 1)), ('o0', ('A', 1))]:
        check('gen.generate(%s, %d) is still the finding\'s kernel (its '
              'whole stores are %r): choose another' % (seed, index, stores),
              False)
        return
    ns = {}
    exec('import numpy as np\nimport fz_numpy as F\n' +
         '\n'.join(gen.numpy_text(k, it)), ns)
    twin = ns[k.name]
    A, B = 7, 5
    args = {'o0': np.zeros((A + 1, B)), 'x0': np.ones((1, 1), np.float32),
            's0': 0.5, 'x1': np.ones((A, B), bool),
            'x2': np.ones((A, B), np.float32)}
    try:
        twin(args)
        check('the twin refuses a first store of [%d, 1] into o0[%d, %d]'
              % (A, A + 1, B), False)
    except F.ShapeError:
        pass
    args['o0'] = np.zeros((A, B))
    try:
        out = twin(args)
        check('the twin runs when every store fits',
              out['o0'].shape == (A, B))
    except F.ShapeError as e:
        check('the twin runs when every store fits (%s)' % e, False)


def reshape_of_zero_extents():
    for size, dims in ((0, [0, -1]), (0, [0, 3, -1, 3]), (6, [0, -1])):
        try:
            F.reshape(np.zeros(size, np.float32), dims)
            check('the twin refuses reshape of %d elements into %s'
                  % (size, dims), False)
        except F.ShapeError:
            pass
    for shape, dims, want in (((0,), [-1], (0,)), ((2, 0), [0, 5], (0, 5)),
                              ((2, 3), [3, -1], (3, 2))):
        try:
            got = F.reshape(np.zeros(shape, np.float32), dims).shape
            check('reshape of %s into %s is %s, got %s'
                  % (shape, dims, want, got), got == want)
        except F.ShapeError as e:
            check('reshape of %s into %s runs (%s)' % (shape, dims, e), False)


def finding_twin(seed, index, line):
    """The twin of gen.generate(seed, index), a long-mode finding's kernel,
    or None (a failed check) when the generator no longer makes the kernel
    with `line` (whose start identifies it)."""
    k = gen.generate(seed, index)
    if not any(l.startswith(line) for l in gen.kernel_text(k)):
        check('gen.generate(%s, %d) is still the finding\'s kernel (a line '
              '%r): choose another' % (seed, index, line), False)
        return None
    it = gen.Interp(k)
    it.run(k.stmts)
    ns = {}
    exec('import numpy as np\nimport fz_numpy as F\n' +
         '\n'.join(gen.numpy_text(k, it)), ns)
    return ns[k.name]


def double_literal_meets_double():
    twin = finding_twin('9112', 34, '    h0[_] = 0.1 + ceil(x2[_] + x1[_]);')
    if twin is None:
        return
    A, B = 3, 2
    args = {'h0': np.zeros((A, B)), 'h1': np.zeros(A, np.float32),
            'x0': np.ones((A, B), bool), 'x1': np.full((A, B), 0.25),
            'x2': np.full((A, B), 0.5, np.float32),
            'x3': np.ones((A, B), np.float32),
            'x4': np.ones((A, 1), np.float32)}
    h0 = twin(args)['h0']
    # every column but the last (which the kernel then updates): 0.1 +
    # ceil(0.5 + 0.25) in double, as pk computes it
    check('0.1 + ceil(x2 + x1) of doubles is %r, the twin says %r'
          % (0.1 + 1.0, float(h0[0, 0])), float(h0[0, 0]) == 0.1 + 1.0)


def window_bounds_never_wrap():
    twin = finding_twin('9119', 39,
                        '  o0.slice(0, 0, o0.extent(0) - s0)[_] += ')
    if twin is None:
        return
    shape = (1, 2, 3, 2)
    args = {p: np.ones(shape, np.float32)
            for p in ('o0', 'x0', 'x1', 'x2', 'x3', 'x4')}
    for s0, refused in ((2, True), (1, False)):  # end -1, then 0
        args['s0'] = s0
        try:
            twin(args)
            check('the twin refuses the window [0, %d) of o0[1, ...]'
                  % (1 - s0), not refused)
        except F.ShapeError as e:
            check('the twin runs the window [0, %d) (%s)' % (1 - s0, e),
                  refused)
    for b, e in ((-1, 1), (0, -1)):
        try:
            F.window(np.zeros((3, 2)), [(0, b, e)])
            check('F.window refuses [%d, %d)' % (b, e), False)
        except F.ShapeError:
            pass
    check('F.slice_ of a value still counts -1 from the end',
          F.slice_(np.arange(3), 0, 0, -1).tolist() == [0, 1])


def masked_scores_are_minus_inf():
    twin = finding_twin(
        '9128', 39,
        '  s0 = where(index(s0, -1) <= index(s0, 0), s0, -INFINITY);')
    if twin is None:
        return
    A, K = 2, 1
    x3 = np.zeros((A, A))
    x3[0, 0] = -np.inf  # row 0's one unmasked score
    args = {'x0': np.ones((A, K)), 'x1': np.ones((A, K)),
            'x2': np.ones((), np.float32), 'x3': x3, 'x4': np.ones((A, 1)),
            'o0': np.zeros((A, 1)), 'x5': np.zeros((1, A, A), np.float32)}
    with np.errstate(invalid='ignore'):  # -inf - -inf, 0 * inf
        o0 = twin(args)['o0']
    check('row 0 of softmax([-inf | masked]) v is NaN, as in pk; the twin '
          'says %r' % o0[0].tolist(), bool(np.isnan(o0[0]).all()))
    check('row 1 is finite (%r)' % o0[1].tolist(),
          bool(np.isfinite(o0[1]).all()))


def main():
    rounding()
    every_store_checked()
    reshape_of_zero_extents()
    double_literal_meets_double()
    window_bounds_never_wrap()
    masked_scores_are_minus_inf()
    if FAILURES:
        print('%d check(s) failed' % len(FAILURES))
        return 1
    print('twin self-test: all checks hold')
    return 0


if __name__ == '__main__':
    sys.exit(main())
