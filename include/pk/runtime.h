//===- pk/runtime.h - Helpers called by pkc-generated host code -----------===//
//
// Small, inline, dependency-free: the generated .pk.cpp and the host side of
// the generated .pk.cu include it. Only the cold paths (building a
// ShapeError's message) do any real work.
//
//===----------------------------------------------------------------------===//
#ifndef PK_RUNTIME_H
#define PK_RUNTIME_H

#include <pk/attention.h>
#include <pk/dispatch.h>
#include <pk/ref.h>
#include <pk/scalar.h>
#include <pk/stream.h>
#include <pk/transpose.h>
#include <pk/workspace.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace pk::rt {

/// Below this many elements a fused loop runs on the calling thread: entering
/// a libgomp parallel region costs ~1.5 us even with one thread (measured on
/// the 2-core CI machine), more than 64K simple elements take.
inline constexpr int64_t kParallelMinWork = int64_t(1) << 16;

/// `__host__ __device__` under nvcc: helpers that kernels call too.
#ifdef __CUDACC__
#define PK_HOST_DEVICE __host__ __device__
#else
#define PK_HOST_DEVICE
#endif

/// A hint to bring the cache line at `Addr` in for reading (nothing on
/// compilers without the builtin; a prefetch never faults). Generated row
/// loops prefetch the next row's inputs while they compute on this one.
#if defined(__GNUC__) || defined(__clang__)
#define PK_PREFETCH(Addr) __builtin_prefetch(Addr)
#else
#define PK_PREFETCH(Addr) ((void)(Addr))
#endif

// The combiners of row reductions' lanes (combine_lanes below): NumPy's sum
// (wrapping for integers, pk::scalar::add) and NaN-propagating
// maximum/minimum, as pk::scalar's.
struct sum_op {
  template <class T> T operator()(T A, T B) const { return scalar::add(A, B); }
};
struct max_op {
  template <class T> T operator()(T A, T B) const {
    return scalar::maximum(A, B);
  }
};
struct min_op {
  template <class T> T operator()(T A, T B) const {
    return scalar::minimum(A, B);
  }
};

/// The `N` lanes of a row reduction combined pairwise: lane l with lane
/// l + w for w = N/2, N/4, ..., 1 (a tree of depth log2 N, the same order
/// for every row length and every CPU). The last 16 lanes are combined as one
/// expression, in registers: as loops over the array every level was a store
/// and a reload, 20 ns a row for a two-reduction kernel (logsumexp 4096x768:
/// 8% of its time). N is 16 or 64.
template <int N, class T, class Op>
inline T combine_lanes(T *Lanes, const Op &Combine) {
  static_assert(N == 16 || N == 64, "16 or 64 lanes");
  if constexpr (N == 64)
    for (int L = 0; L < 16; ++L) // w = 32 and 16
      Lanes[L] = Combine(Combine(Lanes[L], Lanes[L + 32]),
                         Combine(Lanes[L + 16], Lanes[L + 48]));
  const T *A = Lanes; // w = 8, 4, 2, 1
  return Combine(Combine(Combine(Combine(A[0], A[8]), Combine(A[4], A[12])),
                         Combine(Combine(A[2], A[10]), Combine(A[6], A[14]))),
                 Combine(Combine(Combine(A[1], A[9]), Combine(A[5], A[13])),
                         Combine(Combine(A[3], A[11]), Combine(A[7], A[15]))));
}

/// The extent NumPy broadcasting gives two compatible extents (also a loop
/// bound in kernels).
PK_HOST_DEVICE inline int64_t bcast(int64_t A, int64_t B) {
  return A == 1 ? B : A;
}

/// The number of threads an OpenMP parallel region would use (1 without
/// OpenMP).
inline int64_t thread_count() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

/// A per-thread scratch row of at least N elements, one per Slot: the
/// per-row buffers of fused row loops (kept across calls, grown as needed).
template <class T> inline T *row_scratch(unsigned Slot, int64_t N) {
  thread_local std::vector<T> Rows[8];
  std::vector<T> &Row = Rows[Slot];
  if (static_cast<int64_t>(Row.size()) < N)
    Row.resize(static_cast<size_t>(N));
  return Row.data();
}

/// The memory of one ref argument, for check_no_alias.
struct RefSpan {
  const char *Name;
  const void *Ptr;
  int64_t Bytes;
  bool Written;
};

[[gnu::cold]] inline void alias_fail(const char *Kernel, const char *Written,
                                     const char *Other) {
  throw AliasError(std::string(Kernel) + ": " + Written + " overlaps " + Other +
                   " in memory; refs may not alias (an in-place update is "
                   "one InOut ref)");
}

/// Throws pk::AliasError when a written ref shares a byte with any other ref
/// of the call. Empty refs share nothing. Quadratic in the refs of one
/// kernel: a handful of comparisons.
inline void check_no_alias(const char *Kernel,
                           std::initializer_list<RefSpan> Refs) {
  for (const RefSpan &W : Refs) {
    if (!W.Written || W.Bytes == 0)
      continue;
    auto WB = reinterpret_cast<std::uintptr_t>(W.Ptr);
    for (const RefSpan &O : Refs) {
      if (&O == &W || O.Bytes == 0)
        continue;
      auto OB = reinterpret_cast<std::uintptr_t>(O.Ptr);
      if (WB < OB + static_cast<std::uintptr_t>(O.Bytes) &&
          OB < WB + static_cast<std::uintptr_t>(W.Bytes))
        alias_fail(Kernel, W.Name, O.Name);
    }
  }
}

/// "[128, 1000]".
inline std::string shape_str(std::initializer_list<int64_t> Shape) {
  std::string S = "[";
  bool First = true;
  for (int64_t E : Shape) {
    if (!First)
      S += ", ";
    S += std::to_string(E);
    First = false;
  }
  return S + "]";
}

/// Throws the ShapeError of a failed entry guard:
/// "<kernel>: <what> <a><shape a> <rel> <b><shape b><tail>".
[[noreturn]] inline void shape_fail(const char *Kernel, const char *What,
                                    const char *A,
                                    std::initializer_list<int64_t> ShapeA,
                                    const char *Rel, const char *B,
                                    std::initializer_list<int64_t> ShapeB,
                                    const char *Tail) {
  std::string Msg =
      std::string(Kernel) + ": " + What + " " + A + shape_str(ShapeA);
  if (*Rel)
    Msg += std::string(" ") + Rel + " " + B + shape_str(ShapeB);
  throw ShapeError(Msg + Tail);
}

/// Checks a window `parent.slice(axis, begin, end)` of a compiled kernel at
/// entry, before any write (language.md §2): 0 <= begin <= end <= the
/// parent's extent along `axis`. The message reads like the eager one.
/// `Parent` names the parent: a ref's name, or, for a window of a window,
/// a callable that spells it with its run-time bounds
/// (`x.slice(0, 1, 4)`), called only to report.
template <class Name>
inline void check_window(const char *Kernel, const Name &Parent, int Axis,
                         int64_t Begin, int64_t End,
                         std::initializer_list<int64_t> ParentShape) {
  const int64_t Extent = ParentShape.begin()[Axis];
  if (Begin >= 0 && Begin <= End && End <= Extent)
    return;
  std::string ParentName;
  if constexpr (std::is_invocable_v<const Name &>)
    ParentName = Parent();
  else
    ParentName = Parent;
  std::string Msg = std::string(Kernel) + ": slice: the window [" +
                    std::to_string(Begin) + ", " + std::to_string(End) +
                    ") of axis " + std::to_string(Axis) + " of " + ParentName +
                    shape_str(ParentShape);
  if (Begin < 0 || End < 0)
    Msg += " has a negative bound (a window's bounds are never negative)";
  else
    Msg += " is outside it (it needs 0 <= begin <= end <= " +
           std::to_string(Extent) + ")";
  throw ShapeError(Msg);
}

/// Checks the indices of a compiled take(table, indices, axis) at entry,
/// before any write (language.md §3): every one of the `Count` indices at
/// `Indices` lies in [0, extent of `Table` along `Axis`). The message reads
/// like the eager one, after the kernel's name.
template <class I>
inline void check_take(const char *Kernel, const char *Table,
                       std::initializer_list<int64_t> TableShape, int Axis,
                       const char *Label, const I *Indices, int64_t Count) {
  const int64_t Extent = TableShape.begin()[Axis];
  for (int64_t K = 0; K < Count; ++K) {
    const int64_t Ix = static_cast<int64_t>(Indices[K]);
    if (Ix >= 0 && Ix < Extent)
      continue;
    throw ShapeError(
        std::string(Kernel) + ": take: index " + std::to_string(Ix) +
        (Count > 1 ? " (element " + std::to_string(K) + " of " + Label + ")"
                   : std::string()) +
        " is outside [0, " + std::to_string(Extent) + ") of axis " +
        std::to_string(Axis) + " of " + Table + shape_str(TableShape));
  }
}

/// Throws a ShapeError with a complete message.
[[noreturn]] inline void shape_fail(const std::string &Message) {
  throw ShapeError(Message);
}

} // namespace pk::rt

// The combiners of float max/min reductions in generated loops: NumPy's
// NaN-propagating maximum/minimum (OpenMP's own `max` leaves NaN handling
// unspecified). Declared at global scope so generated code in any namespace
// sees them.
#ifdef _OPENMP
#pragma omp declare reduction(pk_max                                           \
                              : float, double                                  \
                              : omp_out =                                      \
                                    pk::scalar::maximum(omp_out, omp_in))      \
    initializer(omp_priv = -INFINITY)
#pragma omp declare reduction(pk_min                                           \
                              : float, double                                  \
                              : omp_out =                                      \
                                    pk::scalar::minimum(omp_out, omp_in))      \
    initializer(omp_priv = INFINITY)
// Integer sums wrap (language.md §3): OpenMP's own `+` would combine the
// lanes' partial sums with a signed add, undefined on overflow.
#pragma omp declare reduction(pk_add                                           \
                              : int32_t, int64_t                               \
                              : omp_out = pk::scalar::add(omp_out, omp_in))    \
    initializer(omp_priv = 0)
#endif

#endif // PK_RUNTIME_H
