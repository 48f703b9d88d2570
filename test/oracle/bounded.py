"""Values with rounding-error bounds, for NumPy twins of float32 kernels.

An `Fl` is what a kernel computes in float32, seen from outside: `v`, the
exact result (in float64, whose own error is far below the bounds), and
`err`, a bound on how far any correct float32 evaluation can be from it --
any order of a reduction's terms, any blocking of a matrix product, with or
without fused multiply-adds, math functions within FN. The operators follow
the kernel's expression, so a twin reads like the kernel and gets its bound
by the standard analysis (Higham, "Accuracy and Stability of Numerical
Algorithms", ch. 2-3): each correctly rounded operation adds U relative to
its result; errors of the operands propagate through the operation's
derivative over the operands' intervals; a sum of n terms in any order is
within gamma(n - 1) of the sum of their magnitudes; a matrix product within
gamma(K) of |a| |b|.

Independent of pk: nothing here reads pk's code or its tests' bounds.
"""

import numpy as np

U = 2.0 ** -24  # float32's unit roundoff
# One math function call (exp, log, tanh, sin, cos, pow, rsqrt, sigmoid):
# 4 ulp, at most 2 U relative each. CUDA's single-precision functions are
# within 2 ulp (CUDA C++ Programming Guide, "Mathematical Functions"),
# pk::vm's within 3 (docs/vmath.md), glibc's within 1-2.
FN = 8 * U


def gamma(n):
    """Higham's gamma_n = n U / (1 - n U)."""
    n = np.asarray(n, dtype=np.float64)
    return n * U / (1 - n * U)


def _f64(x):
    return np.asarray(x, dtype=np.float64)


class Fl:
    __array_priority__ = 100  # ndarray op Fl goes to Fl's reflected method

    def __init__(self, v, err=None):
        self.v = _f64(v)
        err = np.zeros_like(self.v) if err is None else _f64(err)
        err = np.broadcast_to(err, self.v.shape)
        # An infinity is computed exactly (an operation on an infinity, or a
        # -inf constant); its error would be inf - inf.
        self.err = np.where(np.isfinite(self.v), err, 0.0)

    @staticmethod
    def exact(x):
        """An input or a constant: exactly what the kernel reads."""
        return Fl(_f64(x))

    @property
    def shape(self):
        return self.v.shape

    def mag(self):
        """The largest magnitude a float evaluation can have."""
        return np.abs(self.v) + self.err

    @staticmethod
    def rounded(v, err):
        """A correctly rounded operation's result, its operands' error
        propagated into `err`."""
        v = _f64(v)
        with np.errstate(invalid='ignore'):
            return Fl(v, err + U * (np.abs(v) + err))

    # -- arithmetic -----------------------------------------------------
    def __add__(self, o):
        o = lift(o)
        return Fl.rounded(self.v + o.v, self.err + o.err)

    __radd__ = __add__

    def __sub__(self, o):
        o = lift(o)
        return Fl.rounded(self.v - o.v, self.err + o.err)

    def __rsub__(self, o):
        return lift(o) - self

    def __neg__(self):
        return Fl(-self.v, self.err)

    def __mul__(self, o):
        o = lift(o)
        with np.errstate(invalid='ignore'):
            err = (np.abs(self.v) * o.err + np.abs(o.v) * self.err +
                   self.err * o.err)
        return Fl.rounded(self.v * o.v, err)

    __rmul__ = __mul__

    def __truediv__(self, o):
        o = lift(o)
        with np.errstate(divide='ignore', invalid='ignore'):
            v = self.v / o.v
            low = np.abs(o.v) - o.err  # the smallest |divisor|
            err = np.where(low > 0, (self.err + np.abs(v) * o.err) / low,
                           np.where(self.err + o.err > 0, np.inf, 0.0))
        return Fl.rounded(v, err)

    def __rtruediv__(self, o):
        return lift(o) / self

    # -- views: the same elements, moved --------------------------------
    def map(self, f):
        return Fl(f(self.v), f(self.err))

    def __getitem__(self, key):
        return self.map(lambda a: a[key])

    def transpose(self, *axes):
        return self.map(lambda a: np.transpose(a, axes or None))

    def swap_last(self):
        return self.map(lambda a: np.swapaxes(a, -1, -2))

    def reshape(self, *shape):
        return self.map(lambda a: np.reshape(a, shape))

    def expand_dims(self, axis):
        return self.map(lambda a: np.expand_dims(a, axis))


def lift(x):
    return x if isinstance(x, Fl) else Fl.exact(x)


def where(cond, a, b):
    a, b = lift(a), lift(b)
    return Fl(np.where(cond, a.v, b.v), np.where(cond, a.err, b.err))


def concat(parts, axis):
    parts = [lift(p) for p in parts]
    return Fl(np.concatenate([p.v for p in parts], axis),
              np.concatenate([p.err for p in parts], axis))


def take(a, ids, axis):
    return a.map(lambda x: np.take(x, ids, axis))


# -- math functions: the operand's error through the derivative's largest
# value over [v - err, v + err], then FN relative to the result ----------
def _function(v, propagated):
    with np.errstate(invalid='ignore'):
        return Fl(v, propagated + FN * np.abs(v) + FN * propagated)


def exp(a):
    with np.errstate(over='ignore', invalid='ignore'):
        v = np.exp(a.v)
        return _function(v, np.abs(v) * np.expm1(a.err))


def log(a):
    with np.errstate(divide='ignore', invalid='ignore'):
        low = a.v - a.err
        v = np.log(a.v)
        prop = np.where(low > 0, np.log(a.v / np.where(low > 0, low, 1.0)),
                        np.where(a.err > 0, np.inf, 0.0))
    return _function(v, prop)


def tanh(a):
    return _function(np.tanh(a.v), a.err)  # |tanh'| <= 1


def sin(a):
    return _function(np.sin(a.v), a.err)


def cos(a):
    return _function(np.cos(a.v), a.err)


def sigmoid(a):
    # 1 / (1 + exp(-x)): |sigmoid'| <= 1/4; exp, the sum and the division.
    v = 1 / (1 + np.exp(-a.v))
    return Fl(v, 0.25 * a.err + (FN + 2 * U) * v)


def sqrt(a):
    with np.errstate(invalid='ignore'):
        v = np.sqrt(a.v)
        low = np.sqrt(np.maximum(a.v - a.err, 0.0))
        prop = np.where(v + low > 0, a.err / np.where(v + low > 0, v + low, 1),
                        np.sqrt(a.err))
    return Fl.rounded(v, prop)


def rsqrt(a):
    with np.errstate(divide='ignore', invalid='ignore'):
        v = 1 / np.sqrt(a.v)
        low = a.v - a.err
        prop = np.where(low > 0, 0.5 * a.err * np.where(low > 0, low, 1) ** -1.5,
                        np.where(a.err > 0, np.inf, 0.0))
    return _function(v, prop)


def power(a, b):
    """a ** b for a > 0."""
    a, b = lift(a), lift(b)
    with np.errstate(divide='ignore', invalid='ignore'):
        v = np.power(a.v, b.v)
        low = a.v - a.err
        prop = np.abs(v) * np.expm1(
            np.abs(np.log(a.v)) * b.err +
            np.where(low > 0, (np.abs(b.v) + b.err) *
                     np.log(a.v / np.where(low > 0, low, 1)), np.inf))
    return _function(v, np.where(a.err + b.err > 0, prop, 0.0))


# -- reductions ------------------------------------------------------------
def _count(a, axis):
    if axis is None:
        return a.v.size
    return a.v.shape[axis]


def sum(a, axis=None, keepdims=False):
    n = _count(a, axis)
    v = np.sum(a.v, axis=axis, keepdims=keepdims)
    err = (np.sum(a.err, axis=axis, keepdims=keepdims) +
           gamma(max(n - 1, 0)) * np.sum(a.mag(), axis=axis,
                                         keepdims=keepdims))
    return Fl(v, err)


def mean(a, axis=None, keepdims=False):
    """sum / n, or sum times a rounded 1 / n: two roundings."""
    n = _count(a, axis)
    s = sum(a, axis, keepdims)
    v = s.v / n
    return Fl(v, s.err / n + 2 * U * (np.abs(v) + s.err / n))


def amax(a, axis, keepdims=False):
    """max is exact; |max(x~) - max(x)| <= max |x~ - x|."""
    return Fl(np.max(a.v, axis=axis, keepdims=keepdims),
              np.max(a.err, axis=axis, keepdims=keepdims))


def matmul(a, b):
    """a @ b (NumPy's broadcasting of the batch axes): the operands' errors
    through the product, and gamma(K) |a| |b| for the sum over K."""
    a, b = lift(a), lift(b)
    k = a.v.shape[-1]
    err = (a.err @ np.abs(b.v) + np.abs(a.v) @ b.err + a.err @ b.err +
           gamma(k) * (a.mag() @ b.mag()))
    return Fl(a.v @ b.v, err)
