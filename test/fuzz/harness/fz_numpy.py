"""What the NumPy twins of the fuzz kernels (gen.py, <batch>_np.py) call.

A twin recomputes a kernel with NumPy, written from the generator's own model
of the language (the element type of every value, which gen.py derives by
its rules, not pk's code). It is the oracle pk did not write
(docs/fuzzing.md, "The NumPy oracle"): numpy_oracle.py compares eager,
compiled CPU and CUDA outputs with it. Each value is computed in its own
element type, as pk computes it (float32 values in float32, integers
wrapping in their type), so that the shadow's bounds apply to the twin as to
any backend: values every backend rounds the same way must agree bit for
bit. Where pk's semantics differ from NumPy's operators they are written out
here, each one listed in docs/design.md ("Where pk differs from NumPy"): C's
truncating integer `/` and `%` (0 for a zero divisor), saturating float ->
integer conversions, no clamping of slice bounds (a negative bound counts
from the end once; a window's bounds are never negative), and `max` of an
empty axis raising.
"""

import math

import numpy as np


class ShapeError(Exception):
    """What pk::ShapeError is in the kernel: the twin refuses the call."""


# The NumPy type of each element type.
STORE = {'f32': np.float32, 'f64': np.float64, 'i32': np.int32,
         'i64': np.int64, 'bool': np.bool_}
INT_BITS = {'i32': 32, 'i64': 64}


def arr(v):
    return np.asarray(v)


def round16(v, dt):
    """v stored into a 16-bit ref and read back (float32): rounded to float,
    then to the 16-bit type, to nearest even; infinities and NaNs kept, half
    overflowing to infinity (language.md, "16-bit storage types")."""
    x = np.asarray(v).astype(np.float32)
    if dt == 'f16':
        with np.errstate(over='ignore'):  # beyond 65504: an infinity
            return x.astype(np.float16).astype(np.float32)
    bits = np.ascontiguousarray(x).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    out = bits.astype(np.uint32).view(np.float32).reshape(x.shape)
    return np.where(np.isnan(x), x, out)


def conv(v, dt):
    """v converted to element type dt as pk converts (language.md §3); to a
    16-bit type (a ref's storage), rounded and read back as float32."""
    v = arr(v)
    if dt in ('f16', 'bf16'):
        return round16(v, dt)
    if dt in ('f32', 'f64'):
        return v.astype(STORE[dt])  # rounds to nearest, like C++
    if dt == 'bool':
        return v != 0
    bits = INT_BITS[dt]
    target = np.int32 if bits == 32 else np.int64
    if v.dtype.kind == 'f':
        # saturating: NaN 0, beyond the range the range's end
        lo, hi = -2.0 ** (bits - 1), 2.0 ** (bits - 1)
        x = np.trunc(v)
        out = np.zeros(v.shape, dtype=target)
        ok = (x >= lo) & (x < hi)
        out[ok] = x[ok].astype(target)
        out[x >= hi] = np.iinfo(target).max
        out[x < lo] = np.iinfo(target).min
        return out
    return v.astype(target)  # integers and bools: wraps (two's complement)


def lit(value, dt):
    return conv(np.asarray(value, dtype=np.float64 if isinstance(value, float)
                           else np.int64), dt)


def load(x, dt):
    return conv(x, dt)


def wrap(q, dt):
    """Python integers (an object array) wrapped into dt."""
    bits = INT_BITS[dt]
    half = 1 << (bits - 1)
    w = np.vectorize(lambda x: ((int(x) + half) % (1 << bits)) - half,
                     otypes=[object])(q)
    return w.astype(np.int32 if bits == 32 else np.int64)


def _trunc_div(x, y):
    if y == 0:
        return 0
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def div(a, b, dt):
    bcast(a, b)
    if dt in ('f32', 'f64'):
        return arr(np.divide(a, b))
    a, b = np.broadcast_arrays(arr(a).astype(object), arr(b).astype(object))
    return wrap(np.vectorize(lambda x, y: _trunc_div(int(x), int(y)),
                             otypes=[object])(a, b), dt)


def rem(a, b, dt):
    bcast(a, b)
    if dt in ('f32', 'f64'):
        return arr(np.fmod(a, b))
    a, b = np.broadcast_arrays(arr(a).astype(object), arr(b).astype(object))

    def r(x, y):
        x, y = int(x), int(y)
        return 0 if y == 0 else x - _trunc_div(x, y) * y
    return wrap(np.vectorize(r, otypes=[object])(a, b), dt)


def bcast(*vs):
    try:
        return np.broadcast_shapes(*[arr(v).shape for v in vs])
    except ValueError as e:
        raise ShapeError('broadcast: %s' % e)


def binary(f, a, b):
    bcast(a, b)
    return arr(f(a, b))


def erf(x):
    x = arr(x)
    return arr(np.vectorize(math.erf, otypes=[np.float64])(x)).astype(x.dtype)


def sigmoid(x):
    x = arr(x)
    one = np.ones((), x.dtype)  # 0-d arrays keep float32 arithmetic float32
    return arr(one / (one + np.exp(-x)))


def rsqrt(x):
    x = arr(x)
    return arr(np.ones((), x.dtype) / np.sqrt(x))


def clamp(x, lo, hi):
    bcast(x, lo, hi)
    return arr(np.minimum(np.maximum(x, lo), hi))


def where(m, a, b):
    bcast(m, a, b)
    return arr(np.where(m, a, b))


def _axis(v, axis):
    r = arr(v).ndim
    if axis is None:
        return None
    if not -r <= axis < r:
        raise ShapeError('axis %d of a rank-%d value' % (axis, r))
    return axis % r


def reduce(op, v, axis, keep, dt):
    v = arr(v)
    ax = _axis(v, axis)
    n = v.size if ax is None else v.shape[ax]
    if op == 'sum':
        # integers wrap; a bool sum counts
        return arr(np.sum(v.astype(STORE[dt]), axis=ax, keepdims=keep,
                          dtype=STORE[dt]))
    if op == 'mean':
        if n == 0:
            shape = np.sum(v, axis=ax, keepdims=keep).shape
            return np.full(shape, np.nan, dtype=STORE[dt])
        return arr(np.mean(v.astype(STORE[dt]), axis=ax, keepdims=keep,
                           dtype=STORE[dt]))
    if n == 0:
        raise ShapeError('%s of an empty axis' % op)
    if op in ('max', 'min'):
        f = np.max if op == 'max' else np.min
        return arr(f(v, axis=ax, keepdims=keep))
    f = np.argmax if op == 'argmax' else np.argmin
    return arr(f(v, axis=ax, keepdims=keep)).astype(np.int64)


def matmul(a, b):
    a, b = arr(a), arr(b)
    if a.ndim < 2 or b.ndim < 2:
        raise ShapeError('matmul of ranks %d and %d' % (a.ndim, b.ndim))
    if a.shape[-1] != b.shape[-2]:
        raise ShapeError('matmul: inner extents %d, %d' % (a.shape[-1],
                                                           b.shape[-2]))
    bcast(np.empty(a.shape[:-2]), np.empty(b.shape[:-2]))
    return arr(np.matmul(a, b))  # in the element type (integers wrap)


def transpose(a):
    a = arr(a)
    if a.ndim < 2:
        raise ShapeError('transpose of a rank-%d value' % a.ndim)
    return np.swapaxes(a, -1, -2)


def broadcast_to(a, shape):
    try:
        return np.broadcast_to(arr(a), shape)
    except ValueError as e:
        raise ShapeError('broadcast_to: %s' % e)


def expand_dims(a, axis):
    a = arr(a)
    if not -(a.ndim + 1) <= axis <= a.ndim:
        raise ShapeError('expand_dims: axis %d' % axis)
    return np.expand_dims(a, axis)


def squeeze(a, axis):
    a = arr(a)
    ax = _axis(a, axis)
    if a.shape[ax] != 1:
        raise ShapeError('squeeze of an axis of extent %d' % a.shape[ax])
    return np.squeeze(a, axis=ax)


def index(a, axis, dt):
    a = arr(a)
    ax = _axis(a, axis)
    shape = [1] * a.ndim
    shape[ax] = a.shape[ax]
    i = np.arange(a.shape[ax]).reshape(shape)
    return conv(np.broadcast_to(i, a.shape), dt)


def permute_dims(a, axes):
    a = arr(a)
    axes = [x % a.ndim if a.ndim else x for x in axes]
    if sorted(axes) != list(range(a.ndim)):
        raise ShapeError('permute_dims: axes %s' % axes)
    return np.transpose(a, axes)


def reshape(a, dims):
    a = arr(a)
    dims = [int(d) for d in dims]
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise ShapeError('reshape: extents %s' % dims)
    if -1 in dims:
        known = 1
        for d in dims:
            if d != -1:
                known *= d
        # The other extents' product 0: no -1 fits, not even for an empty
        # array (pk and NumPy both refuse).
        if known == 0 or a.size % known:
            raise ShapeError('reshape: %d elements into %s' % (a.size, dims))
        dims = [a.size // known if d == -1 else d for d in dims]
    n = 1
    for d in dims:
        n *= d
    if n != a.size:
        raise ShapeError('reshape: %d elements into %s' % (a.size, dims))
    return a.reshape(dims)


def slice_(a, axis, b, e, window=False):
    """pk's slice of a value: negative bounds count from the end (as eager
    code does; pkc takes negative constants only), then no clamping. A
    window of a ref (window=True) never counts from the end: a negative
    bound is an error (language.md §2)."""
    a = arr(a)
    ax = _axis(a, axis)
    n = a.shape[ax]
    b, e = int(b), int(e)
    if window and (b < 0 or e < 0):
        raise ShapeError('window [%d, %d): a negative bound' % (b, e))
    if b < 0:
        b += n
    if e < 0:
        e += n
    if not 0 <= b <= e <= n:
        raise ShapeError('slice [%d, %d) of an axis of %d' % (b, e, n))
    idx = [slice(None)] * a.ndim
    idx[ax] = slice(b, e)
    return a[tuple(idx)]


def window(a, wins):
    """A window of a ref (x.slice(...).slice(...)[_]), innermost first."""
    for (ax, b, e) in wins:
        a = slice_(a, ax, b, e, window=True)
    return a


def window_store(cur, v, axis, b, e, dt):
    """The ref's contents after `ref.slice(axis, b, e)[_] = v`."""
    out = np.array(arr(cur), copy=True)
    w = slice_(out, axis, b, e, window=True)
    w[...] = broadcast_to(conv(v, dt), w.shape)
    return out


def concat(vs, axis):
    vs = [arr(v) for v in vs]
    if any(v.ndim == 0 for v in vs):
        raise ShapeError('concat of a scalar')
    ax = _axis(vs[0], axis)
    for v in vs[1:]:
        if v.ndim != vs[0].ndim or any(
                v.shape[i] != vs[0].shape[i] for i in range(v.ndim)
                if i != ax):
            raise ShapeError('concat: shapes %s' % [x.shape for x in vs])
    return np.concatenate(vs, axis=ax)


def take(table, idx, axis):
    table, idx = arr(table), arr(idx)
    ax = _axis(table, axis)
    n = table.shape[ax]
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ShapeError('take: an index outside [0, %d)' % n)
    return np.take(table, idx, axis=ax)


def repeat(a, count, axis):
    """np.repeat with one count along one axis (pk's repeat)."""
    a = arr(a)
    if a.ndim == 0:
        raise ShapeError('repeat of a scalar')
    count = int(count)
    if count < 0:
        raise ShapeError('repeat: the count %d is negative' % count)
    return np.repeat(a, count, axis=_axis(a, axis))


def refread(v, dt, shape):
    """A ref read after a store: the value stored, converted and broadcast."""
    return broadcast_to(conv(v, dt), shape)


def tdiv(x, c):
    """C's integer division of two Python ints (window and slice bounds)."""
    return _trunc_div(int(x), int(c))
