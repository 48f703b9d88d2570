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


def write(k):
    d = os.path.join(here, k.name)
    os.makedirs(d, exist_ok=True)
    gen.emit_batch([k], d, k.name, 'regression')


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


if __name__ == '__main__':
    for f in (index_of_broadcast, cuda_reduce_bcast_shape,
              index_row_scratch,
              inout_reduce_buffer, inout_cycle_nested_buffer,
              inout_cycle_local_order, temp_cycle_two_forms):
        write(f())
