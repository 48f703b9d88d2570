//===- pk/dispatch.h - One kernel, several x86-64 levels -----------------===//
//
// pkc writes `PK_CPU_DISPATCH` in front of every kernel it compiles. With g++
// on x86-64 Linux it asks for three clones of the kernel (GCC's
// `target_clones`): x86-64-v4 (AVX-512), x86-64-v3 (AVX2) and the flags the
// file is compiled with; the dynamic loader's resolver picks the best one the
// CPU runs, once. Its OpenMP regions are cloned with it. NumPy, PyTorch and
// XLA choose their loops at run time the same way, so a default build (SSE2)
// no longer runs pk's loops at a quarter of the machine's vector width.
//
// Floating-point contraction is off in the clones (`fp-contract=off`): x86-64
// v3 and v4 have FMA, and contracting `a * b + c` into one rounding would make
// the results depend on which CPU runs the kernel. Every clone computes the
// same bits as the baseline and as the eager reference.
//
// It expands to nothing, and the kernel is compiled once for the file's
// flags, when:
//   - PK_NO_CPU_DISPATCH is defined (one version, smaller and faster to build);
//   - the compiler is not g++ >= 11 (clang rejects a multiversioned function
//     that was called before its definition in the same file);
//   - the target is not x86-64 Linux with glibc (no ifunc);
//   - the file is already compiled for AVX-512 (-march=native on such a CPU):
//     there is nothing better to pick;
//   - ThreadSanitizer instruments the file: the resolver runs while the
//     dynamic loader relocates, before TSan's runtime is up, and crashes.
//
//===----------------------------------------------------------------------===//

#ifndef PK_DISPATCH_H
#define PK_DISPATCH_H

// __GLIBC__ comes from the C library's own headers.
#if defined(__linux__) && __has_include(<features.h>)
#include <features.h>
#endif

#if !defined(PK_NO_CPU_DISPATCH) && defined(__GNUC__) &&                       \
    !defined(__clang__) && __GNUC__ >= 11 && defined(__x86_64__) &&            \
    defined(__linux__) && defined(__GLIBC__) && !defined(__AVX512F__) &&       \
    !defined(__CUDACC__) && !defined(__SANITIZE_THREAD__)
#define PK_CPU_DISPATCH_CLONES 1
#if defined(__AVX2__)
#define PK_CPU_DISPATCH                                                        \
  __attribute__((target_clones("arch=x86-64-v4", "default"),                   \
                 optimize("fp-contract=off")))
#else
#define PK_CPU_DISPATCH                                                        \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), \
                 optimize("fp-contract=off")))
#endif
#else
#define PK_CPU_DISPATCH_CLONES 0
#define PK_CPU_DISPATCH
#endif

#endif // PK_DISPATCH_H
