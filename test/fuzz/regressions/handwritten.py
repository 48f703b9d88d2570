#!/usr/bin/env python3
"""Writes the hand-made reproducers of this directory with the generator's
classes (so that they get the same harness files as generated ones):

    python3 test/fuzz/regressions/handwritten.py

A reproducer is a gen.Kernel: parameters (gen.Param: name, kind, dtype,
shape of extent symbols and 1s), statements (gen.Stmt) over expressions
(gen.Expr); gen.emit_batch writes <id>.cpp, <id>_ref.cpp, <id>_calls.cpp.
The `case`, `compile-only` and `expected-to-fail` files are kept by hand.
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(here))
import gen  # noqa: E402
from gen import Expr, F32, I64, Kernel, Param, Stmt  # noqa: E402

# The reproducers show the bugs the generator steers around.
gen.AVOID.clear()


def write(k, name=None, seed='regression'):
    """Writes the reproducer of kernel k into <name>/ (k.name's by default)
    as a batch of its own of `seed`."""
    name = name or k.name
    d = os.path.join(here, name)
    os.makedirs(d, exist_ok=True)
    gen.emit_batch([k], d, name, seed)


def from_seed(name, seed, index):
    """A long-mode kernel as the generator makes it (kernel `index` of
    `seed`), written as the reproducer `name`."""
    write(gen.generate(seed, index), name, str(seed))


def index_of_broadcast():
    # o[_] = index(x[_], 0) with x of one row, o of A rows: NumPy gives 0.
    k = Kernel('index_of_broadcast', 0, 'regression')
    k.policy, k.universe = 'regression', ('A', 'B')
    k.params = [Param('x', 'in', F32, (1, 'B'), bcast_ok=False),
                Param('o', 'out', I64, ('A', 'B'))]
    k.stmts = [Stmt('store', param='o', expr=Expr(
        'op', 'index', [Expr('load', 'x')], {'axis': 0}))]
    return k


def cuda_reduce_bcast_shape():
    # max over broadcast_to(x, y): y only gives a shape.
    k = Kernel('cuda_reduce_bcast_shape', 0, 'regression')
    k.policy, k.universe = 'regression', ('A',)
    k.params = [Param('x', 'in', F32, ('A',)),
                Param('y', 'in', F32, ('A',), bcast_ok=False),
                Param('o', 'out', F32, ())]
    bt = Expr('op', 'broadcast_to', [Expr('load', 'x'), Expr('reftarget', 'y')])
    k.stmts = [Stmt('store', param='o', expr=Expr(
        'op', 'max', [bt], {'axis': -1, 'sig': (('A',), 0)}))]
    return k


def index_row_scratch():
    # t varies along axis 1 only through index() (no load along it) and is
    # buffered for the second phase; in some cases x is [A, 1] at run time
    # (broadcast) while o is [A, B].
    k = Kernel('index_row_scratch', 0, 'regression')
    k.policy, k.universe = 'regression', ('A', 'B')
    k.params = [Param('x', 'in', F32, ('A', 'B')),
                Param('o', 'out', F32, ('A', 'B'))]
    sig = (('A', 'B'), 1)
    idx = Expr('op', 'index', [Expr('load', 'x')], {'axis': 1})
    scaled = Expr('op', 'mul', [Expr('op', 'cast', [idx], {'to': F32}),
                                Expr('lit', gen.tlit(0.01, '0.01f'))])
    k.stmts = [
        Stmt('decl', name='t', expr=Expr('op', 'tanh', [scaled])),
        Stmt('store', param='o', expr=Expr('op', 'sub', [
            Expr('local', 't'),
            Expr('op', 'max', [Expr('local', 't')],
                 {'axis': 1, 'keep': True, 'sig': sig})]))]
    return k


def attention_masked_key_inf():
    # pkc's fused attention, o = softmax(s) v with s = q k^T, where key 0 is
    # masked (score -inf) and v's row 0 is inf. NumPy (eager): p[:, 0] = 0,
    # 0 * inf = NaN, every output element is NaN. The online softmax skips
    # a key whose score is -inf while the running max is still -inf, so it
    # never multiplies v's row 0 and returns the softmax over the other keys.
    # The generator's attention kernels meet this with the driver's special
    # data (inf in k makes a score -inf, inf or NaN in v), rarely.
    k = Kernel('attention_masked_key_inf', 0, 'regression')
    k.policy, k.universe = 'regression', ('A', 'B', 'C')
    k.params = [Param('q', 'in', F32, ('A', 'C'), bcast_ok=False),
                Param('k', 'in', F32, ('B', 'C'), bcast_ok=False),
                Param('v', 'in', F32, ('B', 'C'), bcast_ok=False),
                Param('o', 'out', F32, ('A', 'C'))]
    sig = (('A', 'B'), 1)

    def first(x, axis):
        return Expr('op', 'eq', [Expr('op', 'index', [x], {'axis': axis}),
                                 Expr('lit', gen.lit(gen.I32, 0))])
    s = Expr('op', 'matmul', [Expr('load', 'q'), Expr(
        'op', 'transpose', [Expr('load', 'k')])], {'mm': 's', 'scores': True})
    masked = Expr('op', 'where', [first(Expr('local', 's'), -1), Expr(
        'lit', gen.tlit(-1e20, '-INFINITY')), Expr('local', 's')])
    m = Expr('op', 'max', [Expr('local', 's')],
             {'axis': -1, 'keep': True, 'sig': sig})
    e = Expr('op', 'exp', [Expr('op', 'sub', [Expr('local', 's'), m])])
    den = Expr('op', 'sum', [Expr('local', 'e')],
               {'axis': -1, 'keep': True, 'sig': sig})
    p = Expr('op', 'div', [Expr('local', 'e'), den])
    # (the literal's value only feeds the generator's interval analysis,
    # which would reject an infinite operand; the text is what counts)
    v = Expr('op', 'where', [first(Expr('load', 'v'), 0), Expr(
        'lit', gen.tlit(2.0, 'INFINITY')), Expr('load', 'v')])
    k.stmts = [
        Stmt('decl', name='s', expr=s),
        Stmt('assign', name='s', expr=masked),
        Stmt('decl', name='e', expr=e),
        Stmt('store', param='o', expr=Expr(
            'op', 'matmul', [p, v], {'mm': 'o', 'attn': True}))]
    return k


def red(op, x, axis, base, keep=False):
    return Expr('op', op, [x], {'axis': axis, 'keep': keep,
                                'sig': (base, axis)})


def inout_reduce_buffer():
    # pkc aborts ("internal error: no partition of k lowers to loops"): an
    # InOut updated by a column-reduction group (h = h + sum(x, 0)), and a
    # row reduction whose operand holds another column reduction (buffered)
    # combined with h. The same store into an Out instead of the InOut, or
    # without the inner column reduction, compiles.
    k = Kernel('inout_reduce_buffer', 0, 'regression')
    k.policy, k.universe = 'regression', ('A', 'B')
    base = ('A', 'B')
    k.params = [Param('x', 'in', F32, base), Param('y', 'in', F32, base),
                Param('o', 'out', F32, base), Param('h', 'inout', F32, base)]
    k.stmts = [
        Stmt('store', param='h', expr=Expr('op', 'add', [
            Expr('load', 'h'), red('sum', Expr('load', 'x'), 0, base, True)])),
        Stmt('store', param='o', expr=Expr('op', 'add', [
            red('sum', Expr('op', 'sub', [red('sum', Expr('load', 'y'), 0,
                                              base), Expr('load', 'x')]),
                1, base, True),
            Expr('load', 'h')]))]
    return k


def inout_cycle_nested_buffer():
    # pkc aborts the same way: two InOut refs updated from each other's old
    # contents (a cycle: h1's group reads the old h0, h0's the old h1),
    # and an output o = min(min(max(x4, 0) - x0, 1, keepdims), 0) (a row
    # reduction inside a column reduction inside a column reduction) that
    # reads neither; without the cycle it compiles.
    k = Kernel('inout_cycle_nested_buffer', 0, 'regression')
    k.policy, k.universe = 'regression', ('A', 'B')
    base = ('A', 'B')
    k.params = [Param('x0', 'in', F32, base), Param('x4', 'in', F32, base),
                Param('o', 'out', F32, ('B',)),
                Param('h0', 'inout', F32, base),
                Param('h1', 'inout', F32, base)]
    t0 = red('max', Expr('load', 'x4'), 0, base)
    inner = red('min', Expr('op', 'sub', [t0, Expr('load', 'x0')]), 1, base,
                True)  # [A, 1]
    k.stmts = [
        Stmt('decl', name='old0', expr=Expr('load', 'h0')),
        Stmt('store', param='h0', expr=Expr('op', 'add', [
            Expr('load', 'h0'),
            Expr('op', 'sum', [Expr('load', 'h1')],
                 {'axis': None, 'sig': (base, 'all')})])),
        Stmt('store', param='h1', expr=Expr('op', 'add', [
            Expr('load', 'h1'), red('min', Expr('local', 'old0'), 0, base,
                                    True)])),
        Stmt('store', param='o', expr=red('min', inner, 0, ('A', 1)))]
    return k


def inout_cycle_local_order():
    # pkc aborts the same way (fuzz finding pkc-crash-3002-k9, the
    # minimiser's kernel): an InOut cycle and a reduction over all axes of
    # values holding a column reduction (buffered), computed in a local
    # *before* the cycle; with the same expression written in the store
    # after the cycle, it compiles.
    k = Kernel('inout_cycle_local_order', 0, 'regression')
    k.policy, k.universe = 'regression', ('A', 'B')
    base = ('A', 'B')
    k.params = [Param('o', 'out', F32, base), Param('x', 'in', F32, base),
                Param('h0', 'inout', F32, base),
                Param('h1', 'inout', F32, base)]
    k.stmts = [
        Stmt('decl', name='t0', expr=red('min', Expr('load', 'x'), 0, base)),
        Stmt('decl', name='t1', expr=Expr('op', 'sum', [
            Expr('op', 'sub', [Expr('load', 'x'), Expr('local', 't0')])],
            {'axis': None, 'sig': (base, 'all')})),
        Stmt('decl', name='old0', expr=Expr('load', 'h0')),
        Stmt('store', param='h0', expr=red('max', Expr('load', 'h1'), 1, base,
                                           True)),
        Stmt('store', param='h1', expr=red('mean', Expr('local', 'old0'), 0,
                                           base, True)),
        Stmt('store', param='o', expr=Expr('local', 't1'))]
    return k


def temp_cycle_two_forms():
    # pkc aborts ("internal error: temporaries in a cycle"), no InOut: a
    # store combining a row and a column reduction (both buffered) next to
    # a reduction over all axes of values holding a row reduction, stored
    # into a rank-2 ref (found as
    # seed 105 kernel k8 of gen.py while the multi-group kernels were made,
    # minimised by hand). Either store alone compiles.
    k = Kernel('temp_cycle_two_forms', 0, 'regression')
    k.policy, k.universe = 'regression', ('A', 'B')
    base = ('A', 'B')
    k.params = [Param('o0', 'out', F32, base), Param('x', 'in', F32, base),
                Param('y', 'in', F32, base), Param('o1', 'out', F32, base)]
    k.stmts = [
        Stmt('store', param='o1', expr=Expr('op', 'add', [
            red('sum', Expr('load', 'x'), 1, base, True),
            red('sum', Expr('load', 'y'), 0, base, True)])),
        Stmt('store', param='o0', expr=Expr('op', 'sum', [
            Expr('op', 'mul', [Expr('load', 'x'),
                               red('sum', Expr('load', 'y'), 1, base, True)])],
            {'axis': None, 'sig': (base, 'all')}))]
    return k


def window_update_after_store():
    # A store into a window whose value reads that window (`+=`), of an Out
    # stored into whole before (fuzz findings in CI seeds 102 and 103 once
    # gen.py generated window stores, minimised by hand):
    #   o[_] = x[_] * 2.0f;
    #   o.slice(0, 0, 1)[_] += y[_];
    # pkc kept the window's old contents in a temporary that it loaded
    # before the first store (the load lost its `after=1`), so o[0] was the
    # contents of o before the kernel (the driver's sentinel) plus y[0], on
    # the CPU and on CUDA (`o.slice(0, 0, 1)[_] = o.slice(0, 0, 1)[_] +
    # y[_]` the same). Fixed: Materialize's snapshotRef keeps the load's
    # version.
    k = Kernel('window_update_after_store', 0, 'regression')
    k.policy, k.universe = 'regression', ('A',)
    k.params = [Param('x', 'in', F32, ('A',), bcast_ok=False),
                Param('y', 'in', F32, (1,), bcast_ok=False),
                Param('o', 'out', F32, ('A',))]
    k.stmts = [
        Stmt('store', param='o', expr=Expr('op', 'mul', [
            Expr('load', 'x'), Expr('lit', gen.tlit(2.0, '2.0f'))])),
        Stmt('wstore', param='o', expr=Expr('load', 'y'),
             wins=[(0, ('c', 0), ('c', 1), 1)], compound='+')]
    return k


def store_reads_own_window():
    # A store into a ref whose value reads a window of that ref (found in
    # seed 108, kernel k9, once gen.py read windows of InOut refs;
    # minimised by hand):
    #   h[_] = x[_] + h.slice(0, 0, 1)[_];
    # Eager code reads h[0] before the store (a value is computed whole,
    # then stored); the compiled loop (CPU and CUDA) reads h[0] in the same
    # pass that writes h, so elements after the first get x + the new h[0]
    # (on CUDA, whichever thread wrote first). pkc neither copies the
    # window first nor rejects it (it rejects a window store reading
    # another part of its ref, pk-not-supported-yet).
    k = Kernel('store_reads_own_window', 0, 'regression')
    k.policy, k.universe = 'regression', ('A',)
    k.params = [Param('x', 'in', F32, ('A',), bcast_ok=False),
                Param('h', 'inout', F32, ('A',))]
    k.stmts = [Stmt('store', param='h', expr=Expr('op', 'add', [
        Expr('load', 'x'),
        Expr('wload', 'h', attrs={'wins': [(0, ('c', 0), ('c', 1), 1)]})]))]
    return k


def window_update_cycle():
    # pkc aborts, "internal error: temporaries in a cycle" (compile-only),
    # on a window update (+=) after stores to the ref (seeds 104, 124, 147,
    # 150, 162, 190 of gen.py; minimised by hand; seen with the
    # window_update_after_store fix, Materialize's snapshotRef):
    #   u1: h[_] = h[_] * 2.0f; h[_] = h[_] - x[_];
    #       h.slice(0, 0, 1)[_] += y[_];          (an InOut stored twice)
    #   u2: o[_] = sum(x[_]); o.slice(0, 0, 1)[_] += y[_];
    #                                           (after a reduction's store)
    # With one elementwise store before, with `=` in place of `+=`, or
    # with o[_] = x[_] + sum(x[_]), they compile.
    ks = []
    k = Kernel('u1', 0, 'regression')
    k.policy, k.universe = 'regression', ('A',)
    k.params = [Param('h', 'inout', F32, ('A',)),
                Param('x', 'in', F32, ('A',)), Param('y', 'in', F32, (1,))]
    k.stmts = [
        Stmt('store', param='h', expr=Expr('op', 'mul', [
            Expr('load', 'h'), Expr('lit', gen.tlit(2.0, '2.0f'))])),
        Stmt('store', param='h', expr=Expr('op', 'sub', [
            Expr('load', 'h'), Expr('load', 'x')])),
        Stmt('wstore', param='h', expr=Expr('load', 'y'),
             wins=[(0, ('c', 0), ('c', 1), 1)], compound='+')]
    ks.append(k)
    k = Kernel('u2', 1, 'regression')
    k.policy, k.universe = 'regression', ('A',)
    k.params = [Param('o', 'out', F32, ('A',)),
                Param('x', 'in', F32, ('A',)), Param('y', 'in', F32, (1,))]
    k.stmts = [
        Stmt('store', param='o', expr=Expr('op', 'sum', [Expr('load', 'x')], {
            'axis': None, 'sig': (('A',), 'all')})),
        Stmt('wstore', param='o', expr=Expr('load', 'y'),
             wins=[(0, ('c', 0), ('c', 1), 1)], compound='+')]
    ks.append(k)
    d = os.path.join(here, 'window_update_cycle')
    os.makedirs(d, exist_ok=True)
    gen.emit_batch(ks, d, 'window_update_cycle', 'regression')


def concat_temp_cycle():
    # pkc aborts, "internal error: temporaries in a cycle" (compile-only;
    # gen.py:KNOWN_BUGS['concat-temp-cycle']), on three kernels found by
    # the fuzzer's views (seeds 110, 113, 141, minimised by hand):
    #   c1: o[_] = concat({slice(y[_] * 2.0f, 0, 0, 1), y[_]}, 0);
    #       (a slice of a computed value first, then a part not buffered;
    #       the other order, or two slices, compile)
    #   c2: o[_] = sum(concat({expand_dims(min(x[_], 0), 1),
    #                          expand_dims(y[_], 1)}, 1), 1) + 1.0f;
    #       (a reduction as the first part, the result stored into a ref
    #       of rank 2; with the reduction second, or o of rank 1, it
    #       compiles)
    #   c3: o[_] = r(x[_] * 2.0f) - mean(y[_]); o1[_] = y[_];
    #       o1.slice(0, 0, 1)[_] = 1.0f;
    #       with r(a) = concat({slice(a, 1, 1, n), slice(a, 1, 0, 1)}, 1)
    #       (np.roll; without the window store, or without the mean, it
    #       compiles)
    ks = []
    c = lambda v, t: Expr('lit', gen.tlit(v, t))
    k = Kernel('c1', 0, 'regression')
    k.policy, k.universe = 'regression', ('A',)
    k.params = [Param('y', 'in', F32, ('A',)), Param('o', 'out', F32, ('A',))]
    sl = Expr('op', 'vslice', [Expr('op', 'mul', [Expr('load', 'y'),
                                                  c(2.0, '2.0f')])],
              {'axis': 0, 'b': ('c', 0), 'e': ('c', 1), 'dim': 1})
    k.stmts = [Stmt('store', param='o', expr=Expr(
        'op', 'concat', [sl, Expr('load', 'y')], {'axis': 0, 'dim': 'A'}))]
    ks.append(k)
    k = Kernel('c2', 1, 'regression')
    k.policy, k.universe = 'regression', ('A', 'B')
    k.params = [Param('x', 'in', F32, ('A', 'B')), Param('y', 'in', F32, ('B',)),
                Param('o', 'out', F32, ('A', 'B'))]
    parts = [Expr('op', 'expand_dims', [red('min', Expr('load', 'x'), 0,
                                            ('A', 'B'))], {'axis': 1}),
             Expr('op', 'expand_dims', [Expr('load', 'y')], {'axis': 1})]
    cat = Expr('op', 'concat', parts, {'axis': 1, 'dim': 2})
    k.stmts = [Stmt('store', param='o', expr=Expr('op', 'add', [
        red('sum', cat, 1, ('B', 2)), c(1.0, '1.0f')]))]
    ks.append(k)
    k = Kernel('c3', 2, 'regression')
    k.policy, k.universe = 'regression', ('A', 'B')
    k.params = [Param('x', 'in', F32, ('A', 'B')), Param('y', 'in', F32, ('A', 'B')),
                Param('o', 'out', F32, ('A', 'B')),
                Param('o1', 'out', F32, ('A', 'B'))]
    a = Expr('hparam', 0)
    n = ('vext', 0, 1)
    roll = Expr('op', 'concat', [
        Expr('op', 'vslice', [a], {'axis': 1, 'b': ('c', 1), 'e': n,
                                   'dim': '~0'}),
        Expr('op', 'vslice', [a], {'axis': 1, 'b': ('c', 0), 'e': ('c', 1),
                                   'dim': 1})], {'axis': 1, 'dim': 'B'})
    k.helpers = [gen.Helper('c3_roll', 1, [], roll)]
    call = Expr('call', 'c3_roll', [Expr('op', 'mul', [Expr('load', 'x'),
                                                       c(2.0, '2.0f')])])
    k.stmts = [
        Stmt('store', param='o', expr=Expr('op', 'sub', [
            call, Expr('op', 'mean', [Expr('load', 'y')],
                       {'axis': None, 'sig': (('A', 'B'), 'all')})])),
        Stmt('store', param='o1', expr=Expr('load', 'y')),
        Stmt('wstore', param='o1', expr=c(1.0, '1.0f'),
             wins=[(0, ('c', 0), ('c', 1), 1)])]
    ks.append(k)
    d = os.path.join(here, 'concat_temp_cycle')
    os.makedirs(d, exist_ok=True)
    gen.emit_batch(ks, d, 'concat_temp_cycle', 'regression')


def mismatch_9818_k26_cpu_c8():
    # The long mode's kernel as the fuzzer minimised it (its unused
    # parameters kept: they keep the case's random data). x2 holds rows of
    # five equal values; eager's mean is the value, d0 exactly 0, compiled
    # code's mean (lanes, then their tree) an ulp off, d0 1e-15: times an
    # inf of x3, NaN in eager and an infinity compiled. Both are right; the
    # shadow's bound of d0 * x3 is NaN there ("may be NaN", fuzz_shadow.h).
    name = 'mismatch_9818_k26_cpu_c8'
    k = Kernel('k26', 26, '9818')
    k.policy, k.universe = 'classic', ('A', 'B', 'C', 'D')
    base = ('A', 'B', 'C', 'D')
    k.params = [
        Param('x0', 'in', gen.BOOL, ('A', 'B', 1, 'D'), lo=0.0, hi=1.0),
        Param('x1', 'in', gen.F64, base),
        Param('s0', 'scalar', F32, (), lo=1e-05, hi=0.001),
        Param('x3', 'in', F32, base, lo=-8.0, hi=8.0),
        Param('x4', 'in', F32, ('A', 'B', 'C', 1)),
        Param('o0', 'out', F32, base, storage=gen.BF16),
        Param('o1', 'out', F32, ('A', 'B', 'C')),
        Param('x5', 'in', gen.I32, base, lo=-10.0, hi=10.0)]
    k.stmts = [
        Stmt('decl', name='x2', expr=Expr('op', 'mul', [
            Expr('load', 'x0'), Expr('load', 'x1')])),
        Stmt('decl', name='mu0', expr=Expr('op', 'mean', [
            Expr('local', 'x2')], {'axis': -1, 'keep': True,
                                   'sig': (base, 3)})),
        Stmt('decl', name='d0', expr=Expr('op', 'sub', [
            Expr('local', 'x2'), Expr('local', 'mu0')])),
        Stmt('store', param='o0', expr=Expr('op', 'mul', [
            Expr('local', 'd0'), Expr('load', 'x3')])),
        Stmt('store', param='o1', expr=Expr('lit', gen.lit(gen.I32, 0)))]
    write(k, name, '9818')


def mismatch_9829_k36_cpu_c10():
    # The long mode's kernel k36 of seed 9829 (the minimiser kept it whole):
    # sigmoid of an exact float product near -91 stored to a double output.
    # Eager's sigmoid, 1 / (1 + exp(-x)), is 0 there, pk::vm's 3.5e-40; the
    # shadow's bound was relative (0) and the double output's floor 1e-300.
    # A float value entering a double one now keeps float's absolute floor
    # (fzs::Floor32).
    from_seed('mismatch_9829_k36_cpu_c10', 9829, 36)


def build_error_9844_k32():
    # The long mode's kernel k32 of seed 9844: attention whose keys are a
    # softmax over axis 0 (transpose(exp(x1 - max(x1, 0)) / sum(...))): the
    # k side of q . k reads column reductions (max_buf, sum_buf) that move
    # along d, not along the keys. The blocked scores (577953d) split the
    # product's statements by whether they move along the keys, put those
    # loads on q's side and left k's side without them: the .pk.cpp did
    # not compile ("max_buf_v_1 was not declared"). Each side is now what
    # its value needs.
    from_seed('build_error_9844_k32', 9844, 32)


def mismatch_9864_k18_cpu_c10():
    # The long mode's kernel k18 of seed 9864: matmul(x3, |x2|) *
    # sigmoid(matmul(x3, |x2|)) * matmul(...), exact products on grid data.
    # Where the first product is below -88, eager's (and NumPy's) sigmoid,
    # 1 / (1 + exp(-x)), is 0 and pk::vm's the denormal it should be;
    # times a product in the hundreds the difference reaches 3e-36, above
    # the float output's floor, against a bound of 0. A function whose
    # result may underflow is now accurate to the smallest normal there
    # (fzs::Tiny32).
    from_seed('mismatch_9864_k18_cpu_c10', 9864, 18)


def crash_9888_k37_c7():
    # Long mode, seed 9888 k37, case 7 ("mixed"): A = 0 and B, C, D, E =
    # 64, 65, 1001, 65. The driver capped the product of all the symbols'
    # extents, 0 here, so the refs without A had 270 million elements each
    # and the driver was killed for memory (no pk bug). The cap is now the
    # product of the nonzero extents (fuzz_main.cpp, largestRef), and a case
    # with a ref past twice the cap fails, named, before any allocation.
    from_seed('crash_9888_k37_c7', 9888, 37)


def build_error_9891_k39():
    # The long mode's kernel k39 of seed 9891, within minutes of dfd0f35:
    # attention whose keys are a pk::half ref. The blocked scores' new
    # transposition (pk::rt::transpose_block) took k's load of float values
    # for a float ref and passed its uint16_t elements: the .pk.cpp did not
    # compile. It now takes the rows in place only where the ref itself is
    # of the nest's type; others are converted element by element.
    from_seed('build_error_9891_k39', 9891, 39)


if __name__ == '__main__':
    for f in (index_of_broadcast, cuda_reduce_bcast_shape,
              index_row_scratch,
              inout_reduce_buffer, inout_cycle_nested_buffer,
              inout_cycle_local_order, temp_cycle_two_forms,
              window_update_after_store, store_reads_own_window):
        write(f())
    concat_temp_cycle()
    window_update_cycle()
    mismatch_9818_k26_cpu_c8()
    mismatch_9829_k36_cpu_c10()
    build_error_9844_k32()
    mismatch_9864_k18_cpu_c10()
    crash_9888_k37_c7()
    build_error_9891_k39()
