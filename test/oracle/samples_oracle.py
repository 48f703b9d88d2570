#!/usr/bin/env python3
"""The samples through NumPy: every sample kernel's cases checked against a
NumPy twin written from the math, not from pk.

test/cuda_shim/SampleDifferentialTest.cpp, run with PK_ORACLE_DUMP=DIR (the
cuda_shim.* tests of the default build), writes each call it makes: the
inputs, the scalars, and per output the bound B of a float evaluation's
distance from the exact result (derived in that file's comment) and every
version's result -- eager (<pk/pk.h>), compiled CPU (.pk.cpp) and the CUDA
kernels (.pk.cu) on the shim in each schedule. This recomputes every case
with TWINS below and checks every version against it:

  - "f64" outputs (the twin computes in float64, whose own error is far
    below B): NaN exactly where the twin has NaN, the same infinity where
    the twin's is infinite, |got - twin| <= B elsewhere (plus 2^-40 |twin|
    for the twin's rounding and 1e-37 below float's normal range);
  - "f32" outputs (the kernel's result is one correctly rounded float
    operation, or a selection; the twin does the same in float32): equal
    bit for bit (any NaN equals any NaN).

A bound at least as large as the twin's value (|twin| <= B) cannot tell the
result from 0: such "vacuous" elements are counted per kernel, and more than
the kernel's VACUOUS_CAP of them (a fraction; most kernels 1%) is a failure,
as is a twin without a dumped case or a dumped kernel without a twin.

Exit status 1 on any failure, 2 on a usage error. docs/fuzzing.md, "The
NumPy oracle", "The samples".
"""

import argparse
import inspect
import json
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bounded as fl  # noqa: E402
from bounded import Fl  # noqa: E402

F32 = np.float32


def f64(a):
    return np.asarray(a, dtype=np.float64)


def from_f32(value):
    """A float kernel parameter or literal as the kernel sees it."""
    return float(F32(value))


def row_softmax(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=-1, keepdims=True)


def rms_normalise(x, w, eps):
    ms = np.mean(x * x, axis=-1, keepdims=True)
    return x / np.sqrt(ms + eps) * w


# Each twin takes the dumped inputs (float32 arrays) and scalars (the float32
# values, as Python floats) and returns {output: (array, mode)}; mode "f64"
# or "f32" as the module's docstring says.
def twin_fma(a, b, c):
    return {'o': (f64(a) * f64(b) + f64(c), 'f64')}


def twin_axpby(x, y, alpha, beta):
    return {'y': (alpha * f64(x) + beta * f64(y), 'f64')}


def twin_gelu(x):
    # GELU's tanh approximation with the sample's float32 constants.
    k, c = from_f32(0.7978845608), from_f32(0.044715)
    x = f64(x)
    return {'y': (0.5 * x * (1.0 + np.tanh(k * (x + c * x * x * x))), 'f64')}


def twin_relu_where(x):
    return {'y': (np.where(x > 0, x, F32(0)), 'f32')}


def twin_adam_step(p, m, v, g, lr, beta1, beta2, eps, bias1, bias2):
    p, m, v, g = f64(p), f64(m), f64(v), f64(g)
    m1 = beta1 * m + (1 - beta1) * g
    v1 = beta2 * v + (1 - beta2) * g * g
    p1 = p - lr * (m1 / bias1) / (np.sqrt(v1 / bias2) + eps)
    return {'m': (m1, 'f64'), 'v': (v1, 'f64'), 'p': (p1, 'f64')}


def twin_broadcast_bias(x, b, out_shape):
    return {'y': (np.broadcast_to(x + b, out_shape['y']), 'f32')}


def twin_rmsnorm(x, w, eps):
    return {'y': (rms_normalise(f64(x), f64(w), eps), 'f64')}


def twin_add_rmsnorm(h, x, w, eps):
    # h is stored as float before the normalisation reads it back.
    h1 = h + x
    return {'h': (h1, 'f32'), 'y': (rms_normalise(f64(h1), f64(w), eps), 'f64')}


def twin_softmax(x):
    return {'y': (row_softmax(f64(x)), 'f64')}


def twin_causal_softmax(scores):
    t, d = scores.shape
    visible = np.arange(d)[None, :] <= np.arange(t)[:, None]
    return {'probs': (row_softmax(np.where(visible, f64(scores), -np.inf)),
                      'f64')}


def twin_logsumexp(x):
    x = f64(x)
    m = np.max(x, axis=-1, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True)) + m
    return {'out': (out[:, 0], 'f64')}


def twin_layernorm(x, w, b, eps):
    x = f64(x)
    mu = np.mean(x, axis=-1, keepdims=True)
    d = x - mu
    rstd = 1.0 / np.sqrt(np.mean(d * d, axis=-1, keepdims=True) + eps)
    return {'out': (d * rstd * f64(w) + f64(b), 'f64'),
            'mean_out': (mu[:, 0], 'f64'), 'rstd_out': (rstd[:, 0], 'f64')}


def twin_column_mean(x):
    return {'m': (np.mean(f64(x), axis=0), 'f64')}


def twin_sum_all(x):
    return {'total': (np.sum(f64(x)), 'f64')}


# The samples of the e2e suites (test/e2e/*SamplesTest.cpp) dump no bound:
# their twins compute in bounded.Fl, which derives one ("bound" mode), or
# return an argmax's logits ("argmax": the kernel's index must be a
# maximum's within the logits' bounds).
def gelu_fl(x):
    k, c = from_f32(0.7978845608), from_f32(0.044715)
    return 0.5 * x * (1.0 + fl.tanh(k * (x + c * x * x * x)))


def exact(*arrays):
    return [Fl.exact(a) for a in arrays]


def causal_attention(q, k, v, scale, offset=0):
    """softmax(q k^T scale + mask) v, key j visible from query i when
    j <= i + offset. Returns (probabilities, output)."""
    s = fl.matmul(q, k.swap_last()) * scale
    rows, cols = s.shape[-2], s.shape[-1]
    visible = np.arange(cols)[None, :] <= np.arange(rows)[:, None] + offset
    s = fl.where(visible, s, -np.inf)
    e = fl.exp(s - fl.amax(s, -1, keepdims=True))
    p = e / fl.sum(e, -1, keepdims=True)
    o = fl.matmul(p, v)
    # An online softmax (pkc's fused attention) rescales its running sum
    # and output row whenever the maximum grows: up to one rescaling by a
    # rounded exp per key, FN + 2U relative each.
    online = cols * (fl.FN + 2 * fl.U) * (p.mag() @ np.abs(v.v))
    return p, Fl(o.v, o.err + online)


def twin_sgemm(a, b):
    a, b = exact(a, b)
    return {'c': (fl.matmul(a, b), 'bound')}


def twin_linear_bias_gelu(x, w, b):
    x, w, b = exact(x, w, b)
    return {'y': (gelu_fl(fl.matmul(x, w.swap_last()) + b), 'bound')}


def twin_batched_matmul(a, b):
    a, b = exact(a, b)
    return {'c': (fl.matmul(a, b), 'bound')}


def twin_batched_matmul_shared(a, w):
    a, w = exact(a, w)
    return {'c': (fl.matmul(a, w), 'bound')}


def twin_attention_causal(q, k, v, scale):
    q, k, v = exact(q, k, v)
    return {'o': (causal_attention(q, k, v, scale)[1], 'bound')}


def twin_mlp(x, w1, b1, w2, b2):
    x, w1, b1, w2, b2 = exact(x, w1, b1, w2, b2)
    h = gelu_fl(fl.matmul(x, w1.swap_last()) + b1)
    return {'y': (fl.matmul(h, w2.swap_last()) + b2, 'bound')}


def twin_swiglu_mlp(x, w_gate, w_up, w_down):
    x, wg, wu, wd = exact(x, w_gate, w_up, w_down)
    g = fl.matmul(x, wg.swap_last())
    u = fl.matmul(x, wu.swap_last())
    return {'y': (fl.matmul(g * fl.sigmoid(g) * u, wd.swap_last()), 'bound')}


def twin_rmsnorm_linear(x, g, w, eps):
    x, g, w = exact(x, g, w)
    r = fl.rsqrt(fl.mean(x * x, -1, keepdims=True) + eps)
    return {'y': (fl.matmul(x * r * g, w.swap_last()), 'bound')}


def twin_attention_probs(q, k, v, scale):
    p, o = causal_attention(*exact(q, k, v), scale)
    return {'p': (p, 'bound'), 'o': (o, 'bound')}


def twin_layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean_,
                            rstd):
    dinp, dweight, dbias, dout, inp, weight, mean_, rstd = exact(
        dinp, dweight, dbias, dout, inp, weight, mean_, rstd)
    r = rstd.expand_dims(-1)
    norm = (inp - mean_.expand_dims(-1)) * r
    dnorm = dout * weight
    db = dbias + fl.sum(dout, 0)
    dw = dweight + fl.sum(norm * dout, 0)
    di = dinp + (dnorm - fl.mean(dnorm, -1, keepdims=True) -
                 norm * fl.mean(dnorm * norm, -1, keepdims=True)) * r
    return {'dinp': (di, 'bound'), 'dweight': (dw, 'bound'),
            'dbias': (db, 'bound')}


def twin_embedding(table, ids):
    return {'x': (np.take(table, ids, 0), 'f32')}


def rope_angle(t, i, hs, theta):
    """t * (1 / theta^(2 i / hs)), every operation in float."""
    exponent = (2.0 * Fl.exact(i)) / float(hs)
    return Fl.exact(t) * (1.0 / fl.power(Fl.exact(theta), exponent))


def twin_rope_half(x, pos, theta):
    t_len, _, hs = x.shape
    x = Fl.exact(x)
    a, b = x[:, :, :hs // 2], x[:, :, hs // 2:]
    t = (np.arange(t_len) + int(pos))[:, None, None].astype(np.float64)
    i = np.arange(hs // 2)[None, None, :].astype(np.float64)
    angle = rope_angle(t, i, hs, theta)
    c, s = fl.cos(angle), fl.sin(angle)
    return {'y': (fl.concat([a * c - b * s, b * c + a * s], 2), 'bound')}


def twin_rope_interleaved(x, pos, heads, theta):
    t_len = x.shape[0]
    hs = x.shape[1] // int(heads)
    pairs = Fl.exact(x).reshape(t_len, int(heads), hs // 2, 2)
    a, b = pairs[..., 0:1], pairs[..., 1:2]
    t = (np.arange(t_len) + int(pos))[:, None, None, None].astype(np.float64)
    i = np.arange(hs // 2)[None, None, :, None].astype(np.float64)
    angle = rope_angle(t, i, hs, theta)
    c, s = fl.cos(angle), fl.sin(angle)
    y = fl.concat([a * c - b * s, a * s + b * c], 3).reshape(t_len, -1)
    return {'y': (y, 'bound')}


def twin_kv_cache_attention(q, k, v, key_cache, value_cache, pos):
    pos = int(pos)
    t_len, hs = q.shape[2], q.shape[3]
    kc, vc = key_cache.copy(), value_cache.copy()
    kc[:, pos:pos + t_len] = k
    vc[:, pos:pos + t_len] = v
    keys = Fl.exact(kc[:, None, :pos + t_len])
    values = Fl.exact(vc[:, None, :pos + t_len])
    scale = fl.rsqrt(Fl.exact(float(hs)))
    _, o = causal_attention(Fl.exact(q), keys, values, scale, offset=pos)
    return {'o': (o, 'bound'), 'key_cache': (kc, 'f32'),
            'value_cache': (vc, 'f32')}


def twin_greedy_head(x, norm_w, embedding, eps):
    x, w, emb = exact(x, norm_w, embedding)
    h = x * fl.rsqrt(fl.mean(x * x, -1, keepdims=True) + eps) * w
    return {'next': (fl.matmul(h, emb.swap_last()), 'argmax')}


TWINS = {
    'fma': twin_fma,
    'axpby': twin_axpby,
    'gelu': twin_gelu,
    'relu_where': twin_relu_where,
    'adam_step': twin_adam_step,
    'broadcast_bias': twin_broadcast_bias,
    'rmsnorm': twin_rmsnorm,
    'add_rmsnorm': twin_add_rmsnorm,
    'softmax': twin_softmax,
    'causal_softmax': twin_causal_softmax,
    'logsumexp': twin_logsumexp,
    'layernorm': twin_layernorm,
    'column_mean': twin_column_mean,
    'sum_all': twin_sum_all,
    'sgemm': twin_sgemm,
    'linear_bias_gelu': twin_linear_bias_gelu,
    'batched_matmul': twin_batched_matmul,
    'batched_matmul_shared': twin_batched_matmul_shared,
    'attention_causal': twin_attention_causal,
    'mlp': twin_mlp,
    'swiglu_mlp': twin_swiglu_mlp,
    'rmsnorm_linear': twin_rmsnorm_linear,
    'attention_probs': twin_attention_probs,
    'layernorm_backward': twin_layernorm_backward,
    'embedding': twin_embedding,
    'rope_half': twin_rope_half,
    'rope_interleaved': twin_rope_interleaved,
    'kv_cache_attention': twin_kv_cache_attention,
    'greedy_head': twin_greedy_head,
}

# The largest fraction of a kernel's checked elements whose bound is
# vacuous (0 < B and |twin| <= B). GELU: below x of about -5.5 the exact
# result is smaller than 8u|x|, where float's 1 + tanh(z) cancels to nothing,
# so the bound (rightly) says only "close to 0": 21% of gelu's elements (x
# drawn from [-8, 8]) and 6.4% of linear_bias_gelu's (products of up to 129
# terms in [-1, 1]) were so when measured; every other kernel below 0.2%.
VACUOUS_CAP = {'gelu': 0.25, 'linear_bias_gelu': 0.1}
DEFAULT_VACUOUS_CAP = 0.01


class Checker:
    def __init__(self, max_reports):
        self.max_reports = max_reports
        self.failures = 0
        self.per_kernel = {}

    def fail(self, where, detail):
        self.failures += 1
        if self.failures <= self.max_reports:
            print('ORACLE-FAIL %s: %s' % (where, detail))

    def stats(self, kernel):
        return self.per_kernel.setdefault(kernel, dict(
            cases=0, skipped=0, versions=set(), elements=0, equal=0,
            vacuous=0, bounded=0, worst=0.0))

    def run_case(self, cdir):
        with open(os.path.join(cdir, 'case.json')) as f:
            case = json.load(f)
        kernel = case['kernel']
        st = self.stats(kernel)
        if case['skipped']:
            st['skipped'] += 1
            return
        st['cases'] += 1
        twin = TWINS.get(kernel)
        if twin is None:
            self.fail(cdir, 'no NumPy twin for kernel %s' % kernel)
            return
        args = {}
        for name in case['inputs']:
            args[name] = np.load(os.path.join(cdir, 'in_%s.npy' % name))
        args.update(case['scalars'])
        if 'out_shape' in inspect.signature(twin).parameters:
            # An output's shape the inputs do not determine (a run-time
            # broadcast into a larger output).
            args['out_shape'] = {n: tuple(o['shape'])
                                 for n, o in case['outputs'].items()}
        with np.errstate(all='ignore'), warnings.catch_warnings():
            # NumPy's mean of an empty axis is NaN, as pk's; it also warns.
            warnings.simplefilter('ignore', RuntimeWarning)
            refs = twin(**args)
        for name, out in case['outputs'].items():
            where = '%s [%s] %s' % (case['case'], os.path.relpath(cdir), name)
            if name not in refs:
                self.fail(where, 'the twin has no output %s' % name)
                continue
            ref, mode = refs[name]
            if mode in ('bound', 'argmax'):
                ref, tol = ref.v, ref.err
            else:
                ref = np.asarray(ref)
                tol_file = os.path.join(cdir, '%s.tol.npy' % name)
                tol = np.load(tol_file) if mode == 'f64' else None
            shape = list(ref.shape[:-1] if mode == 'argmax' else ref.shape)
            if shape != out['shape']:
                self.fail(where, 'twin shape %s, kernel %s' %
                          (shape, out['shape']))
                continue
            st['elements'] += int(np.prod(shape))
            if mode in ('f64', 'bound'):
                self.count_vacuous(st, ref, tol)
            files = {}
            for version, file in out['versions'].items():
                st['versions'].add(version.split(' ')[0])
                if file not in files:
                    files[file] = np.load(os.path.join(cdir, file))
                got = files[file]
                what = where + ' ' + version
                if mode == 'f32':
                    self.compare_bits(what, ref, got)
                elif mode == 'argmax':
                    self.compare_argmax(what, ref, tol, got)
                else:
                    self.compare_bounded(what, st, ref, got, tol)

    def count_vacuous(self, st, ref, tol):
        finite = np.isfinite(ref)
        st['bounded'] += int(np.count_nonzero(finite))
        # A bound of 0 is not vacuous: the result must be exact.
        st['vacuous'] += int(np.count_nonzero(
            finite & (tol > 0) & ~(tol < np.abs(ref))))

    def compare_bits(self, where, ref, got):
        ref = np.asarray(ref, dtype=F32)
        same = (ref.view(np.uint32) == got.view(np.uint32)) | (
            np.isnan(ref) & np.isnan(got))
        if not np.all(same):
            i = np.unravel_index(np.argmin(same), ref.shape)
            self.fail(where, 'element %s: got %r, NumPy float32 %r (bit for '
                      'bit)' % (tuple(int(k) for k in i), float(got[i]),
                                float(ref[i])))

    def compare_argmax(self, where, logits, tol, got):
        """got[r] is a maximum of row r within the logits' bounds: its
        logit is at least the largest one minus both bounds."""
        if logits.shape[-1] == 0:
            self.fail(where, 'argmax over an empty axis returned')
            return
        rows = np.arange(logits.shape[0])
        if np.any((got < 0) | (got >= logits.shape[-1])):
            self.fail(where, 'index outside [0, %d): %s' %
                      (logits.shape[-1], got))
            return
        best = np.argmax(logits, axis=-1)
        slack = tol[rows, got] + tol[rows, best]
        bad = logits[rows, got] < logits[rows, best] - slack
        # Among logits equal in the exact result, the first one.
        tie = logits[rows, got] == logits[rows, best]
        bad |= tie & (got > best) & (tol[rows, got] + tol[rows, best] == 0)
        if np.any(bad):
            r = int(np.argmax(bad))
            self.fail(where, 'row %d: index %d (logit %r), NumPy\'s maximum '
                      'at %d (%r), bounds %r + %r' % (
                          r, got[r], logits[r, got[r]], best[r],
                          logits[r, best[r]], tol[r, got[r]],
                          tol[r, best[r]]))

    def compare_bounded(self, where, st, ref, got, tol):
        got = f64(got)
        nan_ref = np.isnan(ref)
        inf_ref = np.isinf(ref)
        bad = nan_ref != np.isnan(got)
        bad |= inf_ref & (got != ref)
        rest = ~nan_ref & ~inf_ref
        with np.errstate(invalid='ignore'):
            diff = np.where(rest, np.abs(got - ref), 0.0)
        allowed = tol + 2.0 ** -40 * np.abs(np.where(rest, ref, 0.0)) + 1e-37
        bad |= rest & ~(diff <= allowed)
        if np.any(bad):
            i = np.unravel_index(np.argmax(bad), ref.shape)
            self.fail(where, 'element %s: got %r, NumPy %r, bound %r (%d '
                      'elements off)' % (
                          tuple(int(k) for k in i), float(got[i]),
                          float(ref[i]), float(tol[i]),
                          int(np.count_nonzero(bad))))
            return
        if np.any(rest):
            ratio = np.max(np.where(rest, diff / allowed, 0.0))
            st['worst'] = max(st['worst'], float(ratio))
            st['equal'] += int(np.count_nonzero(rest & (diff == 0)))

    def finish(self, expect, expect_cuda, min_cases):
        for kernel in sorted(set(expect) | set(expect_cuda)):
            if kernel not in TWINS:
                self.fail(kernel, 'expected, but there is no NumPy twin')
            st = self.stats(kernel)
            if st['cases'] < min_cases:
                self.fail(kernel, '%d cases checked, fewer than --min-cases '
                          '%d' % (st['cases'], min_cases))
            versions = {'eager', 'cpu'}
            if kernel in expect_cuda:
                versions.add('cuda')
            missing = versions - st['versions']
            if missing:
                self.fail(kernel, 'no %s results dumped' %
                          ', '.join(sorted(missing)))
        for kernel in sorted(self.per_kernel):
            if kernel not in expect and kernel not in expect_cuda:
                self.fail(kernel, 'dumped, but not in --expect or '
                          '--expect-cuda')
        for kernel in sorted(self.per_kernel):
            st = self.per_kernel[kernel]
            cap = VACUOUS_CAP.get(kernel, DEFAULT_VACUOUS_CAP)
            if st['bounded'] and st['vacuous'] > cap * st['bounded']:
                self.fail(kernel, '%d of %d bounds are vacuous (|NumPy| <= '
                          'bound), above the cap of %g' % (
                              st['vacuous'], st['bounded'], cap))
        for kernel in sorted(self.per_kernel):
            st = self.per_kernel[kernel]
            print('ORACLE-SAMPLES %-21s cases=%d skipped=%d elements=%d '
                  'equal=%d vacuous=%d worst=%.3g of the bound (%s)' % (
                      kernel, st['cases'], st['skipped'], st['elements'],
                      st['equal'], st['vacuous'], st['worst'],
                      ', '.join(sorted(st['versions']))))


def perturb(cdir, case):
    """Changes one element of the compiled CPU result of the case's first
    output so that it is wrong: outside the bound (by 1e-3 relative plus
    1e-3: every bound of these tests is below that), in the last bit for a
    bit-for-bit output, another index for an argmax. Returns what it did, or
    None when the case has no element to change."""
    name, out = next(iter(case['outputs'].items()))
    file = os.path.join(cdir, out['versions']['cpu'])
    got = np.load(file)
    flat = got.reshape(-1)
    if got.dtype == np.int64:  # an argmax: the row's index + 1, wrapped
        vocab = case['inputs']['embedding'][0]
        if flat.size == 0 or vocab < 2:
            return None
        flat[0] = (flat[0] + 1) % vocab
    else:
        finite = np.flatnonzero(np.isfinite(flat) & (flat != 0))
        if finite.size == 0:
            return None
        i = finite[finite.size // 2]
        if case['kernel'] in BIT_FOR_BIT:
            flat[i] = np.nextafter(flat[i], np.float32(np.inf))
        else:
            flat[i] = flat[i] * (1 + 1e-3) + np.float32(1e-3)
    np.save(file, got)
    return '%s %s cpu' % (case['case'], name)


# Kernels whose first output the self-test changes in the last bit.
BIT_FOR_BIT = ('relu_where', 'broadcast_bias', 'embedding')


def self_test(dump):
    """Each kind of comparison fails on a wrong result: for one case of
    kernels checked each way (a dumped bound, a derived bound, bit for bit,
    an argmax), a copy of the case with one element changed must fail."""
    import shutil
    import tempfile
    kinds = {'fma': 'a dumped bound', 'sgemm': 'a derived bound',
             'broadcast_bias': 'bit for bit', 'embedding': 'bit for bit',
             'greedy_head': 'an argmax'}
    seen = set()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for test in sorted(os.listdir(dump)):
            tdir = os.path.join(dump, test)
            for n in sorted(os.listdir(tdir), key=lambda s: (len(s), s)):
                with open(os.path.join(tdir, n, 'case.json')) as f:
                    case = json.load(f)
                k = case['kernel']
                if k not in kinds or k in seen or case['skipped']:
                    continue
                cdir = os.path.join(tmp, k)
                shutil.copytree(os.path.join(tdir, n), cdir)
                what = perturb(cdir, case)
                if what is None:
                    shutil.rmtree(cdir)
                    continue
                seen.add(k)
                checker = Checker(0)
                checker.run_case(cdir)
                print('ORACLE-SELFTEST %s (%s): %s' % (
                    what, kinds[k], 'caught' if checker.failures else
                    'NOT CAUGHT'))
                ok &= checker.failures > 0
    for k in sorted(set(kinds) - seen):
        print('ORACLE-SELFTEST %s: no case to change' % k)
        ok = False
    return 0 if ok else 1


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--dump', required=True,
                    help='the PK_ORACLE_DUMP directory of the sample tests')
    ap.add_argument('--expect', default='',
                    help='kernels that must have cases (eager and cpu '
                    'results), comma-separated')
    ap.add_argument('--expect-cuda', default='',
                    help='kernels that must also have CUDA results')
    ap.add_argument('--min-cases', type=int, default=1,
                    help='fail a kernel with fewer dumped cases')
    ap.add_argument('--max-reports', type=int, default=20)
    ap.add_argument('--self-test', action='store_true',
                    help='check that each kind of comparison fails on a '
                    'copy of a case with one result changed')
    args = ap.parse_args(argv)
    if not os.path.isdir(args.dump):
        print('samples_oracle.py: no dump directory %s (run the cuda_shim.* '
              'sample tests with PK_ORACLE_DUMP set first)' % args.dump)
        return 2
    if args.self_test:
        return self_test(args.dump)
    checker = Checker(args.max_reports)
    for test in sorted(os.listdir(args.dump)):
        tdir = os.path.join(args.dump, test)
        for n in sorted(os.listdir(tdir), key=lambda s: (len(s), s)):
            checker.run_case(os.path.join(tdir, n))
    split = lambda s: [k for k in s.split(',') if k]  # noqa: E731
    checker.finish(split(args.expect), split(args.expect_cuda),
                   args.min_cases)
    if checker.failures:
        print('ORACLE-SAMPLES: %d failures' % checker.failures)
        return 1
    print('ORACLE-SAMPLES: every version of every case within its bound')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
