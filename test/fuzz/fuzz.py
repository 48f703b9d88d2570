#!/usr/bin/env python3
"""The long mode of pk's differential fuzzer (docs/fuzzing.md).

Per batch: generate K kernels into one file (gen.py), run pkc on it, compile
the generated C++ (and the .pk.cu as C++ against the CUDA shim, when the
build has it), the eager reference and the shadows, link the driver and run
it. Everything that goes wrong is a finding:

  diagnostic     pkc rejected a kernel that should be valid
  unsupported    pkc said pk-not-supported-yet (counted, not a finding: the
                 generator should stay inside what pkc supports)
  pkc-crash      pkc died
  compile-error  the generated .pk.cpp / .pk.cu does not compile
  mismatch, ...  the driver's FZ-FAIL kinds (eager vs compiled, ShapeError
                 disagreements, writes to inputs, shim errors)
  numpy-...      numpy_oracle.py's kinds: a backend against the kernel's
                 NumPy twin (not minimised: the driver alone cannot tell)
  crash/timeout  the driver died or hung

The next batch builds while the last one runs (a build runs its compiles two
at a time, a run mostly on one core): on a 2-core Xeon that took a batch of
40 kernels from 83 s (52 s build, 31 s run, one after the other) to the time
the build takes alone.

Findings are minimised (other kernels dropped, then statements deleted and
expressions replaced by their operands while the failure persists) and
written to <work>/findings/<id>/ with the files a regression test needs.

Usage: fuzz.py --build-dir build-fuzz [--programs N | --batches B]
               [--kernels K] [--seed-start S] [--work DIR] [--no-cuda]
               [--no-minimise] [--cases C] [--hours H]
"""

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen  # noqa: E402


def numpy_python():
    """A Python that imports numpy (numpy_oracle.py), or None. Asked from
    this script's directory, where numpy_oracle.py looks for it: from the
    working directory, a directory named numpy there (the CI batches' dumps
    in build/test/fuzz) passed for the module, and the smoke test ran
    without its NumPy oracle."""
    here = os.path.dirname(os.path.abspath(__file__))
    for py in (sys.executable, '/usr/bin/python3'):
        if os.path.exists(py) and subprocess.run(
                [py, '-c', 'import numpy.linalg'], cwd=here,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL).returncode == 0:
            return py
    return None


# Whether the batch this thread builds or runs has the kernels' per-level
# clones (<pk/dispatch.h>), as a user's default build does, or the baseline
# loops only (-DPK_NO_CPU_DISPATCH, as most CI batches): the clones take
# 3.6x the compile time (--dispatch-every). Per thread: one batch builds
# while another runs (and may minimise a finding, rebuilt as it was found).
_batch = threading.local()


def batch_dispatch():
    return getattr(_batch, 'dispatch', True)


def set_batch_dispatch(value):
    _batch.dispatch = value


def log(msg):
    sys.stdout.write('[%s] %s\n' % (time.strftime('%H:%M:%S'), msg))
    sys.stdout.flush()


class Toolchain:
    """Compiles batches the way test/fuzz/CMakeLists.txt does (from the
    build's fuzz_config.json)."""

    def __init__(self, build_dir, work, cuda, jobs):
        with open(os.path.join(build_dir, 'test', 'fuzz',
                               'fuzz_config.json')) as f:
            self.cfg = json.load(f)
        self.work = work
        self.cuda = cuda and bool(self.cfg['shim_lib']) and \
            os.path.exists(self.cfg['shim_lib'])
        self.jobs = jobs
        self.pool = ThreadPoolExecutor(max_workers=jobs)
        os.makedirs(work, exist_ok=True)
        self.driver = {}
        # wall seconds per build step (pkc, each translation unit, the
        # link), summed over the run: where the throughput goes
        self.seconds = {}
        self.timeout = 900  # seconds for one compile, link or run

    def cxx(self, opt=None):
        c = self.cfg
        cmd = []
        if c['launcher']:
            cmd.append(c['launcher'])
        cmd.append(c['cxx'])
        cmd += c['cxx_flags'].split()
        if opt:
            cmd.append(opt)
        cmd += [c['std']] + c['openmp'].split()
        if not batch_dispatch():
            cmd.append('-DPK_NO_CPU_DISPATCH')
        # the clones this machine does not run are left out, as in the
        # build's own batches (PK_TEST_ALL_CLONES in the top CMakeLists.txt)
        cmd += c.get('cxx_defines', '').split()
        return cmd

    def incs(self, d, cuda):
        c = self.cfg
        out = []
        if cuda:
            out += ['-I' + c['shim_include'], '-DPK_CUDA_SHIM=1',
                    '-DFZ_WITH_CUDA=1']
        out += ['-I' + c['pk_include'], '-I' + c['harness'],
                '-I' + c['support'], '-I' + d]
        return out

    def run(self, cmd, timeout=None, cwd=None, step=None):
        t0 = time.time()
        try:
            return self.run1(cmd, timeout or self.timeout, cwd)
        finally:
            if step:
                self.seconds[step] = self.seconds.get(step, 0.0) + \
                    time.time() - t0

    def run1(self, cmd, timeout, cwd):
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=timeout,
                               cwd=cwd)
            return p.returncode, p.stdout.decode('utf-8', 'replace')
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b'').decode('utf-8', 'replace')
            return 'timeout', out

    def driver_obj(self, cuda):
        if cuda in self.driver:
            return self.driver[cuda]
        obj = os.path.join(self.work, 'driver_%s.o' % ('cuda' if cuda
                                                        else 'cpu'))
        src = os.path.join(self.cfg['harness'], 'fuzz_main.cpp')
        rc, out = self.run(self.cxx() + self.incs(self.work, cuda) +
                           ['-c', src, '-o', obj])
        if rc != 0:
            raise RuntimeError('driver does not compile:\n' + out)
        self.driver[cuda] = obj
        return obj

    def pkc(self, d, name):
        c = self.cfg
        # One precompiled <pk/pk.h> for every batch of the run.
        pch = '--pch-dir=' + os.path.join(os.path.abspath(self.work), 'pk-pch')
        return self.run([c['pkc'], pch, '-o', d, os.path.join(d, name + '.cpp'),
                         '--', c['std'], '-I' + c['pk_include'], '-I' + d],
                        timeout=300, step='pkc')

    def compile(self, d, name):
        """Compiles and links; returns (exe or None, {file: output})."""
        cuda = self.cuda
        units = [(name + '.pk.cpp', 'cxx_cpu', self.cxx() + self.incs(d, False)),
                 (name + '_ref.cpp', 'cxx_eager_shadow',
                  self.cxx('-O1') + self.incs(d, False)),
                 (name + '_calls.cpp', 'cxx_calls',
                  self.cxx() + self.incs(d, cuda))]
        if cuda:
            units.append((name + '.pk.cu', 'cxx_cuda_shim',
                          self.cxx() + ['-x', 'c++'] + self.incs(d, True)))
        futs = []
        for src, step, cmd in units:
            obj = os.path.join(d, src + '.o')
            futs.append((src, obj, self.pool.submit(
                self.run, cmd + ['-c', os.path.join(d, src), '-o', obj],
                step=step)))
        errors = {}
        objs = []
        for src, obj, f in futs:
            rc, out = f.result()
            if rc == 'timeout':
                errors[src] = TIMEOUT + out
            elif rc != 0:
                errors[src] = out
            objs.append(obj)
        if errors:
            return None, errors
        exe = os.path.join(d, name)
        link = [self.cfg['cxx']] + self.cfg['openmp'].split() + \
            [self.driver_obj(cuda)] + objs
        if cuda:
            link += [self.cfg['shim_lib'], self.cfg['boost_context'],
                     '-lpthread']
        link += ['-o', exe]
        rc, out = self.run(link, step='link')
        if rc != 0:
            return None, {'link': out}
        return exe, {}


# What Toolchain.compile() puts before the output of a compile that ran
# past its timeout (a starved machine, or a compile-time blow-up), so that
# it is reported as such and not as an error nobody can place.
TIMEOUT = '(the compiler ran past its timeout)\n'

DIAG = re.compile(r'^(.*?):(\d+):(\d+): (error|warning): (.*?)(?: \[(pk-[a-z-]+)\])?$')


def kernel_at(desc, line):
    for k in desc['kernels']:
        if k['lines'][0] <= line <= k['lines'][1]:
            return k['name']
    return None


def kernels_in_errors(out, desc, kind):
    """Kernel names that compile errors point at."""
    names = set()
    for m in re.finditer(r"In (?:member )?function '[^']*?\b(k\d+)\(", out):
        names.add(m.group(1))
    for m in re.finditer(r"\b(k\d+)_h\d+\b", out):
        names.add(m.group(1))
    for m in re.finditer(r"\bpk_(k\d+)_g\d+\b", out):
        names.add(m.group(1))
    if kind == 'cpp':
        for m in re.finditer(r'\.pk\.cpp:(\d+):\d+: error', out):
            n = kernel_at(desc, int(m.group(1)))
            if n:
                names.add(n)
    return names


class Findings:
    def __init__(self, work):
        self.dir = os.path.join(work, 'findings')
        os.makedirs(self.dir, exist_ok=True)
        self.items = []
        self.lock = threading.Lock()

    def add(self, f):
        with self.lock:  # the building and the running batch both report
            return self.add_locked(f)

    def add_locked(self, f):
        f.setdefault('dispatch', batch_dispatch())
        self.items.append(f)
        fid = '%s-%s-%s' % (f['kind'], f['seed'], f.get('kernel', 'batch'))
        if f.get('backend'):
            fid += '-%s' % f['backend']
        if f.get('case') is not None:
            fid += '-c%s' % f['case']
        n = 2
        base = fid
        while os.path.exists(os.path.join(self.dir, fid)):
            fid = '%s-%d' % (base, n)
            n += 1
        f['id'] = fid
        d = os.path.join(self.dir, fid)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, 'finding.json'), 'w') as fp:
            json.dump(f, fp, indent=1, sort_keys=True, default=str)
        log('FINDING %s: %s' % (fid, f.get('summary', '')))
        return d


class Fuzzer:
    def __init__(self, args):
        self.a = args
        self.tc = Toolchain(args.build_dir, args.work, not args.no_cuda,
                            args.jobs)
        self.findings = Findings(args.work)
        self.stats = {'batches': 0, 'kernels_generated': 0,
                      'kernels_run': 0, 'unsupported': 0, 'cases': 0,
                      'failures': 0, 'both_raised': 0, 'limitations': 0,
                      'vacuous': 0, 'suspicious': 0, 'may_nan': 0,
                      'elements': 0,
                      'exact_elements': 0, 'bounded_elements': 0,
                      'loose': 0, 'float_checks': 0, 'loose_checks': 0,
                      'capped_batches': 0, 'numpy_cases': 0,
                      'numpy_elements': 0, 'numpy_findings': 0,
                      'seconds_build': 0.0, 'seconds_run': 0.0,
                      'batches_dispatch': 0}
        self.numpy = None if args.no_numpy else numpy_python()
        if not args.no_numpy and not self.numpy:
            raise SystemExit('fuzz.py: no Python with numpy for the NumPy '
                             'oracle: install python3-numpy or pass '
                             '--no-numpy')
        self.unsupported = {}
        self.warnings = []
        self.capped = []  # FZ-CAP lines: batches whose checks could not fail
        self.known = set()  # (kind, what) already reported: skip duplicates

    # -- one batch --------------------------------------------------------
    def build_batch(self, seed, dispatch):
        """Generates and builds a batch; returns what run_batch needs, or
        None when nothing is left to run."""
        set_batch_dispatch(dispatch)
        a = self.a
        name = 'b%s' % seed
        d = os.path.join(a.work, 'batches', name)
        if os.path.exists(d):
            shutil.rmtree(d)
        os.makedirs(d)
        kernels = []
        for i in range(a.kernels):
            try:
                kernels.append(gen.generate(seed, i))
            except Exception as e:  # a generator bug: report, go on
                self.findings.add({'kind': 'generator-error', 'seed': seed,
                                   'kernel': 'k%d' % i,
                                   'summary': repr(e)})
        self.stats['kernels_generated'] += len(kernels)
        t0 = time.time()
        exe = None
        for _ in range(10):
            desc = gen.emit_batch(kernels, d, name, str(seed))
            drop = self.check_pkc(seed, kernels, desc, d, name)
            if drop is None:
                return
            if drop:
                kernels = [k for k in kernels if k.name not in drop]
                continue
            exe, errors = self.tc.compile(d, name)
            if exe:
                break
            drop = self.compile_findings(seed, kernels, desc, d, name, errors)
            if not drop:
                return
            kernels = [k for k in kernels if k.name not in drop]
        self.stats['seconds_build'] += time.time() - t0
        if not exe:
            return None
        return {'seed': seed, 'dispatch': dispatch, 'kernels': kernels,
                'desc': desc, 'dir': d, 'name': name, 'exe': exe}

    def run_batch(self, b):
        set_batch_dispatch(b['dispatch'])  # for its findings
        t0 = time.time()
        self.run_exe(b['seed'], b['kernels'], b['desc'], b['dir'], b['name'],
                     b['exe'])
        self.stats['seconds_run'] += time.time() - t0
        self.stats['batches'] += 1
        if b['dispatch']:
            self.stats['batches_dispatch'] += 1
        if not self.a.keep:
            shutil.rmtree(b['dir'], ignore_errors=True)

    def check_pkc(self, seed, kernels, desc, d, name):
        """Runs pkc; returns the kernels to drop ({} when it succeeded),
        None to give up on the batch."""
        rc, out = self.tc.pkc(d, name)
        if rc == 0:
            return set()
        if rc == 1:
            per = {}
            for line in out.splitlines():
                m = DIAG.match(line)
                if not m or m.group(4) != 'error':
                    continue
                if not m.group(1).endswith(name + '.cpp'):
                    continue
                k = kernel_at(desc, int(m.group(2)))
                per.setdefault(k, []).append((m.group(6), m.group(5)))
            if not per or None in per:
                self.findings.add({'kind': 'diagnostic', 'seed': seed,
                                   'summary': 'pkc diagnostics outside any '
                                   'kernel', 'output': out[-4000:]})
                return None
            for k, diags in per.items():
                if all(r == 'pk-not-supported-yet' for r, _ in diags):
                    self.stats['unsupported'] += 1
                    key = re.sub(r"'[^']*'|\b[a-z]\w*\d\b", '_', diags[0][1])
                    self.unsupported[key] = self.unsupported.get(key, 0) + 1
                    continue
                kk = next(x for x in kernels if x.name == k)
                if any(r is None for r, _ in diags):
                    # not a pk rule: the generator wrote invalid C++
                    self.report(seed, kk, 'generator-error', '; '.join(
                        t for r, t in diags if r is None), out)
                    continue
                self.report(seed, kk, 'diagnostic', '; '.join(
                    '[%s] %s' % (r, t) for r, t in diags), out)
            return set(per)
        # a crash: find the kernel(s) by running pkc on each alone
        bad = set()
        sub = os.path.join(d, 'one')
        for k in kernels:
            os.makedirs(sub, exist_ok=True)
            gen.emit_batch([k], sub, name, str(seed))
            rc1, out1 = self.tc.pkc(sub, name)
            if rc1 not in (0, 1):
                bad.add(k.name)
                self.report(seed, k, 'pkc-crash', 'pkc exit %s' % rc1, out1)
        shutil.rmtree(sub, ignore_errors=True)
        if not bad:
            self.findings.add({'kind': 'pkc-crash', 'seed': seed,
                               'summary': 'pkc exit %s on the batch only' % rc,
                               'output': out[-4000:]})
            return None
        return bad

    def compile_findings(self, seed, kernels, desc, d, name, errors):
        drop = set()
        for src, out in errors.items():
            if out.startswith(TIMEOUT):
                self.findings.add({'kind': 'build-timeout', 'seed': seed,
                                   'summary': 'compiling %s ran past %d s' % (
                                       src, self.tc.timeout),
                                   'output': out[-2000:]})
                return set()
            kind = 'cpp' if src.endswith('.pk.cpp') else (
                'cu' if src.endswith('.pk.cu') else 'harness')
            names = kernels_in_errors(out, desc, kind)
            if not names:
                self.findings.add({'kind': 'build-error', 'seed': seed,
                                   'summary': 'cannot tell which kernel '
                                   'breaks %s' % src, 'output': out[-6000:]})
                return set()
            for n in names:
                k = next((x for x in kernels if x.name == n), None)
                if k is None:
                    continue
                what = {'cpp': 'compile-error-cpu', 'cu': 'compile-error-cuda',
                        'harness': 'generator-error'}[kind]
                first = next((l for l in out.splitlines() if 'error' in l), '')
                self.report(seed, k, what, first.strip(), out)
                drop.add(n)
        return drop

    def run_exe(self, seed, kernels, desc, d, name, exe):
        a = self.a
        cmd = [exe, '--cases', str(a.cases)]
        dump = os.path.join(d, 'numpy')
        if self.numpy:
            cmd += ['--dump', dump]
        rc, out = self.tc.run(cmd, timeout=a.timeout)
        if self.numpy and os.path.isdir(dump):
            self.run_numpy(seed, kernels, d, name, dump)
        if rc in (0, 1):
            self.take_output(seed, kernels, out)
        else:
            # died or hung: find the kernel. Each kernel's own run is
            # checked as the batch's would have been (its counts and its
            # FZ-FAIL blocks): a wrong answer next to a hang is still one.
            log('batch %s: the driver exit %s; its kernels run one by one'
                % (seed, rc))
            for k in kernels:
                rc1, out1 = self.tc.run([exe, '--cases', str(a.cases),
                                         '--kernel', k.name],
                                        timeout=a.timeout)
                self.take_output(seed, kernels, out1)
                if rc1 not in (0, 1):
                    case = None
                    for c in range(a.cases):
                        rc2, _ = self.tc.run([exe, '--kernel', k.name,
                                              '--case', str(c)],
                                             timeout=a.timeout)
                        if rc2 not in (0, 1):
                            case = c
                            break
                    self.report(seed, k, 'timeout' if rc1 == 'timeout'
                                else 'crash', 'driver exit %s' % rc1,
                                out1[-3000:], case=case)

    def take_output(self, seed, kernels, out):
        """Counts a driver run's FZ-SUMMARY and reports its FZ-FAIL
        blocks."""
        summary = re.search(r'^FZ-SUMMARY .*$', out, re.M)
        if summary:
            kv = dict(x.split('=') for x in summary.group(0).split()[1:])
            self.stats['kernels_run'] += int(kv['kernels'])
            self.stats['cases'] += int(kv['cases'])
            for key in ('both_raised', 'limitations', 'vacuous', 'elements',
                        'exact_elements', 'suspicious', 'bounded_elements',
                        'loose', 'float_checks', 'loose_checks', 'may_nan'):
                self.stats[key] += int(kv.get(key, 0))
            caps = re.findall(r'^FZ-CAP .*$', out, re.M)
            if caps:
                self.stats['capped_batches'] += 1
                self.capped += caps
                for c in caps:
                    log(c)
            for w in re.findall(r'^FZ-WARN .*$', out, re.M)[:5]:
                self.warnings.append(w)
        for blk in re.finditer(r'^FZ-FAIL (.*)\n((?:  .*\n?)*)', out, re.M):
            kv = dict(x.split('=', 1) for x in blk.group(1).split())
            k = next((x for x in kernels if x.name == kv['kernel']), None)
            self.stats['failures'] += 1
            if k is None:
                continue
            self.report(seed, k, kv['what'], blk.group(2).strip().splitlines()[1]
                        if len(blk.group(2).strip().splitlines()) > 1 else '',
                        blk.group(0), case=int(kv['case']),
                        backend=kv['backend'])

    def run_numpy(self, seed, kernels, d, name, dump):
        """The batch's NumPy twins against what the driver dumped."""
        rc, out = self.tc.run([self.numpy, os.path.join(
            os.path.dirname(os.path.abspath(__file__)), 'numpy_oracle.py'),
            '--twin', os.path.join(d, name + '_np.py'), '--dump', dump,
            '--min-cases', '0', '--max-reports', '1000'],
            timeout=self.a.timeout)
        reported = set()
        summary = re.search(r'^FZ-NUMPY .*$', out, re.M)
        if summary:
            kv = dict(x.split('=') for x in summary.group(0).split()[1:])
            self.stats['numpy_cases'] += int(kv['cases'])
            self.stats['numpy_elements'] += int(kv['elements'])
        elif rc != 0:
            log('numpy_oracle.py failed: %s' % out[-2000:])
        for m in re.finditer(r'^FZ-NUMPY-FAIL kernel=(\S+) case=(\d+) '
                             r'profile=.*?: (numpy-[a-z-]+): (.*)\n(  .*)?',
                             out, re.M):
            self.stats['numpy_findings'] += 1
            k = next((x for x in kernels if x.name == m.group(1)), None)
            if k is not None and k.name not in reported:
                reported.add(k.name)  # one finding per kernel
                self.report(seed, k, m.group(3), m.group(4), m.group(0),
                            case=int(m.group(2)))
        shutil.rmtree(dump, ignore_errors=True)

    # -- findings ---------------------------------------------------------------
    def report(self, seed, k, kind, summary, output, case=None, backend=None):
        # one minimisation per kernel (its first failure)
        key = (str(seed), k.name)
        f = {'kind': kind, 'seed': str(seed), 'kernel': k.name,
             'index': k.index, 'policy': k.policy, 'case': case,
             'backend': backend, 'summary': summary,
             'output': output[-6000:], 'source': '\n'.join(gen.kernel_text(k))}
        d = self.findings.add(f)
        gen.emit_batch([k], d, 'original', str(seed))
        if self.a.no_minimise or key in self.known or kind in (
                'generator-error', 'build-error') or kind.startswith('numpy-'):
            return
        self.known.add(key)
        try:
            m = Minimiser(self, f, k, d)
            m.run()
        except Exception as e:  # keep fuzzing
            log('minimiser failed: %r' % e)

    def loop(self):
        """Batch after batch, each one built while the one before runs."""
        a = self.a
        seed = a.seed_start
        deadline = time.time() + a.hours * 3600 if a.hours else None
        t0 = time.time()
        started = 0
        builder = ThreadPoolExecutor(max_workers=1)
        running = None  # the built batch that runs next
        while True:
            build = None
            if not ((a.programs and started * a.kernels >= a.programs) or
                    (a.batches and started >= a.batches) or
                    (deadline and time.time() > deadline)):
                # every dispatch_every-th seed builds the per-level clones
                dispatch = a.dispatch_every > 0 and \
                    seed % a.dispatch_every == 0
                log('batch %s (%d kernels so far, %d findings)%s' % (
                    seed, self.stats['kernels_generated'],
                    len(self.findings.items),
                    ', the per-level clones' if dispatch else ''))
                build = builder.submit(self.build_batch, seed, dispatch)
                started += 1
                seed += 1
            if running:
                self.run_batch(running)
                # the batch being built has not run: it is the next seed
                # for a run stopped here
                self.save_stats(time.time() - t0, seed - 1 if build else seed)
            if build is None:
                break
            running = build.result()
        builder.shutdown()
        self.save_stats(time.time() - t0, seed)
        log('done: %s' % json.dumps(self.stats))
        return 1 if self.findings.items or self.capped else 0

    def save_stats(self, secs, next_seed):
        s = dict(self.stats)
        s['seconds_total'] = round(secs, 1)
        s['seconds_steps'] = {k: round(v, 1)
                              for k, v in sorted(self.tc.seconds.items())}
        s['next_seed'] = next_seed
        s['unsupported_kinds'] = self.unsupported
        s['warnings'] = self.warnings[-50:]
        s['capped'] = self.capped[-50:]
        s['findings'] = [f['id'] for f in self.findings.items]
        with open(os.path.join(self.a.work, 'stats.json'), 'w') as f:
            json.dump(s, f, indent=1, sort_keys=True)


# ------------------------------------------------------------------------------
# Minimisation
# ------------------------------------------------------------------------------

def stmt_paths(stmts, prefix=()):
    out = []
    for i, s in enumerate(stmts):
        out.append(prefix + (i,))
        if s.kind == 'loop':
            out += stmt_paths(s.body, prefix + (i,))
    return out


def delete_at(k, path):
    k2 = copy.deepcopy(k)
    lst = k2.stmts
    for i in path[:-1]:
        lst = lst[i].body
    del lst[path[-1]]
    return k2


def valid(k):
    try:
        it = gen.Interp(k)
        it.run(k.stmts)
        for p in k.params:
            if p.kind == 'out' and it.refval.get(p.name) in (None, 'unset'):
                return False
        def loops_ok(ss):
            return all(s.kind != 'loop' or (s.body and loops_ok(s.body))
                       for s in ss)
        return loops_ok(k.stmts)
    except gen.Invalid:
        return False
    except (KeyError, AssertionError, StopIteration):
        return False


def exprs_of(k):
    """(holder, attr or index) of every op/call expression in the kernel,
    outermost first."""
    out = []

    def walk(holder, key, e):
        if e.kind in ('op', 'call'):
            out.append((holder, key, e))
            for i, x in enumerate(e.args):
                walk(e.args, i, x)

    def stmts(ss):
        for s in ss:
            if s.expr is not None:
                walk(s, 'expr', s.expr)
            stmts(s.body)
    stmts(k.stmts)
    for h in k.helpers:
        for i, (nm, ex) in enumerate(h.locals):
            pass
        walk(h, 'ret', h.ret)
    return out


class Minimiser:
    def __init__(self, fz, finding, kernel, d):
        self.fz = fz
        self.f = finding
        self.k = kernel
        self.d = d
        self.tries = 0

    def reproduces(self, k):
        self.tries += 1
        f = self.f
        t = os.path.join(self.d, 'try')
        if os.path.exists(t):
            shutil.rmtree(t)
        os.makedirs(t)
        name = 'm'
        desc = gen.emit_batch([k], t, name, f['seed'])
        rc, out = self.fz.tc.pkc(t, name)
        kind = f['kind']
        if kind in ('diagnostic', 'pkc-crash'):
            if kind == 'pkc-crash':
                return rc not in (0, 1)
            return rc == 1 and f['summary'].split(']')[0] in out
        if rc != 0:
            return False
        set_batch_dispatch(f.get('dispatch', True))  # as it was found
        exe, errors = self.fz.tc.compile(t, name)
        if kind.startswith('compile-error'):
            src = '.pk.cpp' if kind.endswith('cpu') else '.pk.cu'
            return any(s.endswith(src) for s in errors)
        if not exe:
            return False
        cmd = [exe, '--kernel', k.name]
        if f.get('case') is not None:
            cmd += ['--case', str(f['case'])]
        else:
            cmd += ['--cases', str(self.fz.a.cases)]
        if f.get('backend') == 'cpu':
            cmd.append('--cpu-only')
        elif f.get('backend') == 'cuda':
            cmd.append('--cuda-only')
        rc, out = self.fz.tc.run(cmd, timeout=self.fz.a.timeout)
        if kind in ('crash', 'timeout'):
            return rc not in (0, 1)
        return re.search(r'FZ-FAIL .*backend=%s what=%s' % (
            re.escape(f['backend'] or ''), re.escape(kind)), out) is not None

    def run(self):
        k = self.k
        log('minimising %s' % self.f['id'])
        if not self.reproduces(k):
            log('  does not reproduce alone; kept as is')
            self.save(k, minimised=False)
            return
        changed = True
        while changed and self.tries < 80:
            changed = False
            for path in reversed(stmt_paths(k.stmts)):
                k2 = delete_at(k, path)
                if valid(k2) and self.reproduces(k2):
                    k = k2
                    changed = True
                    break
            if changed:
                continue
            for idx in range(len(exprs_of(k))):
                k2 = copy.deepcopy(k)
                holder, key, e = exprs_of(k2)[idx]
                for arg in e.args:
                    if arg.kind in ('reftarget',):
                        continue
                    k3 = copy.deepcopy(k2)
                    h3, key3, e3 = exprs_of(k3)[idx]
                    repl = e3.args[e.args.index(arg)]
                    if isinstance(key3, str):
                        setattr(h3, key3, repl)
                    else:
                        h3[key3] = repl
                    if valid(k3) and self.reproduces(k3):
                        k = k3
                        changed = True
                        break
                if changed or self.tries >= 80:
                    break
            if changed:
                continue
            # other outputs' values: a literal 0 is enough to keep them
            # written
            for path in stmt_paths(k.stmts):
                k2 = copy.deepcopy(k)
                lst = k2.stmts
                for i in path[:-1]:
                    lst = lst[i].body
                s = lst[path[-1]]
                if s.kind != 'store' or s.expr.kind == 'lit':
                    continue
                s.expr = gen.Expr('lit', gen.lit(gen.I32, 0))
                if valid(k2) and self.reproduces(k2):
                    k = k2
                    changed = True
                    break
        log('  minimised after %d tries' % self.tries)
        self.save(k, minimised=True)

    def save(self, k, minimised):
        f = self.f
        rid = re.sub(r'[^A-Za-z0-9_]', '_', f['id'])
        out = os.path.join(self.d, 'regression', rid)
        os.makedirs(out, exist_ok=True)
        gen.emit_batch([k], out, rid, f['seed'])
        args = ['--kernel', k.name]
        if f.get('case') is not None:
            args += ['--case', str(f['case'])]
        if f.get('backend') == 'cpu':
            args.append('--cpu-only')
        elif f.get('backend') == 'cuda':
            args.append('--cuda-only')
        with open(os.path.join(out, 'case'), 'w') as fp:
            fp.write(' '.join(args) + '\n')
        with open(os.path.join(self.d, 'minimised.cpp'), 'w') as fp:
            fp.write('\n'.join(gen.kernel_text(k)) + '\n')
        f['minimised'] = minimised
        with open(os.path.join(self.d, 'finding.json'), 'w') as fp:
            json.dump(f, fp, indent=1, sort_keys=True, default=str)
        shutil.rmtree(os.path.join(self.d, 'try'), ignore_errors=True)


def promote(d):
    """test/fuzz/regressions/<id>/ from a finding's minimised reproducer."""
    with open(os.path.join(d, 'finding.json')) as f:
        finding = json.load(f)
    src = os.path.join(d, 'regression')
    (rid,) = os.listdir(src)
    dst = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       'regressions', rid)
    shutil.copytree(os.path.join(src, rid), dst)
    if finding['kind'].startswith('compile-error'):
        os.remove(os.path.join(dst, 'case'))
        with open(os.path.join(dst, 'compile-only'), 'w') as f:
            f.write('The generated code must compile.\n')
    with open(os.path.join(dst, 'expected-to-fail'), 'w') as f:
        f.write('Open bug (fuzz finding %s, seed %s, kernel %s): %s\n\n%s\n'
                'When it is fixed this test fails: delete this file.\n' % (
                    finding['id'], finding['seed'], finding['kernel'],
                    finding['kind'], finding['summary']))
    print(dst)
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--build-dir', required=True)
    ap.add_argument('--work', default=None)
    ap.add_argument('--programs', type=int, default=0,
                    help='stop after generating this many kernels')
    ap.add_argument('--batches', type=int, default=0)
    ap.add_argument('--hours', type=float, default=0)
    ap.add_argument('--kernels', type=int, default=40,
                    help='kernels per batch')
    ap.add_argument('--cases', type=int, default=11,
                    help='shape cases per kernel')
    ap.add_argument('--seed-start', type=int, default=1000)
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--dispatch-every', type=int, default=4, metavar='N',
                    help='build the batches whose seed is a multiple of N '
                    'with the kernels\' per-level clones (<pk/dispatch.h>, '
                    'what users run), the others with the baseline loops '
                    'only (-DPK_NO_CPU_DISPATCH, 3.6x faster to compile); '
                    '1: every batch, 0: none')
    ap.add_argument('--timeout', type=int, default=600)
    ap.add_argument('--no-cuda', action='store_true')
    ap.add_argument('--no-minimise', action='store_true')
    ap.add_argument('--no-numpy', action='store_true',
                    help='skip the NumPy oracle (numpy_oracle.py)')
    ap.add_argument('--keep', action='store_true',
                    help='keep every batch directory')
    ap.add_argument('--with-known-bugs', action='store_true')
    ap.add_argument('--promote', default=None, metavar='DIR',
                    help='copy the minimised reproducer of the finding in DIR '
                    'to test/fuzz/regressions/ (marked expected-to-fail)')
    ap.add_argument('--minimise-finding', default=None, metavar='DIR',
                    help='minimise the finding in DIR (its finding.json; the '
                    'kernel is regenerated from its seed and index)')
    a = ap.parse_args(argv)
    if not a.work:
        a.work = os.path.join(a.build_dir, 'fuzz-long')
    a.work = os.path.abspath(a.work)
    a.build_dir = os.path.abspath(a.build_dir)
    if not (a.programs or a.batches or a.hours):
        a.programs = 1000
    if a.with_known_bugs:
        gen.AVOID.clear()
    if a.promote:
        return promote(a.promote)
    fz = Fuzzer(a)
    if a.minimise_finding:
        with open(os.path.join(a.minimise_finding, 'finding.json')) as f:
            finding = json.load(f)
        k = gen.generate(finding['seed'], int(finding['index']))
        Minimiser(fz, finding, k, a.minimise_finding).run()
        return 0
    log('work dir %s; CUDA leg %s' % (a.work, 'on (shim)' if fz.tc.cuda
                                       else 'off'))
    return fz.loop()


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
