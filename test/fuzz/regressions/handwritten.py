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


if __name__ == '__main__':
    for f in (index_of_broadcast, cuda_reduce_bcast_shape,
              index_row_scratch):
        write(f())
