#!/usr/bin/env python3
"""The NumPy oracle: checks a fuzz batch's runs against NumPy twins.

The driver's --dump DIR writes each case's inputs, each backend's outputs
(eager, cpu, cuda) and the shadow's error bounds; gen.py writes the batch's
twins (<batch>_np.py, on harness/fz_numpy.py), which recompute every kernel
in NumPy from the generator's model of the language, with floats in float64.
For each case this runs the twin and compares every backend with it:

  - the twin refuses the call (a ShapeError) exactly when eager did;
  - integer and bool outputs are equal;
  - a float output element is NaN where the twin's is, the same infinity
    where the twin's is infinite, and otherwise within --margin times the
    shadow's bound of it (the bound is of each backend's distance from the
    exact result; the twin's float64 error is far below it, and where the
    bound is 0 the data are exact in both precisions).

Exit status 1 on any disagreement (each printed with the driver's replay
arguments), 2 on a usage error. docs/fuzzing.md, "The NumPy oracle".
"""

import argparse
import importlib.util
import json
import os
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, 'harness'))
import fz_numpy  # noqa: E402


def load_twin(path):
    spec = importlib.util.spec_from_file_location('twin', path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.KERNELS


class Checker:
    def __init__(self, margin, max_reports):
        self.margin = margin
        self.max_reports = max_reports
        self.findings = 0
        self.stats = dict(cases=0, both_raised=0, outputs=0, elements=0,
                          exact_elements=0, nan_elements=0, unbounded=0)
        self.per_backend = {}

    def report(self, case, what, detail):
        self.findings += 1
        if self.findings <= self.max_reports:
            print('FZ-NUMPY-FAIL kernel=%s case=%d profile=%s: %s: %s\n'
                  '  replay: --kernel %s --case %d' % (
                      case['kernel'], case['case'], case['profile'], what,
                      detail, case['kernel'], case['case']))

    def run_case(self, twins, cdir):
        with open(os.path.join(cdir, 'case.json')) as f:
            case = json.load(f)
        self.stats['cases'] += 1
        args = {}
        for p in case['params']:
            if p['kind'] == 'scalar':
                args[p['name']] = p['value']
            elif p['kind'] == 'out':
                args[p['name']] = np.zeros(p['shape'])  # its shape only
            else:
                args[p['name']] = np.load(os.path.join(cdir, 'in_%s.npy' %
                                                       p['name']))
        eager_err = case['errors'].get('eager')
        try:
            with np.errstate(all='ignore'), warnings.catch_warnings():
                warnings.simplefilter('ignore')
                want = twins[case['kernel']](args)
        except fz_numpy.ShapeError as e:
            if eager_err is None:
                self.report(case, 'numpy-refused',
                            'the twin raised (%s) where eager ran' % e)
            else:
                self.stats['both_raised'] += 1
            return
        except Exception as e:  # a bug of the twin or of the generator
            self.report(case, 'numpy-error', '%s: %s' % (type(e).__name__, e))
            return
        if eager_err is not None:
            self.report(case, 'numpy-accepted',
                        'eager raised (%s) where the twin ran' % eager_err)
            return
        for backend in case['ran']:
            n = self.per_backend.setdefault(backend, 0)
            self.per_backend[backend] = n + 1
            for name, ref in want.items():
                got = np.load(os.path.join(cdir, '%s_%s.npy' % (backend,
                                                                name)))
                tol = np.load(os.path.join(cdir, 'tol_%s.npy' % name))
                self.compare(case, backend, name, np.asarray(ref), got, tol)

    def compare(self, case, backend, name, ref, got, tol):
        self.stats['outputs'] += 1
        if ref.shape != got.shape:
            self.report(case, 'numpy-shape', '%s %s: shape %s, NumPy %s' % (
                backend, name, got.shape, ref.shape))
            return
        self.stats['elements'] += got.size
        if got.dtype.kind != 'f':
            bad = np.flatnonzero(got.astype(ref.dtype) != ref)
            self.stats['exact_elements'] += got.size
            self.mismatch(case, backend, name, bad, got.shape,
                          lambda i: 'got %r, NumPy %r' % (
                              got.flat[i].item(), ref.flat[i].item()))
            return
        g = got.astype(np.float64).ravel()
        r = ref.astype(np.float64).ravel()
        t = tol.astype(np.float64).ravel()
        nan_r, nan_g = np.isnan(r), np.isnan(g)
        inf_r = np.isinf(r)
        self.stats['nan_elements'] += int(nan_r.sum())
        # A NaN bound: the value may be NaN or any infinity (fuzz_shadow.h)
        may_nan = np.isnan(t)
        bad = (nan_r != nan_g) & ~may_nan
        bad |= inf_r & ~nan_g & (g != r) & ~may_nan
        finite = ~nan_r & ~inf_r & ~nan_g
        bounded = finite & np.isfinite(t)
        self.stats['unbounded'] += int((finite & ~bounded).sum())
        self.stats['exact_elements'] += int((bounded & (t == 0)).sum())
        with np.errstate(all='ignore'):
            err = np.abs(g - r)
        # The bounds are relative; below the type's normal range a rounded
        # product loses relative accuracy (up to 2^-150 absolute for a float,
        # finding numpy-mismatch-9749-k23-c8: a matmul's subnormal result
        # differed by 100 of its ulps). The same floor as the harness's
        # eager-against-compiled comparison (fuzz_main.cpp, compareOutputs).
        floor = 1e-300 if got.dtype == np.float64 else 1e-37
        bad |= bounded & ~(err <= self.margin * t + floor)
        self.mismatch(case, backend, name, np.flatnonzero(bad), got.shape,
                      lambda i: 'got %r, NumPy %r, bound %r (x%g)' % (
                          g[i], r[i], t[i], self.margin))

    def mismatch(self, case, backend, name, bad, shape, describe):
        """Reports the elements (flat indices `bad`) of an output that
        disagree with the twin: how many, and the first one described."""
        if bad.size:
            n = int(np.prod(shape))
            self.report(case, 'numpy-mismatch',
                        '%s %s: %d of %d elements differ; first at %s: %s' % (
                            backend, name, bad.size, n,
                            np.unravel_index(bad[0], shape),
                            describe(bad[0])))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--twin', required=True,
                    help='the batch\'s <batch>_np.py (gen.py)')
    ap.add_argument('--dump', required=True,
                    help='the directory the driver\'s --dump wrote')
    ap.add_argument('--margin', type=float, default=3.0,
                    help='times the shadow\'s bound (the driver\'s margin)')
    ap.add_argument('--max-reports', type=int, default=30)
    ap.add_argument('--min-cases', type=int, default=1,
                    help='fail when fewer cases were dumped (a driver that '
                    'wrote nothing must not pass)')
    a = ap.parse_args(argv)
    twins = load_twin(a.twin)
    ch = Checker(a.margin, a.max_reports)
    for kernel in sorted(os.listdir(a.dump)):
        kdir = os.path.join(a.dump, kernel)
        for c in sorted(os.listdir(kdir), key=int):
            ch.run_case(twins, os.path.join(kdir, c))
    s = ch.stats
    print('FZ-NUMPY cases=%d both_raised=%d %s outputs=%d elements=%d '
          'exact_elements=%d nan_elements=%d unbounded=%d findings=%d' % (
              s['cases'], s['both_raised'],
              ' '.join('%s=%d' % kv for kv in sorted(ch.per_backend.items())),
              s['outputs'], s['elements'], s['exact_elements'],
              s['nan_elements'], s['unbounded'], ch.findings))
    if s['cases'] < a.min_cases:
        print('FZ-NUMPY-FAIL: %d cases dumped, fewer than --min-cases %d' % (
            s['cases'], a.min_cases))
        return 1
    return 1 if ch.findings else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
