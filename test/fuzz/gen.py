#!/usr/bin/env python3
"""Random pk kernel generator (test/fuzz, docs/fuzzing.md).

Writes valid kernels of the pk language (../shared/spec/language.md) that pkc
compiles today, plus everything a differential harness needs to run them:

  <name>.cpp          the kernels (pkc's input; the harness also includes it
                      eagerly inside `namespace eager`)
  <name>_ref.cpp      the reference: the eager calls and, per kernel, a
                      "shadow": eager code that recomputes every value of the
                      kernel and, beside it, a bound on its rounding error
                      (running error analysis); the harness compares eager
                      and compiled results within it
  <name>_calls.cpp    the calls of the compiled CPU kernels and CUDA launchers,
                      and the table of kernels with their parameters (ranks,
                      dtypes, which extents are shared, data ranges)
  <name>.json         the same description for the runner (fuzz.py)

Deterministic: kernel i of seed S depends only on (S, i) and the generator's
own code; the same arguments give byte-identical files. Python 3 stdlib only.

Usage: gen.py --seed S [--kernels K] --out-dir DIR [--name NAME]
"""

import argparse
import json
import math
import os
import random
import sys

F32, F64, I32, I64, BOOL = 'f32', 'f64', 'i32', 'i64', 'bool'
# The 16-bit storage types (language.md, "Dtypes"): a ref's element type
# only (Param.storage); what a kernel reads from such a ref is an F32 value,
# and what it stores there is rounded to 16 bits.
F16, BF16 = 'f16', 'bf16'
CTYPE = {F32: 'float', F64: 'double', I32: 'int32_t', I64: 'int64_t',
         BOOL: 'bool', F16: 'pk::half', BF16: 'pk::bfloat16'}
# The chance that a float ref (In, Out or InOut) is stored in 16 bits
# (half of them pk::half, half pk::bfloat16); drawn from a generator of its
# own (Gen.storage_rng) so that the kernels' structure does not change.
P_STORAGE16 = 0.12
# A 16-bit type's unit roundoff, and the largest absolute rounding error of
# its subnormals (half's spacing there is 2^-24; bfloat16's are float's).
UNIT16 = {F16: 2.0 ** -11, BF16: 2.0 ** -8}
TINY16 = {F16: 2.0 ** -25, BF16: 2.0 ** -134}
# The largest magnitude a value stored into a half ref may have (its
# largest finite value is 65504: beyond it the store gives an infinity).
F16_STORE_MAX = 60000.0
FLOATS = (F32, F64)
INTS = (I32, I64)
UNIT = {F32: 2.0 ** -24, F64: 2.0 ** -53}
# Largest magnitude a float value may reach (no overflow by construction).
FMAX = {F32: 1e30, F64: 1e290}
IMAX = {I32: float(2 ** 30), I64: float(2 ** 62), BOOL: 1.0}
# The types' own ranges: where a saturating float -> integer conversion
# (language.md §3: NaN 0, beyond the range its end) may land.
TYPE_RANGE = {I32: (-2.0 ** 31, 2.0 ** 31 - 1), I64: (-2.0 ** 63, 2.0 ** 63 - 1)}
# Largest number of elements any reduction may see (the harness keeps the
# product of all extents of a kernel at or below this).
NMAX = float(2 ** 21)
SYMS = 'ABCDEFGH'
# The largest rank of a kernel's universe, so of its values and refs
# (fuzz_harness.h: fz::kMaxRank is at least this).
MAX_RANK = 6


# Bugs found by the fuzzer and not fixed yet (docs/fuzzing.md, "Findings"):
# the generator steers around them unless --with-known-bugs is given, so that
# the CI batches stay green while the reproducers in test/fuzz/regressions/
# say what is broken. Remove an entry when its bug is fixed.
KNOWN_BUGS = {
    # Open pkc bugs the generator steers around unless --with-known-bugs:
    # name -> the regression test that shows it. (The index() of a broadcast
    # ref bugs, test/fuzz/regressions/index_of_broadcast and
    # index_row_scratch, are fixed: the generator takes index() of any ref
    # again.)
    #
    # Fused attention never reads the v rows of masked keys (a -inf prefix,
    # or past the causal bound); eager multiplies them by 0, and inf or NaN
    # there makes the output NaN. Deliberate (docs/design.md, "Attention"),
    # and tested on both sides by test/e2e/AttentionMaskedTest.cpp (the
    # WILL_FAIL regression it replaces passed on a crash too); steered
    # around: the refs whose data reaches an attention's v operand get no
    # NaN or inf, or only in key row 0 when nothing reaches the scores
    # with any (special_params); q, k and the rest do.
    'attention-masked-key-inf': 'test/e2e/AttentionMaskedTest.cpp',

    # Fixed (the generator no longer steers around them; the reproducers
    # are regression tests): 'inout-reduce-buffer' and 'temp-cycle-two-forms'
    # (pkc aborted on a cycle between groups through their temporaries:
    # fusion now refuses a join that closes one), 'gemm-tile-split-hang'
    # (pk::rt::gemm's tile split made no progress on narrow products),
    # 'window-update-after-store' (regressions/window_update_after_store:
    # `o[_] = x[_] * 2.0f; o.slice(0, 0, 1)[_] += y[_];` read the window's
    # old contents from before the first store; Materialize's snapshotRef
    # now keeps the load's version), 'concat-temp-cycle' (pkc aborted,
    # "temporaries in a cycle", on concat buffers written from temporaries
    # next to other groups: fusion's cycle check now counts the stores not in
    # a group yet), 'store-reads-own-window' (`h[_] = x[_] + h.slice(0, 0,
    # 1)[_];` read h[0] after writing it: fusion buffers the window first)
    # and 'window-update-cycle' (`h[_] = h[_] * 2.0f; h[_] = h[_] - x[_];
    # h.slice(0, 0, 1)[_] += y[_];` aborted: DCE drops the overwritten
    # store, snapshotRef copies after the stores). A window store may read
    # its own ref again (it was pk-not-supported-yet).
}
AVOID = set(KNOWN_BUGS)
# Size limits of the multi-group kernels, kept from when they steered
# around the bugs above (now fixed): each float product is a tiled kernel
# of its own, slow to compile in the CI batches' CUDA leg, so the products
# of multi-group programs are integer ones and a multi-group kernel outside
# the matmul policy gets one multi-group construct; the 'inout' policy
# keeps testing the single-group InOut rules.
INTEGER_PROGRAM_MATMULS = True
ONE_PROGRAM_CONSTRUCT = True
INOUT_SINGLE_GROUP = True
# --policy: every kernel of the batch gets this policy (for trying one
# pattern; the CI batches use the weights in POLICIES)
FORCE_POLICY = None
# Views, gathers, windows and arg-reductions (docs/fuzzing.md, "What the
# generator covers"). VIEW_WEIGHTS: gen_op's weights (beside its other
# categories, about 80 in all) of a view of a computed value (Gen.g_view:
# permute_dims, reshape, slice, concat), a take of a table ref (g_take)
# and a window read of a ref (g_window), at kernel scope. P_ARGRED: the
# chance that a reduction (g_reduce, over one axis) is an argmax or argmin,
# of an exact operand (below). P_WINDOW_STORE: the chance of a statement
# storing into a window of an output (emit_window_store; 'inout' policy:
# twice that). P_CLASSIC_ARG: the chance that a 'classic' pattern also
# stores the argmax or argmin of its input.
VIEW_WEIGHTS = {'view': 5.0, 'take': 1.5, 'window': 1.2}
# The chance that a matmul's operand ref may be broadcast at run time (the
# driver then sets an extent to 1 in some cases, as for any BcastOk ref).
P_MM_BCAST = 0.35
P_ARGRED = 0.1
P_WINDOW_STORE = 0.07
P_CLASSIC_ARG = 0.3
# take's indices lie in [0, hi], hi drawn from these weights: the driver
# draws every symbol's extent independently, so a case whose gathered
# extent is <= hi (some 'small', 'ones', 'zero' and 'mixed' cases) raises
# pk::ShapeError, which eager and compiled code must both do (the compiled
# code before any write); the others gather.
TAKE_INDEX_HI = [(1, 3), (2, 3), (3, 2), (0, 1)]


class Invalid(Exception):
    """A construct that would be invalid or unsafe here; the generator tries
    something else."""


# --------------------------------------------------------------------------
# Types (mirror of pk.h's detail::Promote)
# --------------------------------------------------------------------------

def usual(a, b):
    """C++'s usual arithmetic conversions, in canonical element types."""
    if F64 in (a, b):
        return F64
    if F32 in (a, b):
        return F32
    if I64 in (a, b):
        return I64
    return I32


def join(t1, w1, t2, w2):
    if not w1 and not w2:
        return usual(t1, t2), False
    if not w1 and w2:
        if t1 in FLOATS and t2 in FLOATS:
            return t1, False
        return usual(t1, t2), False
    if w1 and not w2:
        return join(t2, w2, t1, w1)
    # weak with weak: plain C++ (a bool scalar never occurs)
    return usual(t1, t2), True


def promote(nodes):
    t, w = nodes[0].dtype, nodes[0].weak
    if len(nodes) == 1:
        return t
    for n in nodes[1:]:
        t, w = join(t, w, n.dtype, n.weak)
    return t


def math_t(t):
    return t if t in FLOATS else F64


def neg_t(t):
    return I32 if t == BOOL else t


# --------------------------------------------------------------------------
# Shapes: tuples of symbols ('A'..'D') and 1s, right-aligned broadcasting
# --------------------------------------------------------------------------

def bcast(s1, s2):
    n = max(len(s1), len(s2))
    a = (1,) * (n - len(s1)) + tuple(s1)
    b = (1,) * (n - len(s2)) + tuple(s2)
    out = []
    for x, y in zip(a, b):
        if x == y:
            out.append(x)
        elif x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        else:
            return None
    return tuple(out)


def fits(s, target):
    """s broadcasts (one way) to target."""
    return len(s) <= len(target) and bcast(s, target) == tuple(target)


# --------------------------------------------------------------------------
# The value graph: nodes are SSA values with everything the generator needs
# to stay safe (interval, NaN, exactness) and the shadow needs.
# --------------------------------------------------------------------------

class Node:
    __slots__ = ('id', 'op', 'args', 'dtype', 'weak', 'shape', 'lo', 'hi',
                 'nan', 'exact', 'sig', 'attrs', 'reds')

    def __init__(self, op, args, dtype, weak, shape, lo, hi, nan, exact,
                 sig, attrs=None):
        self.id = -1
        self.op = op
        self.args = args
        self.dtype = dtype
        self.weak = weak
        self.shape = tuple(shape)
        self.lo = float(lo)
        self.hi = float(hi)
        self.nan = nan
        self.exact = exact
        self.sig = sig
        self.attrs = attrs or {}
        self.reds = 0

    @property
    def rank(self):
        return len(self.shape)

    def mag(self):
        return max(abs(self.lo), abs(self.hi))


def fmt_float(v):
    r = repr(float(v))
    if 'e' in r or 'inf' in r or 'nan' in r:
        raise ValueError(r)
    if r.endswith('.0'):
        r = r[:-2] + '.0'
    return r


class Lit:
    """A literal: its C++ text and its value as the given element type."""

    def __init__(self, dtype, value, text):
        self.dtype, self.value, self.text = dtype, value, text


def lit(dtype, value, suffix=None):
    if dtype in INTS:
        v = int(value)
        t = str(v)
        return Lit(I32, v, '(%s)' % t if v < 0 else t)
    t = fmt_float(value)
    if dtype == F32 and suffix != '':
        t += 'f'
    if value < 0:
        t = '(%s)' % t
    return Lit(dtype, float(value), t)


def tlit(value, text):
    """A literal whose C++ type follows from its text (1.5f float, 1.5
    double, 2 int)."""
    body = text.strip('()')
    if body.endswith('f') or 'INFINITY' in body:
        return Lit(F32, f32round(value), text)
    if '.' in body or 'e' in body:
        return Lit(F64, float(value), text)
    return Lit(I32, int(value), text)


def f32round(v):
    import struct
    return struct.unpack('f', struct.pack('f', v))[0]


# --------------------------------------------------------------------------
# Syntax: expressions and statements (what is printed), instantiated into
# nodes in an environment (so loops unroll and helpers inline).
# --------------------------------------------------------------------------

class Expr:
    """kind: 'load' (param), 'local' (name), 'lit' (Lit), 'sparam' (param),
    'loopconst' (var, offset, dtype), 'hparam' (index), 'op' (op, args,
    attrs), 'call' (helper, args), 'reftarget' (param: a ref as a shape)."""
    __slots__ = ('kind', 'a', 'args', 'attrs', 'node')

    def __init__(self, kind, a=None, args=None, attrs=None):
        self.kind = kind
        self.a = a
        self.args = args or []
        self.attrs = attrs or {}
        self.node = None


class Stmt:
    """kind: 'decl' (name, expr), 'assign' (name, expr), 'store' (param,
    expr), 'loop' (var, trip, body)."""

    def __init__(self, kind, name=None, expr=None, param=None, var=None,
                 trip=0, body=None, orelse=None, wins=None, compound=None):
        self.kind = kind
        # 'wstore' (param, wins, expr, compound): param.slice(...)[_] = expr
        # (or += expr); wins [(axis, begin, end, dim)] as a 'window' op's
        self.wins = wins
        self.compound = compound
        self.orelse = orelse or []
        self.name = name
        self.expr = expr
        self.param = param
        self.var = var
        self.trip = trip
        self.body = body or []


class Param:
    def __init__(self, name, kind, dtype, shape=(), lo=-2.0, hi=2.0,
                 bcast_ok=True, role=None, storage=None):
        self.name = name
        self.kind = kind  # 'in', 'out', 'inout', 'scalar'
        # the element type of the values read from it (F32 for a 16-bit ref)
        self.dtype = dtype
        # F16 or BF16 for a float ref stored in 16 bits, else None
        self.storage = storage
        self.shape = tuple(shape)
        self.lo = lo
        self.hi = hi
        self.bcast_ok = bcast_ok
        self.role = role

    @property
    def rank(self):
        return len(self.shape)

    @property
    def elem(self):
        """The element type in memory: the storage type, or dtype."""
        return self.storage or self.dtype

    def decl(self):
        if self.kind == 'scalar':
            return '%s %s' % (CTYPE[self.dtype], self.name)
        k = {'in': 'In', 'out': 'Out', 'inout': 'InOut'}[self.kind]
        return '%s<%s, %d> %s' % (k, CTYPE[self.elem], self.rank, self.name)


class Helper:
    def __init__(self, name, nparams, locals_, ret):
        self.name = name
        self.nparams = nparams
        self.locals = locals_  # [(name, Expr)]
        self.ret = ret


UNARY_MATH = ['exp', 'exp2', 'expm1', 'log', 'log2', 'log1p', 'sqrt', 'rsqrt',
              'sin', 'cos', 'tanh', 'erf', 'sigmoid', 'floor', 'ceil']
BINOPS = {'add': '+', 'sub': '-', 'mul': '*', 'div': '/', 'rem': '%',
          'lt': '<', 'le': '<=', 'gt': '>', 'ge': '>=', 'eq': '==',
          'ne': '!=', 'and': '&', 'or': '|'}
CMPS = ['lt', 'le', 'gt', 'ge', 'eq', 'ne']
REDS = ['sum', 'mean', 'max', 'min']
ARGREDS = ['argmax', 'argmin']
# Views that move values without computing: their results (and error
# bounds) are their operand's, rearranged. 'vslice' is slice(v, ...),
# 'window' a window of a ref read (x.slice(...)[_]).
VIEWS = ['permute_dims', 'reshape', 'vslice', 'window']


# --------------------------------------------------------------------------
# Integer scalar expressions: window and slice bounds, reshape extents.
# ('c', v) a constant, ('ext', ref, axis) ref.extent(axis), ('sp', param)
# an int64_t scalar parameter, ('vext', i, axis) the extent of the op's
# argument i (a local, a helper parameter or a ref read: printed
# t.extent(axis)), ('+' | '-', a, b), ('/', a, constant).
# --------------------------------------------------------------------------

def bx_text(b, args=None):
    k = b[0]
    if k == 'c':
        return str(b[1])
    if k == 'ext':
        return '%s.extent(%d)' % (b[1], b[2])
    if k == 'sp':
        return b[1]
    if k == 'vext':
        t = args[b[1]]
        if t.endswith('[_]') and t[:-3].isidentifier():
            t = t[:-3]
        elif not t.isidentifier():
            t = '(%s)' % t
        return '%s.extent(%d)' % (t, b[2])
    if k in ('+', '-'):
        rhs = bx_text(b[2], args)
        if b[2][0] in ('+', '-'):
            rhs = '(%s)' % rhs
        return '%s %s %s' % (bx_text(b[1], args), k, rhs)
    if k == '/':
        lhs = bx_text(b[1], args)
        if b[1][0] in ('+', '-'):
            lhs = '(%s)' % lhs
        return '%s / %d' % (lhs, b[2])
    raise AssertionError(b)


def bx_add(a, c):
    """a + c for a constant c (a - |c| when negative)."""
    if c == 0:
        return a
    if a[0] == 'c':
        return ('c', a[1] + c)
    return ('+', a, ('c', c)) if c > 0 else ('-', a, ('c', -c))


def with_dim(shape, ax, d):
    s = list(shape)
    s[ax] = d
    return tuple(s)


def holds(n, ops):
    """Whether an op of `ops` is in n's cone."""
    seen = set()
    todo = [n]
    while todo:
        x = todo.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if x.op in ops:
            return True
        todo.extend(x.args)
    return False


def red_sig(sig):
    """Whether sig is a reduction signature (base shape, axis), the kind a
    context can generate reductions of (not a matmul's or a mixed one)."""
    return sig is not None and sig[0] not in ('matmul', 'mixed')


def reduced_over(a, axis, keep):
    """The shape of a reduction of value a over one axis (kept as 1 with
    keepdims), and its signature (a's shape, the normalised axis)."""
    if not (-a.rank <= axis < a.rank):
        raise Invalid('axis')
    ax = axis % a.rank
    shape = list(a.shape)
    if keep:
        shape[ax] = 1
    else:
        del shape[ax]
    return shape, (a.shape, ax)


def check_signature(a, attrs, base_sig, strict):
    """A reduction's recorded signature must be the one of its operand, and
    (strict) not nest in a reduction of another signature."""
    want = attrs.get('sig')
    if want is None or tuple(want) != base_sig:
        raise Invalid('reduction signature')
    if strict and a.sig is not None and a.sig != base_sig:
        raise Invalid('nested reduction of another signature')


MIXED = ('mixed',)


def union_sig(nodes, strict=True):
    """The signature of a value made of `nodes`. Strict (what pkc fused in
    one group before it buffered intermediates; the single-group kernels
    keep to it): at most one signature. Otherwise several give MIXED."""
    sig = None
    for n in nodes:
        if n.sig is not None:
            if sig is None:
                sig = n.sig
            elif sig != n.sig:
                if strict:
                    raise Invalid('two reduction signatures')
                sig = MIXED
    return sig


def is_softmax_exp(a, sig):
    """a is exp(v - max(v, ...)) with max over the same signature."""
    if a.op != 'exp' or a.args[0].op != 'sub':
        return False
    v, m = a.args[0].args
    return m.op == 'max' and m.args[0] is v and m.sig == sig


def interval_mul(a, b):
    c = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
    return min(c), max(c)


def check_range(dtype, lo, hi):
    if dtype in FLOATS:
        if max(abs(lo), abs(hi)) > FMAX[dtype]:
            raise Invalid('float range')
    elif dtype in INTS:
        if max(abs(lo), abs(hi)) > IMAX[dtype]:
            raise Invalid('int range')


def int_result(dtype, lo, hi):
    """The range of an integer result whose exact value lies in [lo, hi]:
    itself while it is safely inside the type (IMAX), else the type's whole
    range: signed integer arithmetic, sums and products wrap (language.md
    §3), so such a value may land anywhere. Its arithmetic wraps again."""
    if max(abs(lo), abs(hi)) > IMAX[dtype]:
        return TYPE_RANGE[dtype]
    return lo, hi


def check_wide_to_float(args, t):
    """A float operation does not take an integer operand beyond 2^24
    implicitly (wide data, wrapped results): its magnitude would make the
    float bounds vacuous (the batches' loose-bound cap), and wide integers
    are there for the integer arithmetic. An explicit cast may convert them."""
    if t in FLOATS and any(a.dtype in INTS and a.mag() > 2.0 ** 24
                           for a in args):
        raise Invalid('wide integer in float arithmetic')


def result_range(dtype, lo, hi):
    """check_range for floats, int_result for integers."""
    if dtype in INTS:
        return int_result(dtype, lo, hi)
    check_range(dtype, lo, hi)
    return lo, hi


def make_node(op, args, attrs=None, strict=True):
    """The node of `op` applied to `args`, or Invalid. `strict`: keep to one
    fused group's rules (one reduction signature per value, no reduction of
    another signature's value, a matmul's operands without reductions or
    matmuls); without it only what the language itself requires (pkc
    buffers the rest between groups)."""
    attrs = attrs or {}
    arrays = [a for a in args if not a.weak]
    nan = any(a.nan for a in args)
    exact = all(a.exact for a in args)
    sig = union_sig(args, strict)

    def shape_of(ns):
        s = ()
        for n in ns:
            s = bcast(s, n.shape)
            if s is None:
                raise Invalid('shapes')
        return s

    if op in ('add', 'sub', 'mul', 'div', 'rem'):
        a, b = args
        if a.weak and b.weak:
            t = usual(a.dtype, b.dtype)
            weak = True
        else:
            t = promote(args)
            weak = False
        if t == BOOL:
            t = I32
        if a.dtype == BOOL or b.dtype == BOOL:
            t = usual(t, I32) if t not in FLOATS else t
        check_wide_to_float(args, t)
        shape = shape_of(args)
        if op == 'add':
            lo, hi = a.lo + b.lo, a.hi + b.hi
        elif op == 'sub':
            lo, hi = a.lo - b.hi, a.hi - b.lo
            # x - max(x) <= 0 and x - min(x) >= 0 (softmax's shift)
            if b.op in ('max', 'min') and b.args[0] is a:
                if b.op == 'max':
                    hi = 0.0
                else:
                    lo = 0.0
        elif op == 'mul':
            lo, hi = interval_mul(a, b)
            if a is b:  # a square
                lo = max(lo, 0.0)
        elif op == 'div':
            if t in INTS:
                # C++ truncation: |a / b| <= |a|; a zero divisor gives 0
                # (pk::scalar::div), so any divisor will do.
                m = a.mag()
                lo, hi = -m, m
                if a.attrs.get('sat') and a.dtype == t:
                    # a saturated dividend (INT_MIN / -1 wraps): the type's
                    # range, like the dividend's
                    return Node(op, args, t, weak, shape_of(args), a.lo,
                                a.hi, nan, exact, sig, {'sat': True})
            elif b.lo <= 0 <= b.hi:
                raise Invalid('denominator may be 0')
            elif min(abs(b.lo), abs(b.hi)) < 1e-3:
                raise Invalid('denominator too small')
            else:
                c = [a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi]
                lo, hi = min(c), max(c)
        else:  # rem
            if t not in INTS:
                raise Invalid('% on floats')
            # |a % b| <= min(|a|, |b|); a zero modulus gives 0.
            m = min(a.mag(), max(abs(b.lo), abs(b.hi)))
            lo, hi = -m, m
        lo, hi = result_range(t, lo, hi)
        return Node(op, args, t, weak, shape, lo, hi, nan, exact, sig)

    if op == 'neg':
        (a,) = args
        t = neg_t(a.dtype)
        lo, hi = -a.hi, -a.lo
        if t in INTS:  # -INT_MIN wraps to INT_MIN
            lo, hi = int_result(t, lo, hi)
        return Node(op, args, t, a.weak, a.shape, lo, hi, nan, exact, sig)
    if op == 'abs':
        (a,) = args
        t = a.dtype if a.dtype in FLOATS else neg_t(a.dtype)
        if a.lo >= 0:
            lo, hi = a.lo, a.hi
        elif a.hi <= 0:
            lo, hi = -a.hi, -a.lo
        else:
            lo, hi = 0.0, a.mag()
        if t in INTS:  # abs(INT_MIN) wraps to INT_MIN
            lo, hi = int_result(t, lo, hi)
        return Node(op, args, t, False, a.shape, lo, hi, nan, exact, sig)
    if op in UNARY_MATH:
        (a,) = args
        if a.weak:
            raise Invalid('math on a scalar')
        t = math_t(a.dtype)
        check_wide_to_float(args, t)
        lo, hi = a.lo, a.hi
        ex = False
        if op in ('exp', 'expm1'):
            if hi > (60 if t == F32 else 600):
                raise Invalid('exp overflow')
            f = math.exp if op == 'exp' else math.expm1
            lo, hi = f(max(lo, -700)), f(hi)
        elif op == 'exp2':
            if hi > (80 if t == F32 else 900):
                raise Invalid('exp2 overflow')
            lo, hi = 2.0 ** max(lo, -1000), 2.0 ** hi
        elif op in ('log', 'log2'):
            if lo < 1e-7:
                raise Invalid('log domain')
            f = math.log if op == 'log' else math.log2
            lo, hi = f(lo), f(hi)
        elif op == 'log1p':
            if lo < 0:
                raise Invalid('log1p domain')
            lo, hi = math.log1p(lo), math.log1p(hi)
        elif op == 'sqrt':
            if lo < 0:
                raise Invalid('sqrt domain')
            lo, hi = math.sqrt(lo), math.sqrt(hi)
            ex = exact
        elif op == 'rsqrt':
            if lo < 1e-7:
                raise Invalid('rsqrt domain')
            lo, hi = 1 / math.sqrt(hi), 1 / math.sqrt(lo)
        elif op in ('sin', 'cos'):
            if max(abs(lo), abs(hi)) > 1e4:
                raise Invalid('sin argument')
            lo, hi = -1.0, 1.0
        elif op == 'tanh':
            lo, hi = math.tanh(max(lo, -50)), math.tanh(min(hi, 50))
        elif op == 'erf':
            lo, hi = math.erf(max(lo, -50)), math.erf(min(hi, 50))
        elif op == 'sigmoid':
            lo, hi = 0.0, 1.0
        elif op in ('floor', 'ceil'):
            if not exact:
                raise Invalid('floor of an inexact value')
            lo, hi = math.floor(lo), math.ceil(hi)
            ex = True
        return Node(op, args, t, False, a.shape, lo, hi, nan, ex, sig)
    if op == 'pow':
        a, b = args
        if a.weak or not b.weak or b.op != 'lit':
            raise Invalid('pow form')
        if a.lo < 0.25:
            raise Invalid('pow base')
        t = math_t(promote(args))
        c = b.attrs['value']
        vals = [a.lo ** c, a.hi ** c]
        lo, hi = min(vals), max(vals)
        check_range(t, lo, hi)
        return Node(op, args, t, False, a.shape, lo, hi, nan, False, sig)
    if op in ('maximum', 'minimum'):
        if not arrays:
            raise Invalid('needs an array')
        a, b = args
        t = promote(args)
        check_wide_to_float(args, t)
        f = max if op == 'maximum' else min
        lo, hi = f(a.lo, b.lo), f(a.hi, b.hi)
        return Node(op, args, t, False, shape_of(args), lo, hi, nan, exact, sig)
    if op == 'clamp':
        x, l, h = args
        if not arrays:
            raise Invalid('needs an array')
        t = promote(args)
        lo = min(max(x.lo, l.lo), h.hi)
        hi = min(max(x.hi, l.hi), h.hi)
        lo = min(lo, h.lo)
        return Node(op, args, t, False, shape_of(args), min(lo, hi),
                    max(lo, hi), nan, exact, sig)
    if op in CMPS:
        if not arrays:
            raise Invalid('needs an array')
        if not exact:
            raise Invalid('comparison of inexact values')
        return Node(op, args, BOOL, False, shape_of(args), 0, 1, False, True,
                    sig)
    if op in ('and', 'or'):
        if any(a.dtype != BOOL for a in args) or not arrays:
            raise Invalid('logic needs bools')
        return Node(op, args, BOOL, False, shape_of(args), 0, 1, False, True,
                    sig)
    if op == 'not':
        (a,) = args
        if a.dtype != BOOL or a.weak:
            raise Invalid('! needs a bool array')
        return Node(op, args, BOOL, False, a.shape, 0, 1, False, True, sig)
    if op == 'where':
        m, a, b = args
        if m.dtype != BOOL or m.weak or not m.exact:
            raise Invalid('where mask')
        if a.weak and b.weak:
            t = usual(a.dtype, b.dtype)
        else:
            t = promote([a, b])
        if a.dtype == BOOL and b.dtype == BOOL:
            t = I32
        check_wide_to_float([a, b], t)
        lo, hi = min(a.lo, b.lo), max(a.hi, b.hi)
        return Node(op, args, t, False, shape_of(args), lo, hi,
                    a.nan or b.nan, a.exact and b.exact, sig)
    if op == 'cast':
        (a,) = args
        to = attrs['to']
        if a.weak:
            raise Invalid('cast of a scalar')
        lo, hi = a.lo, a.hi
        if to in (F16, BF16):
            # cast<pk::half>(v): v rounded to 16 bits, a float value
            if a.dtype not in FLOATS:
                raise Invalid('16-bit cast of an integer')
            if to == F16 and max(abs(lo), abs(hi)) > F16_STORE_MAX:
                raise Invalid('beyond half\'s range')
            lo, hi = round16_range(lo, hi, to)
            return Node(op, args, F32, False, a.shape, lo, hi, a.nan, a.exact,
                        sig, dict(attrs))
        if to in INTS and a.dtype in FLOATS:
            if not a.exact:
                raise Invalid('float to int needs an exact value')
            if a.nan or max(abs(lo), abs(hi)) > IMAX[to] / 2:
                # saturating (NaN 0, the type's ends beyond it): the range
                # is the type's, so no integer arithmetic can take it
                # (check_range), only selections, comparisons, stores and
                # divisions (INT_MIN / -1 wraps)
                tlo, thi = TYPE_RANGE[to]
                lo = max(tlo, float(math.trunc(max(lo, -1e300))))
                hi = min(thi, float(math.trunc(min(hi, 1e300))))
                if a.nan:
                    lo, hi = min(lo, 0.0), max(hi, 0.0)
                attrs = dict(attrs, sat=True)
            else:
                lo, hi = float(math.trunc(lo)), float(math.trunc(hi))
        elif to == BOOL:
            if a.dtype in FLOATS and not a.exact:
                raise Invalid('float to bool needs an exact value')
            lo, hi = 0.0, 1.0
        elif to == I32 and a.dtype == I64:
            lo, hi = int_result(I32, lo, hi)  # modulo 2^32
        elif to == F32 and a.dtype == F64:
            check_range(F32, lo, hi)
        return Node(op, args, to, False, a.shape, lo, hi, a.nan, a.exact, sig,
                    dict(attrs))
    if op in REDS:
        (a,) = args
        if a.weak or a.rank == 0:
            raise Invalid('reduce a scalar')
        axis, keep = attrs.get('axis'), attrs.get('keep', False)
        if axis is None:
            shape = ()
            base_sig = (a.shape, 'all')
        else:
            shape, base_sig = reduced_over(a, axis, keep)
        check_signature(a, attrs, base_sig, strict)
        t = a.dtype
        ex = exact
        lo, hi = a.lo, a.hi
        nan_out = nan
        if op == 'sum':
            if t == BOOL:
                t = I64
                lo, hi = 0.0, NMAX
            else:
                lo, hi = min(0.0, lo * NMAX), max(0.0, hi * NMAX)
                if is_softmax_exp(a, base_sig):
                    # sum(exp(v - max(v))) >= 1 (0 only over an empty axis,
                    # where no element uses it)
                    lo = 1.0
            if t in FLOATS:
                ex = False
            lo, hi = result_range(t, lo, hi)
        elif op == 'mean':
            if t in INTS and max(abs(lo), abs(hi)) * NMAX > 2.0 ** 52:
                # the int64 sum may wrap, or be rounded to double (NumPy
                # sums in double: the twin would round differently)
                raise Invalid('int mean range')
            t = math_t(t)
            ex = False
            nan_out = True  # an empty axis gives NaN
        return Node(op, args, t, False, shape, lo, hi, nan_out, ex, base_sig,
                    dict(attrs))
    if op == 'expand_dims':
        (a,) = args
        ax = attrs['axis']
        r = a.rank + 1
        if not (-r <= ax < r) or a.weak:
            raise Invalid('expand_dims axis')
        s = list(a.shape)
        s.insert(ax % r, 1)
        return Node(op, args, a.dtype, False, s, a.lo, a.hi, nan, exact, sig,
                    dict(attrs))
    if op == 'squeeze':
        (a,) = args
        ax = attrs['axis']
        if a.weak or not (-a.rank <= ax < a.rank) or a.shape[ax % a.rank] != 1:
            raise Invalid('squeeze')
        s = list(a.shape)
        del s[ax % a.rank]
        return Node(op, args, a.dtype, False, s, a.lo, a.hi, nan, exact, sig,
                    dict(attrs))
    if op == 'broadcast_to':
        a, target = args
        if not fits(a.shape, target.shape):
            raise Invalid('broadcast_to')
        t = a.dtype
        return Node(op, args, t, False, target.shape, a.lo, a.hi, a.nan,
                    a.exact, a.sig, dict(attrs))
    if op == 'transpose':
        (a,) = args
        if a.weak or a.rank < 2:
            raise Invalid('transpose needs rank >= 2')
        s = list(a.shape)
        s[-1], s[-2] = s[-2], s[-1]
        return Node(op, args, a.dtype, False, s, a.lo, a.hi, nan, exact, sig,
                    dict(attrs))
    if op == 'matmul':
        # [B?, M, K] x [B?, K, N] -> [B?, M, N] (pkc: docs/design.md,
        # "Matmul"): operands of one float or integer type. The result gets
        # a signature of its own, ('matmul', id). Strict (single-group
        # kernels): no reduction or matmul in the operands' cones (a
        # prologue is elementwise), and the signature keeps the result away
        # from reductions, other matmuls and transposes (one matmul group).
        # Multi-group kernels have all of those; pkc buffers them.
        a, b = args
        if a.weak or b.weak or a.rank not in (2, 3) or b.rank not in (2, 3):
            raise Invalid('matmul ranks')
        if strict and (b.sig is not None or (a.sig is not None and not (
                attrs.get('attn') and a.sig == (a.shape, a.rank - 1)))):
            # attention's second matmul takes a softmax over the last axis
            raise Invalid('matmul of a reduction or a matmul')
        if a.dtype != b.dtype or a.dtype not in (F32, F64, I32, I64):
            raise Invalid('matmul operand types')
        if a.shape[-1] != b.shape[-2] or 1 in (a.shape[-1], a.shape[-2],
                                              b.shape[-1]):
            raise Invalid('matmul inner extents')
        ba = a.shape[0] if a.rank == 3 else 1
        bb = b.shape[0] if b.rank == 3 else 1
        if ba != bb and 1 not in (ba, bb):
            raise Invalid('matmul batch extents')
        shape = (a.shape[-2], b.shape[-1])
        if a.rank == 3 or b.rank == 3:
            shape = (bb if ba == 1 else ba,) + shape
        t = a.dtype
        plo, phi = interval_mul(a, b)
        lo, hi = min(0.0, plo * NMAX), max(0.0, phi * NMAX)
        lo, hi = result_range(t, lo, hi)  # integer products and sums wrap
        # attention's first matmul (attrs 'scores') is the operand of a
        # softmax over its last axis: it gets that reduction's signature
        sig = (shape, len(shape) - 1) if attrs.get('scores') else \
            ('matmul', attrs['mm'])
        return Node(op, args, t, False, shape, lo, hi, nan,
                    exact and t in INTS, sig, dict(attrs))
    if op == 'index':
        (a,) = args
        ax = attrs['axis']
        if a.weak or not (-a.rank <= ax < a.rank):
            raise Invalid('index axis')
        return Node(op, args, I64, False, a.shape, 0, NMAX, False, True,
                    a.sig, dict(attrs))
    if op in ARGREDS:
        # The first position of the extreme: only of exact values (which
        # eager and compiled code compute bit for bit), so that a near-tie
        # cannot pick another position (docs/fuzzing.md).
        (a,) = args
        if a.weak or a.rank == 0:
            raise Invalid('arg-reduction of a scalar')
        if not a.exact:
            raise Invalid('arg-reduction of an inexact value')
        shape, base_sig = reduced_over(a, attrs['axis'],
                                       attrs.get('keep', False))
        check_signature(a, attrs, base_sig, strict)
        return Node(op, args, I64, False, shape, 0, NMAX, False, True,
                    base_sig, dict(attrs))
    if op in VIEWS or op == 'concat':
        # Views move values: range, NaN, exactness and signature are their
        # value operand's (args[0]; further args only give extents,
        # 'vext'). 'concat' joins its parts (all of them values).
        parts = args if op == 'concat' else args[:1]
        a = parts[0]
        if any(x.weak for x in parts):
            raise Invalid('view of a scalar')
        if op == 'permute_dims':
            perm = attrs['perm']
            if sorted(perm) != list(range(a.rank)):
                raise Invalid('permutation')
            shape = tuple(a.shape[p] for p in perm)
        elif op == 'reshape':
            shape = tuple(attrs['shape'])
        elif op == 'vslice':
            if not 0 <= attrs['axis'] < a.rank:
                raise Invalid('slice axis')
            shape = with_dim(a.shape, attrs['axis'], attrs['dim'])
        elif op == 'window':
            shape = tuple(a.shape)
            for (ax, _, _, dim) in attrs['wins']:
                if not 0 <= ax < len(shape):
                    raise Invalid('window axis')
                shape = with_dim(shape, ax, dim)
        else:  # concat
            ax = attrs['axis']
            if a.rank == 0 or not 0 <= ax < a.rank:
                raise Invalid('concat axis')
            for x in parts[1:]:
                if x.dtype != a.dtype:
                    raise Invalid('concat of two element types')
                if x.rank != a.rank or any(
                        d != e for i, (d, e) in enumerate(zip(x.shape, a.shape))
                        if i != ax):
                    raise Invalid('concat extents')
            shape = with_dim(a.shape, ax, attrs['dim'])
        return Node(op, args, a.dtype, False, shape,
                    min(x.lo for x in parts), max(x.hi for x in parts),
                    any(x.nan for x in parts), all(x.exact for x in parts),
                    union_sig(parts, strict), dict(attrs))
    if op == 'repeat':
        # repeat(v, count, axis): each element of v count times along axis
        # (args[1:] only give the count's extents, 'vext'); the extent
        # is attrs['dim'], the generator's.
        a = args[0]
        if a.weak:
            raise Invalid('repeat of a scalar')
        ax = attrs['axis']
        if not 0 <= ax < a.rank:
            raise Invalid('repeat axis')
        return Node(op, args, a.dtype, False,
                    with_dim(a.shape, ax, attrs['dim']), a.lo, a.hi, a.nan,
                    a.exact, a.sig, dict(attrs))
    if op == 'take':
        # take(table, idx, axis): a gathered load of a table ref by indices
        # from an In ref or an int64_t scalar parameter (what pkc compiles).
        t, i = args
        if t.weak or t.op != 'load' or i.dtype not in INTS or \
                i.op not in ('load', 'sparam'):
            raise Invalid('take operands')
        ax = attrs['axis']
        if not 0 <= ax < t.rank:
            raise Invalid('take axis')
        ishape = () if i.weak else tuple(i.shape)
        shape = tuple(t.shape[:ax]) + ishape + tuple(t.shape[ax + 1:])
        return Node(op, args, t.dtype, False, shape, t.lo, t.hi, t.nan,
                    t.exact, t.sig, dict(attrs))
    if op == 'wstore':
        # (Interp) a ref's contents after a store into a window of it:
        # args (the contents before, the value stored, converted)
        cur, v = args
        lo, hi = conv_range(v, cur.dtype, attrs.get('storage'))
        return Node(op, args, cur.dtype, False, cur.shape, min(lo, cur.lo),
                    max(hi, cur.hi), cur.nan or v.nan, cur.exact and v.exact,
                    cur.sig, dict(attrs))
    raise AssertionError(op)


# --------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------

def atomic(s):
    """Wraps s in parentheses unless it is a name, call or literal."""
    depth = 0
    for i, ch in enumerate(s):
        if ch == '(':
            depth += 1
        elif ch == ')':
            depth -= 1
        elif depth == 0 and ch in ' +-*/%<>=!&|' and not (i == 0 and ch == '-'):
            return '(%s)' % s
    if s.startswith('-') or s.startswith('!'):
        return '(%s)' % s
    return s


def print_op(op, args, attrs):
    """C++ text of an op applied to argument texts."""
    if op in BINOPS:
        return '%s %s %s' % (atomic(args[0]), BINOPS[op], atomic(args[1]))
    if op == 'neg':
        return '-%s' % atomic(args[0])
    if op == 'not':
        return '!%s' % atomic(args[0])
    if op == 'cast':
        return 'cast<%s>(%s)' % (CTYPE[attrs['to']], args[0])
    if op in REDS or op in ARGREDS:
        if attrs.get('axis') is None:
            return '%s(%s)' % (op, args[0])
        ax = attrs.get('axis_text', attrs['axis'])
        if attrs.get('keep'):
            return '%s(%s, %s, keepdims)' % (op, args[0], ax)
        return '%s(%s, %s)' % (op, args[0], ax)
    if op in ('expand_dims', 'squeeze', 'index'):
        return '%s(%s, %d)' % (op, args[0], attrs['axis'])
    if op == 'permute_dims':
        return 'permute_dims(%s, {%s})' % (
            args[0], ', '.join(str(x) for x in attrs['axes']))
    if op == 'reshape':
        return 'reshape(%s, {%s})' % (
            args[0], ', '.join(bx_text(d, args) for d in attrs['dims']))
    if op == 'vslice':
        return 'slice(%s, %s, %s, %s)' % (
            args[0], attrs.get('axis_text', attrs['axis']),
            bx_text(attrs['b'], args), bx_text(attrs['e'], args))
    if op == 'concat':
        return 'concat({%s}, %s)' % (', '.join(args),
                                     attrs.get('axis_text', attrs['axis']))
    if op == 'repeat':
        return 'repeat(%s, %s, %s)' % (args[0], bx_text(attrs['count'], args),
                                       attrs.get('axis_text', attrs['axis']))
    if op == 'take':
        return 'take(%s, %s, %s)' % (args[0], args[1],
                                     attrs.get('axis_text', attrs['axis']))
    return '%s(%s)' % (op, ', '.join(args))


# --------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------

class Ctx:
    """Where a value is generated: the shape it must broadcast to, the
    reduction signature allowed in its cone (None: no reduction), how deep
    inside reductions it is, and whether it must be exact."""

    def __init__(self, shape, sig=None, level=0, exact=False, scope='kernel',
                 dtype=None):
        self.shape = tuple(shape)
        self.sig = sig
        self.level = level
        self.exact = exact
        self.scope = scope
        self.dtype = dtype

    def but(self, **kw):
        c = Ctx(self.shape, self.sig, self.level, self.exact, self.scope,
                self.dtype)
        for k, v in kw.items():
            setattr(c, k, v)
        return c


class Kernel:
    def __init__(self, name, index, seed):
        self.name = name
        self.index = index
        self.seed = seed
        self.params = []
        self.helpers = []
        self.stmts = []
        self.policy = ''
        self.universe = ()
        self.extra_syms = []
        self.notes = []
        self.multi = False


class Interp:
    """Runs a kernel's statements symbolically: nodes in creation order (the
    shadow's program), the value of every local and ref."""

    def __init__(self, kernel):
        self.k = kernel
        self.nodes = []
        self.locals = {}
        self.refval = {}
        self.loopvars = {}
        self.hparams = []
        self.stores = []  # (param, value node) in order
        # the values stored into whole refs (`o[_] = v`), each of which
        # must broadcast to its ref (a window store's is checked by its
        # wstore node)
        self.whole_stores = []
        self.memo = {}
        # the generator's single-group rules (make_node's strict); a kernel
        # that was generated is replayed without them
        self.strict = False
        for p in kernel.params:
            if p.kind in ('in', 'inout'):
                self.refval[p.name] = None  # initial contents

    def add(self, n):
        n.id = len(self.nodes)
        self.nodes.append(n)
        return n

    def param(self, name):
        for p in self.k.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def load(self, p):
        v = self.refval.get(p.name, 'unset')
        if p.kind == 'out' and v == 'unset':
            raise Invalid('read of an Out before it is written')
        if v is None or v == 'unset':
            if p.kind == 'scalar':
                lo, hi = p.lo, p.hi
                return self.add(Node('sparam', [], p.dtype, True, (), lo, hi,
                                     False, True, None, {'param': p.name}))
            n = Node('load', [], p.dtype, False, p.shape, p.lo, p.hi, False,
                     True, None, {'param': p.name})
            return self.add(n)
        # the value last stored, converted and broadcast to the ref
        return self.add(Node('refread', [v], p.dtype, False, p.shape,
                             *conv_range(v, p.dtype, p.storage), v.nan,
                             v.exact, v.sig,
                             {'param': p.name, 'storage': p.storage}))

    def inst(self, e):
        """The node of e; an expression object used twice in one statement
        (x * x) is one node."""
        key = id(e)
        if key in self.memo:
            return self.memo[key]
        n = self.inst1(e)
        self.memo[key] = n
        return n

    def inst1(self, e):
        if e.kind == 'lit':
            l = e.a
            n = Node('lit', [], l.dtype, True, (), l.value, l.value, False,
                     True, None, {'text': l.text, 'value': l.value})
            return self.add(n)
        if e.kind == 'loopconst':
            var, off, dt = e.a
            v = self.loopvars[var] + off
            text = lit(dt, v).text
            n = Node('lit', [], dt if dt in FLOATS else I32, True, (), v, v,
                     False, True, None, {'text': text, 'value': v})
            return self.add(n)
        if e.kind == 'load':
            return self.load(self.param(e.a))
        if e.kind == 'wload':
            # a window of a ref, read: x.slice(ax, b, e)...[_]
            cur = self.load(self.param(e.a))
            return self.add(make_node('window', [cur], dict(
                e.attrs, param=e.a), self.strict))
        if e.kind == 'sparam':
            return self.load(self.param(e.a))
        if e.kind == 'reftarget':
            p = self.param(e.a)
            return self.add(Node('refshape', [], p.dtype, False, p.shape, 0,
                                 0, False, True, None, {'param': p.name}))
        if e.kind == 'local':
            if e.a not in self.locals:
                raise Invalid('unknown local %s' % e.a)
            return self.locals[e.a]
        if e.kind == 'hparam':
            return self.hparams[e.a]
        if e.kind == 'op':
            args = [self.inst(a) for a in e.args]
            attrs = dict(e.attrs)
            return self.add(make_node(e.a, args, attrs, self.strict))
        if e.kind == 'call':
            h = next(x for x in self.k.helpers if x.name == e.a)
            args = [self.inst(a) for a in e.args]
            saved_h, saved_m = self.hparams, self.memo
            self.hparams = list(args)
            self.memo = {}
            try:
                for (nm, ex) in h.locals:
                    self.hparams.append(self.inst(ex))
                body = self.inst(h.ret)
            finally:
                self.hparams, self.memo = saved_h, saved_m
            return body
        raise AssertionError(e.kind)

    def run(self, stmts):
        for s in stmts:
            self.stmt(s)

    def stmt(self, s):
        self.memo = {}
        if s.kind == 'decl':
            if s.name in self.locals:
                raise Invalid('redeclared')
            self.locals[s.name] = self.inst(s.expr)
        elif s.kind == 'assign':
            if s.name not in self.locals:
                raise Invalid('assign to unknown local')
            old = self.locals[s.name]
            n = self.inst(s.expr)
            if n.dtype != old.dtype or n.weak != old.weak:
                raise Invalid('assignment changes the type')
            self.locals[s.name] = n
        elif s.kind == 'store':
            p = self.param(s.param)
            n = self.inst(s.expr)
            check_store(n, p)
            self.refval[p.name] = n
            self.stores.append((p, n))
            self.whole_stores.append((p, n))
        elif s.kind == 'wstore':
            # p.slice(ax, b, e)[_] = v (or += v): the window's part of the
            # ref becomes v, broadcast and converted; the rest keeps what
            # the ref held (an Out must have been written whole before)
            p = self.param(s.param)
            cur = self.load(p)
            n = self.inst(s.expr)
            wattrs = {'param': p.name, 'wins': s.wins}
            if s.compound:
                w = self.add(make_node('window', [cur], dict(wattrs),
                                       self.strict))
                n = self.add(make_node('add', [w, n], None, self.strict))
            wshape = make_node('window', [cur], dict(wattrs)).shape
            check_store(n, Param(p.name, p.kind, p.dtype, wshape,
                                 storage=p.storage))
            ((ax, b, e, _),) = s.wins
            self.refval[p.name] = self.add(make_node(
                'wstore', [cur, n], {'param': p.name, 'axis': ax, 'b': b,
                                     'e': e, 'storage': p.storage}))
            self.stores.append((p, n))
        elif s.kind == 'sdecl':
            if s.name in self.locals:
                raise Invalid('redeclared')
            n = self.inst(s.expr)
            if not n.weak:
                raise Invalid('scalar local of an array')
            self.locals[s.name] = n
        elif s.kind == 'if':
            for b in s.body:
                self.stmt(b)
        elif s.kind == 'loop':
            for i in range(s.trip):
                self.loopvars[s.var] = i
                for b in s.body:
                    self.stmt(b)
            self.loopvars.pop(s.var, None)
        else:
            raise AssertionError(s.kind)


def round16_range(lo, hi, storage):
    """The range of values of [lo, hi] rounded to a 16-bit type: a little
    wider, and a bound of one sign may become 0 (never the other sign)."""
    def widen(x, up):
        w = abs(x) * 2 * UNIT16[storage] + 2 * TINY16[storage]
        y = x + w if up else x - w
        return 0.0 if (x > 0 and y < 0) or (x < 0 and y > 0) else y
    return widen(lo, False), widen(hi, True)


def conv_range(n, to, storage=None):
    lo, hi = n.lo, n.hi
    if storage:
        return round16_range(lo, hi, storage)
    if to == BOOL:
        return 0.0, 1.0
    if to in INTS and n.dtype in FLOATS:
        return float(math.trunc(lo)), float(math.trunc(hi))
    if to in INTS:
        return int_result(to, lo, hi)
    return lo, hi


def check_store(n, p):
    if p.kind not in ('out', 'inout'):
        raise Invalid('store to an In')
    if n.rank > p.rank or not fits(n.shape, p.shape):
        raise Invalid('stored value does not fit the ref')
    if p.storage == F16 and max(abs(n.lo), abs(n.hi)) > F16_STORE_MAX:
        raise Invalid('beyond half\'s range')
    f, t = n.dtype, p.dtype
    if f == t:
        return
    if t in FLOATS:
        if f == F64 and t == F32:
            check_range(F32, n.lo, n.hi)
        return
    if t == BOOL:
        if f in FLOATS and not n.exact:
            raise Invalid('inexact to bool')
        return
    if f in FLOATS:
        if not n.exact or n.nan or max(abs(n.lo), abs(n.hi)) > IMAX[t] / 2:
            raise Invalid('float to int store')
        return
    # an int64 value stored into an int32 ref wraps (modulo 2^32); the
    # read-back's range is the ref type's (conv_range)


# --------------------------------------------------------------------------
# The generator
# --------------------------------------------------------------------------

FLOAT_LITS = ['0.5', '0.25', '1.5', '2.0', '3.0', '0.1', '0.75', '1.25',
              '0.125', '4.0', '0.3', '10.0', '1.0', '0.01']
INT_LITS = [1, 2, 3, 5, 7, 10, -1, -3]


class Gen:
    def __init__(self, seed, index, prefix='k'):
        self.seed = seed
        self.index = index
        self.rng = random.Random('pk-fuzz:%s:%d' % (seed, index))
        self.k = Kernel('%s%d' % (prefix, index), index, seed)
        self.it = Interp(self.k)
        # multi-group kernel (Builder.build): values may combine reduction
        # signatures and matmuls in any way; pkc splits the kernel into
        # groups with buffers between them
        self.mg = False
        self.it.strict = True
        self.n_mm = 0
        self.counters = {}
        self.budget = 0

    # -- undo -------------------------------------------------------------
    def snapshot(self):
        return (len(self.it.nodes), len(self.k.params), len(self.k.helpers),
                dict(self.counters))

    def restore(self, mark):
        n, p, h, c = mark
        del self.it.nodes[n:]
        for q in self.k.params[p:]:
            self.it.refval.pop(q.name, None)
        del self.k.params[p:]
        del self.k.helpers[h:]
        self.counters = c

    # -- names and params -------------------------------------------------
    def fresh(self, prefix):
        n = self.counters.get(prefix, 0)
        self.counters[prefix] = n + 1
        return '%s%d' % (prefix, n)

    def add_param(self, kind, dtype, shape, **kw):
        prefix = {'in': 'x', 'out': 'o', 'inout': 'h', 'scalar': 's'}[kind]
        p = Param(self.fresh(prefix), kind, dtype, shape, **kw)
        if kind in ('in', 'inout', 'scalar') and 'lo' not in kw:
            p.lo, p.hi = data_range(dtype, self.rng)
        if kind != 'scalar' and dtype == F32:
            r = random.Random('pk-fuzz-16:%s:%d:%s' % (self.seed, self.index,
                                                       p.name))
            if r.random() < P_STORAGE16:
                p.storage = r.choice([F16, BF16])
        self.k.params.append(p)
        if kind in ('in', 'inout'):
            self.it.refval[p.name] = None
        return p

    def choice(self, seq):
        return seq[self.rng.randrange(len(seq))]

    def wchoice(self, items):
        tot = sum(w for _, w in items)
        r = self.rng.random() * tot
        for v, w in items:
            r -= w
            if r < 0:
                return v
        return items[-1][0]

    def chance(self, p):
        return self.rng.random() < p

    # -- expression helpers -----------------------------------------------
    def mk(self, kind, a=None, args=None, attrs=None):
        """An expression, instantiated now (Invalid if not valid here)."""
        e = Expr(kind, a, args, attrs)
        if kind == 'op':
            nodes = [x.node for x in args]
            n = make_node(a, nodes, dict(attrs or {}), self.it.strict)
            e.node = self.it.add(n)
        elif kind == 'call':
            e.node = self.it.inst(e)
        else:
            self.it.memo = {}
            e.node = self.it.inst(e)
        return e

    def op(self, op, *args, **attrs):
        return self.mk('op', op, list(args), attrs)

    def literal(self, dtype):
        if dtype in FLOATS:
            v = float(self.choice(FLOAT_LITS))
            if self.chance(0.2):
                v = -v
            if dtype == F32:
                # a double literal with a float array stays float (weak):
                # its value is the double's, converted where it meets a
                # float array (the twins' F.conv); rounding it here was
                # wrong where it met a double instead (long mode, seed
                # 9112 k34: `0.1 + ceil(x2[_] + x1[_])` with x1 double)
                if self.chance(0.25):
                    return self.mk('lit', lit(F64, v))
                return self.mk('lit', Lit(F32, f32round(v), lit(F32, v).text))
            return self.mk('lit', lit(F64, v))
        return self.mk('lit', lit(I32, self.choice(INT_LITS)))

    def fits_ctx(self, n, ctx):
        if not fits(n.shape, ctx.shape):
            return False
        if n.sig is not None and n.sig != ctx.sig and not self.mg:
            return False
        if ctx.exact and not n.exact:
            return False
        return True

    # -- leaves -------------------------------------------------------------
    def leaf(self, ctx, dtype=None, array=True):
        """A load, a local or a new input whose value fits ctx."""
        cands = []
        if ctx.scope == 'kernel':
            for nm, n in self.it.locals.items():
                if (self.fits_ctx(n, ctx) and not n.weak and
                        (dtype is None or n.dtype == dtype)):
                    cands.append(('local', nm))
            for p in self.k.params:
                if p.kind == 'scalar' or p.role == 'shape':
                    continue
                if (p.kind == 'out' and self.it.refval.get(p.name) in
                        (None, 'unset')):
                    continue
                if p.name not in self.it.refval:
                    continue
                v = self.it.refval[p.name]
                if not fits(p.shape, ctx.shape):
                    continue
                if v is not None and v != 'unset' and not self.fits_ctx(v, ctx):
                    continue
                if dtype is not None and p.dtype != dtype:
                    continue
                cands.append(('load', p.name))
        else:
            for i, n in enumerate(self.it.hparams):
                if self.fits_ctx(n, ctx) and (dtype is None or
                                              n.dtype == dtype):
                    cands.append(('hparam', i))
        if cands and (ctx.scope != 'kernel' or self.chance(0.75)):
            kind, a = self.choice(cands)
            return self.mk(kind, a)
        if ctx.scope != 'kernel':
            raise Invalid('no helper parameter fits')
        return self.new_input(ctx, dtype)

    def new_input(self, ctx, dtype=None, full=False):
        if ctx.scope != 'kernel':
            raise Invalid('no new inputs inside a helper')
        if dtype is None:
            dtype = self.wchoice([(F32, 70), (F64, 8), (I32, 10), (I64, 4),
                                  (BOOL, 8)])
        s = list(ctx.shape)
        if not full:
            # a suffix, some extents 1 (keepdims-like refs)
            r = self.rng.randint(0, len(s)) if self.chance(0.3) else len(s)
            s = s[len(s) - r:]
            s = [1 if (x != 1 and self.chance(0.08)) else x for x in s]
        p = self.add_param('in', dtype, tuple(s))
        return self.mk('load', p.name)

    def operand(self, ctx, depth, dtype=None):
        """An array, or (sometimes) a scalar: literal or scalar param."""
        r = self.rng.random()
        if r < 0.22 and not ctx.exact or r < 0.12:
            return self.literal(dtype or self.scalar_type_for(ctx))
        if r < 0.31 and ctx.scope == 'kernel' and not ctx.exact:
            return self.scalar_expr(ctx)
        if r < 0.28 and ctx.scope == 'kernel':
            sp = [p for p in self.k.params if p.kind == 'scalar']
            if sp and self.chance(0.6):
                return self.mk('sparam', self.choice(sp).name)
            t = self.wchoice([(F32, 6), (I32, 2), (F64, 1)])
            p = self.add_param('scalar', t, ())
            return self.mk('sparam', p.name)
        return self.gen(ctx, depth, dtype)

    def scalar_expr(self, ctx):
        """A weak scalar computed in plain C++: a scalar local, or an
        arithmetic of scalar parameters and literals (`s0 * 0.5f`, `0.1f *
        3.0`, whose C++ type is the usual arithmetic conversion)."""
        sl = [nm for nm, n in self.it.locals.items() if n.weak]
        if sl and self.chance(0.5):
            return self.mk('local', self.choice(sl))
        sp = [p for p in self.k.params if p.kind == 'scalar' and
              p.dtype in FLOATS]
        a = self.mk('sparam', self.choice(sp).name) if sp and \
            self.chance(0.6) else self.literal(F32)
        b = self.literal(self.choice([F32, F64]))
        if self.chance(0.5):
            a, b = b, a
        return self.op(self.choice(['mul', 'add', 'sub']), a, b)

    def scalar_type_for(self, ctx):
        if ctx.dtype in INTS or ctx.dtype == BOOL:
            return I32
        return F32 if self.chance(0.85) else F64

    # -- expressions ----------------------------------------------------------
    def gen(self, ctx, depth, dtype=None):
        """An array expression whose node fits ctx."""
        for _ in range(10):
            mark = self.snapshot()
            try:
                if depth <= 0 or self.budget <= 0 or self.chance(0.18):
                    e = self.leaf(ctx, dtype)
                else:
                    self.budget -= 1
                    e = self.gen_op(ctx, depth)
                if e.node.weak:
                    raise Invalid('scalar')
                if dtype is not None and e.node.dtype != dtype:
                    raise Invalid('dtype')
                if not self.fits_ctx(e.node, ctx):
                    raise Invalid('does not fit')
                return e
            except Invalid:
                self.restore(mark)
        e = self.leaf(ctx, dtype)
        if not self.fits_ctx(e.node, ctx) or e.node.weak:
            raise Invalid('no leaf fits')
        return e

    def gen_op(self, ctx, depth):
        cats = [('arith', 30), ('math', 16 if not ctx.exact else 3),
                ('div', 6), ('minmax', 6), ('where', 7), ('absneg', 4),
                ('cast', 4), ('shape', 3), ('index', 2)]
        if red_sig(ctx.sig) and ctx.level < 2:
            cats.append(('reduce', 30 if ctx.level == 0 else 10))
        if ctx.scope == 'kernel' and depth >= 2:
            cats.append(('helper', 4))
        if depth >= 2 and (ctx.scope == 'kernel' or ctx.shape):
            cats.append(('view', VIEW_WEIGHTS['view']))
        if ctx.scope == 'kernel':
            cats.append(('take', VIEW_WEIGHTS['take']))
            if ctx.shape:
                cats.append(('window', VIEW_WEIGHTS['window']))
        if self.mg and ctx.scope == 'kernel':
            # multi-group kernels: reductions of other signatures than the
            # context's, and matmuls, anywhere a value goes
            if ctx.level < 2 and ctx.shape:
                cats.append(('reduce2', 12 if ctx.level == 0 else 5))
            if len(ctx.shape) >= 2 and depth >= 2 and self.n_mm < 2:
                cats.append(('matmul', 3))
        cat = self.wchoice(cats)
        return getattr(self, 'g_' + cat)(ctx, depth)

    def g_arith(self, ctx, depth):
        a = self.gen(ctx, depth - 1)
        b = self.operand(ctx, depth - 1)
        op = self.wchoice([('add', 4), ('sub', 3), ('mul', 3)])
        if a.node.dtype == BOOL and (b.node.dtype == BOOL):
            op = 'add'
        if self.chance(0.5):
            a, b = b, a
        return self.op(op, a, b)

    def safe_den(self, ctx, depth, int_mode):
        """A denominator that is never 0 (nor tiny), except for integer
        division, where any integer will do ('raw': zeros and -1 among the
        divisors; language.md §3 defines x / 0 and x % 0 as 0)."""
        kind = self.wchoice([('abs', 5), ('square', 2), ('lit', 2),
                             ('exp', 0 if ctx.exact or int_mode else 1),
                             ('raw', 4 if int_mode else 0)])
        if kind == 'raw':
            y = self.gen(ctx, depth - 1)
            if y.node.dtype not in INTS:
                raise Invalid('int denominator')
            return y
        if kind == 'lit':
            if int_mode:
                return self.mk('lit', lit(I32, self.choice([2, 3, 5, 7])))
            v, t = self.choice([(0.5, '0.5f'), (2.0, '2.0f'), (3.0, '3.0f'),
                                (1.5, '1.5f'), (0.25, '0.25f'), (3.0, '3.0'),
                                (4, '4')])
            return self.mk('lit', tlit(v, t))
        y = self.gen(ctx, depth - 1)
        if int_mode and y.node.dtype not in INTS:
            raise Invalid('int denominator')
        if y.node.dtype == BOOL:
            raise Invalid('bool denominator')
        if int_mode:
            c = self.mk('lit', lit(I32, self.choice([1, 2, 3])))
        else:
            v, t = self.choice([(1.0, '1.0f'), (1, '1'), (0.5, '0.5f'),
                                (2.0, '2.0f')])
            c = self.mk('lit', tlit(v, t))
        if kind == 'abs' or int_mode:
            return self.op('add', self.op('abs', y), c)
        if kind == 'square':
            return self.op('add', self.op('mul', y, y), c)
        return self.op('exp', self.op('tanh', y))

    def g_div(self, ctx, depth):
        a = self.gen(ctx, depth - 1)
        int_mode = a.node.dtype in INTS and self.chance(0.7)
        if a.node.dtype == BOOL:
            raise Invalid('bool division')
        d = self.safe_den(ctx, depth, int_mode)
        if int_mode and self.chance(0.4):
            return self.op('rem', a, d)
        return self.op('div', a, d)

    def g_math(self, ctx, depth):
        f = self.wchoice([('exp', 5), ('log', 5), ('tanh', 5), ('sqrt', 4),
                          ('sigmoid', 3), ('erf', 3), ('rsqrt', 3),
                          ('log1p', 2), ('expm1', 2), ('exp2', 1),
                          ('log2', 1), ('sin', 2), ('cos', 2), ('pow', 3),
                          ('floor', 1), ('ceil', 1)])
        if ctx.exact and f not in ('sqrt', 'floor', 'ceil'):
            f = self.choice(['sqrt', 'floor', 'ceil'])
        sub = ctx.but(exact=ctx.exact or f in ('floor', 'ceil'))
        x = self.gen(sub, depth - 1)
        n = x.node
        if f in ('exp', 'expm1', 'exp2'):
            lim = 20 if n.dtype != F64 else 60
            if n.hi > lim:
                x = self.bounded(x, ctx, lim)
        elif f in ('log', 'log2', 'rsqrt'):
            if n.lo < 1e-3:
                x = self.positive(x, ctx)
        elif f in ('log1p', 'sqrt'):
            if n.lo < 0:
                x = self.nonneg(x)
        elif f in ('sin', 'cos'):
            if n.mag() > 100:
                x = self.op('tanh', x)
        elif f == 'pow':
            if n.lo < 0.25:
                x = self.op('add', self.nonneg(x),
                            self.mk('lit', tlit(0.5, '0.5f')))
            c = self.choice([2.0, 3.0, 0.5, -1.0, 1.5, -0.5, 0.25])
            t = self.choice(['f', '']) if x.node.dtype in FLOATS else 'f'
            txt = fmt_float(c) + t
            if c < 0:
                txt = '(%s)' % txt
            ce = self.mk('lit', Lit(F32 if t == 'f' else F64, c, txt))
            if x.node.hi > 1e6:
                x = self.op('log1p', x)
            return self.op('pow', x, ce)
        return self.op(f, x)

    def bounded(self, x, ctx, lim):
        k = self.choice(['tanh', 'min', 'clamp', 'ratio', 'shift'])
        if k == 'tanh':
            return self.op('mul', self.op('tanh', x),
                           self.mk('lit', tlit(3.0, '3.0f')))
        if k == 'min':
            return self.op('minimum', x, self.mk('lit', tlit(8.0, '8.0f')))
        if k == 'clamp':
            return self.op('clamp', x, self.mk('lit', tlit(-10.0, '(-10.0f)')),
                           self.mk('lit', tlit(10.0, '10.0f')))
        if k == 'shift' and red_sig(ctx.sig) and ctx.level < 2 and \
                ctx.sig[1] != 'all' and fits(ctx.sig[0], ctx.shape) and \
                x.node.shape == tuple(ctx.sig[0]) and x.node.dtype in FLOATS:
            # softmax's shift: x - max(x, axis, keepdims) <= 0
            m = self.reduce_of(x, 'max', ctx, keep=True)
            return self.op('sub', x, m)
        return self.op('div', x, self.op('add', self.op('abs', x),
                                         self.mk('lit', tlit(1.0, '1.0f'))))

    def positive(self, x, ctx):
        c = self.choice([(1.0, '1.0f'), (0.5, '0.5f'), (1e-3, '0.001f'),
                         (2.0, '2.0f'), (1.0, '1')])
        inner = self.nonneg(x)
        return self.op('add', inner, self.mk('lit', tlit(c[0], c[1])))

    def nonneg(self, x):
        if x.node.lo >= 0:
            return x
        if self.chance(0.6):
            return self.op('abs', x)
        return self.op('mul', x, x)

    def g_minmax(self, ctx, depth):
        a = self.gen(ctx, depth - 1)
        if a.node.dtype == BOOL:
            raise Invalid('bool minmax')
        if self.chance(0.35):
            lo = self.choice([-1.0, -0.5, 0.0, -2.0])
            hi = self.choice([0.5, 1.0, 2.0])
            if a.node.dtype in INTS:
                return self.op('clamp', a, self.mk('lit', lit(I32, -5)),
                               self.mk('lit', lit(I32, 5)))
            return self.op('clamp', a, self.mk('lit', tlit(lo, lit(F32, lo).text)),
                           self.mk('lit', tlit(hi, lit(F32, hi).text)))
        b = self.operand(ctx, depth - 1)
        if b.node.dtype == BOOL:
            raise Invalid('bool minmax')
        return self.op(self.choice(['maximum', 'minimum']), a, b)

    def g_absneg(self, ctx, depth):
        a = self.gen(ctx, depth - 1)
        return self.op(self.choice(['abs', 'neg']), a)

    def gen_mask(self, ctx, depth):
        """An exact bool value fitting ctx."""
        k = self.wchoice([('cmp', 6), ('boolin', 2), ('logic', 2),
                          ('index', 1)])
        ectx = ctx.but(exact=True)
        if k == 'boolin':
            return self.leaf(ectx, BOOL) if self.chance(0.5) else \
                self.new_input(ctx, BOOL)
        if k == 'logic':
            a = self.gen_mask(ctx, depth - 1) if depth > 1 else \
                self.new_input(ctx, BOOL)
            if self.chance(0.3):
                return self.op('not', a)
            b = self.gen_mask(ctx, depth - 1) if depth > 1 else \
                self.new_input(ctx, BOOL)
            return self.op(self.choice(['and', 'or']), a, b)
        if k == 'index':
            return self.index_mask(ctx)
        a = self.gen(ectx, depth - 1)
        if a.node.dtype == BOOL:
            b = self.gen(ectx, depth - 1, BOOL)
            return self.op(self.choice(['eq', 'ne']), a, b)
        b = self.operand(ectx, depth - 1)
        if b.node.dtype == BOOL:
            raise Invalid('bool compare')
        return self.op(self.choice(CMPS), a, b)

    def index_base(self, ctx):
        """A load of ctx's full shape to take index() of."""
        if 'index-of-broadcast' not in AVOID:
            return self.full_leaf(ctx)
        if ctx.scope != 'kernel':
            raise Invalid('no loads inside a helper')
        for p in self.k.params:
            if p.kind == 'in' and p.role == 'index' and p.shape == ctx.shape:
                return self.mk('load', p.name)
        p = self.add_param('in', self.choice([F32, I32, BOOL]), ctx.shape,
                           bcast_ok=False, role='index')
        return self.mk('load', p.name)

    def index_axes(self, base):
        """The axes index() may take of base (with the known bug avoided:
        not along an extent that is 1 while the loop runs over more)."""
        r = base.node.rank
        if 'index-of-broadcast' not in AVOID:
            return list(range(r))
        axes = [a for a in range(r) if base.node.shape[a] != 1]
        if not axes:
            raise Invalid('no axis to index')
        return axes

    def index_mask(self, ctx):
        if len(ctx.shape) == 0:
            raise Invalid('index of a scalar')
        base = self.index_base(ctx)
        r = base.node.rank
        axes = self.index_axes(base)
        a1 = self.choice(axes)
        ia = self.op('index', base, axis=a1 - (r if self.chance(0.5) else 0))
        if len(axes) >= 2 and self.chance(0.6):
            a2 = self.choice([a for a in axes if a != a1])
            ib = self.op('index', base, axis=a2)
            return self.op(self.choice(['le', 'lt', 'ge', 'ne']), ia, ib)
        m = self.op('rem', ia, self.mk('lit', lit(I32, self.choice([2, 3]))))
        return self.op('eq', m, self.mk('lit', lit(I32, 0)))

    def full_leaf(self, ctx):
        """A load whose shape is exactly ctx.shape."""
        if ctx.scope != 'kernel':
            raise Invalid('no loads inside a helper')
        cands = []
        for p in self.k.params:
            if p.kind in ('in', 'inout') and p.shape == ctx.shape and \
                    self.it.refval.get(p.name) is None and p.role != 'shape':
                cands.append(p.name)
        if cands and self.chance(0.7):
            return self.mk('load', self.choice(cands))
        return self.new_input(ctx, full=True)

    def g_where(self, ctx, depth):
        m = self.gen_mask(ctx, depth - 1)
        a = self.gen(ctx, depth - 1)
        b = self.operand(ctx, depth - 1)
        if self.chance(0.5):
            a, b = b, a
        return self.op('where', m, a, b)

    def g_cast(self, ctx, depth):
        a = self.gen(ctx, depth - 1)
        t = a.node.dtype
        if t in FLOATS:
            to = self.wchoice([(F64 if t == F32 else F32, 5), (I32, 2),
                               (I64, 1), (BOOL, 1)])
        elif t in INTS:
            to = self.wchoice([(F32, 5), (F64, 2), (I64 if t == I32 else I32, 2),
                               (BOOL, 1)])
        else:
            to = self.wchoice([(F32, 4), (I32, 3), (F64, 1)])
        if to in INTS and t in FLOATS and (not a.node.exact or a.node.nan or
                                           a.node.mag() > 1e6):
            if not a.node.exact:
                to = F64 if t == F32 else F32
            elif self.chance(0.5):
                pass  # saturating: NaN 0, the type's ends beyond its range
            elif a.node.nan:
                to = F64 if t == F32 else F32
            else:
                a = self.op('clamp', a, self.mk('lit', tlit(-1000.0, '(-1000.0f)')),
                            self.mk('lit', tlit(1000.0, '1000.0f')))
        if to == BOOL and t in FLOATS and not a.node.exact:
            to = F64 if t == F32 else F32
        r = random.Random('pk-fuzz-16:%s:%d:cast%d' % (
            self.seed, self.index, len(self.it.nodes)))
        if t in FLOATS and to in FLOATS and r.random() < 0.3:
            # cast<pk::half>/cast<pk::bfloat16>: an intermediate kept in 16
            # bits (a generator of its own, as Gen.add_param's storage)
            to = r.choice([F16, BF16])
        return self.op('cast', a, to=to)

    def g_shape(self, ctx, depth):
        k = self.choice(['roundtrip', 'bcast_to', 'bcast_to', 'transpose'])
        if k == 'transpose':
            # a view with the last two axes swapped, of a value made for
            # the swapped shape (no reduction or matmul in it: pkc does not
            # compile a transposed matmul result)
            if len(ctx.shape) < 2:
                raise Invalid('transpose of rank < 2')
            s = list(ctx.shape)
            s[-1], s[-2] = s[-2], s[-1]
            a = self.gen(ctx.but(shape=tuple(s), sig=None), depth - 1)
            if a.node.rank < 2:
                raise Invalid('transpose of rank < 2')
            return self.op('transpose', a)
        if k == 'roundtrip':
            a = self.gen(ctx, depth - 1)
            r = a.node.rank
            ax = self.rng.randint(0, r)
            e = self.op('expand_dims', a, axis=ax - (r + 1 if self.chance(0.3) else 0))
            if len(e.node.shape) > len(ctx.shape) or self.chance(0.5):
                return self.op('squeeze', e, axis=ax)
            return e
        # broadcast_to(v, ref): to the shape of a ref that is never
        # broadcast at run time (an Out/InOut, or an In marked so)
        if ctx.scope != 'kernel':
            raise Invalid('no refs inside a helper')
        a = self.gen(ctx, depth - 1)
        targets = [p for p in self.k.params
                   if p.kind in ('out', 'inout') and fits(p.shape, ctx.shape)
                   and fits(a.node.shape, p.shape)]
        if targets and self.chance(0.7):
            p = self.choice(targets)
        else:
            s = tuple(ctx.shape)
            if not fits(a.node.shape, s):
                raise Invalid('bcast target')
            p = self.add_param('in', F32, s, bcast_ok=False)
            p.role = 'shape'
        t = self.mk('reftarget', p.name)
        return self.op('broadcast_to', a, t)

    def g_index(self, ctx, depth):
        if len(ctx.shape) == 0:
            raise Invalid('index')
        base = self.index_base(ctx)
        i = self.op('index', base, axis=self.choice(self.index_axes(base)))
        if ctx.exact and self.chance(0.5):
            return i
        f = self.op('cast', i, to=F32)
        return self.op('mul', f, self.mk('lit', tlit(f32round(0.01), '0.01f')))

    # -- views, gathers, windows ------------------------------------------------
    # Values keep shapes made of symbols and 1s. A construct may make
    # values of other extents inside it (a slice of 1 to k, a concat of two
    # parts, a flattened value: each such extent is a token of its own,
    # '~<n>' or 2, which nothing outside the construct matches), but what
    # it returns has an ordinary shape that fits the context. Extents are
    # those of the operand itself where it has a name (a local, a helper
    # parameter, a ref read: t.extent(i)); otherwise those of a ref that
    # has the symbol and is never broadcast at run time (when the operand
    # is narrower at run time, eager and compiled code both raise). A value
    # slice's bound is never a run-time value that can be negative (pkc
    # rejects those at entry, eager code counts them from the end): E - 1
    # only of the operand's own extent E (negative only when E = 0, an
    # error for both).

    def token(self):
        return '~' + self.fresh('~')

    def is_read(self, n):
        """n is a ref read, or a view of one: pkc makes a slice of it a
        window, whose bounds are linear (no quotient; pkc says
        pk-not-supported-yet)."""
        while n.op in VIEWS or n.op == 'repeat':
            n = n.args[0]
        return n.op in ('load', 'refread')

    def nameable(self, e):
        return e.kind in ('local', 'hparam') or (
            e.kind == 'load' and self.it.param(e.a).kind != 'scalar')

    def sym_ext(self, sym, scope):
        """ref.extent(i) of a ref whose axis i is `sym` at run time (a new
        shape-only input when no ref has it)."""
        if scope != 'kernel':
            raise Invalid('no refs inside a helper')
        if sym == 1:
            return ('c', 1)
        for p in self.k.params:
            if p.kind == 'scalar' or (p.kind == 'in' and p.bcast_ok):
                continue
            if sym in p.shape:
                return ('ext', p.name, p.shape.index(sym))
        p = self.add_param('in', F32, (sym,), bcast_ok=False, role='shape')
        return ('ext', p.name, 0)

    def extent(self, e, ax, argi, scope):
        """The extent of value e along ax, for an op whose argument argi
        is e: its own where it has a name, else its symbol's."""
        d = e.node.shape[ax]
        if d == 1:
            return ('c', 1)
        if self.nameable(e):
            if not self.is_read(e.node):
                return ('vext', argi, ax)
            # t.extent(i) of a local or helper parameter that holds a ref
            # read is pk-not-supported-yet (a slice of it is a window, whose
            # bounds take ref extents): the ref's own extent
            if e.node.op in ('load', 'refread') and scope == 'kernel':
                return ('ext', e.node.attrs['param'], ax)
            raise Invalid('the extent of a read of a ref')
        return self.sym_ext(d, scope)

    def bound_param(self, hi):
        """An int64_t scalar parameter in [0, hi] (window and slice bounds,
        take's scalar index)."""
        for p in self.k.params:
            if p.kind == 'scalar' and p.role == 'bound' and p.hi == hi and \
                    self.chance(0.6):
                return p
        return self.add_param('scalar', I64, (), lo=0.0, hi=float(hi),
                              role='bound')

    def view_operand(self, ctx, depth, shape=None):
        """A value of ctx's shape (or `shape`) for a view to rearrange: no
        reduction in it in single-group kernels (pkc keeps a view of a
        computed value in a buffer of its own anyway)."""
        sig = None
        s = tuple(shape if shape is not None else ctx.shape)
        if self.mg and s and self.chance(0.3):
            sig = self.other_sig(s, None)
        return self.gen(ctx.but(shape=s, sig=sig), depth)

    def in_helper(self, args, build):
        """A call of a new `auto` helper of `args` whose body is
        build(its parameters): a construct that uses its operand twice or
        needs its extents takes it as a parameter (a.extent(i))."""
        name = '%s_h%d' % (self.k.name, len(self.k.helpers))
        saved = self.it.hparams
        self.it.hparams = [a.node for a in args]
        try:
            ps = [self.mk('hparam', i) for i in range(len(args))]
            ret = build(ps)
        finally:
            self.it.hparams = saved
        self.k.helpers.append(Helper(name, len(args), [], ret))
        e = Expr('call', name, args)
        e.node = ret.node
        return e

    def g_view(self, ctx, depth):
        kind = self.wchoice([('permute', 3), ('reshape', 2), ('merge', 2),
                             ('pick', 2), ('roll', 2), ('shift', 1),
                             ('stack', 1), ('part', 1), ('repeat', 2)])
        return getattr(self, 'v_' + kind)(ctx, depth)

    def v_permute(self, ctx, depth):
        """permute_dims(a, {...}) of a value made for the permuted shape."""
        r = len(ctx.shape)
        if r < 2:
            raise Invalid('permute of rank < 2')
        perm = list(range(r))
        while perm == list(range(r)):
            self.rng.shuffle(perm)
        oshape = [None] * r
        for i, p in enumerate(perm):
            oshape[p] = ctx.shape[i]
        octx = ctx.but(shape=tuple(oshape), sig=None)
        a = self.gen(octx, depth - 1)
        if a.node.rank != r:
            if ctx.scope != 'kernel':
                raise Invalid('permute rank')
            a = self.widen(a, octx)
        axes = [p - r if self.chance(0.3) else p for p in perm]
        return self.op('permute_dims', a, perm=perm, axes=axes)

    def reshape_dims(self, e, shape, argi, scope, neg=True):
        """reshape's extents for `shape` (the same symbols and 1s as e's):
        1s, e's extents, one of them -1 sometimes."""
        syms = [i for i, d in enumerate(shape) if d != 1]
        m1 = self.choice(syms) if syms and neg and self.chance(0.6) else None
        dims = []
        for i, d in enumerate(shape):
            if d == 1:
                dims.append(('c', 1))
            elif i == m1:
                dims.append(('c', -1))
            else:
                ax = list(e.node.shape).index(d)
                dims.append(self.extent(e, ax, argi, scope))
        return dims

    def v_reshape(self, ctx, depth):
        """reshape(reshape(a, {-1}), {...}): a flattened and put back (or
        with a leading 1 more or less): pkc aliases a ref read, keeps a
        computed value in a buffer first."""
        a = self.view_operand(ctx, depth - 1)
        S = tuple(a.node.shape)
        if not S:
            raise Invalid('reshape of a scalar')
        extra = [a] if self.nameable(a) else []
        T = S
        if len(S) < len(ctx.shape) and self.chance(0.3):
            T = (1,) + S
        elif S[0] == 1 and len(S) > 1 and self.chance(0.5):
            T = S[1:]
        if self.chance(0.3) and T != S:
            # one reshape: only 1s move
            dims = self.reshape_dims(a, T, 1, ctx.scope)
            return self.op('reshape', a, *extra, dims=dims, shape=T)
        flat = self.op('reshape', a, dims=[('c', -1)], shape=(self.token(),))
        dims = self.reshape_dims(a, T, 1, ctx.scope)
        return self.op('reshape', flat, *extra, dims=dims, shape=T)

    def flat_red(self, ctx, exact_ok, dtype):
        """A reduction for a construct's internal axis: exact contexts keep
        exactness; argmax/argmin of exact values; bools are summed."""
        if exact_ok and self.chance(0.25):
            return self.choice(ARGREDS)
        if dtype == BOOL:
            return 'sum'
        if ctx.exact:
            return 'sum' if dtype in INTS else self.choice(['max', 'min'])
        return self.wchoice([('sum', 3), ('max', 3), ('mean', 2), ('min', 2)])

    def v_merge(self, ctx, depth):
        """A reduction over several trailing axes at once: the value
        reshaped with those axes merged into one (reshape(a, {E0, -1})),
        reduced over it, and reshaped back to keepdims' shape (reshape(r,
        {E0, 1, 1})); or over everything (sum(reshape(a, {-1}))). argmax of
        the merged axis is a flat position."""
        a = self.view_operand(ctx, depth - 1)
        S = tuple(a.node.shape)
        r = len(S)
        if r == 0:
            raise Invalid('merge of a scalar')
        k = self.rng.randint(0, max(r - 2, 0))
        extra = [a] if self.nameable(a) else []
        dims = [self.extent(a, i, 1, ctx.scope) for i in range(k)] + \
            [('c', -1)]
        inner = self.op('reshape', a, *extra, dims=dims,
                        shape=tuple(S[:k]) + (self.token(),))
        red = self.flat_red(ctx, a.node.exact, a.node.dtype)
        if k == 0 and red in REDS and self.chance(0.5):
            res = self.op(red, inner, axis=None, sig=(inner.node.shape, 'all'))
        else:
            res = self.op(red, inner, axis=k, keep=False,
                          axis_text=k - (k + 1) if self.chance(0.5) else k,
                          sig=(inner.node.shape, k))
        if k > 0:
            T = tuple(S[:k]) + (1,) * (r - k)
            dims = self.reshape_dims(a, T, 1, ctx.scope)
            res = self.op('reshape', res, *extra, dims=dims, shape=T)
        res.node.sig = None  # (a reshape of a reduction: a buffer)
        return res

    def slice_axis(self, a, any_axis=False):
        S = a.node.shape
        axes = [i for i, d in enumerate(S) if d != 1]
        if any_axis or not axes:
            axes = list(range(len(S)))
        if not axes:
            raise Invalid('slice of a scalar')
        return self.choice(axes)

    def vslice(self, a, ax, b, e, dim, extra=()):
        r = a.node.rank
        return self.op('vslice', a, *extra, axis=ax, b=b, e=e, dim=dim,
                       axis_text=ax - r if self.chance(0.3) else ax)

    def v_repeat(self, ctx, depth):
        """repeat(a, count, axis) (NumPy's repeat, one count): an extent-1
        axis spread to a symbol's extent (count: a ref's extent), a count
        of 1, or each element twice or three times along an axis, sliced
        back to its first E elements (element k is a's k / count: the
        index pkc computes for Q8_0 scales)."""
        S = tuple(ctx.shape)
        if not S:
            raise Invalid('repeat of a scalar')
        forms = [('one', 1), ('spread', 3)]
        if any(d != 1 for d in S):
            forms.append(('group', 3))
        form = self.wchoice(forms)
        if form == 'spread':
            ax = self.rng.randrange(len(S))
            a = self.view_operand(ctx, depth - 1, shape=with_dim(S, ax, 1))
            if a.node.rank != len(S):
                raise Invalid('repeat rank')
            count = self.sym_ext(S[ax], ctx.scope)
            res = self.op('repeat', a, count=count, axis=ax, dim=S[ax],
                          axis_text=ax - len(S) if self.chance(0.3) else ax)
            return res
        if form == 'one':
            a = self.view_operand(ctx, depth - 1)
            if a.node.rank != len(S):
                raise Invalid('repeat rank')
            ax = self.rng.randrange(len(S))
            return self.op('repeat', a, count=('c', 1), axis=ax, dim=S[ax])
        a = self.view_operand(ctx, depth - 1)
        if a.node.rank != len(S):
            raise Invalid('repeat rank')
        ax = self.choice([i for i, d in enumerate(S) if d != 1])
        c = self.choice([2, 3])
        extra = [a] if self.nameable(a) else []
        E = self.extent(a, ax, 1, ctx.scope)
        rep = self.op('repeat', a, count=('c', c), axis=ax, dim=self.token())
        # slice(rep, ax, 0, E): E is a's extent (argument 1 of the slice)
        return self.op('vslice', rep, *extra, axis=ax, b=('c', 0), e=E,
                       dim=S[ax])

    def v_pick(self, ctx, depth):
        """slice(a, ax, b, b + 1): one element along an axis (first, last,
        middle or at a scalar parameter), broadcast back."""
        a = self.view_operand(ctx, depth - 1)
        ax = self.slice_axis(a)
        E = self.extent(a, ax, 0, ctx.scope)
        forms = [('first', 2), ('last', 3)]
        if not self.is_read(a.node):
            forms.append(('mid', 2))
        if ctx.scope == 'kernel':
            forms.append(('param', 2))
        form = self.wchoice(forms)
        if form == 'first':
            b, e = ('c', 0), ('c', 1)
        elif form == 'last':
            if self.nameable(a) and self.chance(0.5):  # its own extent
                b, e = bx_add(E, -1), E
            else:
                b, e = ('c', -1), E  # a negative constant counts from the end
        elif form == 'mid':
            b = ('/', E, 2)
            e = bx_add(b, 1)
        else:
            s = self.bound_param(self.choice([1, 2]))
            b, e = ('sp', s.name), ('+', ('sp', s.name), ('c', 1))
        return self.vslice(a, ax, b, e, 1)

    def twice(self, ctx, depth, build):
        """build(a) for a construct that reads its operand a twice and
        needs its own extents: a named value, or a helper's parameter."""
        a = self.view_operand(ctx, depth - 1)
        if self.nameable(a):
            return build(a, ctx.scope)
        if ctx.scope != 'kernel':
            raise Invalid('helper inside a helper')
        return self.in_helper([a], lambda ps: build(ps[0], 'helper'))

    def v_roll(self, ctx, depth):
        """np.roll: concat({slice(a, ax, k, E), slice(a, ax, 0, k)}, ax), k
        1, E / 2 or a scalar parameter."""
        def build(a, scope):
            ax = self.slice_axis(a)
            E = self.extent(a, ax, 0, scope)
            ks = [(('c', 1), 3)]
            if not self.is_read(a.node):
                ks.append((('/', E, 2), 2))
            if scope == 'kernel':
                ks.append(('param', 2))
            k = self.wchoice(ks)
            if k == 'param':
                k = ('sp', self.bound_param(self.choice([1, 2, 3])).name)
            p1 = self.vslice(a, ax, k, E, self.token())
            p2 = self.vslice(a, ax, ('c', 0), k, self.token())
            return self.op('concat', p1, p2, axis=ax, dim=a.node.shape[ax],
                           axis_text=ax - a.node.rank if self.chance(0.3)
                           else ax)
        return self.twice(ctx, depth, build)

    def v_shift(self, ctx, depth):
        """A shift by one along an axis, the edge repeated:
        concat({slice(a, ax, 0, 1), slice(a, ax, 0, E - 1)}, ax) or
        concat({slice(a, ax, 1, E), slice(a, ax, E - 1, E)}, ax)."""
        def build(a, scope):
            ax = self.slice_axis(a)
            if a.node.shape[ax] == 1 or not self.nameable(a):
                raise Invalid('shift')
            E = self.extent(a, ax, 0, scope)  # its own
            if self.chance(0.5):
                p1 = self.vslice(a, ax, ('c', 0), ('c', 1), 1)
                p2 = self.vslice(a, ax, ('c', 0), bx_add(E, -1), self.token())
            else:
                p1 = self.vslice(a, ax, ('c', 1), E, self.token())
                p2 = self.vslice(a, ax, bx_add(E, -1), E, 1)
            return self.op('concat', p1, p2, axis=ax, dim=a.node.shape[ax])
        return self.twice(ctx, depth, build)

    def two_parts(self, ctx, depth):
        """Two values of one shape and element type (concat's parts)."""
        a = self.view_operand(ctx, depth - 1)
        bctx = ctx.but(shape=a.node.shape, sig=None)
        b = self.view_operand(bctx, depth - 1)
        if b.node.shape != a.node.shape and ctx.scope == 'kernel':
            b = self.widen(b, bctx)
        if b.node.shape != a.node.shape:
            raise Invalid('parts of two shapes')
        if b.node.dtype != a.node.dtype:
            b = self.op('cast', b, to=a.node.dtype)
        return a, b

    def v_stack(self, ctx, depth):
        """red(concat({expand_dims(a, ax), expand_dims(b, ax)}, ax), ax):
        two values stacked along a new axis and reduced over it (argmax:
        which of the two is larger)."""
        a, b = self.two_parts(ctx, depth)
        r = a.node.rank
        ax = self.rng.randint(0, r)
        ea = self.op('expand_dims', a, axis=ax)
        eb = self.op('expand_dims', b, axis=ax)
        c = self.op('concat', ea, eb, axis=ax, dim=2)
        red = self.flat_red(ctx, c.node.exact, c.node.dtype)
        res = self.op(red, c, axis=ax, keep=False, sig=(c.node.shape, ax),
                      axis_text=ax - (r + 1) if self.chance(0.3) else ax)
        res.node.sig = None  # (a reduction of a concat: of a buffer)
        return res

    def v_part(self, ctx, depth):
        """slice(concat({a, b}, ax), ax, Ea, Ea + Eb) is b (or slice(...,
        0, Ea) is a): a concatenation taken apart again."""
        a, b = self.two_parts(ctx, depth)
        if a.node.rank == 0:
            raise Invalid('concat of scalars')
        ax = self.slice_axis(a, any_axis=True)
        c = self.op('concat', a, b, axis=ax, dim=self.token())
        ea = self.extent(a, ax, 1, ctx.scope)
        if self.chance(0.5):
            return self.vslice(c, ax, ('c', 0), ea, a.node.shape[ax], [a])
        eb = self.extent(b, ax, 2, ctx.scope)
        return self.vslice(c, ax, ea, ('+', ea, eb), b.node.shape[ax], [a, b])

    def g_take(self, ctx, depth):
        """take(table[_], ids[_], axis) or take(table[_], s, axis): a table
        ref (never broadcast) gathered along one axis by indices from an In
        ref of int32_t or int64_t (of rank 0 to 2, broadcast at run time
        like any input) or from an int64_t scalar parameter; the indices'
        data lie in [0, hi] (TAKE_INDEX_HI)."""
        if ctx.scope != 'kernel':
            raise Invalid('no refs inside a helper')
        S = tuple(ctx.shape)
        m = len(S) if self.chance(0.7) else self.rng.randint(0, len(S))
        R = [1 if (x != 1 and self.chance(0.08)) else x
             for x in S[len(S) - m:]]
        q = min(self.wchoice([(0, 3), (1, 5), (2, 2)]), m)
        j = self.rng.randint(0, m - q)
        P, I, Q = R[:j], R[j:j + q], R[j + q:]
        if len(P) + 1 + len(Q) > MAX_RANK:
            raise Invalid('table rank')
        # the gathered axis: a symbol the table has once (the driver bounds
        # the product of the symbols' extents, which bounds every ref's size
        # only while no ref repeats a symbol)
        syms = [x for x in list(self.k.universe) + list(self.k.extra_syms)
                if x not in P and x not in Q]
        if not syms:
            raise Invalid('no symbol for the gathered axis')
        T = self.choice(syms)
        tshape = tuple(P) + (T,) + tuple(Q)
        tdt = self.wchoice([(F32, 60), (F64, 8), (I32, 12), (I64, 5),
                            (BOOL, 8)])
        if ctx.exact and tdt in FLOATS and self.chance(0.5):
            tdt = I32
        tabs = [p for p in self.k.params if p.role == 'table' and
                p.shape == tshape]
        if tabs and self.chance(0.4):
            tab = self.choice(tabs)
        else:
            tab = self.add_param('in', tdt, tshape, bcast_ok=False,
                                 role='table')
        hi = self.wchoice(TAKE_INDEX_HI)
        if q == 0 and self.chance(0.6):
            idx = self.mk('sparam', self.bound_param(hi).name)
        else:
            idt = self.choice([I32, I64])
            ids = [p for p in self.k.params if p.role == 'ids' and
                   p.shape == tuple(I) and p.dtype == idt]
            if ids and self.chance(0.4):
                ip = self.choice(ids)
            else:
                ip = self.add_param('in', idt, tuple(I), lo=0.0, hi=float(hi),
                                    role='ids')
            idx = self.mk('load', ip.name)
        ax = len(P)
        return self.op('take', self.mk('load', tab.name), idx, axis=ax,
                       axis_text=ax - len(tshape) if self.chance(0.4) else ax)

    def window_ref(self, ctx):
        """A ref to read a window of: one whose value fits ctx (an In, an
        InOut, an Out already written), or a new In of a suffix of ctx's
        shape."""
        cands = []
        for p in self.k.params:
            if p.kind == 'scalar' or p.rank == 0 or p.role == 'shape' or \
                    not fits(p.shape, ctx.shape):
                continue
            v = self.it.refval.get(p.name, 'unset')
            if v == 'unset' and p.kind == 'out':
                continue
            if v not in (None, 'unset') and not self.fits_ctx(v, ctx):
                continue
            cands.append(p)
        if cands and self.chance(0.6):
            return self.choice(cands)
        r = len(ctx.shape)
        k = r if self.chance(0.7) else self.rng.randint(1, r)
        dt = self.wchoice([(F32, 70), (F64, 8), (I32, 10), (I64, 4),
                           (BOOL, 8)])
        return self.add_param('in', dt, tuple(ctx.shape[r - k:]),
                              bcast_ok=self.chance(0.5))

    def one_window(self, p, ax, form):
        """(axis, begin, end, extent) of a window of ref p along ax."""
        E = ('ext', p.name, ax)
        d = p.shape[ax]
        if form == 'full':
            return (ax, ('c', 0), E, d)
        if form == 'first':
            return (ax, ('c', 0), ('c', 1), 1)
        if form == 'last':
            return (ax, bx_add(E, -1), E, 1)
        if form == 'param':
            s = ('sp', self.bound_param(self.choice([1, 2])).name)
            return (ax, s, ('+', s, ('c', 1)), 1)
        raise AssertionError(form)

    def wload(self, p, wins):
        return self.mk('wload', p.name, attrs={'wins': wins})

    def g_window(self, ctx, depth):
        """x.slice(ax, b, e)[_]: a window of a ref read (one element along
        an axis: the first, the last, at a scalar parameter; or all of it),
        sometimes a window of a window; or the differences of neighbours
        along an axis, reduced over it: red(x.slice(ax, 1, E)[_] -
        x.slice(ax, 0, E - 1)[_], ax, keepdims)."""
        if ctx.scope != 'kernel':
            raise Invalid('no refs inside a helper')
        p = self.window_ref(ctx)
        r = p.rank
        kind = self.wchoice([('one', 5), ('two', 2), ('diff', 2)])
        forms = [('first', 2), ('last', 3), ('param', 2), ('full', 1)]
        axes = [i for i in range(r) if p.shape[i] != 1] or list(range(r))
        if kind == 'one' or (kind == 'two' and len(axes) < 2):
            ax = self.choice(axes)
            return self.wload(p, [self.one_window(p, ax, self.wchoice(forms))])
        if kind == 'two':
            a1, a2 = self.rng.sample(axes, 2)
            w1 = self.one_window(p, a1, self.wchoice(forms))
            w2 = self.one_window(p, a2, self.wchoice(forms[:3]))
            return self.wload(p, [w1, w2])
        # neighbours' differences along ax (a token extent E - k, both
        # windows), reduced over it with keepdims
        ax = self.choice(axes)
        E = ('ext', p.name, ax)
        k = ('c', 1) if self.chance(0.6) else \
            ('sp', self.bound_param(self.choice([1, 2])).name)
        tok = self.token()
        hi = self.wload(p, [(ax, k, E, tok)])
        lo = self.wload(p, [(ax, ('c', 0), ('-', E, k), tok)])
        if p.dtype == BOOL:
            d = self.op('ne', hi, lo)
            red = 'sum'
        else:
            d = self.op('sub', hi, lo)
            red = self.flat_red(ctx, False, d.node.dtype)
        sig = (d.node.shape, ax)
        res = self.op(red, d, axis=ax, keep=True, sig=sig,
                      axis_text=ax - r if self.chance(0.3) else ax)
        res.node.sig = None  # (the windows' extents are the group's own)
        return res

    # -- reductions -----------------------------------------------------------
    def reduce_of(self, x, red, ctx, keep):
        sig = ctx.sig
        base, ax = sig
        if ax == 'all':
            return self.op(red, x, axis=None, sig=sig)
        r = len(base)
        text = ax - r if self.chance(0.5) else ax
        return self.op(red, x, axis=ax, keep=keep, axis_text=text, sig=sig)

    def g_reduce(self, ctx, depth):
        base, ax = ctx.sig
        octx = ctx.but(shape=base, level=ctx.level + 1)
        # argmax/argmin (one axis): of an exact operand only (make_node)
        arg = ax != 'all' and self.chance(P_ARGRED)
        if arg:
            octx.exact = True
        if self.mg and self.chance(0.3):
            # multi-group: the operand's own reductions are over other axes
            # of it (sum(x - max(x, 0, keepdims), 1)): two signatures, the
            # inner one's results buffered for the outer group
            other = self.other_sig(base, ctx.sig)
            if other is not None:
                octx.sig = other
        if ctx.scope == 'kernel' and self.chance(0.3):
            # an input of its own (broadcast at run time, sometimes): the
            # reductions of one group then run over different extents
            x = self.new_input(octx, None if not ctx.exact else
                               self.choice([I32, BOOL]), full=True)
        else:
            x = self.gen(octx, depth - 1)
        if x.node.shape != tuple(base):
            x = self.widen(x, octx)
        red = self.wchoice([('sum', 4), ('max', 3), ('mean', 3), ('min', 2)])
        if ctx.exact:
            if x.node.dtype in FLOATS:
                red = self.choice(['max', 'min'])
            elif red == 'mean':
                red = 'sum'
        if arg:
            red = self.choice(ARGREDS)
        if ax == 'all':
            return self.reduce_of(x, red, ctx, False)
        # keepdims, or not, or the other with squeeze/expand_dims: whatever
        # fits the context
        opts = []
        keep_shape = list(base)
        keep_shape[ax] = 1
        row_shape = list(base)
        del row_shape[ax]
        if fits(tuple(keep_shape), ctx.shape):
            opts += ['keep', 'keep', 'expand']
        if fits(tuple(row_shape), ctx.shape):
            opts += ['row', 'row', 'squeeze']
        if not opts:
            raise Invalid('no reduction fits')
        k = self.choice(opts)
        if k == 'keep':
            return self.reduce_of(x, red, ctx, True)
        if k == 'row':
            return self.reduce_of(x, red, ctx, False)
        if k == 'expand':
            r = self.reduce_of(x, red, ctx, False)
            return self.op('expand_dims', r, axis=ax)
        r = self.reduce_of(x, red, ctx, True)
        return self.op('squeeze', r, axis=ax - len(base) if self.chance(0.5) else ax)

    def other_sig(self, base, sig):
        """A reduction signature over `base` other than `sig` (an axis whose
        extent is a symbol, or all axes), or None."""
        opts = [(tuple(base), i) for i, x in enumerate(base) if x != 1]
        if len(base) >= 2 or not opts:
            opts.append((tuple(base), 'all'))
        opts = [o for o in opts if o != sig]
        return self.choice(opts) if opts else None

    def g_reduce2(self, ctx, depth, chain=False):
        """(multi-group kernels) a reduction of a signature of its own over a
        value of the context's shape, next to whatever else the context
        holds (sum(x, 0) combined with sum(x, 1), a softmax over one axis of
        values normalised over another); or a reduction of a reduction: the
        rows of a value one axis larger, reduced again (max(sum(y, 1), 0))."""
        base = tuple(ctx.shape)
        free = [x for x in self.k.universe if x not in base]
        if free and len(base) < MAX_RANK and (chain or self.chance(0.3)):
            # the operand: a reduction (no keepdims) of a value with one
            # more axis, whose extent is a symbol the context lacks
            j = self.rng.randint(0, len(base))
            big = base[:j] + (self.choice(free),) + base[j:]
            ictx = ctx.but(shape=big, sig=(big, j), level=ctx.level + 1)
            inner = self.g_reduce_over(ictx, depth - 1)
            sig = self.other_sig(base, None)
            if sig is None:
                raise Invalid('no outer axis')
            red = self.wchoice([('sum', 3), ('max', 3), ('mean', 2),
                                ('min', 2)])
            if ctx.exact:
                red = 'sum' if inner.node.dtype in INTS else \
                    self.choice(['max', 'min'])
            keep = sig[1] != 'all'
            return self.reduce_of(inner, red, ctx.but(sig=sig), keep)
        sig = self.other_sig(base, ctx.sig)
        if sig is None:
            raise Invalid('no other signature')
        return self.g_reduce(ctx.but(sig=sig), depth)

    def g_reduce_over(self, ictx, depth):
        """A reduction (without keepdims) over ictx.sig of a value of its
        base shape."""
        base, ax = ictx.sig
        x = self.gen(ictx.but(sig=ictx.sig if self.chance(0.5) else None),
                     depth)
        if x.node.shape != tuple(base):
            x = self.widen(x, ictx)
        red = self.wchoice([('sum', 4), ('max', 3), ('mean', 3), ('min', 2)])
        if ictx.exact:
            if x.node.dtype in FLOATS:
                red = self.choice(['max', 'min'])
            elif red == 'mean':
                red = 'sum'
        if x.node.dtype == BOOL and red in ('max', 'min', 'mean'):
            red = 'sum'
        return self.reduce_of(x, red, ictx, False)

    def g_matmul(self, ctx, depth):
        """(multi-group kernels) matmul(a, b) of the context's last two
        extents (and its batch, for rank 3) over an inner extent that is
        another symbol of the universe; the operands are fresh inputs with a
        prologue generated like any value (so reductions and other matmuls
        may be in them: pkc buffers those)."""
        s = tuple(ctx.shape)
        core = s[-3:] if len(s) == 3 and self.chance(0.6) else s[-2:]
        M, N = core[-2], core[-1]
        if 1 in (M, N):
            raise Invalid('matmul extents')
        ks = [x for x in self.k.universe if x not in core]
        if not ks:
            # the inner extent: a symbol of its own (the one an
            # elementwise output may have, plan_elementwise)
            if not self.k.extra_syms:
                if len(self.k.universe) >= len(SYMS):
                    raise Invalid('no symbol left')
                self.k.extra_syms = [SYMS[len(self.k.universe)]]
            ks = [self.k.extra_syms[0]]
        K = self.choice(ks)
        if ctx.exact or INTEGER_PROGRAM_MATMULS:
            dt = self.choice([I32, I64])
        else:
            dt = self.wchoice([(F32, 80), (F64, 10), (I32, 10)])
        la = lb = None
        if len(core) == 3:
            bt = core[0]
            la, lb = self.choice([(bt, bt), (bt, None), (None, bt)])
        pre = lambda b: (b,) if b is not None else ()
        self.n_mm += 1
        a = self.mm_input(pre(la) + (M, K), dt, ctx, depth - 1)
        b = self.mm_input(pre(lb) + (K, N), dt, ctx, depth - 1)
        return self.op('matmul', a, b, mm=self.fresh('mm'))

    def mm_input(self, shape, dt, ctx, depth):
        """A matmul operand of exactly `shape` (g_matmul): a fresh input
        (broadcast at run time sometimes, as mm_operand's), maybe combined
        with a generated value, which may hold reductions and matmuls."""
        p = self.add_param('in', dt, shape, bcast_ok=self.chance(P_MM_BCAST))
        ints = dt in INTS
        if ints:
            p.lo, p.hi = self.choice([(-10.0, 10.0), (0.0, 7.0), (-3.0, 3.0)])
        else:
            p.lo, p.hi = self.choice([(-2.0, 2.0), (-1.0, 1.0), (0.5, 2.0)])
        x = self.mk('load', p.name)
        if self.chance(0.6):
            sig = self.other_sig(shape, None) if self.chance(0.5) else None
            g = self.gen(Ctx(shape, sig, level=ctx.level, exact=ints,
                             dtype=dt), max(depth, 1))
            if g.node.dtype == BOOL:
                g = self.op('cast', g, to=dt)
            x = self.op(self.choice(['add', 'mul', 'sub']), x, g) \
                if self.chance(0.5) else \
                self.op(self.choice(['add', 'mul', 'sub']), g, x)
        return self.mm_bound(x, dt, shape)

    def mm_bound(self, x, dt, shape):
        """x as a matmul operand of type dt: converted, NaN-free, integers
        within 20 (so that the int32 sums stay exact), floats within 1e14
        (squashed by tanh or x / (|x| + 1) past that; the product's range
        is checked too: a chain of three products of inputs within 2 over
        2^21 terms each reaches 1.5e20, below FMAX)."""
        if x.node.dtype != dt:
            x = self.op('cast', x, to=dt)
        if x.node.nan:
            raise Invalid('NaN in a matmul operand')
        if dt in INTS and x.node.mag() > 20:
            x = self.op('clamp', x, self.mk('lit', lit(I32, -5)),
                        self.mk('lit', lit(I32, 5)))
        elif dt in FLOATS and x.node.mag() > 1e14:
            x = self.op('tanh', x) if self.chance(0.5) else \
                self.op('div', x, self.op('add', self.op('abs', x),
                                          self.mk('lit', tlit(1.0, '1.0f'))))
        if tuple(x.node.shape) != tuple(shape):
            raise Invalid('operand shape')
        return x

    def widen(self, x, octx):
        """x combined with a load of the full shape (a reduction's operand
        must have the signature's rank)."""
        full = self.full_leaf(octx.but(exact=False))
        if octx.exact and not full.node.exact:
            raise Invalid('widen')
        if x.node.dtype == BOOL or full.node.dtype == BOOL:
            if x.node.dtype == BOOL and full.node.dtype == BOOL:
                return self.op(self.choice(['and', 'or']), x, full)
            if self.chance(0.5):
                return self.op('broadcast_to', x, self.mk('reftarget', self.shape_ref(octx.shape, octx)))
            raise Invalid('widen bool')
        op = self.choice(['add', 'mul', 'sub'])
        return self.op(op, x, full) if self.chance(0.5) else self.op(op, full, x)

    def shape_ref(self, shape, ctx):
        if ctx.scope != 'kernel':
            raise Invalid('no refs inside a helper')
        for p in self.k.params:
            if p.kind in ('out', 'inout') and p.shape == tuple(shape):
                return p.name
        p = self.add_param('in', F32, tuple(shape), bcast_ok=False)
        p.role = 'shape'
        return p.name

    # -- helpers ----------------------------------------------------------------
    def g_helper(self, ctx, depth):
        """A call of a new `auto` helper whose body is generated over its
        parameters (and maybe one local of its own)."""
        nargs = self.rng.randint(1, 2)
        args = [self.gen(ctx, depth - 2) for _ in range(nargs)]
        name = '%s_h%d' % (self.k.name, len(self.k.helpers))
        saved = self.it.hparams
        self.it.hparams = [a.node for a in args]
        hctx = ctx.but(scope='helper')
        locs = []
        try:
            if self.chance(0.4):
                e = self.gen(hctx, 2)
                locs.append(('t', e))
                self.it.hparams = self.it.hparams + [e.node]
            ret = self.gen(hctx, max(depth - 1, 2))
        finally:
            self.it.hparams = saved
        h = Helper(name, nargs, locs, ret)
        self.k.helpers.append(h)
        e = Expr('call', name, args)
        e.node = ret.node
        return e

    # -- statements ---------------------------------------------------------------
    def emit_decl(self, ctx, depth):
        e = self.gen(ctx, depth)
        name = self.fresh('t')
        self.it.locals[name] = e.node
        self.k.stmts.append(Stmt('decl', name=name, expr=e))
        return name

    def emit_store(self, p, ctx, depth, need_red=False):
        for _ in range(6):
            mark = self.snapshot()
            try:
                e = self.gen(ctx.but(dtype=p.dtype), depth)
                if need_red and e.node.sig is None:
                    r = self.g_reduce(ctx, max(depth - 1, 1))
                    e = self.combine(e, r)
                if e.node.dtype != p.dtype and self.chance(0.6):
                    e = self.convert(e, p.dtype)
                check_store(e.node, p)
                self.it.refval[p.name] = e.node
                st = Stmt('store', param=p.name, expr=e)
                if self.chance(0.06) and not e.node.weak:
                    st.helper = '%s_store' % self.k.name
                self.k.stmts.append(st)
                return
            except Invalid:
                self.restore(mark)
        # last resort: a literal
        e = self.mk('lit', lit(p.dtype if p.dtype in FLOATS else I32, 1))
        if p.dtype == BOOL:
            e = self.mk('lit', lit(I32, 1))
        self.it.refval[p.name] = e.node
        self.k.stmts.append(Stmt('store', param=p.name, expr=e))

    def combine(self, a, b):
        if a.node.dtype == BOOL or b.node.dtype == BOOL:
            if a.node.dtype == BOOL and b.node.dtype == BOOL:
                return self.op('or', a, b)
            raise Invalid('combine bool')
        return self.op(self.choice(['add', 'sub', 'mul']), a, b)

    def convert(self, e, to):
        if e.node.weak:
            raise Invalid('convert scalar')
        return self.op('cast', e, to=to)


def data_range(dtype, rng):
    if dtype in FLOATS:
        return rng.choice([(-2.0, 2.0), (-2.0, 2.0), (-2.0, 2.0), (0.5, 2.0),
                           (-8.0, 8.0)])
    if dtype == BOOL:
        return 0.0, 1.0
    # wide: int32's whole range (the harness puts its limits, -1 and 0 in
    # some elements), int64 within +-2^62: sums, products, negations and
    # abs overflow and wrap (language.md §3)
    wide = TYPE_RANGE[I32] if dtype == I32 else (-2.0 ** 62, 2.0 ** 62)
    return rng.choice([(-100.0, 100.0), (-10.0, 10.0), (0.0, 50.0), wide])


# --------------------------------------------------------------------------
# Kernel structure: policies that steer toward fusion patterns
# --------------------------------------------------------------------------

POLICIES = [('elementwise', 18), ('row', 18), ('column', 10), ('full', 7),
            ('multi', 11), ('inout', 8), ('shared', 6), ('several', 8),
            ('classic', 16), ('matmul', 8)]
# The chance that a kernel of a policy is multi-group (Builder.build): its
# values may then mix reduction signatures, reduce reductions over other
# axes, hold matmuls of computed operands (chains, MLPs, normalised inputs),
# reductions and transposes of products, InOut cycles; pkc compiles those as
# several groups with pk-managed buffers. '' is every other policy's.
MULTI_GROUP = {'': 0.3, 'elementwise': 0.25, 'matmul': 0.5, 'classic': 0.2}
# --multi-group yes/no: every kernel (or none) is multi-group
FORCE_MULTI = None


class Builder(Gen):
    """Builds one kernel: a policy picks the universe (the extents every
    value is made of), the reduction signatures and the outputs; then
    locals, loops and stores are generated in program order."""

    def build(self):
        k = self.k
        n = self.wchoice([(1, 14), (2, 46), (3, 26), (4, 8), (5, 4), (6, 2)])
        U = tuple(SYMS[:n])
        k.universe = U
        k.policy = self.wchoice(POLICIES)
        if FORCE_POLICY:
            k.policy = FORCE_POLICY
        # a multi-group kernel: the single-group rules are off (make_node's
        # strict), so values mix reduction signatures and matmuls and pkc
        # splits the kernel into groups with buffers between them
        self.mg = self.chance(MULTI_GROUP.get(k.policy, MULTI_GROUP['']))
        if FORCE_MULTI is not None:
            self.mg = FORCE_MULTI
        if k.policy == 'inout' and INOUT_SINGLE_GROUP:
            self.mg = False
        self.it.strict = not self.mg
        k.multi = self.mg
        # (multi-group kernels are smaller: each group is a loop nest of its
        # own, and the CI batches' build time is bounded)
        self.budget = self.rng.randint(8, 26) if not self.mg else \
            self.rng.randint(6, 16)
        self.loopvar = None
        prog = None
        if self.mg and k.policy != 'matmul':
            # (few matmuls: each product is a tiled kernel of its own,
            # slow to compile in the CI batches' CUDA leg)
            prog = self.wchoice([('twosig', 4), ('redred', 3), ('matmul', 2),
                                 ('cycle', 2)])
            if ONE_PROGRAM_CONSTRUCT:
                # one multi-group construct (emit_program, emit_cycle), the
                # rest of the kernel under the single-group rules
                self.set_mg(False)
        if prog == 'cycle':
            # first (nothing buffered before it, the single-group rules
            # after it: the kernel stays small)
            self.try_stmt(lambda: self.emit_cycle(U))
            prog = None
        elif prog is not None and ONE_PROGRAM_CONSTRUCT:
            self.program(U, prog)
            prog = None
        if k.policy == 'classic':
            self.try_stmt(lambda: self.emit_classic(U))
            plans = self.plan_elementwise(U)[:1] if self.chance(0.2) else []
            if not self.k.stmts:
                plans = self.plan_row(U)
        elif k.policy == 'matmul':
            U, sym = self.matmul_universe()
            k.universe = U
            U = U[-4:]  # other values: rank 4 at most (the driver's refs)
            attn = self.chance(0.3)
            for _ in range(4):
                if self.k.stmts:
                    break
                self.try_stmt(lambda: self.emit_attention(sym) if attn
                              else self.emit_matmul(sym))
            plans = self.plan_elementwise(U)[:1] if self.chance(0.2) else []
            if not self.k.stmts:
                plans = self.plan_row(U)
        else:
            plans = getattr(self, 'plan_' + k.policy)(U)
        ctxs = [c for (_, c, _) in plans] or [Ctx(U, None)]
        # locals first (they become shared inputs of the stores)
        for _ in range(self.wchoice([(0, 3), (1, 4), (2, 4), (3, 2), (4, 1)])):
            self.try_stmt(lambda: self.emit_decl(self.choice(ctxs),
                                                 self.rng.randint(2, 3)))
        if self.chance(0.2):
            self.try_stmt(self.emit_scalar_local)
        if prog is not None:
            self.program(U, prog)
        if self.chance(0.25):
            self.try_stmt(self.emit_loop)
        order = list(plans)
        if self.chance(0.3):
            self.rng.shuffle(order)
        for i, (p, ctx, need_red) in enumerate(order):
            if self.chance(0.07):
                self.emit_if_store(p, ctx, need_red)
                continue
            self.emit_store(p, ctx, self.rng.randint(3, 4), need_red)
            if self.chance(0.12):
                self.try_stmt(lambda: self.emit_reassign(ctxs))
            if self.chance(0.08):
                # overwrite an output, reading its first value back
                self.emit_store(p, ctx, 2, need_red)
        if self.chance(0.1):
            self.try_stmt(self.emit_loop)
        pw = P_WINDOW_STORE * (2 if k.policy == 'inout' else 1)
        for _ in range(2):
            if self.chance(pw):
                self.try_stmt(self.emit_window_store)
        self.it.loopvars.clear()
        return k

    # -- plans: [(param, ctx, need_red)] ---------------------------------------
    def sig_of(self, U, axis_kind):
        n = len(U)
        m = n if self.chance(0.85) or n == 1 else self.rng.randint(1, n - 1)
        base = U[n - m:]
        if axis_kind == 'all':
            return (base, 'all')
        if axis_kind == 'last':
            return (base, m - 1)
        if axis_kind == 'first':
            return (base, 0)
        return (base, self.rng.randrange(m))

    def out_dtype(self):
        return self.wchoice([(F32, 76), (F64, 8), (I32, 7), (I64, 3),
                             (BOOL, 6)])

    def out(self, shape, kind='out', role=None, dtype=None):
        p = self.add_param(kind, dtype or self.out_dtype(), tuple(shape),
                           role=role)
        return p

    def ctx_for(self, p, sig, shape=None):
        ctx = Ctx(shape if shape is not None else p.shape, sig)
        if p.dtype not in FLOATS:
            ctx.exact = True
        return ctx

    def red_plans(self, sig, want_full=None, want_row=None):
        base, ax = sig
        plans = []
        full = want_full if want_full is not None else self.chance(0.7)
        row = want_row if want_row is not None else (self.chance(0.5) or not full)
        if full:
            p = self.out(base, role='full')
            plans.append((p, self.ctx_for(p, sig), self.chance(0.6)))
        if row:
            s = () if ax == 'all' else tuple(x for i, x in enumerate(base)
                                              if i != ax)
            p = self.out(s, role='row')
            plans.append((p, self.ctx_for(p, sig), True))
        if ax != 'all' and self.chance(0.12):
            s = list(base)
            s[ax] = 1
            p = self.out(s, role='rowkeep')
            plans.append((p, self.ctx_for(p, sig), True))
        if self.chance(0.2):
            p = self.out(base, role='elem')
            plans.append((p, self.ctx_for(p, None), False))
        return plans

    def plan_elementwise(self, U):
        plans = []
        for _ in range(self.wchoice([(1, 5), (2, 3), (3, 1)])):
            r = len(U) if self.chance(0.7) else self.rng.randint(0, len(U))
            shape = list(U[len(U) - r:])
            if shape and self.chance(0.12) and \
                    len(self.k.universe) < len(SYMS):
                # an output whose extent along one axis is a symbol of its
                # own: pkc's elementwise group then checks at run time
                # whether the shapes agree and runs the stores one by one
                # when they do not
                extra = SYMS[len(self.k.universe)]
                self.k.extra_syms = [extra]
                shape[self.rng.randrange(len(shape))] = extra
            p = self.out(tuple(shape), role='elem')
            plans.append((p, self.ctx_for(p, None), False))
        return plans

    def plan_row(self, U):
        kind = 'last' if self.chance(0.65) else 'any'
        return self.red_plans(self.sig_of(U, kind))

    def plan_column(self, U):
        return self.red_plans(self.sig_of(U, 'first'))

    def plan_full(self, U):
        return self.red_plans(self.sig_of(U, 'all'))

    def plan_multi(self, U):
        kinds = ['last', 'first', 'all', 'any', 'elem']
        self.rng.shuffle(kinds)
        plans = []
        for kind in kinds[:self.rng.randint(2, 3)]:
            if kind == 'elem':
                plans += self.plan_elementwise(U)[:1]
            else:
                sig = self.sig_of(U, kind)
                plans += self.red_plans(sig)[:self.rng.randint(1, 2)]
        return plans

    def plan_inout(self, U):
        plans = []
        sig = self.sig_of(U, self.choice(['last', 'first', 'all', 'any']))
        base, ax = sig
        h = self.out(base, kind='inout', role='full', dtype=F32 if
                     self.chance(0.85) else F64)
        self.it.refval[h.name] = None
        use_sig = sig if self.chance(0.6) else None
        plans.append((h, Ctx(base, use_sig), False))
        if ax != 'all' and self.chance(0.5):
            s = tuple(x for i, x in enumerate(base) if i != ax)
            r = self.out(s, kind='inout', role='row', dtype=F32)
            self.it.refval[r.name] = None
            plans.append((r, Ctx(s, sig), True))
        if self.chance(0.5):
            plans += self.red_plans(sig)[:1]
        if self.chance(0.3):
            self.pending_inout_loop = h
        return plans

    def plan_several(self, U):
        """Reductions of several different inputs (each may be broadcast
        at run time) in one group: their loops may run over different
        extents."""
        sig = self.sig_of(U, self.choice(['first', 'first', 'last', 'any',
                                          'all']))
        base, ax = sig
        ctx_full = Ctx(base, sig)
        row = () if ax == 'all' else tuple(x for i, x in enumerate(base)
                                            if i != ax)
        keep = ax != 'all' and self.chance(0.4)
        for _ in range(self.rng.randint(1, 2)):
            def make():
                terms = []
                for _ in range(self.rng.randint(2, 3)):
                    x = self.new_input(Ctx(base, None), F32, full=True)
                    if self.chance(0.4):
                        x = self.op(self.choice(['abs', 'neg', 'tanh']), x)
                    terms.append(self.reduce_of(
                        x, self.choice(['sum', 'max', 'min', 'mean']),
                        ctx_full, keep))
                e = terms[0]
                for t in terms[1:]:
                    e = self.op(self.choice(['add', 'sub', 'maximum',
                                             'minimum']), e, t)
                shape = tuple(e.node.shape)
                p = self.out(shape, dtype=F32)
                self.store(p, e)
            self.try_stmt(make)
        return self.red_plans(sig)[:1] if self.chance(0.5) else []

    def plan_shared(self, U):
        sig = self.sig_of(U, self.choice(['last', 'last', 'first', 'all']))
        base, ax = sig
        # a local of the full shape, reduced several ways
        ctx = Ctx(base, None)
        self.try_stmt(lambda: self.emit_decl(ctx, 2))
        return self.red_plans(sig)

    # -- classic fused patterns over a random input ---------------------------------
    def decl(self, e, prefix='t'):
        name = self.fresh(prefix)
        self.it.locals[name] = e.node
        self.k.stmts.append(Stmt('decl', name=name, expr=e))
        return self.mk('local', name)

    def store(self, p, e):
        check_store(e.node, p)
        self.it.refval[p.name] = e.node
        self.k.stmts.append(Stmt('store', param=p.name, expr=e))

    def eps(self):
        if self.chance(0.4):
            p = self.add_param('scalar', F32, (), lo=1e-5, hi=1e-3)
            return self.mk('sparam', p.name)
        text = self.choice(['1e-5f', '1e-6f', '0.001f'])
        return self.mk('lit', tlit(float(text[:-1]), text))

    def emit_classic(self, U):
        pat = self.choice(['softmax', 'logsoftmax', 'logsumexp', 'layernorm',
                           'rmsnorm', 'causal', 'l2norm', 'minmax', 'center'])
        kind = self.choice(['last', 'last', 'last', 'first', 'any', 'all'])
        if pat == 'causal':
            if len(U) < 2:
                raise Invalid('causal needs rank 2')
            kind = 'last'
        sig = self.sig_of(U, kind)
        base, ax = sig
        if pat == 'causal' and len(base) < 2:
            raise Invalid('causal needs rank 2')
        self.k.notes.append(pat)
        full = Ctx(base, sig)
        el = Ctx(base, None)
        dt = F32 if self.chance(0.85) else F64
        # the input: a load or a short elementwise expression of the full
        # shape
        x = self.gen(el, self.rng.randint(0, 2))
        if x.node.shape != tuple(base):
            x = self.widen(x, el)
        if x.node.dtype != dt:
            x = self.op('cast', x, to=dt)
        if x.node.hi > 50 or x.node.lo < -50:
            x = self.op('tanh', x)
        if x.kind != 'local' and self.chance(0.7):
            x = self.decl(x, 'x')

        def red(v, r, keep=True):
            return self.reduce_of(v, r, full, keep)

        def row(e):
            if ax == 'all':
                return e
            return self.op('squeeze', e, axis=ax - len(base)
                           if self.chance(0.5) else ax)
        row_shape = () if ax == 'all' else tuple(
            v for i, v in enumerate(base) if i != ax)
        keep = ax != 'all'
        outs = []
        if pat in ('softmax', 'logsoftmax', 'logsumexp', 'causal'):
            if pat == 'causal':
                ib = self.index_base(el)
                r = len(base)
                if len(self.index_axes(ib)) < r:
                    raise Invalid('causal mask over an extent of 1')
                mask = self.op('le', self.op('index', ib, axis=self.choice([r - 1, -1])),
                               self.op('index', ib, axis=self.choice([r - 2, -2])))
                x = self.op('where', mask, x, self.mk('lit', tlit(-1e30, '-INFINITY')))
                x.node.nan = True  # -inf: never converted to an integer
                x = self.decl(x, 'masked')
            m = self.decl(red(x, 'max', keep))
            e = self.decl(self.op('exp', self.op('sub', x, m)))
            ssum = red(e, 'sum', keep)
            if pat in ('softmax', 'causal'):
                if self.chance(0.5):
                    ssum = self.decl(ssum)
                    o = self.op('div', e, ssum)
                else:
                    o = self.op('div', e, ssum)
                outs.append((base, o))
                if self.chance(0.3):
                    outs.append((row_shape, row(ssum)))
            elif pat == 'logsoftmax':
                ssum = self.decl(ssum)
                outs.append((base, self.op('sub', self.op('sub', x, m),
                                           self.op('log', ssum))))
            else:
                outs.append((row_shape, row(self.op('add', self.op('log', ssum),
                                                    m))))
        elif pat == 'layernorm':
            mu = self.decl(red(x, 'mean', keep), 'mu')
            d = self.decl(self.op('sub', x, mu), 'd')
            var = red(self.op('mul', d, d), 'mean', keep)
            rstd = self.decl(self.op('rsqrt', self.op('add', var, self.eps())),
                             'rstd')
            o = self.op('mul', d, rstd)
            if self.chance(0.6):
                w = self.new_input(el, dt)
                b = self.new_input(el, dt)
                o = self.op('add', self.op('mul', o, w), b)
            outs.append((base, o))
            if self.chance(0.5):
                outs.append((row_shape, row(mu)))
            if self.chance(0.5):
                outs.append((row_shape, row(rstd)))
        elif pat == 'rmsnorm':
            ms = red(self.op('mul', x, x), 'mean', keep)
            o = self.op('mul', x, self.op('rsqrt', self.op('add', ms, self.eps())))
            if self.chance(0.6):
                o = self.op('mul', o, self.new_input(el, dt))
            outs.append((base, o))
        elif pat == 'l2norm':
            n2 = red(self.op('mul', x, x), 'sum', keep)
            o = self.op('div', x, self.op('sqrt', self.op('add', n2, self.eps())))
            outs.append((base, o))
        elif pat == 'minmax':
            lo = self.decl(red(x, 'min', keep))
            hi = red(x, 'max', keep)
            rng_ = self.op('add', self.op('abs', self.op('sub', hi, lo)),
                           self.mk('lit', tlit(1.0, '1.0f')))
            outs.append((base, self.op('div', self.op('sub', x, lo), rng_)))
        else:  # center, with a row statistic of the centred values
            c = self.decl(self.op('sub', x, red(x, 'mean', keep)), 'c')
            outs.append((base, c))
            if self.chance(0.7):
                outs.append((row_shape, red(self.op('abs', c), 'sum', False)
                             if ax != 'all' else red(self.op('abs', c), 'sum')))
        if ax != 'all' and x.node.exact and self.chance(P_CLASSIC_ARG):
            # the position of the row's extreme too (greedy decoding's
            # argmax next to its softmax: pkc shares the max)
            outs.append((None, self.reduce_of(x, self.choice(ARGREDS), full,
                                              self.chance(0.3))))
        for shape, e in outs:
            if shape is None:
                self.store(self.out(e.node.shape, dtype=I64), e)
                continue
            p = self.out(shape, dtype=e.node.dtype if e.node.dtype in FLOATS
                         else F32)
            self.store(p, e)

    # -- matmul: prologue, product, epilogue ------------------------------------
    def matmul_universe(self):
        """The extents of a matmul kernel: roles (batch?) M K N, a symbol
        each. Never the same symbol for two roles: the driver bounds the
        product of the symbols' extents (2^21), which then bounds the
        product's work (batch M N K) too; with M == N it would not."""
        roles = (['batch'] if self.chance(0.4) else []) + ['M', 'K', 'N']
        if self.chance(0.3):
            roles.append('Dv')  # attention's v width (else K)
        sym = {r: SYMS[i] for i, r in enumerate(roles)}
        return tuple(SYMS[:len(roles)]), sym

    def mm_operand(self, shape, dt, may_transpose=True):
        """An operand of exactly `shape`: a fresh input, read in place or
        through transpose(), with an elementwise prologue sometimes. It may
        be broadcast at run time (P_MM_BCAST): an extent of 1 in its batch
        broadcasts, in M or N the product is narrower than the output and
        the store broadcasts it, in K eager and compiled code both raise."""
        trans = self.chance(0.3) and may_transpose
        core = tuple(shape) if not trans else \
            tuple(shape[:-2]) + (shape[-1], shape[-2])
        p = self.add_param('in', dt, core, bcast_ok=self.chance(P_MM_BCAST))
        if dt in INTS:
            p.lo, p.hi = self.choice([(-10.0, 10.0), (0.0, 7.0), (-3.0, 3.0)])
        x = self.mk('load', p.name)
        if trans:
            x = self.op('transpose', x)
        ints = dt in INTS
        k = self.wchoice([('none', 5), ('binary', 4), ('unary', 2),
                          ('norm', 3 if self.mg and not ints else 0)])
        if k == 'norm':
            # (multi-group) a normalisation: pkc buffers its statistics
            # (or the normalised operand) for the product
            was_nan = x.node.nan
            x = self.mm_norm(x, shape)
            # a mean over an empty axis is NaN, but then the operand is
            # empty too: no product reads it
            x.node.nan = was_nan
        elif k == 'binary':
            ctx = Ctx(shape, None, exact=ints, dtype=dt)
            g = self.gen(ctx, self.rng.randint(1, 2))
            if g.node.dtype == BOOL:
                g = self.op('cast', g, to=dt)
            x = self.op(self.choice(['add', 'mul', 'sub']), x, g) \
                if self.chance(0.5) else \
                self.op(self.choice(['add', 'mul', 'sub']), g, x)
        elif k == 'unary':
            f = self.choice(['abs', 'neg'] if ints else
                            ['abs', 'neg', 'tanh', 'sigmoid', 'exp'])
            if f == 'exp' and x.node.hi > 20:
                f = 'tanh'
            x = self.op(f, x)
        if x.node.dtype != dt:
            x = self.op('cast', x, to=dt)
        if x.node.nan:
            raise Invalid('NaN in a matmul operand')
        if ints and x.node.mag() > 20:
            x = self.op('clamp', x, self.mk('lit', lit(I32, -5)),
                        self.mk('lit', lit(I32, 5)))
        if tuple(x.node.shape) != tuple(shape):
            raise Invalid('operand shape')
        return x

    def mm_norm(self, x, shape):
        """x (of `shape`, float) normalised along one of its last two axes:
        RMSNorm, centring, a softmax, or min-max scaling."""
        r = len(shape)
        ax = self.choice([r - 1, r - 1, r - 2])
        ctx = Ctx(shape, (tuple(shape), ax))
        kind = self.choice(['rms', 'center', 'softmax', 'minmax'])
        red = lambda v, f: self.reduce_of(v, f, ctx, True)
        if kind == 'rms':
            ms = red(self.op('mul', x, x), 'mean')
            return self.op('mul', x, self.op('rsqrt', self.op(
                'add', ms, self.eps())))
        if kind == 'center':
            return self.op('sub', x, red(x, 'mean'))
        if kind == 'softmax':
            e = self.op('exp', self.op('sub', x, red(x, 'max')))
            return self.op('div', e, red(e, 'sum'))
        lo = red(x, 'min')
        rng_ = self.op('add', self.op('sub', red(x, 'max'), lo),
                       self.mk('lit', tlit(1.0, '1.0f')))
        return self.op('div', self.op('sub', x, lo), rng_)

    def mm_post(self, r, dt, steps):
        """Elementwise work after a product, as in a layer: `steps` of
        scale, bias, activation (ReLU, tanh, sigmoid, GELU, erf)."""
        shape = r.node.shape
        for _ in range(steps):
            k = self.choice(['scale', 'bias', 'act', 'act'])
            mark = self.snapshot()
            try:
                if k == 'scale':
                    r = self.op('mul', r, self.operand(
                        Ctx((), None, exact=dt in INTS, dtype=dt), 0))
                elif k == 'bias':
                    g = self.new_input(Ctx(shape, None), dt)
                    r = self.op('add', r, g) if self.chance(0.7) else \
                        self.op('add', g, r)
                elif dt in INTS:
                    r = self.op('maximum', r, self.mk('lit', lit(I32, 0)))
                else:
                    f = self.choice(['relu', 'tanh', 'sigmoid', 'gelu', 'erf'])
                    if f == 'relu':
                        r = self.op('maximum', r, self.mk(
                            'lit', tlit(0.0, '0.0f')))
                    elif f == 'gelu':
                        half = self.mk('lit', tlit(0.5, '0.5f'))
                        one = self.mk('lit', tlit(1.0, '1.0f'))
                        c = self.mk('lit', tlit(f32round(0.7071067811865476),
                                                '0.70710678f'))
                        r = self.op('mul', self.op('mul', half, r),
                                    self.op('add', one, self.op(
                                        'erf', self.op('mul', r, c))))
                    else:
                        r = self.op(f, r)
            except Invalid:
                self.restore(mark)
        return r

    def mm_chain(self, shape, dt, sym, links):
        """(multi-group) a value of `shape` ([batch?, M, C], C one of K and
        N) computed by `links` products in a row, each followed by a layer's
        elementwise work: x [.., M, C'] @ w [C', C] with C' the other of K
        and N, the x itself a chain when links > 1 (an MLP: matmul(relu(
        matmul(x, w1) + b1), w2)); sometimes a product computed transposed,
        transpose(matmul(w [C, C'], transpose(x)))."""
        M, C = shape[-2], shape[-1]
        C2 = sym['N'] if C == sym['K'] else sym['K']
        pre = tuple(shape[:-2])
        if links > 1:
            x = self.mm_chain(pre + (M, C2), dt, sym, links - 1)
        else:
            x = self.mm_operand(pre + (M, C2), dt)
        if self.chance(0.25) and not pre:
            # transpose(w^T x^T): the product of transposed operands
            w = self.mm_operand((C, C2), dt)
            h = self.op('transpose', self.op('matmul', w, self.op(
                'transpose', x), mm=self.fresh('mm')))
        else:
            w = self.mm_operand((C2, C) if self.chance(0.8) else
                                pre + (C2, C), dt)
            h = self.op('matmul', x, w, mm=self.fresh('mm'))
        self.k.notes.append('matmul')
        self.n_mm += 1
        h = self.mm_post(h, dt, self.wchoice([(0, 2), (1, 4), (2, 2)]))
        h = self.mm_bound(h, dt, shape)
        if self.chance(0.4):
            h = self.decl(h, 'hid')
            if self.chance(0.3):
                # the hidden activation is an output too
                self.store(self.out(shape, dtype=dt), h)
        return h

    def emit_matmul(self, sym):
        """One or two outputs of matmul(a, b) (rank 2, or rank 3 with the
        batch broadcast either way) with an epilogue; sometimes an InOut
        accumulation c = c + matmul(a, b). Multi-group kernels: the left
        operand is sometimes computed by one or two products of its own (a
        chain, an MLP) and the epilogue may reduce or transpose the
        product."""
        dt = self.wchoice([(F32, 76), (F64, 10), (I32, 10), (I64, 4)])
        M, K, N = sym['M'], sym['K'], sym['N']
        la = lb = None
        if 'batch' in sym:
            bt = sym['batch']
            la, lb = self.choice([(bt, bt), (bt, bt), (bt, None), (None, bt),
                                  (1, bt), (bt, 1)])
        ash = ((la,) if la is not None else ()) + (M, K)
        bsh = ((lb,) if lb is not None else ()) + (K, N)
        if self.mg and self.chance(0.6):
            a = self.mm_chain(ash, dt, sym, self.wchoice([(1, 3), (2, 1)]))
        else:
            a = self.mm_operand(ash, dt)
        b = self.mm_operand(bsh, dt)
        # (multi-group, float) sometimes two products of one operand that
        # the epilogue combines, SwiGLU's silu(x W1) * (x W3): pkc runs them
        # as one dual product (docs/design.md, "Two products of one
        # operand"). Drawn from a stream of its own, so that the kernels
        # that do not take it are the same as before.
        dual = self.mg and dt in FLOATS and random.Random(
            'pk-fuzz-dual:%s:%d' % (self.seed, self.index)).random() < 0.3
        if dual:
            a = self.decl(a, 'x')  # one node, the operand of both products
        m = self.op('matmul', a, b, mm=self.fresh('mm'))
        self.k.notes.append('matmul')
        if dual:
            mark = self.snapshot()
            try:
                m2 = self.op('matmul', a, self.mm_operand(bsh, dt),
                             mm=self.fresh('mm'))
                g = self.op('mul', m, self.op('sigmoid', m)) \
                    if self.chance(0.5) else m
                m = self.op(self.choice(['mul', 'add', 'sub']), g, m2)
                self.k.notes.append('dual')
            except Invalid:
                self.restore(mark)
        if self.chance(0.5):
            m = self.decl(m, 'mm')
        self.mm_epilogue(m, dt)

    def emit_attention(self, sym):
        """pkc's fused attention: s = matmul(q, transpose(k)) with an
        elementwise epilogue (scale, additive mask, causal mask), e = exp(s -
        max(s, -1, keepdims)), o = matmul(e / sum(e, -1, keepdims), v), and
        nothing after: o is stored as it is. q [batch?, T, D], k [batch?, S, D], v [batch?, S,
        Dv]."""
        dt = F32 if self.chance(0.85) else F64
        T, S, D, Dv = sym['M'], sym['N'], sym['K'], sym.get('Dv', sym['K'])
        bq = bk = sym.get('batch')
        if bq is not None and self.chance(0.2):
            bk = None  # k and v shared by every batch entry
        pre = lambda b: (b,) if b is not None else ()
        q = self.mm_operand(pre(bq) + (T, D), dt, may_transpose=False)
        kk = self.mm_operand(pre(bk) + (S, D), dt, may_transpose=False)
        sc = self.op('matmul', q, self.op('transpose', kk),
                     mm=self.fresh('mm'), scores=True)
        shape = sc.node.shape
        if self.chance(0.5):
            sc = self.op('mul', sc, self.operand(Ctx((), None, dtype=dt), 0))
        if self.chance(0.3):
            bias = self.new_input(Ctx(shape, None), dt)
            sc = self.op('add', sc, bias)
        sc = self.decl(sc, 's')
        if self.chance(0.3):
            r = len(shape)
            mask = self.op('le', self.op('index', sc, axis=self.choice(
                [r - 1, -1])), self.op('index', sc, axis=self.choice(
                    [r - 2, -2])))
            x = self.op('where', mask, sc, self.mk('lit', tlit(
                -1e30, '-INFINITY')))
            x.node.nan = True  # -inf: never converted to an integer
            self.k.stmts.append(Stmt('assign', name=sc.a, expr=x))
            self.it.locals[sc.a] = x.node
            sc = self.mk('local', sc.a)
        if sc.node.hi > 1e6 or sc.node.lo < -1e30:
            pass  # exp(s - max(s)) <= 1 whatever s is
        sig = (shape, len(shape) - 1)
        full = Ctx(shape, sig)
        m = self.reduce_of(sc, 'max', full, True)
        e = self.decl(self.op('exp', self.op('sub', sc, m)), 'e')
        den = self.reduce_of(e, 'sum', full, True)
        p = self.op('div', e, den)
        v = self.mm_operand(pre(bk) + (S, Dv), dt)
        o = self.op('matmul', p, v, mm=self.fresh('mm'), attn=True)
        self.k.notes.append('attention')
        # s and e are the softmax's own: nothing else may use them
        for nm in (sc.a, e.a):
            self.it.locals.pop(nm, None)
        # the stored value is the v matmul itself (pkc fuses no epilogue
        # after it yet: docs/design.md, "Attention"), in one or two refs
        for _ in range(self.wchoice([(1, 4), (2, 1)])):
            self.store(self.out(o.node.shape, dtype=dt), o)

    def mm_epilogue(self, m, dt):
        """Stores of matmul result m with an elementwise epilogue."""
        msig = m.node.sig
        shape = m.node.shape
        ectx = Ctx(shape, msig, exact=dt in INTS)
        # the epilogue: a few of scale, bias, activation, residual, or any
        # expression over the product (which may use the product again)
        r = m
        for _ in range(self.wchoice([(0, 3), (1, 4), (2, 3), (3, 1)])):
            k = self.choice(['scale', 'bias', 'act', 'any'])
            mark = self.snapshot()
            try:
                if k == 'scale':
                    r = self.op('mul', r, self.operand(
                        Ctx((), None, exact=dt in INTS, dtype=dt), 0))
                elif k == 'bias':
                    g = self.new_input(Ctx(shape, None), dt)
                    r = self.op('add', r, g) if self.chance(0.7) else \
                        self.op('add', g, r)
                elif k == 'act':
                    if dt in INTS:
                        r = self.op('maximum', r, self.mk('lit', lit(I32, 0)))
                    else:
                        f = self.choice(['relu', 'tanh', 'sigmoid', 'gelu',
                                         'erf'])
                        if f == 'relu':
                            r = self.op('maximum', r, self.mk(
                                'lit', tlit(0.0, '0.0f')))
                        elif f == 'gelu':
                            half = self.mk('lit', tlit(0.5, '0.5f'))
                            one = self.mk('lit', tlit(1.0, '1.0f'))
                            c = self.mk('lit', tlit(f32round(0.7071067811865476),
                                                    '0.70710678f'))
                            r = self.op('mul', self.op('mul', half, r),
                                        self.op('add', one, self.op(
                                            'erf', self.op('mul', r, c))))
                        else:
                            r = self.op(f, r)
                else:
                    g = self.gen(ectx, 2)
                    r = self.combine(r, g) if g.node.sig is None else \
                        self.op(self.choice(['add', 'maximum', 'minimum']),
                                r, g)
            except Invalid:
                self.restore(mark)
        outs = []
        if self.chance(0.15) and dt in FLOATS:
            h = self.out(shape, kind='inout', dtype=dt)
            self.it.refval[h.name] = None
            cur = self.mk('load', h.name)
            self.store(h, self.op('add', cur, r) if self.chance(0.7) else
                       self.op('add', r, cur))
        else:
            odt = dt if r.node.dtype == dt else r.node.dtype
            if odt == F32 and self.chance(0.1):
                odt = F64
            p = self.out(shape, dtype=odt)
            self.store(p, r)
        if self.chance(0.3):
            # a second output of the same product
            g = self.gen(ectx, 2)
            e = g if g.node.sig is not None else self.combine(m, g)
            p = self.out(shape, dtype=e.node.dtype if e.node.dtype != BOOL
                         else I32)
            self.store(p, e)
        if self.mg and self.chance(0.7):
            for _ in range(self.wchoice([(1, 3), (2, 1)])):
                self.try_stmt(lambda: self.mm_consumer(m, r, dt))

    def mm_consumer(self, m, r, dt):
        """(multi-group) an output that needs the product in another form
        than its group's: a reduction of it over rows, columns or all of
        it, a softmax or layernorm of it, its transpose, or the product
        combined with a reduction of another value."""
        shape = tuple(m.node.shape)
        rank = len(shape)
        v = r if self.chance(0.6) else m
        kind = self.choice(['red', 'red', 'softmax', 'layernorm',
                            'transpose', 'mix'])
        if dt in INTS and kind in ('softmax', 'layernorm'):
            kind = 'red'
        if kind == 'red':
            ax = self.choice([rank - 1, rank - 2, 'all'] + ([0] if rank == 3
                                                            else []))
            f = self.choice(['sum', 'max', 'min'] if dt in INTS else
                            ['sum', 'max', 'min', 'mean'])
            ctx = Ctx(shape, (shape, ax))
            keep = ax != 'all' and self.chance(0.4)
            e = self.reduce_of(v, f, ctx, keep)
        elif kind == 'softmax':
            ctx = Ctx(shape, (shape, rank - 1))
            x = v
            if x.node.mag() > 1e15:
                x = self.op('tanh', x)
            ex = self.op('exp', self.op('sub', x, self.reduce_of(
                x, 'max', ctx, True)))
            e = self.op('div', ex, self.reduce_of(ex, 'sum', ctx, True))
        elif kind == 'layernorm':
            ax = self.choice([rank - 1, rank - 2])
            ctx = Ctx(shape, (shape, ax))
            x = v
            if x.node.mag() > 1e12:
                x = self.op('tanh', x)
            mu = self.reduce_of(x, 'mean', ctx, True)
            d = self.decl(self.op('sub', x, mu), 'd')
            var = self.reduce_of(self.op('mul', d, d), 'mean', ctx, True)
            e = self.op('mul', d, self.op('rsqrt', self.op('add', var,
                                                           self.eps())))
        elif kind == 'transpose':
            e = self.op('transpose', v)
            if self.chance(0.4):
                e = self.op('add', e, self.new_input(
                    Ctx(e.node.shape, None), dt))
        else:
            # the product next to a column statistic of another value
            ax = self.choice([rank - 2, 'all'])
            y = self.new_input(Ctx(shape, None), dt, full=True)
            red = self.reduce_of(y, self.choice(['sum', 'max', 'min']),
                                 Ctx(shape, (shape, ax)), ax != 'all')
            e = self.op(self.choice(['add', 'sub', 'mul']), v, red)
        odt = e.node.dtype if e.node.dtype != BOOL else I32
        self.store(self.out(e.node.shape, dtype=odt), e)

    # -- statements -------------------------------------------------------------
    def try_stmt(self, f):
        mark = self.snapshot()
        nst = len(self.k.stmts)
        saved_locals = dict(self.it.locals)
        saved_ref = dict(self.it.refval)
        try:
            f()
        except Invalid:
            self.restore(mark)
            del self.k.stmts[nst:]
            self.it.locals = saved_locals
            self.it.refval = saved_ref
            self.loopvar = None
            self.it.loopvars.clear()

    def loop_operand(self, dtype):
        var = self.loopvar
        off = self.choice([0, 1, 1, 2])
        dt = dtype if dtype in FLOATS else I32
        return self.mk('loopconst', (var, off, dt))

    def operand(self, ctx, depth, dtype=None):
        if self.loopvar and ctx.scope == 'kernel' and self.chance(0.3):
            return self.loop_operand(self.scalar_type_for(ctx))
        return Gen.operand(self, ctx, depth, dtype)

    def emit_loop(self):
        inout = getattr(self, 'pending_inout_loop', None)
        trip = self.choice([2, 3, 4])
        self.loopvar = 'i'
        self.it.loopvars['i'] = 0
        mark_nodes = len(self.it.nodes)
        if inout is not None and self.chance(0.7):
            self.pending_inout_loop = None
            p = inout
            ctx = Ctx(p.shape, None)
            cur = self.mk('load', p.name)
            g = self.gen(ctx, 2)
            e = self.contract(cur, g)
            body = [Stmt('store', param=p.name, expr=e)]
        else:
            cands = [(nm, n) for nm, n in self.it.locals.items()
                     if n.dtype in FLOATS and not n.weak]
            if not cands:
                raise Invalid('no local to iterate')
            nm, n = self.choice(cands)
            ctx = Ctx(n.shape, n.sig)
            cur = self.mk('local', nm)
            g = self.gen(ctx, 2)
            e = self.contract(cur, g)
            body = [Stmt('assign', name=nm, expr=e)]
        self.loopvar = None
        del self.it.nodes[mark_nodes:]
        self.it.loopvars.clear()
        st = Stmt('loop', var='i', trip=trip, body=body)
        st.trip_text = str(trip) if self.chance(0.7) else \
            '%s_%s' % (self.k.name, self.fresh('trips'))
        self.it.stmt(st)
        for b in body:
            if b.kind == 'store':
                check_store(self.it.refval[b.param], self.it.param(b.param))
        self.k.stmts.append(st)

    def contract(self, cur, g):
        k = self.choice(['halve', 'tanh', 'max', 'sub', 'mix'])
        if k == 'halve':
            return self.op('add', self.op('mul', cur, self.mk('lit', tlit(0.5, '0.5f'))), g)
        if k == 'tanh':
            return self.op('add', self.op('tanh', cur), g)
        if k == 'max':
            return self.op('maximum', cur, g)
        if k == 'sub':
            return self.op('sub', cur, self.op('mul', self.mk('lit', tlit(0.25, '0.25f')), g))
        w = self.loop_operand(F32) if self.loopvar else self.literal(F32)
        return self.op('add', self.op('mul', cur, self.mk('lit', tlit(0.75, '0.75f'))),
                       self.op('mul', g, w))

    def set_mg(self, on):
        self.mg = on
        self.it.strict = not on

    def program(self, U, kind):
        """emit_program (a few tries), with the multi-group rules on."""
        saved = self.mg
        self.set_mg(True)
        for _ in range(3):
            n0 = len(self.k.stmts)
            self.try_stmt(lambda: self.emit_program(U, kind))
            if len(self.k.stmts) > n0:
                break
        self.set_mg(saved)

    def emit_program(self, U, kind):
        """(multi-group) a store that needs several groups: two reduction
        signatures combined (sum over one axis with max over another), a
        reduction of a reduction over another axis, or a matmul inside an
        expression (its operands may reduce, the expression may reduce or
        transpose it). (The fourth kind, an InOut cycle, is emit_cycle.)"""
        r = len(U)
        base = tuple(U[r - self.rng.randint(1, r):]) if self.chance(0.3) \
            else tuple(U)
        dt = F32 if self.chance(0.85) else F64
        ctx = Ctx(base, None, dtype=dt)
        depth = self.rng.randint(2, 3)
        if kind == 'twosig':
            sa = self.other_sig(base, None)
            sb = self.other_sig(base, sa)
            if sb is None:
                raise Invalid('one signature only')
            e = self.combine(self.g_reduce(ctx.but(sig=sa), depth),
                             self.g_reduce(ctx.but(sig=sb), depth))
        elif kind == 'redred':
            e = self.g_reduce2(ctx, depth, chain=True)
        else:
            if len(base) < 2:
                raise Invalid('matmul of rank < 2')
            e = self.g_matmul(ctx, depth)
            if self.chance(0.4):
                # the product reduced, or seen through a transpose
                if self.chance(0.5) or e.node.shape[-1] != e.node.shape[-2]:
                    sig = self.other_sig(e.node.shape, None)
                    e = self.reduce_of(e, self.choice(['sum', 'max', 'mean']),
                                       ctx.but(sig=sig), sig[1] != 'all')
        if self.chance(0.5):
            e = self.combine(e, self.gen(ctx, 2))
        if e.node.dtype == BOOL:
            raise Invalid('bool program value')
        shape = base if fits(e.node.shape, base) else e.node.shape
        self.store(self.out(shape, dtype=dt if e.node.dtype in FLOATS
                            else e.node.dtype), e)

    def emit_cycle(self, U):
        """(multi-group) two InOut refs, each updated from the other's old
        contents in a group of another form: a local keeps the old `ha`,
        `ha` is updated from a reduction of `hb` over one axis, then `hb`
        from a reduction of the old `ha` over another. Each group reads a
        ref the other overwrites: pkc breaks the cycle by copying one ref's
        old contents into a buffer first (docs/design.md, "Fusion")."""
        base = tuple(U)
        sa = self.other_sig(base, None)
        sb = self.other_sig(base, sa)
        if sa is None or sb is None:
            raise Invalid('one signature only')
        saved = self.mg
        self.set_mg(True)
        try:
            self.cycle_body(base, sa, sb)
        finally:
            # after it the kernel keeps to the single-group rules
            # (KNOWN_BUGS['inout-reduce-buffer']: pkc aborts on some
            # cycles next to buffered reductions)
            self.set_mg(False if INOUT_SINGLE_GROUP else saved)

    def cycle_body(self, base, sa, sb):
        dt = F32 if self.chance(0.85) else F64
        ha = self.out(base, kind='inout', dtype=dt)
        hb = self.out(base, kind='inout', dtype=dt)
        old = self.mk('load', ha.name)
        if self.chance(0.5):
            old = self.op(self.choice(['tanh', 'abs', 'neg']), old)
        old = self.decl(old, 'old')
        fa = self.choice(['sum', 'max', 'min', 'mean'])
        fb = self.choice(['sum', 'max', 'min', 'mean'])
        hbv = self.mk('load', hb.name)
        if self.chance(0.5):
            hbv = self.op('mul', hbv, self.new_input(Ctx(base, None), dt))
        ra = self.reduce_of(hbv, fa, Ctx(base, sa), sa[1] != 'all')
        self.store(ha, self.contract(self.mk('load', ha.name), ra))
        rb = self.reduce_of(old, fb, Ctx(base, sb), sb[1] != 'all')
        self.store(hb, self.contract(self.mk('load', hb.name), rb))
        self.k.notes.append('cycle')

    def emit_window_store(self):
        """p.slice(ax, b, e)[_] = v; (or += v): a store into a window of
        an InOut, or of an Out written whole before: one element along an
        axis (the first, the last, at a scalar parameter), all of it, or
        all but k at one end (p.slice(ax, k, E) or (ax, 0, E - k), k 1 or
        a scalar parameter), whose value is made of windows of inputs of
        that extent (x.slice(ax, 1, E)[_] - x.slice(ax, 0, E - 1)[_]) and
        values broadcast along the axis. The value never reads p (but +=
        reads the same window), which pkc does not support yet."""
        cands = [p for p in self.k.params if p.kind in ('out', 'inout') and
                 p.rank >= 1 and (p.kind == 'inout' or self.it.refval.get(
                     p.name) not in (None, 'unset'))]
        if not cands:
            raise Invalid('no ref to store a window of')
        p = self.choice(cands)
        axes = [i for i in range(p.rank) if p.shape[i] != 1] or \
            list(range(p.rank))
        ax = self.choice(axes)
        form = self.wchoice([('one', 5), ('full', 1), ('tail', 4)])
        E = ('ext', p.name, ax)
        bctx = Ctx(with_dim(p.shape, ax, 1), None, exact=p.dtype not in
                   FLOATS, dtype=p.dtype)
        mark = len(self.it.nodes)
        if form == 'tail':
            k = ('c', 1) if self.chance(0.6) else \
                ('sp', self.bound_param(self.choice([1, 2])).name)
            tok = self.token()
            win = (ax, k, E, tok) if self.chance(0.5) else \
                (ax, ('c', 0), ('-', E, k), tok)
            v = self.tail_value(p, ax, k, tok, bctx)
        else:
            win = self.one_window(p, ax, self.wchoice(
                [('first', 2), ('last', 3), ('param', 2)]) if form == 'one'
                else 'full')
            v = self.gen(bctx.but(shape=with_dim(p.shape, ax, win[3])),
                         self.rng.randint(2, 3))
        if v.node.dtype != p.dtype and (self.chance(0.6) or (
                p.dtype in INTS and v.node.dtype in FLOATS)):
            v = self.convert(v, p.dtype)
        # += reads the window it writes (regressions/
        # window_update_after_store: after an earlier store to the ref)
        compound = p.dtype in FLOATS and v.node.dtype == p.dtype and \
            self.chance(0.3)
        st = Stmt('wstore', param=p.name, expr=v, wins=[win],
                  compound='+' if compound else None)
        del self.it.nodes[mark:]
        self.it.stmt(st)
        self.k.stmts.append(st)

    def stores_into(self, name):
        """How many stores into ref `name` the kernel has so far (a loop's
        count twice)."""
        def count(ss):
            n = 0
            for s in ss:
                if s.kind in ('store', 'wstore') and s.param == name:
                    n += 1
                n += count(s.body) * (2 if s.kind == 'loop' else 1)
            return n
        return count(self.k.stmts)

    def tail_value(self, p, ax, k, tok, bctx):
        """A value for the window of p along ax of extent E - k (token
        tok): windows of inputs of that extent (their axis is p's symbol;
        the inputs are never broadcast), their differences, combined with a
        value broadcast along the axis."""
        S = p.shape[ax]
        wshape = with_dim(p.shape, ax, tok)

        def win_of():
            r = self.rng.randint(p.rank - ax, p.rank)
            qs = tuple(p.shape[p.rank - r:])
            cands = [q for q in self.k.params if q.kind == 'in' and
                     q.shape == qs and not q.bcast_ok and q.role != 'shape']
            if cands and self.chance(0.5):
                q = self.choice(cands)
            else:
                dt = p.dtype if self.chance(0.7) else F32
                q = self.add_param('in', dt, qs, bcast_ok=False)
            qa = ax - (p.rank - r)
            Eq = ('ext', q.name, qa)
            w = (qa, k, Eq, tok) if self.chance(0.5) else \
                (qa, ('c', 0), ('-', Eq, k), tok)
            return self.wload(q, [w])
        v = win_of()
        if self.chance(0.5):
            w2 = win_of()
            if v.node.dtype == BOOL or w2.node.dtype == BOOL:
                v = self.op('ne', v, w2) if v.node.dtype == w2.node.dtype \
                    else v
            else:
                v = self.op(self.choice(['sub', 'sub', 'add', 'mul']), v, w2)
        if self.chance(0.5) and v.node.dtype != BOOL:
            g = self.gen(bctx.but(shape=with_dim(p.shape, ax, 1)), 2)
            if g.node.dtype != BOOL:
                v = self.op(self.choice(['add', 'mul']), v, g) if \
                    self.chance(0.5) else self.op('add', g, v)
        if not fits(v.node.shape, wshape):
            raise Invalid('window value shape')
        return v

    def emit_scalar_local(self):
        e = self.scalar_expr(Ctx((), None))
        if not e.node.weak:
            raise Invalid('not a scalar')
        name = self.fresh('c')
        self.it.locals[name] = e.node
        self.k.stmts.append(Stmt('sdecl', name=name, expr=e))

    def emit_if_store(self, p, ctx, need_red):
        """The store under an `if` on a constant; the other branch stores
        something else (compiled by C++, never run, ignored by pkc)."""
        mark = self.snapshot()
        nst = len(self.k.stmts)
        saved_ref = dict(self.it.refval)
        self.emit_store(p, ctx, 2, need_red)
        dead = self.k.stmts[nst:]
        del self.k.stmts[nst:]
        # the dead branch may add params (they stay, unused) but no nodes
        del self.it.nodes[mark[0]:]
        self.it.refval = saved_ref
        self.emit_store(p, ctx, self.rng.randint(3, 4), need_red)
        live = self.k.stmts[nst:]
        del self.k.stmts[nst:]
        st = Stmt('if', body=live, orelse=dead)
        st.cond_true = self.chance(0.6)
        st.constexpr = self.chance(0.4)
        st.cond_text = self.choice(
            ['sizeof(float) == 4', '2 > 1', 'true'] if st.cond_true else
            ['sizeof(double) == 4', '1 > 2', 'false'])
        self.k.stmts.append(st)

    def emit_reassign(self, ctxs):
        cands = [(nm, n) for nm, n in self.it.locals.items()
                 if n.dtype in FLOATS and not n.weak]
        if not cands:
            raise Invalid('nothing to reassign')
        nm, n = self.choice(cands)
        ctx = Ctx(n.shape, n.sig)
        cur = self.mk('local', nm)
        g = self.gen(ctx, 2)
        e = self.contract(cur, g)
        if e.node.dtype != n.dtype:
            raise Invalid('type change')
        self.it.locals[nm] = e.node
        self.k.stmts.append(Stmt('assign', name=nm, expr=e))

    def emit_store(self, p, ctx, depth, need_red=False):
        if p.kind == 'inout' and self.chance(0.7):
            # an update: the new value is made from the old one
            for _ in range(6):
                mark = self.snapshot()
                try:
                    cur = self.mk('load', p.name)
                    g = self.gen(ctx, depth - 1)
                    if need_red and g.node.sig is None:
                        g = self.combine(g, self.g_reduce(ctx, depth - 1))
                    e = self.combine(cur, g) if self.chance(0.6) else \
                        self.contract(cur, g)
                    check_store(e.node, p)
                    self.it.refval[p.name] = e.node
                    self.k.stmts.append(Stmt('store', param=p.name, expr=e))
                    return
                except Invalid:
                    self.restore(mark)
        Gen.emit_store(self, p, ctx, depth, need_red)


# --------------------------------------------------------------------------
# Emission
# --------------------------------------------------------------------------

def loopconst_text(var, off, dt):
    inner = var if off == 0 else '%s + %d' % (var, off)
    if dt == F32:
        return 'float(%s)' % inner
    if dt == F64:
        return 'double(%s)' % inner
    return inner if off == 0 else '(%s)' % inner


def expr_text(e, hnames=None):
    k = e.kind
    if k == 'lit':
        return e.a.text
    if k == 'loopconst':
        return loopconst_text(*e.a)
    if k == 'load':
        return '%s[_]' % e.a
    if k == 'wload':
        return window_text(e.a, e.attrs['wins']) + '[_]'
    if k in ('sparam', 'reftarget', 'local'):
        return e.a
    if k == 'hparam':
        return hnames[e.a]
    if k == 'op':
        return print_op(e.a, [expr_text(x, hnames) for x in e.args], e.attrs)
    if k == 'call':
        return '%s(%s)' % (e.a, ', '.join(expr_text(x, hnames)
                                          for x in e.args))
    raise AssertionError(k)


def window_text(param, wins):
    """x.slice(ax, b, e).slice(...)"""
    return param + ''.join('.slice(%d, %s, %s)' % (ax, bx_text(b), bx_text(e))
                           for (ax, b, e, _) in wins)


def helper_text(h):
    names = ['a', 'b', 'c'][:h.nparams] + [nm for nm, _ in h.locals]
    params = ', '.join('auto %s' % x for x in names[:h.nparams])
    lines = ['auto %s(%s) {' % (h.name, params)]
    for i, (nm, ex) in enumerate(h.locals):
        lines.append('  auto %s = %s;' % (nm, expr_text(ex, names[:h.nparams + i])))
    lines.append('  return %s;' % expr_text(h.ret, names))
    lines.append('}')
    return lines


def used_helpers(k):
    """Helper names reachable from the kernel's statements."""
    used = set()
    byname = {h.name: h for h in k.helpers}

    def walk(e):
        if e.kind == 'call':
            if e.a not in used:
                used.add(e.a)
                h = byname[e.a]
                for _, ex in h.locals:
                    walk(ex)
                walk(h.ret)
        for a in e.args:
            walk(a)

    def walk_stmts(ss):
        for s in ss:
            if s.expr is not None:
                walk(s.expr)
            walk_stmts(s.body)
            walk_stmts(s.orelse)
    walk_stmts(k.stmts)
    return used


def stmt_lines(s, indent):
    pad = '  ' * indent
    if s.kind == 'decl':
        return [pad + 'auto %s = %s;' % (s.name, expr_text(s.expr))]
    if s.kind == 'assign':
        return [pad + '%s = %s;' % (s.name, expr_text(s.expr))]
    if s.kind == 'store':
        if getattr(s, 'helper', None):
            return [pad + '%s(%s, %s);' % (s.helper, s.param,
                                           expr_text(s.expr))]
        return [pad + '%s[_] = %s;' % (s.param, expr_text(s.expr))]
    if s.kind == 'wstore':
        return [pad + '%s[_] %s= %s;' % (window_text(s.param, s.wins),
                                         s.compound or '', expr_text(s.expr))]
    if s.kind == 'sdecl':
        return [pad + '%s %s = %s;' % (SCALAR_CTYPE[s.expr.node.dtype]
                                       if s.expr.node is not None else 'auto',
                                       s.name, expr_text(s.expr))]
    if s.kind == 'if':
        live, dead = [], []
        for b in s.body:
            live += stmt_lines(b, indent + 1)
        for b in s.orelse:
            dead += stmt_lines(b, indent + 1)
        first, second = (live, dead) if s.cond_true else (dead, live)
        return ([pad + 'if %s(%s) {' % ('constexpr ' if s.constexpr else '',
                                        s.cond_text)] + first +
                [pad + '} else {'] + second + [pad + '}'])
    if s.kind == 'loop':
        trip = getattr(s, 'trip_text', str(s.trip))
        head = pad + 'for (int %s = 0; %s < %s; ++%s)' % (s.var, s.var, trip,
                                                         s.var)
        body = []
        for b in s.body:
            body += stmt_lines(b, indent + 1)
        if len(body) == 1:
            return [head] + body
        return [head + ' {'] + body + [pad + '}']
    raise AssertionError(s.kind)


def kernel_text(k):
    """The kernel's source lines: its helpers, constants and the kernel."""
    lines = ['// %s: policy %s%s, universe (%s), seed %s' %
             (k.name, k.policy, ' (multi-group)' if k.multi else '',
              ', '.join(k.universe), k.seed)]
    used = used_helpers(k)
    for h in k.helpers:
        if h.name in used:
            lines += helper_text(h)

    def store_helpers(ss):
        for s in ss:
            if s.kind == 'store' and getattr(s, 'helper', None):
                yield s.helper
            yield from store_helpers(s.body)
            yield from store_helpers(s.orelse)
    for name in sorted(set(store_helpers(k.stmts))):
        # a helper that takes the ref and stores (inlined by pkc)
        lines.append('void %s(auto ref, auto v) { ref[_] = v; }' % name)

    def has_trip_const(ss):
        return any((s.kind == 'loop' and getattr(s, 'trip_text', '') !=
                    str(s.trip)) or has_trip_const(s.body) for s in ss)
    for s in k.stmts:
        if s.kind == 'loop' and getattr(s, 'trip_text', '') != str(s.trip):
            lines.append('constexpr int %s = %d;' % (s.trip_text, s.trip))
    sig = ', '.join(p.decl() for p in k.params)
    lines.append('PK_KERNEL void %s(%s) {' % (k.name, sig))
    for s in k.stmts:
        lines += stmt_lines(s, 1)
    lines.append('}')
    return lines


# -- the shadow ----------------------------------------------------------------

def vref(n):
    """How the shadow refers to a node's value."""
    if n.op == 'lit':
        return n.attrs['text']
    if n.op in ('sparam', 'refshape'):
        return n.attrs['param']
    return 'v%d' % n.id


def eref(n):
    return 'fzs::zero()' if n.exact else 'e%d' % n.id


_eref = eref


def unit(n):
    return 'fzs::U64' if n.dtype == F64 else 'fzs::U32'


def red_axis(n):
    ax = n.attrs.get('axis')
    if ax is None:
        return 'fzs::All', 'false'
    return str(n.attrs.get('axis_text', ax)), 'true' if n.attrs.get('keep') \
        else 'false'


def err_text(n):
    def eref(x):
        # A float value in a double computation keeps float's absolute floor
        # (fzs::Floor32: below float's normal range the bounds' relative
        # terms say nothing; finding seed 9829 k36).
        e = _eref(x)
        if not x.exact and x.dtype == F32 and n.dtype == F64:
            return '(%s + fzs::Floor32)' % e
        return e

    a = n.args[0] if n.args else None
    u = unit(n)
    F = '(8 * %s)' % u
    M = 'fzs::mag(%s)' % vref(n)
    op = n.op
    if op in ('add', 'sub', 'mul'):
        # fuzz_shadow.h: the operands' errors, one rounding, and NaN ("may
        # be NaN") where the operands may reach inf - inf or 0 * inf
        b = n.args[1]
        return 'fzs::%s_err(%s, %s, %s, %s, %s, %s)' % (
            'mul' if op == 'mul' else 'add', vref(a), vref(b), eref(a),
            eref(b), u, vref(n))
    if op == 'div':
        return 'fzs::div_err(%s, %s, %s, %s, %s, %s)' % (
            vref(a), vref(n.args[1]), eref(a), eref(n.args[1]), u, vref(n))
    if op in ('neg', 'abs', 'clamp', 'broadcast_to'):
        return eref(a)
    # A function whose result may underflow is accurate to the type's
    # smallest normal there, not relatively (fzs::Tiny32; finding seed 9864
    # k18: eager's sigmoid(-95) is 0, pk::vm's 5e-42, times a product of
    # 650).
    tiny = 'fzs::Tiny64' if n.dtype == F64 else 'fzs::Tiny32'
    if op == 'exp':
        return 'fzs::exp_err(%s, %s, %s) + %s' % (vref(n), eref(a), F, tiny)
    if op == 'exp2':
        return 'fzs::exp_err(%s, %s * 0.6931471805599453, %s) + %s' % (
            vref(n), eref(a), F, tiny)
    if op == 'expm1':
        return 'fzs::expm1_err(%s, %s, %s)' % (vref(n), eref(a), F)
    if op in ('log', 'log2'):
        scale = '1.0' if op == 'log' else '1.4426950408889634'
        return 'fzs::log_err(%s, %s, %s, %s, %s)' % (vref(n), vref(a),
                                                     eref(a), F, scale)
    if op == 'log1p':
        return 'fzs::log1p_err(%s, %s, %s, %s)' % (vref(n), vref(a), eref(a),
                                                   F)
    if op == 'sqrt':
        return 'fzs::sqrt_err(%s, %s, %s, %s)' % (vref(n), vref(a), eref(a), u)
    if op == 'rsqrt':
        return 'fzs::rsqrt_err(%s, %s, %s, %s)' % (vref(n), vref(a), eref(a),
                                                   F)
    if op in ('sin', 'cos'):
        return 'fzs::trig_err(%s, %s, %s, %s, %s)' % (vref(n), vref(a),
                                                      eref(a), F, u)
    if op in ('tanh', 'erf', 'sigmoid'):
        L = {'tanh': '1.0', 'erf': '1.1284', 'sigmoid': '0.25'}[op]
        e = 'fzs::lip_err(%s, %s, %s, %s)' % (vref(n), eref(a), L, F)
        return e + ' + ' + tiny if op == 'sigmoid' else e
    if op == 'pow':
        c = n.args[1].attrs['value']
        return 'fzs::pow_err(%s, %s, %s, %r, %s) + %s' % (
            vref(n), vref(a), eref(a), abs(c), F, tiny)
    if op in ('maximum', 'minimum'):
        return 'fzs::max_err(%s, %s)' % (eref(a), eref(n.args[1]))
    if op == 'where':
        return 'pk::where(%s, %s, %s)' % (vref(a), eref(n.args[1]),
                                          eref(n.args[2]))
    if op == 'cast':
        e = eref(a)
        if n.dtype == F32 and a.dtype == F64:
            e = '%s + fzs::U32 * %s' % (e, M)
        return round16_err(e, n.attrs['to'] if n.attrs['to'] in (F16, BF16)
                           else None, M)
    if op == 'refread':
        e = eref(a)
        if n.dtype == F32 and a.dtype == F64:
            e = '%s + fzs::U32 * %s' % (e, M)
        return round16_err(e, n.attrs.get('storage'), M)
    if op in ('sum', 'mean'):
        ax, keep = red_axis(n)
        if a.dtype not in FLOATS:
            return '2 * fzs::U64 * %s' % M
        ua = 'fzs::U64' if a.dtype == F64 else 'fzs::U32'
        return 'fzs::%s_err(%s, %s, %s, %s, %s, %s)' % (
            n.op, vref(a), eref(a), ax, keep, ua, vref(n))
    if op in ('max', 'min'):
        ax, keep = red_axis(n)
        return 'fzs::maxred_err(%s, %s, %s, %s)' % (vref(a), eref(a), ax, keep)
    if op == 'transpose':
        return 'fzs::transpose_err(%s, %s)' % (vref(a), eref(a))
    if op == 'matmul':
        b = n.args[1]
        return 'fzs::%smatmul_err(%s, %s, %s, %s, %s)' % (
            'attn_' if n.attrs.get('attn') else '',
            vref(a), vref(b), eref(a), eref(b), u)
    if op in VIEWS or op == 'concat':
        # the operands' bounds, rearranged the same way
        def eb(x):
            return 'pk::broadcast_to(%s, %s)' % (eref(x), vref(x))
        args = [vref(x) for x in n.args]
        if op == 'permute_dims':
            return 'pk::permute_dims(%s, {%s})' % (
                eb(a), ', '.join(str(x) for x in n.attrs['axes']))
        if op == 'reshape':
            return 'pk::reshape(%s, {%s})' % (eb(a), ', '.join(
                bx_text(d, args) for d in n.attrs['dims']))
        if op == 'vslice':
            return 'pk::slice(%s, %d, %s, %s)' % (
                eb(a), n.attrs['axis'], bx_text(n.attrs['b'], args),
                bx_text(n.attrs['e'], args))
        if op == 'window':
            return slice_chain(eb(a), n.attrs['wins'])
        return 'pk::concat({%s}, %d)' % (', '.join(eb(x) for x in n.args),
                                         n.attrs['axis'])
    if op == 'repeat':
        # a gather: each element's bound goes with it
        args = [vref(x) for x in n.args]
        return 'pk::repeat(pk::broadcast_to(%s, %s), %s, %d)' % (
            eref(a), vref(a), bx_text(n.attrs['count'], args), n.attrs['axis'])
    if op == 'wstore':
        c, v = n.args
        ev = eref(v)
        if v.dtype == F64 and n.dtype == F32:
            ev = '%s + fzs::U32 * fzs::mag(%s)' % (ev, vref(v))
        win = 'pk::slice(%s, %d, %s, %s)' % (vref(c), n.attrs['axis'],
                                             bx_text(n.attrs['b']),
                                             bx_text(n.attrs['e']))
        ev = round16_err(ev, n.attrs.get('storage'), 'fzs::mag(%s)' % vref(v))
        ec = 'pk::broadcast_to(%s, %s)' % (eref(c), vref(c))
        return wstore_text(n, ec, 'pk::broadcast_to(%s, %s)' % (ev, win))
    if op == 'expand_dims':
        return 'fzs::expand_err(%s, %s, %d)' % (vref(a), eref(a),
                                                n.attrs['axis'])
    if op == 'squeeze':
        return 'fzs::squeeze_err(%s, %s, %d)' % (vref(a), eref(a),
                                                 n.attrs['axis'])
    raise AssertionError('no error rule for ' + op)


def round16_err(e, storage, mag):
    """The bound of a value whose bound is e, rounded to a 16-bit storage
    type (or e without one): |r(x) - r(y)| <= |x - y| + one spacing of the
    16-bit type at the value, 2 u16 |v|, or a subnormal spacing."""
    if not storage:
        return e
    return '%s + %r * %s + %r' % (e, 2 * UNIT16[storage], mag,
                                  2 * TINY16[storage])


def slice_chain(v, wins):
    """The shadow's window of value v: slices, innermost first."""
    for (ax, b, e, _) in wins:
        v = 'pk::slice(%s, %d, %s, %s)' % (v, ax, bx_text(b), bx_text(e))
    return v


def wstore_text(n, cur, val):
    """The shadow's contents of a ref after a window store: the parts
    before and after the window, and val broadcast into it."""
    ax, b, e = n.attrs['axis'], n.attrs['b'], n.attrs['e']
    c = vref(n.args[0])
    return ('pk::concat({pk::slice(%s, %d, 0, %s), %s, '
            'pk::slice(%s, %d, %s, %s.extent(%d))}, %d)' % (
                cur, ax, bx_text(b), val, cur, ax, bx_text(e), c, ax, ax))


def value_text(n):
    if n.op == 'load':
        return '%s[_]' % n.attrs['param']
    if n.op == 'window':
        return slice_chain(vref(n.args[0]), n.attrs['wins'])
    if n.op == 'wstore':
        c, v = n.args
        win = 'pk::slice(%s, %d, %s, %s)' % (vref(c), n.attrs['axis'],
                                             bx_text(n.attrs['b']),
                                             bx_text(n.attrs['e']))
        return wstore_text(n, vref(c), 'fzs::refread<%s>(%s, %s)' % (
            CTYPE[n.attrs.get('storage') or n.dtype], vref(v), win))
    if n.op == 'refread':
        return 'fzs::refread<%s>(%s, %s)' % (
            CTYPE[n.attrs.get('storage') or n.dtype], vref(n.args[0]),
            n.attrs['param'])
    return print_op(n.op, [vref(a) for a in n.args], n.attrs)


SCALAR_CTYPE = {F32: 'float', F64: 'double', I32: 'int', I64: 'int64_t'}


def shadow_text(k, it):
    """An eager function that recomputes every value of the kernel and a
    bound on its error; it stores the bound of each output into tol_<ref>."""
    refs = [p for p in k.params if p.kind != 'scalar']
    outs = [p for p in k.params if p.kind in ('out', 'inout')]
    params = []
    for p in k.params:
        if p.kind == 'scalar':
            params.append(p.decl())
        else:
            params.append('In<%s, %d> %s' % (CTYPE[p.elem], p.rank, p.name))
    for p in outs:
        params.append('Out<double, %d> tol_%s' % (p.rank, p.name))
    lines = ['void %s(%s) {' % (k.name, ', '.join(params))]
    for n in it.nodes:
        if n.op in ('lit', 'sparam', 'refshape'):
            continue
        lines.append('  auto v%d = %s;' % (n.id, value_text(n)))
        if n.weak:
            lines.append('  static_assert(std::is_same_v<decltype(v%d), %s>);'
                         % (n.id, SCALAR_CTYPE[n.dtype]))
        else:
            lines.append('  static_assert(std::is_same_v<decltype(v%d), '
                         'pk::Array<%s>>);' % (n.id, CTYPE[n.dtype]))
        if not n.exact:
            lines.append('  auto e%d = %s;' % (n.id, err_text(n)))
    for p in outs:
        n = it.refval.get(p.name)
        if n is None or n == 'unset' or n.exact:
            if n is not None and n != 'unset' and n.dtype == F64 and \
                    p.dtype == F32:
                lines.append('  tol_%s[_] = %s;' % (p.name, round16_err(
                    'fzs::U32 * fzs::mag(%s)' % vref(n), p.storage,
                    'fzs::mag(%s)' % vref(n))))
            else:
                lines.append('  tol_%s[_] = 0.0;' % p.name)
            continue
        e = eref(n)
        if n.dtype == F64 and p.dtype == F32:
            e = '%s + fzs::U32 * fzs::mag(%s)' % (e, vref(n))
        if n.dtype == F32 and p.dtype == F64:
            e = '%s + fzs::Floor32' % e
        e = round16_err(e, p.storage, 'fzs::mag(%s)' % vref(n))
        lines.append('  tol_%s[_] = %s;' % (p.name, e))
    lines.append('}')
    return lines


# -- the NumPy twin (harness/fz_numpy.py, numpy_oracle.py) ---------------------------

def py_bx(b, args=None):
    """A window, slice or reshape bound as Python (bx_text's twin)."""
    k = b[0]
    if k == 'c':
        return str(b[1])
    if k == 'ext':
        return "a['%s'].shape[%d]" % (b[1], b[2])
    if k == 'sp':
        return "int(a['%s'])" % b[1]
    if k == 'vext':
        return '%s.shape[%d]' % (args[b[1]], b[2])
    if k in ('+', '-'):
        return '(%s %s %s)' % (py_bx(b[1], args), k, py_bx(b[2], args))
    if k == '/':
        return 'F.tdiv(%s, %d)' % (py_bx(b[1], args), b[2])
    raise AssertionError(b)


NP_UFUNC = {'add': 'np.add', 'sub': 'np.subtract', 'mul': 'np.multiply',
            'lt': 'np.less', 'le': 'np.less_equal', 'gt': 'np.greater',
            'ge': 'np.greater_equal', 'eq': 'np.equal', 'ne': 'np.not_equal',
            'and': 'np.logical_and', 'or': 'np.logical_or',
            'maximum': 'np.maximum', 'minimum': 'np.minimum'}
NP_MATH = {'exp': 'np.exp', 'exp2': 'np.exp2', 'expm1': 'np.expm1',
           'log': 'np.log', 'log2': 'np.log2', 'log1p': 'np.log1p',
           'sqrt': 'np.sqrt', 'rsqrt': 'F.rsqrt', 'sin': 'np.sin',
           'cos': 'np.cos', 'tanh': 'np.tanh', 'erf': 'F.erf',
           'sigmoid': 'F.sigmoid', 'floor': 'np.floor', 'ceil': 'np.ceil',
           'neg': 'np.negative', 'abs': 'np.abs', 'not': 'np.logical_not'}


def py_ref(n):
    return 'v%d' % n.id


def py_arg(x, dt):
    """Argument x of an op computed in element type dt: converted as pk
    converts it (an int or bool to a float, a double literal to float)."""
    return py_ref(x) if x.dtype == dt else "F.conv(%s, '%s')" % (py_ref(x),
                                                                  dt)


def py_lit_value(n):
    """The value a literal's C++ text denotes, as Python: the model keeps
    -1e30 for `-INFINITY` (a finite stand-in for its ranges), the twin
    needs the infinity itself (long-mode finding numpy-mismatch-9128-k39-c8:
    a causal mask's -1e30 let the twin's softmax weigh masked keys where an
    unmasked score was -inf, and pk's row was NaN)."""
    body = n.attrs.get('text', '').strip('()')
    if body.endswith('INFINITY'):
        return "float('-inf')" if body.startswith('-') else "float('inf')"
    return repr(n.attrs['value'])


def py_value(n):
    """The NumPy expression of node n (its operands are v<id> locals)."""
    op, args, dt = n.op, n.args, n.dtype
    if op == 'lit':
        return 'F.lit(%s, %r)' % (py_lit_value(n), dt)
    if op == 'sparam':
        return "F.lit(a['%s'], %r)" % (n.attrs['param'], dt)
    if op == 'load':
        return "F.load(a['%s'], %r)" % (n.attrs['param'], dt)
    if op == 'refshape':
        return "a['%s'].shape" % n.attrs['param']
    if op in CMPS:
        t = promote(args)
        return 'F.binary(%s, %s, %s)' % (NP_UFUNC[op], py_arg(args[0], t),
                                         py_arg(args[1], t))
    if op in NP_UFUNC:
        return 'F.binary(%s, %s, %s)' % (NP_UFUNC[op], py_arg(args[0], dt),
                                         py_arg(args[1], dt))
    if op in ('div', 'rem'):
        return 'F.%s(%s, %s, %r)' % (op, py_arg(args[0], dt),
                                     py_arg(args[1], dt), dt)
    if op in NP_MATH:
        return 'F.arr(%s(%s))' % (NP_MATH[op], py_arg(args[0], dt))
    if op == 'pow':
        return 'F.arr(np.power(%s, %s))' % (py_arg(args[0], dt),
                                            py_arg(args[1], dt))
    if op == 'clamp':
        return 'F.clamp(%s)' % ', '.join(py_arg(x, dt) for x in args)
    if op == 'where':
        return 'F.where(%s, %s, %s)' % (py_ref(args[0]), py_arg(args[1], dt),
                                        py_arg(args[2], dt))
    if op == 'cast':  # to a 16-bit type: rounded, a float32 value
        return "F.conv(%s, '%s')" % (py_ref(args[0]), n.attrs['to'])
    if op in REDS or op in ARGREDS:
        return 'F.reduce(%r, %s, %r, %r, %r)' % (
            op, py_ref(args[0]), n.attrs.get('axis'),
            bool(n.attrs.get('keep')), dt)
    if op == 'matmul':
        return 'F.matmul(%s, %s)' % (py_arg(args[0], dt), py_arg(args[1], dt))
    if op == 'transpose':
        return 'F.transpose(%s)' % py_ref(args[0])
    if op == 'broadcast_to':
        return 'F.broadcast_to(%s, %s)' % (py_ref(args[0]), py_ref(args[1]))
    if op in ('expand_dims', 'squeeze'):
        return 'F.%s(%s, %d)' % (op, py_ref(args[0]), n.attrs['axis'])
    if op == 'index':
        return 'F.index(%s, %d, %r)' % (py_ref(args[0]), n.attrs['axis'], dt)
    if op == 'permute_dims':
        return 'F.permute_dims(%s, %r)' % (py_ref(args[0]),
                                           list(n.attrs['axes']))
    refs = [py_ref(x) for x in args]
    if op == 'reshape':
        return 'F.reshape(%s, [%s])' % (refs[0], ', '.join(
            py_bx(d, refs) for d in n.attrs['dims']))
    if op == 'vslice':
        return 'F.slice_(%s, %d, %s, %s)' % (
            refs[0], n.attrs['axis'], py_bx(n.attrs['b'], refs),
            py_bx(n.attrs['e'], refs))
    if op == 'concat':
        return 'F.concat([%s], %d)' % (', '.join(refs), n.attrs['axis'])
    if op == 'repeat':
        return 'F.repeat(%s, %s, %d)' % (refs[0], py_bx(n.attrs['count'], refs),
                                         n.attrs['axis'])
    if op == 'take':
        return 'F.take(%s, %s, %d)' % (refs[0], refs[1], n.attrs['axis'])
    if op == 'window':
        return 'F.window(%s, [%s])' % (refs[0], ', '.join(
            '(%d, %s, %s)' % (ax, py_bx(b), py_bx(e))
            for (ax, b, e, _) in n.attrs['wins']))
    if op == 'wstore':
        return 'F.window_store(%s, %s, %d, %s, %s, %r)' % (
            refs[0], refs[1], n.attrs['axis'], py_bx(n.attrs['b']),
            py_bx(n.attrs['e']), n.attrs.get('storage') or dt)
    if op == 'refread':
        return "F.refread(%s, %r, a['%s'].shape)" % (
            refs[0], n.attrs.get('storage') or dt, n.attrs['param'])
    raise AssertionError('no NumPy twin for ' + op)


def numpy_text(k, it):
    """The kernel's NumPy twin: a function of the refs' and scalars' values
    (a dict by name) that returns each output's final contents."""
    lines = ['def %s(a):' % k.name]
    for n in it.nodes:
        lines.append('    v%d = %s' % (n.id, py_value(n)))
    # every store, not only each ref's last one, must fit its ref: eager
    # raises at the first that does not
    for p, n in it.whole_stores:
        lines.append("    F.refread(v%d, %r, a['%s'].shape)" % (n.id, p.elem,
                                                               p.name))
    outs = []
    for p in k.params:
        if p.kind not in ('out', 'inout'):
            continue
        n = it.refval.get(p.name)
        if n is None or n == 'unset':
            outs.append("'%s': F.load(a['%s'], %r)" % (p.name, p.name,
                                                         p.dtype))
        else:
            outs.append("'%s': F.refread(v%d, %r, a['%s'].shape)" % (
                p.name, n.id, p.elem, p.name))
    lines.append('    return {%s}' % ', '.join(outs))
    return lines


# -- harness glue ------------------------------------------------------------------

DT_ENUM = {F32: 'F32', F64: 'F64', I32: 'I32', I64: 'I64', BOOL: 'Bool',
           F16: 'F16', BF16: 'BF16'}
KIND_ENUM = {'in': 'In', 'out': 'Out', 'inout': 'InOut', 'scalar': 'Scalar'}


def call_args(k, how):
    out = []
    for i, p in enumerate(k.params):
        if p.kind == 'scalar':
            out.append('A.scalar<%s>(%d)' % (CTYPE[p.dtype], i))
        else:
            kind = 'in' if how == 'shadow' else p.kind
            out.append('A.%s<%s, %d>(%d)' % (kind, CTYPE[p.elem], p.rank, i))
    if how == 'shadow':
        for i, p in enumerate(k.params):
            if p.kind in ('out', 'inout'):
                out.append('T.out<double, %d>(%d)' % (p.rank, i))
    return ', '.join(out)


def compiled_decl(k):
    ps = []
    for p in k.params:
        if p.kind == 'scalar':
            ps.append(p.decl())
        else:
            kk = {'in': 'In', 'out': 'Out', 'inout': 'InOut'}[p.kind]
            ps.append('pk::%s<%s, %d> %s' % (kk, CTYPE[p.elem], p.rank,
                                            p.name))
    return 'void %s(%s);' % (k.name, ', '.join(ps))


def sym_index(x):
    return -1 if x == 1 else SYMS.index(x)


def table_entry(k, line, cuda):
    ps = []
    special_free, first_row = special_params(k)
    for p in k.params:
        dims = ', '.join(str(sym_index(x)) for x in p.shape)
        ps.append('      {"%s", fz::Kind::%s, fz::DT::%s, %d, {%s}, %r, %r, %s, '
                  '%s, %s}' % (
            p.name, KIND_ENUM[p.kind], DT_ENUM[p.elem], p.rank, dims,
            float(p.lo), float(p.hi), 'true' if p.bcast_ok else 'false',
            'false' if p.name in special_free else 'true',
            first_row.get(p.name, 0)))
    nsyms = len(k.universe) + len(k.extra_syms)
    return ('    {"%s", "%s", %d, %d,\n     {\n%s\n     },\n'
            '     fz_gen::eager_%s, fz_gen::cpu_%s, %s, fz_gen::shadow_%s}' % (
                k.name, k.policy, line, nsyms, ',\n'.join(ps), k.name,
                k.name, 'FZ_CUDA(fz_gen::cuda_%s)' % k.name, k.name))


def special_params(k):
    """Where the `special` cases may put NaN and infinities: returns (the
    refs that get none, the refs that get them at key 0 only). While KNOWN_BUGS has 'attention-masked-key-inf', a fused
    attention must not see them in a v row of a masked key (it never reads
    those rows; eager multiplies them by 0: an inf there is NaN in eager
    only; docs/design.md, "Attention"). Each attention kernel takes one of
    two sides, drawn from a stream of its own (the kernels stay as they
    were):

    - the score side (3 in 4): q, k, the scale, the bias and the rest get
      specials (a masked score is -inf in both versions whatever q k is);
      every ref that reaches v gets none;
    - the v side (1 in 2): a ref that v is computed from element by element
      (read in place or through transpose(), under an elementwise prologue
      of its own shape) gets them in key 0 only, which no mask hides from
      any query (the causal mask shows key 0 to every query, and with every
      ref that reaches the scores free of specials no score is -inf; where
      its weight underflows to 0 the CPU skips it too, and the shadow's
      attn_matmul_err says "may be NaN" there); the
      refs that reach the scores, and the other refs that reach v (a
      normalisation's, a lower-rank operand broadcast over the keys) get
      none. The second value maps such a ref to its key axis counted from
      the end (2: axis -2, v's own; 1: axis -1, under a transpose)."""
    if 'attention-masked-key-inf' not in AVOID:
        return set(), {}
    it = Interp(k)
    it.run(k.stmts)
    attns = [n for n in it.nodes if n.op == 'matmul' and n.attrs.get('attn')]
    if not attns:
        return set(), {}

    def refs(roots):
        out, seen, stack = set(), set(), list(roots)
        while stack:
            n = stack.pop()
            if n.id in seen:
                continue
            seen.add(n.id)
            if n.op in ('load', 'refread'):
                out.add(n.attrs['param'])
            stack.extend(n.args)
        return out

    v_reach = refs([n.args[1] for n in attns])
    v_side = random.Random('pk-fuzz-vspecial:%s:%d' %
                           (k.seed, k.index)).random() < 0.5
    if not v_side:
        return v_reach, {}
    # Walk v's element-by-element cone: key axis per ref; what it leaves
    # (other shapes, other ops) goes to `other`.
    key_axis, other = {}, []

    def walk(n, ax):
        if n.op == 'load':
            key_axis.setdefault(n.attrs['param'], set()).add(ax)
        elif n.op == 'transpose' and len(n.shape) >= 2:
            walk(n.args[0], 3 - ax)
        elif n.op in ('add', 'sub', 'mul', 'abs', 'neg', 'tanh', 'sigmoid',
                      'exp') and all(a.shape == n.shape for a in n.args):
            for a in n.args:
                walk(a, ax)
        else:
            other.append(n)

    for n in attns:
        walk(n.args[1], 2)
    banned = refs(other) | refs([n.args[0] for n in attns])
    first_row = {p: min(ax) for p, ax in key_axis.items()
                 if len(ax) == 1 and p not in banned}
    return (v_reach | banned) - set(first_row), first_row


def emit_batch(kernels, out_dir, name, seed, argv=None):
    """Writes the batch's files; returns the description (also in .json)."""
    ns = 'fz_' + name
    head = ('// Generated by test/fuzz/gen.py (%s). Do not edit: regenerate.' %
            (' '.join(argv) if argv else 'seed %s' % seed))
    src = [head, '#include <pk/pk.h>', 'using namespace pk::lang;', '',
           'namespace %s {' % ns, '']
    desc = {'name': name, 'seed': seed, 'namespace': ns, 'kernels': []}
    interps = []
    for k in kernels:
        first = len(src) + 1
        text = kernel_text(k)
        src += text
        src.append('')
        kline = first + next(i for i, l in enumerate(text)
                             if l.startswith('PK_KERNEL'))
        it = Interp(k)
        it.run(k.stmts)
        interps.append(it)
        desc['kernels'].append({
            'name': k.name, 'index': k.index, 'seed': k.seed,
            'policy': k.policy, 'universe': list(k.universe),
            'multi_group': k.multi,
            'extra_syms': list(k.extra_syms),
            'lines': [first, len(src) - 1], 'kernel_line': kline,
            'params': [{'name': p.name, 'kind': p.kind, 'dtype': p.elem,
                        'shape': list(p.shape), 'lo': p.lo, 'hi': p.hi,
                        'bcast_ok': p.bcast_ok} for p in k.params],
            'nodes': len(it.nodes),
        })
    src.append('} // namespace %s' % ns)
    write(os.path.join(out_dir, name + '.cpp'), src)

    # The reference: the kernels included eagerly, and their shadows.
    ref = [head, '#include <pk/pk.h>', '#include "fuzz_harness.h"',
           '#include "fuzz_shadow.h"', '', '#include <type_traits>', '',
           'namespace eager {', '#include "%s.cpp"' % name,
           '} // namespace eager', '', 'namespace fzs_%s {' % name,
           'using namespace pk::lang;', '']
    for k, it in zip(kernels, interps):
        ref += shadow_text(k, it)
        ref.append('')
    ref += ['} // namespace fzs_%s' % name, '', 'namespace fz_gen {']
    for k in kernels:
        ref.append('void eager_%s(fz::Args &A) { eager::%s::%s(%s); }' % (
            k.name, ns, k.name, call_args(k, 'eager')))
        ref.append('void shadow_%s(fz::Args &A, fz::Args &T) { fzs_%s::%s(%s); }'
                   % (k.name, name, k.name, call_args(k, 'shadow')))
    ref.append('} // namespace fz_gen')
    write(os.path.join(out_dir, name + '_ref.cpp'), ref)

    calls = [head, '#include "fuzz_harness.h"', '', 'namespace %s {' % ns]
    for k in kernels:
        calls.append(compiled_decl(k))
    calls += ['} // namespace %s' % ns, '',
              '#ifdef FZ_WITH_CUDA', '#include "%s.pk.h"' % name,
              '#define FZ_CUDA(f) f', '#else', '#define FZ_CUDA(f) nullptr',
              '#endif', '', 'namespace fz_gen {']
    for k in kernels:
        calls.append('void eager_%s(fz::Args &A);' % k.name)
        calls.append('void shadow_%s(fz::Args &A, fz::Args &T);' % k.name)
        calls.append('void cpu_%s(fz::Args &A) { %s::%s(%s); }' % (
            k.name, ns, k.name, call_args(k, 'cpu')))
        calls.append('#ifdef FZ_WITH_CUDA')
        calls.append('void cuda_%s(fz::Args &A) { pk::cuda::%s(%s); }' % (
            k.name, k.name, call_args(k, 'cuda')))
        calls.append('#endif')
    calls.append('} // namespace fz_gen')
    calls += ['', 'const fz::Batch &fz::batch() {',
              '  static const fz::Batch B{"%s", "%s", {' % (name, seed)]
    entries = [table_entry(k, d['kernel_line'], True)
               for k, d in zip(kernels, desc['kernels'])]
    calls.append(',\n'.join(entries))
    calls += ['  }};', '  return B;', '}']
    write(os.path.join(out_dir, name + '_calls.cpp'), calls)

    twin = ['# Generated by test/fuzz/gen.py: the NumPy twins of %s.cpp\'s '
            'kernels' % name, '# (harness/fz_numpy.py). Do not edit: '
            'regenerate.', '', 'import numpy as np', '',
            'import fz_numpy as F', '']
    for k, it in zip(kernels, interps):
        twin += [''] + numpy_text(k, it) + ['']
    twin += ['', 'KERNELS = {%s}' % ', '.join(
        "'%s': %s" % (k.name, k.name) for k in kernels)]
    write(os.path.join(out_dir, name + '_np.py'), twin)

    with open(os.path.join(out_dir, name + '.json'), 'w') as f:
        json.dump(desc, f, indent=1, sort_keys=True)
        f.write('\n')
    return desc


def write(path, lines):
    text = '\n'.join(lines) + '\n'
    try:
        with open(path) as f:
            if f.read() == text:
                return  # unchanged: keep the timestamp (no rebuild)
    except OSError:
        pass
    with open(path, 'w') as f:
        f.write(text)


def generate(seed, index, prefix='k'):
    """Kernel `index` of `seed` (a function of both only)."""
    for attempt in range(20):
        b = Builder(seed, index, prefix)
        if attempt:
            b.rng = random.Random('pk-fuzz:%s:%d:%d' % (seed, index, attempt))
        try:
            k = b.build()
            it = Interp(k)
            it.run(k.stmts)
            for p in k.params:
                if p.kind == 'out' and it.refval.get(p.name) in (None, 'unset'):
                    raise Invalid('unwritten Out')
            return k
        except Invalid:
            continue
    raise RuntimeError('could not generate kernel %d of seed %s' % (index,
                                                                    seed))


def self_test(a):
    """Same seed, same bytes: generates the batch in two processes (with
    different string hash seeds) and compares every file."""
    import subprocess
    dirs = [os.path.join(a.out_dir, x) for x in ('a', 'b')]
    idx = list(range(a.first, a.first + a.kernels))
    for n, d in enumerate(dirs):
        env = dict(os.environ, PYTHONHASHSEED=str(n + 1))
        subprocess.run([sys.executable, os.path.abspath(__file__), '--seed',
                        str(a.seed), '--first', str(a.first), '--kernels',
                        str(a.kernels), '--out-dir', d, '--name', 'batch'],
                       env=env, check=True)
    bad = 0
    for f in sorted(os.listdir(dirs[0])):
        with open(os.path.join(dirs[0], f), 'rb') as x, \
                open(os.path.join(dirs[1], f), 'rb') as y:
            if x.read() != y.read():
                print('differs: %s' % f)
                bad += 1
    print('%d kernels, %d files, %d differ' % (len(idx),
                                               len(os.listdir(dirs[0])), bad))
    return 1 if bad else 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--seed', required=True)
    ap.add_argument('--kernels', type=int, default=40)
    ap.add_argument('--first', type=int, default=0,
                    help='index of the first kernel')
    ap.add_argument('--only', default='',
                    help='comma-separated kernel indices (instead of a range)')
    ap.add_argument('--out-dir', required=True)
    ap.add_argument('--name', default=None)
    ap.add_argument('--with-known-bugs', action='store_true',
                    help='do not steer around the bugs in KNOWN_BUGS')
    ap.add_argument('--self-test', action='store_true',
                    help='generate the batch twice and check that the files '
                    'are byte-identical (the out dir gets a/ and b/)')
    ap.add_argument('--policy', default=None,
                    help='give every kernel this policy (see POLICIES)')
    ap.add_argument('--multi-group', choices=['yes', 'no'], default=None,
                    help='make every kernel multi-group (yes) or none (no); '
                    'default: by policy (MULTI_GROUP)')
    a = ap.parse_args(argv)
    if a.multi_group:
        global FORCE_MULTI
        FORCE_MULTI = a.multi_group == 'yes'
    if a.policy:
        global FORCE_POLICY
        if a.policy not in dict(POLICIES):
            ap.error('unknown policy %s' % a.policy)
        FORCE_POLICY = a.policy
    if a.with_known_bugs:
        AVOID.clear()
    if a.self_test:
        return self_test(a)
    name = a.name or 'batch_%s' % a.seed
    os.makedirs(a.out_dir, exist_ok=True)
    idx = [int(x) for x in a.only.split(',')] if a.only else \
        list(range(a.first, a.first + a.kernels))
    kernels = [generate(a.seed, i) for i in idx]
    emit_batch(kernels, a.out_dir, name, a.seed,
               ['gen.py'] + ['--seed', str(a.seed), '--kernels',
                             str(a.kernels)])
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
