//===- pk/dispatch.h - One kernel, several x86-64 levels -----------------===//
//
// pkc writes each kernel's compiled body as `template <class pk_vm>
// PK_CPU_DISPATCH static void pk_<kernel>_cpu(...)`, and the kernel calls it
// through pk::rt::run_cpu (below). With g++ on x86-64 Linux PK_CPU_DISPATCH
// asks for three clones (GCC's `target_clones`): x86-64-v4 (AVX-512),
// x86-64-v3 (AVX2) and the flags the file is compiled with; the dynamic
// loader's resolver picks the best one the CPU runs, once. Its OpenMP regions
// are cloned with it. NumPy, PyTorch and XLA choose their loops at run time
// the same way, so a default build (SSE2) no longer runs pk's loops at a
// quarter of the machine's vector width.
//
// Floating-point contraction is off in the clones (`fp-contract=off`): x86-64
// v3 and v4 have FMA, and contracting `a * b + c` into one rounding would make
// the results depend on which CPU runs the kernel. Every clone computes the
// kernel's arithmetic with the same bits as the baseline and as the eager
// reference. pk::vm's own multiply-adds are fused by hand instead, in the
// pk::vm::Fused flavour that run_cpu picks for the v3/v4 clones.
//
// It expands to nothing, and the kernel is compiled once for the file's
// flags, when:
//   - PK_NO_CPU_DISPATCH is defined (one version, smaller and faster to build);
//   - PK_CPU_DISPATCH_NO_AVX512 is defined and the file is compiled for AVX2
//     (or PK_CPU_DISPATCH_NO_AVX2 is defined too);
//   - the compiler is not g++ >= 11 (clang rejects a multiversioned function
//     that was called before its definition in the same file);
//   - the target is not x86-64 Linux with glibc (no ifunc);
//   - the file is already compiled for AVX-512 (-march=native on such a CPU):
//     there is nothing better to pick;
//   - ThreadSanitizer instruments the file: the resolver runs while the
//     dynamic loader relocates, before TSan's runtime is up, and crashes.
//
// PK_CPU_DISPATCH_NO_AVX512 leaves out the x86-64-v4 clone: for programs that
// never run on AVX-512, or builds that only run where they are built (pk's
// test build on a CPU without AVX-512 defines it: a clone the machine cannot
// run costs a third of the kernels' compile time and is never tested there).
// PK_CPU_DISPATCH_NO_AVX2 leaves out the x86-64-v3 clone the same way (two
// clones, v4 and the file's flags): pk's test build on an AVX-512 CPU, which
// would never run the v3 clone, defines it.
//
//===----------------------------------------------------------------------===//

#ifndef PK_DISPATCH_H
#define PK_DISPATCH_H

#include <pk/vmath.h>

// __GLIBC__ comes from the C library's own headers.
#if defined(__linux__) && __has_include(<features.h>)
#include <features.h>
#endif

#if !defined(PK_NO_CPU_DISPATCH) && defined(__GNUC__) &&                       \
    !defined(__clang__) && __GNUC__ >= 11 && defined(__x86_64__) &&            \
    defined(__linux__) && defined(__GLIBC__) && !defined(__AVX512F__) &&       \
    !defined(__CUDACC__) && !defined(__SANITIZE_THREAD__)
#if defined(PK_CPU_DISPATCH_NO_AVX512) &&                                      \
    (defined(__AVX2__) || defined(PK_CPU_DISPATCH_NO_AVX2))
// Nothing better than the file's own flags is wanted: one version.
#define PK_CPU_DISPATCH_CLONES 0
#define PK_CPU_DISPATCH
#elif defined(PK_CPU_DISPATCH_NO_AVX512)
#define PK_CPU_DISPATCH_CLONES 1
#define PK_CPU_DISPATCH                                                        \
  __attribute__((target_clones("arch=x86-64-v3", "default"),                   \
                 optimize("fp-contract=off")))
#elif defined(__AVX2__) || defined(PK_CPU_DISPATCH_NO_AVX2)
#define PK_CPU_DISPATCH_CLONES 1
#define PK_CPU_DISPATCH                                                        \
  __attribute__((target_clones("arch=x86-64-v4", "default"),                   \
                 optimize("fp-contract=off")))
#else
#define PK_CPU_DISPATCH_CLONES 1
#define PK_CPU_DISPATCH                                                        \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), \
                 optimize("fp-contract=off")))
#endif
#else
#define PK_CPU_DISPATCH_CLONES 0
#define PK_CPU_DISPATCH
#endif

namespace pk::rt {

/// Whether the CPU running the program has AVX-512 F, asked once: the
/// runtime's own register paths (<pk/transpose.h>, <pk/attention.h>) choose
/// by it, as the loader chooses the kernels' clones.
inline bool cpu_has_avx512f() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) &&        \
    !defined(__CUDACC__)
  static const bool Has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return Has;
#else
  return false;
#endif
}

/// Calls `Body(Flavour{})` with the flavour of pk::vm for this CPU; pkc's
/// kernels call their compiled body this way (`[&](auto pk_vm) {
/// pk_<name>_cpu<decltype(pk_vm)>(...); }`).
///
/// With the clones, pk::vm::Fused on CPUs whose clone has FMA (x86-64-v3 or
/// v4: the loader picks it), else pk::vm::Plain. Fused fuses pk::vm's own
/// multiply-adds (exp, exp_nonpos) by hand, which the clones' fp-contract=off
/// does not do; the kernel's own arithmetic is the same on every CPU either
/// way. Without the clones, the flavour for the file's flags
/// (pk::vm::Native). Only the instances called are compiled: a Fused
/// instance is never compiled for a baseline-only build.
template <class BodyFn> inline void run_cpu(BodyFn &&Body) {
#if PK_CPU_DISPATCH_CLONES && !PK_VM_HAVE_FMA
  // The clones are v4 (unless PK_CPU_DISPATCH_NO_AVX512), v3 (when the file
  // is not built for AVX2 and PK_CPU_DISPATCH_NO_AVX2 is not defined) and the
  // file's flags: Fused only where one of the first two runs.
  __builtin_cpu_init();
#if (defined(__AVX2__) || defined(PK_CPU_DISPATCH_NO_AVX2)) &&                 \
    !defined(PK_CPU_DISPATCH_NO_AVX512)
  const bool Fma = __builtin_cpu_supports("x86-64-v4");
#else
  const bool Fma = __builtin_cpu_supports("x86-64-v3");
#endif
  if (Fma)
    Body(vm::Fused{});
  else
    Body(vm::Plain{});
#else
  Body(vm::Native{});
#endif
}

} // namespace pk::rt

#endif // PK_DISPATCH_H
