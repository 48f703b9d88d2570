#!/usr/bin/env python3
"""Checks the numbers README.md quotes about pk's own tree against the files
that define them (ctest readme.numbers).

Each claim is a regular expression over README.md (whitespace-insensitive:
the README is wrapped) whose groups are the numbers, and a function that
computes them from the source tree. The test fails, naming the claim and
the file to look at, when a claim is missing from the README or its numbers
differ. Measurements (times, element counts of a long run) are dated in the
README and not checked here.

usage: readme_numbers.py --source-dir DIR
       readme_numbers.py --self-test --source-dir DIR
"""

import argparse
import json
import os
import re
import sys


def read(root, path):
    with open(os.path.join(root, path), encoding='utf-8') as f:
        return f.read()


def cmake_list(text, name):
    """The words of `set(<name> ...)` (the first such call), without the
    CACHE part."""
    m = re.search(r'set\(\s*%s\s+([^)]*)\)' % re.escape(name), text)
    if not m:
        raise LookupError('no set(%s ...)' % name)
    words = []
    for w in m.group(1).split():
        if w == 'CACHE':
            break
        words.append(w.strip('"'))
    return words


def sample_count(root):
    return len(cmake_list(read(root, 'samples/CMakeLists.txt'),
                          'PK_SAMPLE_NAMES'))


def ci_seeds(root):
    normal = cmake_list(read(root, 'test/fuzz/CMakeLists.txt'),
                        'PK_FUZZ_CI_SEEDS')
    presets = json.loads(read(root, 'CMakePresets.json'))
    asan = [p for p in presets['configurePresets'] if p['name'] == 'asan'][0]
    return normal, asan['cacheVariables']['PK_FUZZ_CI_SEEDS'].split(';')


def ci_value(root, name):
    (v,) = cmake_list(read(root, 'test/fuzz/CMakeLists.txt'), name)[:1]
    return int(v)


def streamed_cases(root):
    m = re.search(r'\.streamed\s+COMMAND\s+\S+\s+--cases\s+(\d+)',
                  read(root, 'test/fuzz/CMakeLists.txt'))
    return int(m.group(1))


def driver_fraction(root, name):
    m = re.search(r'double %s = ([0-9.]+);' % name,
                  read(root, 'test/fuzz/harness/fuzz_main.cpp'))
    return round(float(m.group(1)) * 100)


def corpus_files(root):
    return len(os.listdir(os.path.join(root, 'test/libfuzzer/corpus')))


def fuzz_seconds(root):
    text = read(root, 'test/libfuzzer/CMakeLists.txt')
    return int(cmake_list(text, 'PK_FUZZ_SECONDS')[0])


def oracle_kernels(root):
    """The kernels oracle.samples expects: the CUDA samples of the shim's
    difftest and the e2e suites' CPU kernels."""
    shim = cmake_list(read(root, 'test/cuda_shim/CMakeLists.txt'),
                      'pk_shim_samples')
    text = read(root, 'test/e2e/CMakeLists.txt')
    m = re.search(r'PROPERTY PK_ORACLE_CPU_KERNELS\s+([^)]*)\)', text)
    return len(shim), len(m.group(1).split())


def gelu_tolerance(root):
    """DifferentialTest.cpp's GELU check: |x|'s factor and the ulps."""
    text = read(root, 'test/e2e/DifferentialTest.cpp')
    rel = re.search(r'<= ([0-9.e+-]+) \* std::fabs\(X\[I\]\)', text)
    ulps = re.search(r'ulp_distance\(E\[I\], P\[I\]\) <= (\d+)', text)
    return [float(rel.group(1)), float(ulps.group(1))]


def reduction_rtols(root):
    """ReductionTest.cpp's rtol (expectClose's third argument) for the sums
    (rmsnorm, softmax, sum_all), layernorm's out and rstd, logsumexp; each
    group must use one value."""
    text = read(root, 'test/e2e/ReductionTest.cpp')
    calls = re.findall(r'expectClose\(\w+, \w+, ([0-9.e+-]+), [^,]+, (.*?)\);',
                       text)

    def rtol(labels):
        got = {float(r) for r, label in calls
               if any(l in label for l in labels)}
        if len(got) != 1:
            raise LookupError('ReductionTest.cpp: %s use rtols %s'
                              % (labels, sorted(got)))
        return got.pop()
    return [rtol(['name("rmsnorm"', 'name("softmax"', 'name("sum_all"']),
            rtol(['N + " out"', 'N + " rstd"']), rtol(['name("logsumexp"'])]


def matmul_tolerances(root):
    """MatmulBounds.h's tolerance<T>(K) = (a + b K) eps(T) / eps(float): a
    and b, and the double bound's a and b to two significant digits, as the
    README's table rounds them."""
    text = read(root, 'test/e2e/MatmulBounds.h')
    m = re.search(r'return \(([0-9.e+-]+) \+ ([0-9.e+-]+) \* double\(K\)\)',
                  text)
    a, b = float(m.group(1)), float(m.group(2))
    ratio = 2.0 ** -52 / 2.0 ** -23
    return [a, b, float('%.2g' % (a * ratio)), float('%.2g' % (b * ratio))]


def attention_coefficients(root):
    """MatmulBounds.h's per-row attention bound u V (c1 (d + c2) A + c3 M +
    c4 n + c5): the five coefficients."""
    text = read(root, 'test/e2e/MatmulBounds.h')
    m = re.search(r'\((\d+) \* double\(H\.D \+ (\d+)\) \* A \+ (\d+) \* M \+ '
                  r'(\d+) \* double\(N\) \+ (\d+)\)', text)
    return [float(g) for g in m.groups()]


def sixteen_bit_identical(root):
    """SixteenBitTest.cpp's share of bit-identical elements: the default
    and the matmuls', in percent."""
    text = read(root, 'test/e2e/SixteenBitTest.cpp')
    default = re.search(r'double MinIdentical = ([0-9.]+)\)', text)
    matmul = set(re.findall(r'expect16\([^;]*, ([0-9.]+)\);', text))
    if len(matmul) != 1:
        raise LookupError('SixteenBitTest.cpp: expect16 shares %s'
                          % sorted(matmul))
    return [round(100 * float(default.group(1))),
            round(100 * float(matmul.pop()))]


def claims(root):
    """(what, README pattern, the numbers the tree says, where to look)."""
    normal, asan = ci_seeds(root)
    kernels = ci_value(root, 'PK_FUZZ_CI_KERNELS')
    distinct = len(set(normal) | set(asan)) * kernels
    shim, cpu = oracle_kernels(root)
    return [
        ('the sample programs the samples preset builds',
         r'builds only `pkc` and the (\d+) sample programs',
         [sample_count(root)], 'samples/CMakeLists.txt: PK_SAMPLE_NAMES'),
        ('the CI fuzz batches, their kernels and shape cases',
         r'CI runs (\d+) batches of (\d+) kernels in the normal build and '
         r'one under ASan \((\d+) shape cases each',
         [len(normal), kernels, ci_value(root, 'PK_FUZZ_CI_CASES')],
         'test/fuzz/CMakeLists.txt: PK_FUZZ_CI_SEEDS, PK_FUZZ_CI_KERNELS, '
         'PK_FUZZ_CI_CASES'),
        ('the shape cases of the streamed batch',
         r'every streamable output streamed, (\d+) cases each',
         [streamed_cases(root)], 'test/fuzz/CMakeLists.txt: .streamed'),
        ('the caps on checks that could not fail',
         r'more than (\d+)% of its float outputs with bounds as large as the '
         r'values, or more than (\d+)% of its compiled runs refused',
         [driver_fraction(root, 'MaxLooseFraction'),
          driver_fraction(root, 'MaxLimitationFraction')],
         'test/fuzz/harness/fuzz_main.cpp: MaxLooseFraction, '
         'MaxLimitationFraction'),
        ('the distinct random kernels a CI run checks',
         r'a CI run checks (\d+) distinct random kernels',
         [distinct], 'PK_FUZZ_CI_SEEDS (test/fuzz/CMakeLists.txt and the asan '
         'preset) times PK_FUZZ_CI_KERNELS'),
        ('the libFuzzer corpus and the seconds of a CI run',
         r'its committed corpus \((\d+) files\) and then mutated kernel '
         r'sources for the rest of (\d+)\s*s',
         [corpus_files(root), fuzz_seconds(root)],
         'test/libfuzzer/corpus/, test/libfuzzer/CMakeLists.txt: '
         'PK_FUZZ_SECONDS'),
        ('the kernels oracle.samples checks',
         r'the (\d+) CUDA samples\' `cuda_shim\.\*` runs.*?the (\d+) kernels '
         r'of `e2e\.MatmulSamples',
         [shim, cpu], 'test/cuda_shim/CMakeLists.txt: pk_shim_samples; '
         'test/e2e/CMakeLists.txt: PK_ORACLE_CPU_KERNELS'),
        ('the GELU tolerance of the differential tests',
         r'`([0-9.e+-]+) \|x\| \+ (\d+) ulp` for GELU',
         gelu_tolerance(root), 'test/e2e/DifferentialTest.cpp'),
        ('the float and double matmul tolerances',
         r'\| `float` matmul \| `([0-9.e+-]+) \+ ([0-9.e+-]+) K` \|.*?'
         r'= `([0-9.e+-]+) \+ ([0-9.e+-]+) K` \|',
         matmul_tolerances(root), 'test/e2e/MatmulBounds.h: tolerance'),
        ('the attention bound\'s coefficients',
         r'per query row, `u V \((\d+) \(d \+ (\d+)\) A \+ (\d+) M \+ (\d+) n \+ '
         r'(\d+)\)`',
         attention_coefficients(root), 'test/e2e/MatmulBounds.h: rowBounds'),
        ('the share of bit-identical 16-bit elements',
         r'at least (\d+)% bit-identical \((\d+)% for matmul\)',
         sixteen_bit_identical(root), 'test/e2e/SixteenBitTest.cpp: '
         'MinIdentical, expect16'),
        ('the reductions\' relative tolerances',
         r'`rtol = ([0-9.e+-]+)` for sums, `([0-9.e+-]+)` for layernorm\'s '
         r'output and rstd, `([0-9.e+-]+)` for logsumexp',
         reduction_rtols(root), 'test/e2e/ReductionTest.cpp: expectClose'),
    ]


def numbers(values):
    return '[%s]' % ', '.join('%g' % v for v in values)


def check(readme, root):
    text = ' '.join(readme.split())
    failures = []
    checked = 0
    for what, pattern, want, where in claims(root):
        m = re.search(pattern, text, re.S)
        if not m:
            failures.append('README.md no longer quotes %s (pattern: '
                            '%s); update the pattern in %s too'
                            % (what, pattern, __file__))
            continue
        got = [float(g) for g in m.groups()]
        checked += 1
        if got != want:
            failures.append('README.md quotes %s for %s; the tree says %s '
                            '(%s)' % (numbers(got), what, numbers(want), where))
    return checked, failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--source-dir', required=True)
    ap.add_argument('--self-test', action='store_true',
                    help='check that a changed number fails')
    args = ap.parse_args()
    root = args.source_dir
    readme = read(root, 'README.md')
    if args.self_test:
        # Each claim's first number, one more: every claim must fail.
        missed = []
        for what, pattern, want, _ in claims(root):
            text = ' '.join(readme.split())
            m = re.search(pattern, text, re.S)
            if not m:
                continue
            bumped = want[0] * 2 if isinstance(want[0], float) else want[0] + 1
            changed = text[:m.start(1)] + str(bumped) + text[m.end(1):]
            if not check(changed, root)[1]:
                missed.append(what)
        if missed:
            print('readme_numbers self-test: NOT CAUGHT: %s' % ', '.join(missed))
            return 1
        print('readme_numbers self-test: each of %d claims fails when its '
              'number changes' % len(claims(root)))
        return 0
    checked, failures = check(readme, root)
    for f in failures:
        print('readme_numbers: %s' % f)
    if failures:
        return 1
    print('readme_numbers: %d claims of README.md match the tree' % checked)
    return 0


if __name__ == '__main__':
    sys.exit(main())
