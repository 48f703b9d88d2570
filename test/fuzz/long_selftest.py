#!/usr/bin/env python3
"""Checks of the long mode's own bookkeeping (fuzz.py), with a driver
faked (ctest fuzz.long.selftest).

- A batch whose driver died or hung runs its kernels one by one to find the
  culprit; those runs are checked as the batch's would have been: their
  FZ-SUMMARY counts and their FZ-FAIL blocks are reported (long mode,
  2026-12-06: a batch's run outlasted its timeout while the fuzzer was
  paused, and its 40 kernels' runs were looked at for a crash only, so a
  wrong answer among them would have passed unseen).
- A batch whose driver finished is read once: its counts and its failures.

Exit status 0 when every check holds, 1 otherwise (each failure printed).
"""

import importlib.util
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    'pk_fuzz', os.path.join(HERE, 'fuzz.py'))
fuzz = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fuzz)

SUMMARY = ('FZ-SUMMARY batch=b1 kernels=%d cases=%d cpu=0 cuda=0 '
           'cuda_skipped=0 both_raised=0 limitations=0 elements=10 '
           'exact_elements=10 bounded_elements=0 loose=0 vacuous=0 '
           'float_checks=0 loose_checks=0 suspicious=0 may_nan=0 '
           'failures=%d seconds=0.0\n')
FAIL = ('FZ-FAIL batch=b1 kernel=%s case=2 backend=cpu what=mismatch\n'
        '  kernel %s (policy p) at line 3 of b1.cpp; case text\n'
        '  o0[1]: 2 != 3\n'
        '  replay: --kernel %s --case 2\n')


class FakeToolchain:
    """Answers the driver's runs from a table: the whole batch's, and each
    kernel's alone (`--kernel NAME`)."""

    def __init__(self, batch, alone):
        self.batch, self.alone, self.calls = batch, alone, []

    def run(self, cmd, timeout=None, cwd=None, step=None):
        self.calls.append(cmd)
        if '--kernel' in cmd:
            name = cmd[cmd.index('--kernel') + 1]
            if '--case' in cmd:
                return 0, ''
            return self.alone[name]
        return self.batch


def fuzzer(tc):
    """A Fuzzer with its parts faked: no build dir, no findings on disk."""
    fz = fuzz.Fuzzer.__new__(fuzz.Fuzzer)
    fz.a = types.SimpleNamespace(cases=3, timeout=5)
    fz.tc = tc
    fz.numpy = None
    fz.stats = {k: 0 for k in (
        'kernels_run', 'cases', 'failures', 'both_raised', 'limitations',
        'vacuous', 'elements', 'exact_elements', 'suspicious',
        'bounded_elements', 'loose', 'float_checks', 'loose_checks',
        'may_nan', 'capped_batches')}
    fz.capped, fz.warnings, fz.reports = [], [], []
    fz.report = lambda seed, k, kind, summary, output, case=None, \
        backend=None: fz.reports.append((k.name, kind, case, backend))
    return fz


def kernels(*names):
    return [types.SimpleNamespace(name=n) for n in names]


def main():
    bad = []

    def check(what, got, want):
        if got != want:
            bad.append('%s: got %r, want %r' % (what, got, want))

    # The batch hung; k0 passes alone, k1 fails a comparison alone, k2 hangs
    # alone too.
    tc = FakeToolchain(('timeout', ''), {
        'k0': (0, SUMMARY % (1, 3, 0)),
        'k1': (1, FAIL % ('k1', 'k1', 'k1') + SUMMARY % (1, 3, 1)),
        'k2': ('timeout', ''),
    })
    fz = fuzzer(tc)
    fz.run_exe(1, kernels('k0', 'k1', 'k2'), None, '/nonexistent', 'b1',
               '/bin/true')
    check('hung batch: kernels counted', fz.stats['kernels_run'], 2)
    check('hung batch: cases counted', fz.stats['cases'], 6)
    check('hung batch: failures counted', fz.stats['failures'], 1)
    check('hung batch: reports', sorted(fz.reports),
          [('k1', 'mismatch', 2, 'cpu'), ('k2', 'timeout', None, None)])

    # The batch finished: read once, no kernel run alone.
    tc = FakeToolchain((1, FAIL % ('k1', 'k1', 'k1') + SUMMARY % (2, 6, 1)),
                       {})
    fz = fuzzer(tc)
    fz.run_exe(1, kernels('k0', 'k1'), None, '/nonexistent', 'b1',
               '/bin/true')
    check('finished batch: kernels counted', fz.stats['kernels_run'], 2)
    check('finished batch: failures counted', fz.stats['failures'], 1)
    check('finished batch: reports', fz.reports,
          [('k1', 'mismatch', 2, 'cpu')])
    check('finished batch: driver runs', len(tc.calls), 1)

    for b in bad:
        print('FAIL ' + b)
    print('long_selftest: %d checks failed' % len(bad) if bad else
          'long_selftest: all checks hold')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
