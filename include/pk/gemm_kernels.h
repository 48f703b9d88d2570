//===- pk/gemm_kernels.h - GEMM micro-kernels per x86-64 level --*- C++ -*-===//
//
// The register-tiled inner kernel of pk::rt::gemm (<pk/gemm.h>), compiled
// once per instruction-set level and picked at run time for the CPU the
// program runs on, so a default build (x86-64 baseline, SSE2) multiplies with
// AVX2 or AVX-512 where the CPU has them, like OpenBLAS's DYNAMIC_ARCH.
//
// Each level's kernel is the same vector-extension code (microBody) inlined
// into a function compiled for that level (`target(...)`); the vector width
// and the tile come from the register file:
//
//   level      vectors    float tile (MR x NR)    accumulators
//   avx512     64 bytes   12 x 32                 24 of 32 registers
//   avx2       32 bytes    6 x 16                 12 of 16
//   baseline   16 bytes    6 x 8                  12 of 16 (SSE2; NEON and
//                                                 other targets: untested)
//
// (double: the same vectors, half the columns). The kernels contract a * b + c
// into fused multiply-adds where the level has them, so the last bits of a
// sum over K differ between levels: each level's results are within the
// usual dot-product bound of the exact sum (|err| <= K * eps * sum |a b|,
// up to rounding of the bound), and a level's results do not depend on the
// thread count (K is never split between threads).
//
// The level is the best one the CPU runs, or what PK_GEMM_ISA names
// (`avx512`, `avx2`, `baseline`; for tests and benchmarks), or what
// set_gemm_isa() set last.
//
//===----------------------------------------------------------------------===//
#ifndef PK_GEMM_KERNELS_H
#define PK_GEMM_KERNELS_H

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PK_GEMM_X86 1
#else
#define PK_GEMM_X86 0
#endif

// Contraction into FMA: g++ decides it per function (its ISO modes default
// to fp-contract=off), clang per expression.
#if defined(__GNUC__) && !defined(__clang__)
#define PK_GEMM_CONTRACT __attribute__((optimize("fp-contract=fast")))
#define PK_GEMM_CONTRACT_HERE
#else
#define PK_GEMM_CONTRACT
#define PK_GEMM_CONTRACT_HERE _Pragma("clang fp contract(fast)")
#endif

namespace pk::rt {

/// The instruction-set levels with a GEMM kernel of their own.
enum class GemmIsa : int { Baseline = 0, Avx2 = 1, Avx512 = 2 };
inline constexpr GemmIsa kAllGemmIsas[] = {GemmIsa::Baseline, GemmIsa::Avx2,
                                           GemmIsa::Avx512};

inline const char *gemm_isa_name(GemmIsa L) {
  switch (L) {
  case GemmIsa::Avx512:
    return "avx512";
  case GemmIsa::Avx2:
    return "avx2";
  case GemmIsa::Baseline:
    break;
  }
  return "baseline";
}

/// Whether this CPU runs level L's kernel.
inline bool gemm_isa_supported(GemmIsa L) {
  if (L == GemmIsa::Baseline)
    return true;
#if PK_GEMM_X86
  __builtin_cpu_init();
  if (L == GemmIsa::Avx2)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

namespace gemm_detail {

/// The tile of a level for elements of type T: MR rows of NR columns, NR a
/// multiple of the vector's lanes.
struct Tile {
  int MR, NR;
};

/// Ct[MR x NR] (row stride LdC) += an A micro-panel (KC columns of MR
/// values) times a B micro-panel (KC rows of NR values, 64-byte aligned).
/// Inlined into one function per level, which gives it its instructions.
template <class T, int VectorBytes, int MR, int NV>
__attribute__((always_inline)) PK_GEMM_CONTRACT inline void
microBody(int64_t KC, const T *__restrict Ap, const T *__restrict Bp,
          T *__restrict Ct, int64_t LdC) {
  PK_GEMM_CONTRACT_HERE
  typedef T Vec __attribute__((vector_size(VectorBytes)));
  constexpr int L = VectorBytes / int(sizeof(T)), NR = L * NV;
  Vec Acc[MR][NV];
#pragma GCC unroll 16
  for (int R = 0; R < MR; ++R)
#pragma GCC unroll 4
    for (int C = 0; C < NV; ++C)
      std::memcpy(&Acc[R][C], Ct + R * LdC + C * L, sizeof(Vec));
  for (int64_t K = 0; K < KC; ++K) {
    Vec Bv[NV];
#pragma GCC unroll 4
    for (int C = 0; C < NV; ++C)
      std::memcpy(&Bv[C], Bp + K * NR + C * L, sizeof(Vec));
#pragma GCC unroll 16
    for (int R = 0; R < MR; ++R) {
      const T A = Ap[K * MR + R];
#pragma GCC unroll 4
      for (int C = 0; C < NV; ++C)
        Acc[R][C] += A * Bv[C];
    }
  }
#pragma GCC unroll 16
  for (int R = 0; R < MR; ++R)
#pragma GCC unroll 4
    for (int C = 0; C < NV; ++C)
      std::memcpy(Ct + R * LdC + C * L, &Acc[R][C], sizeof(Vec));
}

template <class T>
using MicroFn = void (*)(int64_t KC, const T *Ap, const T *Bp, T *Ct,
                         int64_t LdC);

// Each level's vector width and tile rows. A tile row is two vectors; MR
// rows so that MR x 2 accumulators, the two B vectors and the broadcast A
// value fit the register file.
inline constexpr int kBaselineBytes = 16, kBaselineRows = 6;
inline constexpr int kAvx2Bytes = 32, kAvx2Rows = 6;
inline constexpr int kAvx512Bytes = 64, kAvx512Rows = 12;

template <class T> constexpr Tile tileOf(int VectorBytes, int Rows) {
  return {Rows, 2 * VectorBytes / int(sizeof(T))};
}

// One function per level and type. Baseline: the build's own flags (SSE2 on
// x86-64).
template <class T>
PK_GEMM_CONTRACT void microBaseline(int64_t KC, const T *Ap, const T *Bp, T *Ct,
                                    int64_t LdC) {
  microBody<T, kBaselineBytes, kBaselineRows, 2>(KC, Ap, Bp, Ct, LdC);
}
#if PK_GEMM_X86
template <class T>
__attribute__((target("avx2,fma"))) PK_GEMM_CONTRACT void
microAvx2(int64_t KC, const T *Ap, const T *Bp, T *Ct, int64_t LdC) {
  microBody<T, kAvx2Bytes, kAvx2Rows, 2>(KC, Ap, Bp, Ct, LdC);
}
template <class T>
__attribute__((target("avx512f"))) PK_GEMM_CONTRACT void
microAvx512(int64_t KC, const T *Ap, const T *Bp, T *Ct, int64_t LdC) {
  microBody<T, kAvx512Bytes, kAvx512Rows, 2>(KC, Ap, Bp, Ct, LdC);
}
#endif

/// Level L's kernel and tile for T.
template <class T> struct MicroKernel {
  MicroFn<T> Run;
  Tile Shape;
};
template <class T> inline MicroKernel<T> microKernel(GemmIsa L) {
#if PK_GEMM_X86
  if (L == GemmIsa::Avx512)
    return {&microAvx512<T>, tileOf<T>(kAvx512Bytes, kAvx512Rows)};
  if (L == GemmIsa::Avx2)
    return {&microAvx2<T>, tileOf<T>(kAvx2Bytes, kAvx2Rows)};
#else
  (void)L;
#endif
  return {&microBaseline<T>, tileOf<T>(kBaselineBytes, kBaselineRows)};
}

// --- Small M: matrix-vector products --------------------------------------
//
// For a few rows of A (a decode step's tokens) packing the weights costs more
// than the product: the GEMV kernels read B straight from memory, each
// element once per call, and A (Rows x K, packed contiguously) from cache.

/// Out[r * LdOut + j] = sum_k A[r * K + k] * W[j * LdW + k] for r < Rows,
/// j < Cols: B's columns are contiguous along k (nn.Linear's w[N, K]).
template <class T, int VectorBytes, int Rows>
__attribute__((always_inline)) PK_GEMM_CONTRACT inline void
gemvColumnsBody(int64_t K, const T *__restrict A, const T *__restrict W,
                int64_t LdW, int64_t Cols, T *__restrict Out, int64_t LdOut) {
  PK_GEMM_CONTRACT_HERE
  typedef T Vec __attribute__((vector_size(VectorBytes)));
  constexpr int L = VectorBytes / int(sizeof(T));
  for (int64_t J = 0; J < Cols; ++J) {
    const T *Wj = W + J * LdW;
    Vec Acc[Rows][2];
#pragma GCC unroll 8
    for (int R = 0; R < Rows; ++R)
      Acc[R][0] = Acc[R][1] = Vec{};
    int64_t Kk = 0;
    for (; Kk + 2 * L <= K; Kk += 2 * L) {
      Vec W0, W1;
      std::memcpy(&W0, Wj + Kk, sizeof(Vec));
      std::memcpy(&W1, Wj + Kk + L, sizeof(Vec));
#pragma GCC unroll 8
      for (int R = 0; R < Rows; ++R) {
        Vec A0, A1;
        std::memcpy(&A0, A + R * K + Kk, sizeof(Vec));
        std::memcpy(&A1, A + R * K + Kk + L, sizeof(Vec));
        Acc[R][0] += A0 * W0;
        Acc[R][1] += A1 * W1;
      }
    }
#pragma GCC unroll 8
    for (int R = 0; R < Rows; ++R) {
      const Vec V = Acc[R][0] + Acc[R][1];
      T Sum = 0;
      for (int I = 0; I < L; ++I)
        Sum += V[I];
      for (int64_t Kt = Kk; Kt < K; ++Kt)
        Sum += A[R * K + Kt] * Wj[Kt];
      Out[R * LdOut + J] = Sum;
    }
  }
}

/// The same for B's rows contiguous along j (a [K, N] weight): Out[r *
/// LdOut + j] = sum_k A[r * K + k] * W[k * LdW + j].
template <class T, int VectorBytes, int Rows>
__attribute__((always_inline)) PK_GEMM_CONTRACT inline void
gemvRowsBody(int64_t K, const T *__restrict A, const T *__restrict W,
             int64_t LdW, int64_t Cols, T *__restrict Out, int64_t LdOut) {
  PK_GEMM_CONTRACT_HERE
  typedef T Vec __attribute__((vector_size(VectorBytes)));
  constexpr int L = VectorBytes / int(sizeof(T));
  int64_t J = 0;
  for (; J + 2 * L <= Cols; J += 2 * L) {
    Vec Acc[Rows][2];
#pragma GCC unroll 8
    for (int R = 0; R < Rows; ++R)
      Acc[R][0] = Acc[R][1] = Vec{};
    for (int64_t Kk = 0; Kk < K; ++Kk) {
      Vec W0, W1;
      std::memcpy(&W0, W + Kk * LdW + J, sizeof(Vec));
      std::memcpy(&W1, W + Kk * LdW + J + L, sizeof(Vec));
#pragma GCC unroll 8
      for (int R = 0; R < Rows; ++R) {
        const T Av = A[R * K + Kk];
        Acc[R][0] += Av * W0;
        Acc[R][1] += Av * W1;
      }
    }
#pragma GCC unroll 8
    for (int R = 0; R < Rows; ++R) {
      std::memcpy(Out + R * LdOut + J, &Acc[R][0], sizeof(Vec));
      std::memcpy(Out + R * LdOut + J + L, &Acc[R][1], sizeof(Vec));
    }
  }
  for (; J < Cols; ++J)
#pragma GCC unroll 8
    for (int R = 0; R < Rows; ++R) {
      T Sum = 0;
      for (int64_t Kk = 0; Kk < K; ++Kk)
        Sum += A[R * K + Kk] * W[Kk * LdW + J];
      Out[R * LdOut + J] = Sum;
    }
}

/// Rows of A at a time in the GEMV kernels: a W column (or block) read from
/// memory for the first group is in L1 for the next.
inline constexpr int kGemvRows = 4;

template <class T>
using GemvFn = void (*)(int64_t K, int64_t Rows, const T *A, const T *W,
                        int64_t LdW, int64_t Cols, T *Out, int64_t LdOut);

/// All Rows rows, kGemvRows at a time, for one layout and level.
template <class T, int VectorBytes, bool ColumnsAlongK>
__attribute__((always_inline)) PK_GEMM_CONTRACT inline void
gemvBody(int64_t K, int64_t Rows, const T *A, const T *W, int64_t LdW,
         int64_t Cols, T *Out, int64_t LdOut) {
  int64_t R = 0;
  for (; R + kGemvRows <= Rows; R += kGemvRows)
    if constexpr (ColumnsAlongK)
      gemvColumnsBody<T, VectorBytes, kGemvRows>(K, A + R * K, W, LdW, Cols,
                                                 Out + R * LdOut, LdOut);
    else
      gemvRowsBody<T, VectorBytes, kGemvRows>(K, A + R * K, W, LdW, Cols,
                                              Out + R * LdOut, LdOut);
  for (; R < Rows; ++R)
    if constexpr (ColumnsAlongK)
      gemvColumnsBody<T, VectorBytes, 1>(K, A + R * K, W, LdW, Cols,
                                         Out + R * LdOut, LdOut);
    else
      gemvRowsBody<T, VectorBytes, 1>(K, A + R * K, W, LdW, Cols,
                                      Out + R * LdOut, LdOut);
}

template <class T, bool ColumnsAlongK>
PK_GEMM_CONTRACT void gemvBaseline(int64_t K, int64_t Rows, const T *A,
                                   const T *W, int64_t LdW, int64_t Cols,
                                   T *Out, int64_t LdOut) {
  gemvBody<T, kBaselineBytes, ColumnsAlongK>(K, Rows, A, W, LdW, Cols, Out,
                                             LdOut);
}
#if PK_GEMM_X86
template <class T, bool ColumnsAlongK>
__attribute__((target("avx2,fma"))) PK_GEMM_CONTRACT void
gemvAvx2(int64_t K, int64_t Rows, const T *A, const T *W, int64_t LdW,
         int64_t Cols, T *Out, int64_t LdOut) {
  gemvBody<T, kAvx2Bytes, ColumnsAlongK>(K, Rows, A, W, LdW, Cols, Out, LdOut);
}
template <class T, bool ColumnsAlongK>
__attribute__((target("avx512f"))) PK_GEMM_CONTRACT void
gemvAvx512(int64_t K, int64_t Rows, const T *A, const T *W, int64_t LdW,
           int64_t Cols, T *Out, int64_t LdOut) {
  gemvBody<T, kAvx512Bytes, ColumnsAlongK>(K, Rows, A, W, LdW, Cols, Out,
                                           LdOut);
}
#endif

/// Level L's GEMV kernel for B's columns contiguous along k
/// (`ColumnsAlongK`) or its rows contiguous along j.
template <class T, bool ColumnsAlongK> inline GemvFn<T> gemvKernel(GemmIsa L) {
#if PK_GEMM_X86
  if (L == GemmIsa::Avx512)
    return &gemvAvx512<T, ColumnsAlongK>;
  if (L == GemmIsa::Avx2)
    return &gemvAvx2<T, ColumnsAlongK>;
#else
  (void)L;
#endif
  return &gemvBaseline<T, ColumnsAlongK>;
}

inline GemmIsa best_gemm_isa() {
  for (GemmIsa L : {GemmIsa::Avx512, GemmIsa::Avx2})
    if (gemm_isa_supported(L))
      return L;
  return GemmIsa::Baseline;
}

/// PK_GEMM_ISA when it names a level this CPU runs, else the best level.
inline GemmIsa initial_gemm_isa() {
  const GemmIsa Best = best_gemm_isa();
  const char *Env = std::getenv("PK_GEMM_ISA");
  if (!Env || !*Env)
    return Best;
  for (GemmIsa L : kAllGemmIsas)
    if (std::strcmp(Env, gemm_isa_name(L)) == 0) {
      if (gemm_isa_supported(L))
        return L;
      std::fprintf(stderr,
                   "pk: PK_GEMM_ISA=%s: this CPU does not run it; using %s\n",
                   Env, gemm_isa_name(Best));
      return Best;
    }
  std::fprintf(stderr,
               "pk: ignoring PK_GEMM_ISA=%s (expected avx512, avx2 or "
               "baseline); using %s\n",
               Env, gemm_isa_name(Best));
  return Best;
}

inline std::atomic<int> &gemm_isa_slot() {
  static std::atomic<int> Slot{int(initial_gemm_isa())};
  return Slot;
}

} // namespace gemm_detail

/// The level pk::rt::gemm runs now.
inline GemmIsa gemm_isa() {
  return GemmIsa(gemm_detail::gemm_isa_slot().load(std::memory_order_relaxed));
}

/// Pins the level for the whole process (tests, benchmarks). Returns false,
/// changing nothing, when the CPU does not run it.
inline bool set_gemm_isa(GemmIsa L) {
  if (!gemm_isa_supported(L))
    return false;
  gemm_detail::gemm_isa_slot().store(int(L), std::memory_order_relaxed);
  return true;
}

} // namespace pk::rt

#endif // PK_GEMM_KERNELS_H
