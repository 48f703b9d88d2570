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

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PK_GEMM_X86 1
#else
#define PK_GEMM_X86 0
#endif

#if PK_GEMM_X86
// The int8 GEMV tiles widen weights with the levels' intrinsics (declared
// whatever the build's -m flags; used only in functions compiled for them).
#include <immintrin.h>
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

/// Memory the micro-kernel fetches into L2 while it multiplies, its lines
/// spread over the k loop: `Rows` rows of `Lines` 64-byte lines, `Stride`
/// bytes apart (the rows of w that the next B panel is packed from).
struct PrefetchRows {
  const char *Base = nullptr;
  int64_t Stride = 0, Lines = 0, Rows = 0;
};

/// Ct[MR x NR] (row stride LdC) += an A micro-panel (KC columns of MR
/// values) times a B micro-panel (KC rows of NR values, 64-byte aligned).
/// Inlined into one function per level, which gives it its instructions.
/// The sum starts from zero and Ct is added at the end, its rows prefetched
/// at the start: a C tile larger than L2 no longer stalls the first
/// multiply-adds on its loads (AMD EPYC, AVX2: 0.87 -> 0.89-0.98x OpenBLAS).
/// With ARows, A is not packed: its MR rows are read where they are, row r
/// at Ap + r * LdA, contiguous along k (the rows of a w[N, K] weight, see
/// gemmWeightRows in <pk/gemm.h>).
template <class T, int VectorBytes, int MR, int NV, bool ARows = false>
__attribute__((always_inline)) PK_GEMM_CONTRACT inline void
microBody(int64_t KC, const T *__restrict Ap, int64_t LdA,
          const T *__restrict Bp, T *__restrict Ct, int64_t LdC,
          const PrefetchRows &Ahead) {
  PK_GEMM_CONTRACT_HERE
  typedef T Vec __attribute__((vector_size(VectorBytes)));
  constexpr int L = VectorBytes / int(sizeof(T)), NR = L * NV;
  const T *Row[MR];
#pragma GCC unroll 16
  for (int R = 0; R < MR; ++R)
    Row[R] = Ap + (ARows ? R * LdA : R);
  Vec Acc[MR][NV];
#pragma GCC unroll 16
  for (int R = 0; R < MR; ++R) {
    __builtin_prefetch(Ct + R * LdC, 1);
#pragma GCC unroll 4
    for (int C = 0; C < NV; ++C)
      Acc[R][C] = Vec{};
  }
  const char *AheadRow = Ahead.Base;
  int64_t AheadLine = 0, AheadLeft = Ahead.Rows * Ahead.Lines;
  // Spread evenly over the k loop, so that the lines are requested no
  // faster than memory delivers them (in bursts, the fill buffers ran out
  // and the multiply-adds waited on the prefetches).
  const int64_t AheadEvery =
      AheadLeft > 0 ? std::max<int64_t>(1, KC / AheadLeft) : 0;
  int64_t AheadWait = 0;
  for (int64_t K = 0; K < KC; ++K) {
    if (AheadLeft > 0 && --AheadWait <= 0) {
      AheadWait = AheadEvery;
      __builtin_prefetch(AheadRow + 64 * AheadLine, 0, 2);
      --AheadLeft;
      if (++AheadLine == Ahead.Lines) {
        AheadLine = 0;
        AheadRow += Ahead.Stride;
      }
    }
    Vec Bv[NV];
#pragma GCC unroll 4
    for (int C = 0; C < NV; ++C)
      std::memcpy(&Bv[C], Bp + K * NR + C * L, sizeof(Vec));
#pragma GCC unroll 16
    for (int R = 0; R < MR; ++R) {
      const T A = ARows ? Row[R][K] : Row[R][K * MR];
#pragma GCC unroll 4
      for (int C = 0; C < NV; ++C)
        Acc[R][C] += A * Bv[C];
    }
  }
#pragma GCC unroll 16
  for (int R = 0; R < MR; ++R)
#pragma GCC unroll 4
    for (int C = 0; C < NV; ++C) {
      Vec Old;
      std::memcpy(&Old, Ct + R * LdC + C * L, sizeof(Vec));
      Old += Acc[R][C];
      std::memcpy(Ct + R * LdC + C * L, &Old, sizeof(Vec));
    }
}

template <class T>
using MicroFn = void (*)(int64_t KC, const T *Ap, const T *Bp, T *Ct,
                         int64_t LdC, const PrefetchRows &Ahead);
/// The same with A's rows read in place (microBody's ARows).
template <class T>
using MicroRowsFn = void (*)(int64_t KC, const T *A, int64_t LdA, const T *Bp,
                             T *Ct, int64_t LdC, const PrefetchRows &Ahead);

// Each level's vector width and tile rows. A tile row is two vectors; MR
// rows so that MR x 2 accumulators, the two B vectors and the broadcast A
// value fit the register file.
inline constexpr int kBaselineBytes = 16, kBaselineRows = 6;
inline constexpr int kAvx2Bytes = 32, kAvx2Rows = 6;
inline constexpr int kAvx512Bytes = 64, kAvx512Rows = 12;

template <class T> constexpr Tile tileOf(int VectorBytes, int Rows) {
  return {Rows, 2 * VectorBytes / int(sizeof(T))};
}

/// The widest float panel of any level (AVX-512's NR), for staging buffers.
inline constexpr int64_t kMaxPanelWidth = 2 * kAvx512Bytes / int(sizeof(float));
static_assert(kAvx512Rows <= kMaxPanelWidth);

// One function per level and type. Baseline: the build's own flags (SSE2 on
// x86-64).
template <class T>
PK_GEMM_CONTRACT void microBaseline(int64_t KC, const T *Ap, const T *Bp, T *Ct,
                                    int64_t LdC, const PrefetchRows &Ahead) {
  microBody<T, kBaselineBytes, kBaselineRows, 2>(KC, Ap, 0, Bp, Ct, LdC, Ahead);
}
template <class T>
PK_GEMM_CONTRACT void microRowsBaseline(int64_t KC, const T *A, int64_t LdA,
                                        const T *Bp, T *Ct, int64_t LdC,
                                        const PrefetchRows &Ahead) {
  microBody<T, kBaselineBytes, kBaselineRows, 2, true>(KC, A, LdA, Bp, Ct, LdC,
                                                       Ahead);
}
#if PK_GEMM_X86
template <class T>
__attribute__((target("avx2,fma"))) PK_GEMM_CONTRACT void
microAvx2(int64_t KC, const T *Ap, const T *Bp, T *Ct, int64_t LdC,
          const PrefetchRows &Ahead) {
  microBody<T, kAvx2Bytes, kAvx2Rows, 2>(KC, Ap, 0, Bp, Ct, LdC, Ahead);
}
template <class T>
__attribute__((target("avx2,fma"))) PK_GEMM_CONTRACT void
microRowsAvx2(int64_t KC, const T *A, int64_t LdA, const T *Bp, T *Ct,
              int64_t LdC, const PrefetchRows &Ahead) {
  microBody<T, kAvx2Bytes, kAvx2Rows, 2, true>(KC, A, LdA, Bp, Ct, LdC, Ahead);
}
template <class T>
__attribute__((target("avx512f"))) PK_GEMM_CONTRACT void
microAvx512(int64_t KC, const T *Ap, const T *Bp, T *Ct, int64_t LdC,
            const PrefetchRows &Ahead) {
  microBody<T, kAvx512Bytes, kAvx512Rows, 2>(KC, Ap, 0, Bp, Ct, LdC, Ahead);
}
template <class T>
__attribute__((target("avx512f"))) PK_GEMM_CONTRACT void
microRowsAvx512(int64_t KC, const T *A, int64_t LdA, const T *Bp, T *Ct,
                int64_t LdC, const PrefetchRows &Ahead) {
  microBody<T, kAvx512Bytes, kAvx512Rows, 2, true>(KC, A, LdA, Bp, Ct, LdC,
                                                   Ahead);
}
#endif

/// Level L's kernel and tile for T.
template <class T> struct MicroKernel {
  MicroFn<T> Run;
  Tile Shape;
  MicroRowsFn<T> RunRows; ///< the same tile, A's rows read in place
};
template <class T> inline MicroKernel<T> microKernel(GemmIsa L) {
#if PK_GEMM_X86
  if (L == GemmIsa::Avx512)
    return {&microAvx512<T>, tileOf<T>(kAvx512Bytes, kAvx512Rows),
            &microRowsAvx512<T>};
  if (L == GemmIsa::Avx2)
    return {&microAvx2<T>, tileOf<T>(kAvx2Bytes, kAvx2Rows), &microRowsAvx2<T>};
#else
  (void)L;
#endif
  return {&microBaseline<T>, tileOf<T>(kBaselineBytes, kBaselineRows),
          &microRowsBaseline<T>};
}

// --- Packing: transposed panels -------------------------------------------
//
// Both operands of nn.Linear (x[M, K] and w[N, K]) are contiguous along k,
// and the micro-kernel reads its panels k-major: packing them is a
// transpose. Element by element it cost ~5 cycles per value here (one store
// per cache line of the panel), a third of a 512 x 5632 x 2048 product;
// transposed 8 x 8 (4 x 4 at the baseline) in vector registers it streams.

#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define PK_GEMM_SHUFFLE 1
#endif
#endif
#ifndef PK_GEMM_SHUFFLE
#define PK_GEMM_SHUFFLE 0
#endif

/// Panel[k * Width + r] = r < Rows ? Src[r * Ld + k] : 0 for k < Depth,
/// r < Width (Rows <= Width).
using PackFn = void (*)(int64_t Rows, int64_t Depth, const float *Src,
                        int64_t Ld, float *Panel, int64_t Width);

/// The scalar transpose of rows [R0, Rows) and columns [K0, Depth), and the
/// zero rows [Rows, Width).
inline void packTail(int64_t R0, int64_t K0, int64_t Rows, int64_t Depth,
                     const float *Src, int64_t Ld, float *Panel,
                     int64_t Width) {
  for (int64_t R = R0; R < Rows; ++R)
    for (int64_t K = K0; K < Depth; ++K)
      Panel[K * Width + R] = Src[R * Ld + K];
  if (Rows < Width)
    for (int64_t K = 0; K < Depth; ++K)
      for (int64_t R = Rows; R < Width; ++R)
        Panel[K * Width + R] = 0.0f;
}

#if PK_GEMM_SHUFFLE
/// 4 rows of 4 values -> 4 columns, SSE (the x86-64 baseline) or NEON.
__attribute__((always_inline)) inline void
packBlocks4(int64_t Rows, int64_t Depth, const float *Src, int64_t Ld,
            float *Panel, int64_t Width, int64_t R0, int64_t &RDone) {
  typedef float V4 __attribute__((vector_size(16)));
  int64_t R = R0;
  for (; R + 4 <= Rows; R += 4) {
    int64_t K = 0;
    for (; K + 4 <= Depth; K += 4) {
      V4 A, B, C, D;
      std::memcpy(&A, Src + R * Ld + K, 16);
      std::memcpy(&B, Src + (R + 1) * Ld + K, 16);
      std::memcpy(&C, Src + (R + 2) * Ld + K, 16);
      std::memcpy(&D, Src + (R + 3) * Ld + K, 16);
      const V4 T0 = __builtin_shufflevector(A, B, 0, 4, 1, 5);
      const V4 T1 = __builtin_shufflevector(A, B, 2, 6, 3, 7);
      const V4 T2 = __builtin_shufflevector(C, D, 0, 4, 1, 5);
      const V4 T3 = __builtin_shufflevector(C, D, 2, 6, 3, 7);
      const V4 O0 = __builtin_shufflevector(T0, T2, 0, 1, 4, 5);
      const V4 O1 = __builtin_shufflevector(T0, T2, 2, 3, 6, 7);
      const V4 O2 = __builtin_shufflevector(T1, T3, 0, 1, 4, 5);
      const V4 O3 = __builtin_shufflevector(T1, T3, 2, 3, 6, 7);
      std::memcpy(Panel + K * Width + R, &O0, 16);
      std::memcpy(Panel + (K + 1) * Width + R, &O1, 16);
      std::memcpy(Panel + (K + 2) * Width + R, &O2, 16);
      std::memcpy(Panel + (K + 3) * Width + R, &O3, 16);
    }
    for (; K < Depth; ++K)
      for (int64_t I = 0; I < 4; ++I)
        Panel[K * Width + R + I] = Src[(R + I) * Ld + K];
  }
  RDone = R;
}

/// 8 rows of 8 values -> 8 columns (AVX), then 4-row blocks.
__attribute__((always_inline)) inline void
packBlocks8(int64_t Rows, int64_t Depth, const float *Src, int64_t Ld,
            float *Panel, int64_t Width, int64_t &RDone) {
  typedef float V8 __attribute__((vector_size(32)));
  int64_t R = 0;
  for (; R + 8 <= Rows; R += 8) {
    int64_t K = 0;
    for (; K + 8 <= Depth; K += 8) {
      V8 X[8];
#pragma GCC unroll 8
      for (int I = 0; I < 8; ++I)
        std::memcpy(&X[I], Src + (R + I) * Ld + K, 32);
      V8 T[8], U[8];
#pragma GCC unroll 4
      for (int I = 0; I < 4; ++I) {
        T[2 * I] = __builtin_shufflevector(X[2 * I], X[2 * I + 1], 0, 8, 1, 9,
                                           4, 12, 5, 13);
        T[2 * I + 1] = __builtin_shufflevector(X[2 * I], X[2 * I + 1], 2, 10, 3,
                                               11, 6, 14, 7, 15);
      }
#pragma GCC unroll 2
      for (int I = 0; I < 2; ++I) {
        const V8 &A = T[4 * I], &B = T[4 * I + 1], &C = T[4 * I + 2],
                 &D = T[4 * I + 3];
        U[4 * I] = __builtin_shufflevector(A, C, 0, 1, 8, 9, 4, 5, 12, 13);
        U[4 * I + 1] =
            __builtin_shufflevector(A, C, 2, 3, 10, 11, 6, 7, 14, 15);
        U[4 * I + 2] = __builtin_shufflevector(B, D, 0, 1, 8, 9, 4, 5, 12, 13);
        U[4 * I + 3] =
            __builtin_shufflevector(B, D, 2, 3, 10, 11, 6, 7, 14, 15);
      }
      // U[c] (rows 0-3) and U[4 + c] (rows 4-7) hold columns c and c + 4 in
      // their low and high halves.
#pragma GCC unroll 4
      for (int C = 0; C < 4; ++C) {
        const V8 Lo =
            __builtin_shufflevector(U[C], U[4 + C], 0, 1, 2, 3, 8, 9, 10, 11);
        const V8 Hi =
            __builtin_shufflevector(U[C], U[4 + C], 4, 5, 6, 7, 12, 13, 14, 15);
        std::memcpy(Panel + (K + C) * Width + R, &Lo, 32);
        std::memcpy(Panel + (K + 4 + C) * Width + R, &Hi, 32);
      }
    }
    for (; K < Depth; ++K)
      for (int64_t I = 0; I < 8; ++I)
        Panel[K * Width + R + I] = Src[(R + I) * Ld + K];
  }
  packBlocks4(Rows, Depth, Src, Ld, Panel, Width, R, RDone);
}
#endif

inline void packBaseline(int64_t Rows, int64_t Depth, const float *Src,
                         int64_t Ld, float *Panel, int64_t Width) {
  int64_t R = 0;
#if PK_GEMM_SHUFFLE
  packBlocks4(Rows, Depth, Src, Ld, Panel, Width, 0, R);
#endif
  packTail(R, 0, Rows, Depth, Src, Ld, Panel, Width);
}
#if PK_GEMM_X86 && PK_GEMM_SHUFFLE
__attribute__((target("avx2,fma"))) inline void
packAvx2(int64_t Rows, int64_t Depth, const float *Src, int64_t Ld,
         float *Panel, int64_t Width) {
  int64_t R = 0;
  packBlocks8(Rows, Depth, Src, Ld, Panel, Width, R);
  packTail(R, 0, Rows, Depth, Src, Ld, Panel, Width);
}
#endif

/// Level L's transposing pack (AVX's 8 x 8 blocks serve AVX-512 too: the
/// pack is bound by loads and stores, not by the vector width).
inline PackFn packKernel(GemmIsa L) {
#if PK_GEMM_X86 && PK_GEMM_SHUFFLE
  if (L != GemmIsa::Baseline)
    return &packAvx2;
#else
  (void)L;
#endif
  return &packBaseline;
}

// --- Small M: matrix-vector products --------------------------------------
//
// For a few rows of A (a decode step's tokens) packing the weights costs more
// than the product: the GEMV kernels read B straight from memory, each
// element once per call, and A (Rows x K, packed contiguously) from cache.

/// The weights a GEMV reads in place are T itself or, for T = float,
/// bfloat16 (any 2-byte type WT holds bfloat16 bits: the high half of a
/// float), widened as they are loaded so a decode step reads half the bytes,
/// or int8_t with one float scale per group along k (GroupScales; a quarter
/// of the bytes).
template <class T, class WT>
inline constexpr bool kWeightsSupported = std::is_same_v<T, WT> ||
                                          (std::is_same_v<T, float> &&
                                           (sizeof(WT) == 2 ||
                                            std::is_same_v<WT, int8_t>));

/// int8 weights carry scales: weight (j, k) is its int8 value times
/// S[j * LdS + (k / Group) * KStride] (column j of the GEMV's block).
template <class WT>
inline constexpr bool kScaledWeights = std::is_same_v<WT, int8_t>;
struct GroupScales {
  const float *S = nullptr;
  int64_t LdS = 0, KStride = 0, Group = 1;
};

/// V = the L weights at P, as T.
template <class T, int VectorBytes, class WT, class Vec>
__attribute__((always_inline)) inline void loadWeights(Vec &V, const WT *P) {
  static_assert(kWeightsSupported<T, WT>);
  static_assert(!kScaledWeights<WT>, "int8 weights: widenInt8");
  if constexpr (std::is_same_v<T, WT>) {
    std::memcpy(&V, P, sizeof(Vec));
  } else {
    // A loop the vectoriser turns into a zero-extension and a shift (g++'s
    // __builtin_convertvector rejects the dependent vector types here).
    constexpr int L = VectorBytes / int(sizeof(T));
    uint16_t H[L];
    std::memcpy(H, P, sizeof(H));
    uint32_t U[L];
#pragma GCC unroll 16
    for (int I = 0; I < L; ++I)
      U[I] = uint32_t(H[I]) << 16;
    std::memcpy(&V, U, sizeof(Vec));
  }
}

/// F[i] = Q[i] for i < N (N <= Chunk): int8 weights widened to float a
/// chunk at a time. As a loop of a constant Chunk, g++ 12 turns it into
/// sign extensions and conversions (vpmovsxbw, vpmovsxwd, vcvtdq2ps), at
/// -O2 too (its cheap cost model vectorises no loop of a run-time count);
/// one vector at a time (a loop of 16, or __builtin_convertvector) it
/// converted every value with a scalar vcvtsi2ss, and the int8 GEMV ran at
/// half the speed of the float one.
template <int64_t Chunk>
__attribute__((always_inline)) inline void
widenInt8(float *__restrict F, const int8_t *__restrict Q, int64_t N) {
  if (N == Chunk) {
    for (int64_t I = 0; I < Chunk; ++I)
      F[I] = float(Q[I]);
  } else {
    for (int64_t I = 0; I < N; ++I)
      F[I] = float(Q[I]);
  }
}

/// The weight at P, as T.
template <class T, class WT>
__attribute__((always_inline)) inline T weightValue(const WT *P) {
  static_assert(kWeightsSupported<T, WT>);
  if constexpr (std::is_same_v<T, WT>) {
    return *P;
  } else if constexpr (kScaledWeights<WT>) {
    return float(*P); // unscaled: the GEMV multiplies by the group's scale
  } else {
    uint16_t H;
    std::memcpy(&H, P, sizeof(H));
    const uint32_t U = uint32_t(H) << 16;
    float F;
    std::memcpy(&F, &U, sizeof(F));
    return F;
  }
}

#if PK_GEMM_SHUFFLE
/// Sum = lanes [0, L/2) plus lanes [L/2, L) of V, I... = 0 .. L/2 - 1.
/// (Vectors by reference: by value they would change the ABI of a function
/// compiled without the level's registers, and g++ warns.)
template <class Half, int L, class Vec, int... I>
__attribute__((always_inline)) inline void
addHalves(const Vec &V, Half &Sum, std::integer_sequence<int, I...>) {
  const Half Lo = __builtin_shufflevector(V, V, I...);
  const Half Hi = __builtin_shufflevector(V, V, (I + L / 2)...);
  Sum = Lo + Hi;
}
#endif

/// The sum of a vector's lanes as a tree of halves (lo + hi, then again):
/// log2(lanes) shuffles and adds, where a lane-by-lane sum is a chain of
/// lanes - 1 dependent adds (which made an 8-row GEMV slower than its
/// multiply-adds).
template <class T, int VectorBytes, class Vec>
__attribute__((always_inline)) inline T sumLanes(const Vec &V) {
  constexpr int L = VectorBytes / int(sizeof(T));
  if constexpr (L == 1) {
    return V[0];
  } else {
#if PK_GEMM_SHUFFLE
    typedef T Half __attribute__((vector_size(VectorBytes / 2)));
    Half Sum;
    addHalves<Half, L>(V, Sum, std::make_integer_sequence<int, L / 2>{});
    return sumLanes<T, VectorBytes / 2>(Sum);
#else
    T Sum = 0;
    for (int I = 0; I < L; ++I)
      Sum += V[I];
    return Sum;
#endif
  }
}

/// The columns [From, To) of a GEMV tile whose weights in the next strip
/// (Cols further on) the tile prefetches as it goes: each column is one or
/// two 4 KiB pages, where the hardware's stream prefetch stops. The row
/// groups of a strip share its columns out (gemvColumnsStrip), so every
/// pass over the strip keeps memory busy: when only the first of M = 8's
/// two passes prefetched, memory idled during the second, and the float
/// GEMV read 2048 x 2048 weights at 2.7 G/s against 3.1 G/s shared out
/// (11008 x 4096: 2.5 against 3.0; Xeon model 167, avx512, one thread).
struct PrefetchColumns {
  int From = 0, To = 0;
};

/// Where tile column C's prefetches go: the next strip's column where
/// Pf asks for it, else its own (in L1 already: no branch in the loop).
template <class WT>
__attribute__((always_inline)) inline const WT *
prefetchBase(const WT *W, int64_t LdW, int Cols, int C, PrefetchColumns Pf) {
  return W + ((C >= Pf.From && C < Pf.To) ? Cols + C : C) * LdW;
}

/// Out[r * LdOut + c] = sum_k A[r * K + k] * W[c * LdW + k] for r < Rows,
/// c < Cols: a register tile of Rows x Cols dot products, B's columns
/// contiguous along k (nn.Linear's w[N, K]). Each vector of A is used for
/// Cols columns and each vector of W for Rows rows, so the loads stay below
/// the multiply-adds (one column at a time, four rows of A were loaded per
/// vector of weights, and M = 4 and 8 ran at 0.4-0.8x the read bandwidth).
/// int8 weights are converted and multiplied by their group's scale (Gs)
/// as they are loaded, the product as written (int8 x scale, then x a);
/// their groups are whole vectors (Gs.Group a multiple of the lanes).
template <class T, class WT, int VectorBytes, int Rows, int Cols>
__attribute__((always_inline)) PK_GEMM_CONTRACT inline void
gemvColumnsTile(int64_t K, const T *__restrict A, const WT *__restrict W,
                int64_t LdW, T *__restrict Out, int64_t LdOut,
                const GroupScales &Gs, PrefetchColumns Pf) {
  PK_GEMM_CONTRACT_HERE
  typedef T Vec __attribute__((vector_size(VectorBytes)));
  constexpr int L = VectorBytes / int(sizeof(T));
  Vec Acc[Rows][Cols];
#pragma GCC unroll 4
  for (int R = 0; R < Rows; ++R)
#pragma GCC unroll 4
    for (int C = 0; C < Cols; ++C)
      Acc[R][C] = Vec{};
  int64_t Kk = 0;
  // int8 weights: the scales' offset of the current group and where the
  // next begins; the chunk of each column widened to float (Wide, from k =
  // ChunkAt), read like float weights.
  [[maybe_unused]] int64_t GroupAt = 0, GroupEnd = Gs.Group;
  constexpr int64_t Chunk = kScaledWeights<WT> ? 64 : 1;
  [[maybe_unused]] alignas(64) T Wide[kScaledWeights<WT> ? Cols : 1][Chunk];
  [[maybe_unused]] int64_t ChunkAt = -Chunk;
  const WT *Ahead[Cols];
#pragma GCC unroll 4
  for (int C = 0; C < Cols; ++C)
    Ahead[C] = prefetchBase(W, LdW, Cols, C, Pf);
  for (; Kk + L <= K; Kk += L) {
    if constexpr (kScaledWeights<WT>) {
      if (Kk == GroupEnd) {
        GroupAt += Gs.KStride;
        GroupEnd += Gs.Group;
      }
      if (Kk - ChunkAt == Chunk) {
        ChunkAt = Kk;
#pragma GCC unroll 4
        for (int C = 0; C < Cols; ++C)
          widenInt8<Chunk>(Wide[C], W + C * LdW + Kk, std::min(Chunk, K - Kk));
      }
    }
    Vec Wv[Cols];
#pragma GCC unroll 4
    for (int C = 0; C < Cols; ++C) {
      if constexpr (kScaledWeights<WT>) {
        std::memcpy(&Wv[C], Wide[C] + (Kk - ChunkAt), sizeof(Vec));
        Wv[C] *= Gs.S[C * Gs.LdS + GroupAt];
      } else {
        loadWeights<T, VectorBytes>(Wv[C], W + C * LdW + Kk);
      }
      __builtin_prefetch(Ahead[C] + Kk);
    }
#pragma GCC unroll 4
    for (int R = 0; R < Rows; ++R) {
      Vec Av;
      std::memcpy(&Av, A + R * K + Kk, sizeof(Vec));
#pragma GCC unroll 4
      for (int C = 0; C < Cols; ++C)
        Acc[R][C] += Av * Wv[C];
    }
  }
#pragma GCC unroll 4
  for (int R = 0; R < Rows; ++R)
#pragma GCC unroll 4
    for (int C = 0; C < Cols; ++C) {
      T Sum = sumLanes<T, VectorBytes>(Acc[R][C]);
      for (int64_t Kt = Kk; Kt < K; ++Kt) {
        T Wt = weightValue<T>(W + C * LdW + Kt);
        if constexpr (kScaledWeights<WT>)
          Wt *= Gs.S[C * Gs.LdS + Kt / Gs.Group * Gs.KStride];
        Sum += A[R * K + Kt] * Wt;
      }
      Out[R * LdOut + C] = Sum;
    }
}

#if PK_GEMM_X86
// int8 weights on the x86 levels. g++ turns a widening of int8 to float
// written portably (a loop of one vector, __builtin_convertvector) into
// scalar code, and the chunk-at-a-time widening of gemvColumnsTile stores
// and reloads every weight, so the int8 GEMV ran at 2x the float one where
// it reads a quarter of the bytes; these tiles sign-extend and convert a
// vector in registers (vpmovsxbd, vcvtdq2ps). The tiles compute what
// gemvColumnsTile does, in the same order: each weight times its group's
// scale, then a multiply-add (AVX2's one-row kernel scales each group's
// sum instead). (Functions of their own, with the level's
// target: an intrinsic cannot be inlined into the level-independent
// templates, nor can g++ give a template a target that depends on it.)

/// The scalar rest of an int8 tile: Out = Sums plus the weights at Kk..K.
template <int Rows, int Cols>
__attribute__((always_inline)) PK_GEMM_CONTRACT inline void
finishInt8Tile(const float (&Sums)[Rows][Cols], int64_t Kk, int64_t K,
               const float *A, const int8_t *W, int64_t LdW, float *Out,
               int64_t LdOut, const GroupScales &Gs) {
  PK_GEMM_CONTRACT_HERE
  for (int R = 0; R < Rows; ++R)
    for (int C = 0; C < Cols; ++C) {
      float Sum = Sums[R][C];
      for (int64_t Kt = Kk; Kt < K; ++Kt)
        Sum += A[R * K + Kt] * (float(W[C * LdW + Kt]) *
                                Gs.S[C * Gs.LdS + Kt / Gs.Group * Gs.KStride]);
      Out[R * LdOut + C] = Sum;
    }
}

/// The 16 int8 values of Q as floats. (The zero-masked forms: the plain
/// ones start from _mm512_undefined_*(), which g++ 12 reports as
/// maybe-uninitialized under -Wall.)
__attribute__((target("avx512f"), always_inline)) inline __m512
widenInt8Avx512(__m128i Q) {
  return _mm512_maskz_cvtepi32_ps(__mmask16(-1),
                                  _mm512_maskz_cvtepi8_epi32(__mmask16(-1), Q));
}

/// gemvColumnsTile for int8 weights on AVX-512: Rows x Cols accumulators
/// of 16 lanes; the group's scales are broadcast once per group.
template <int Rows, int Cols>
__attribute__((target("avx512f"))) PK_GEMM_CONTRACT void
gemvInt8TileAvx512(int64_t K, const float *__restrict A,
                   const int8_t *__restrict W, int64_t LdW,
                   float *__restrict Out, int64_t LdOut, const GroupScales &Gs,
                   PrefetchColumns Pf) {
  constexpr int L = 16;
  __m512 Acc[Rows][Cols];
#pragma GCC unroll 8
  for (int R = 0; R < Rows; ++R)
#pragma GCC unroll 8
    for (int C = 0; C < Cols; ++C)
      Acc[R][C] = _mm512_setzero_ps();
  const int64_t VectorEnd = K - K % L;
  int64_t Kk = 0;
  const int8_t *Ahead[Cols];
#pragma GCC unroll 8
  for (int C = 0; C < Cols; ++C)
    Ahead[C] = prefetchBase(W, LdW, Cols, C, Pf);
  // Kk starts each group (a whole number of vectors); a Group of
  // INT64_MAX (one scale for all of k) is not added to.
  for (int64_t GroupAt = 0; Kk < VectorEnd; GroupAt += Gs.KStride) {
    __m512 Scale[Cols];
#pragma GCC unroll 8
    for (int C = 0; C < Cols; ++C)
      Scale[C] = _mm512_set1_ps(Gs.S[C * Gs.LdS + GroupAt]);
    const int64_t End = Gs.Group < VectorEnd - Kk ? Kk + Gs.Group : VectorEnd;
    for (; Kk < End; Kk += L) {
      __m512 Wv[Cols];
#pragma GCC unroll 8
      for (int C = 0; C < Cols; ++C) {
        const __m128i Q = _mm_loadu_si128(
            reinterpret_cast<const __m128i *>(W + C * LdW + Kk));
        Wv[C] = _mm512_mul_ps(widenInt8Avx512(Q), Scale[C]);
        __builtin_prefetch(Ahead[C] + Kk);
      }
#pragma GCC unroll 8
      for (int R = 0; R < Rows; ++R) {
        const __m512 Av = _mm512_loadu_ps(A + R * K + Kk);
#pragma GCC unroll 8
        for (int C = 0; C < Cols; ++C)
          Acc[R][C] = _mm512_fmadd_ps(Av, Wv[C], Acc[R][C]);
      }
    }
  }
  float Sums[Rows][Cols];
#pragma GCC unroll 8
  for (int R = 0; R < Rows; ++R)
#pragma GCC unroll 8
    for (int C = 0; C < Cols; ++C)
      Sums[R][C] = sumLanes<float, 64>(Acc[R][C]);
  finishInt8Tile<Rows, Cols>(Sums, Kk, K, A, W, LdW, Out, LdOut, Gs);
}

/// The 8 int8 values at P as floats. (A function of its own with the
/// level's target: clang does not compile a lambda for the target of the
/// function around it.)
__attribute__((target("avx2"), always_inline)) inline __m256
widenInt8Avx2(const int8_t *P) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
      _mm_loadl_epi64(reinterpret_cast<const __m128i *>(P))));
}

/// One row of A (a decode step's token) against Cols int8 columns on AVX2:
/// each group's products are summed unscaled, in two chains of alternate
/// vectors, and that sum times the group's scale is added once per group
/// (sum_g s_g (sum_k a_k w_k), where the tile below computes
/// sum_k a_k (w_k s_g): the same value up to rounding, within the
/// dot-product bound). Scaling every weight put a multiply beside each
/// conversion, and with one row each accumulator was a single dependent
/// chain; one prefetch per cache line of the next strip replaces one per
/// 8-byte vector. On a Zen 3 (one thread, M = 1, weights from DRAM):
/// 10.1-10.4 -> 11.0-11.6 GB/s of int8 weights, 1.07-1.12x.
template <int Cols>
__attribute__((target("avx2,fma"))) PK_GEMM_CONTRACT void
gemvInt8RowAvx2(int64_t K, const float *__restrict A,
                const int8_t *__restrict W, int64_t LdW, float *__restrict Out,
                int64_t LdOut, const GroupScales &Gs, PrefetchColumns Pf) {
  constexpr int L = 8;
  __m256 Acc[Cols];
#pragma GCC unroll 8
  for (int C = 0; C < Cols; ++C)
    Acc[C] = _mm256_setzero_ps();
  const int64_t VectorEnd = K - K % L;
  int64_t Kk = 0;
  const int8_t *Ahead[Cols];
#pragma GCC unroll 8
  for (int C = 0; C < Cols; ++C)
    Ahead[C] = prefetchBase(W, LdW, Cols, C, Pf);
  for (int64_t GroupAt = 0; Kk < VectorEnd; GroupAt += Gs.KStride) {
    const int64_t End = Gs.Group < VectorEnd - Kk ? Kk + Gs.Group : VectorEnd;
#pragma GCC unroll 8
    for (int C = 0; C < Cols; ++C)
      for (int64_t At = Kk; At < End; At += 64)
        __builtin_prefetch(Ahead[C] + At);
    __m256 Even[Cols], Odd[Cols];
#pragma GCC unroll 8
    for (int C = 0; C < Cols; ++C)
      Even[C] = Odd[C] = _mm256_setzero_ps();
    for (; Kk + 2 * L <= End; Kk += 2 * L) {
      const __m256 A0 = _mm256_loadu_ps(A + Kk), A1 = _mm256_loadu_ps(A + Kk + L);
#pragma GCC unroll 8
      for (int C = 0; C < Cols; ++C) {
        Even[C] = _mm256_fmadd_ps(A0, widenInt8Avx2(W + C * LdW + Kk), Even[C]);
        Odd[C] = _mm256_fmadd_ps(A1, widenInt8Avx2(W + C * LdW + Kk + L), Odd[C]);
      }
    }
    if (Kk < End) {
      const __m256 A0 = _mm256_loadu_ps(A + Kk);
#pragma GCC unroll 8
      for (int C = 0; C < Cols; ++C)
        Even[C] = _mm256_fmadd_ps(A0, widenInt8Avx2(W + C * LdW + Kk), Even[C]);
      Kk += L;
    }
#pragma GCC unroll 8
    for (int C = 0; C < Cols; ++C)
      Acc[C] = _mm256_fmadd_ps(_mm256_add_ps(Even[C], Odd[C]),
                               _mm256_set1_ps(Gs.S[C * Gs.LdS + GroupAt]),
                               Acc[C]);
  }
  float Sums[1][Cols];
#pragma GCC unroll 8
  for (int C = 0; C < Cols; ++C)
    Sums[0][C] = sumLanes<float, 32>(Acc[C]);
  finishInt8Tile<1, Cols>(Sums, Kk, K, A, W, LdW, Out, LdOut, Gs);
}

/// The same on AVX2 + FMA: 8 lanes.
template <int Rows, int Cols>
__attribute__((target("avx2,fma"))) PK_GEMM_CONTRACT void
gemvInt8TileAvx2(int64_t K, const float *__restrict A,
                 const int8_t *__restrict W, int64_t LdW, float *__restrict Out,
                 int64_t LdOut, const GroupScales &Gs, PrefetchColumns Pf) {
  constexpr int L = 8;
  __m256 Acc[Rows][Cols];
#pragma GCC unroll 8
  for (int R = 0; R < Rows; ++R)
#pragma GCC unroll 8
    for (int C = 0; C < Cols; ++C)
      Acc[R][C] = _mm256_setzero_ps();
  const int64_t VectorEnd = K - K % L;
  int64_t Kk = 0;
  const int8_t *Ahead[Cols];
#pragma GCC unroll 8
  for (int C = 0; C < Cols; ++C)
    Ahead[C] = prefetchBase(W, LdW, Cols, C, Pf);
  // Kk starts each group (a whole number of vectors); a Group of
  // INT64_MAX (one scale for all of k) is not added to.
  for (int64_t GroupAt = 0; Kk < VectorEnd; GroupAt += Gs.KStride) {
    __m256 Scale[Cols];
#pragma GCC unroll 8
    for (int C = 0; C < Cols; ++C)
      Scale[C] = _mm256_set1_ps(Gs.S[C * Gs.LdS + GroupAt]);
    const int64_t End = Gs.Group < VectorEnd - Kk ? Kk + Gs.Group : VectorEnd;
    for (; Kk < End; Kk += L) {
      __m256 Wv[Cols];
#pragma GCC unroll 8
      for (int C = 0; C < Cols; ++C) {
        const __m128i Q = _mm_loadl_epi64(
            reinterpret_cast<const __m128i *>(W + C * LdW + Kk));
        Wv[C] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(Q)),
                              Scale[C]);
        __builtin_prefetch(Ahead[C] + Kk);
      }
#pragma GCC unroll 8
      for (int R = 0; R < Rows; ++R) {
        const __m256 Av = _mm256_loadu_ps(A + R * K + Kk);
#pragma GCC unroll 8
        for (int C = 0; C < Cols; ++C)
          Acc[R][C] = _mm256_fmadd_ps(Av, Wv[C], Acc[R][C]);
      }
    }
  }
  float Sums[Rows][Cols];
#pragma GCC unroll 8
  for (int R = 0; R < Rows; ++R)
#pragma GCC unroll 8
    for (int C = 0; C < Cols; ++C)
      Sums[R][C] = sumLanes<float, 32>(Acc[R][C]);
  finishInt8Tile<Rows, Cols>(Sums, Kk, K, A, W, LdW, Out, LdOut, Gs);
}
#endif

/// One register tile of a strip: gemvColumnsTile, or on x86 for int8
/// weights the level's tile above.
template <class T, class WT, int VectorBytes, int Rows, int Cols>
__attribute__((always_inline)) PK_GEMM_CONTRACT inline void
gemvStripTile(int64_t K, const T *A, const WT *W, int64_t LdW, T *Out,
              int64_t LdOut, const GroupScales &Gs, PrefetchColumns Pf) {
#if PK_GEMM_X86
  if constexpr (kScaledWeights<WT> && VectorBytes == kAvx512Bytes) {
    gemvInt8TileAvx512<Rows, Cols>(K, A, W, LdW, Out, LdOut, Gs, Pf);
    return;
  } else if constexpr (kScaledWeights<WT> && VectorBytes == kAvx2Bytes) {
    if constexpr (Rows == 1)
      gemvInt8RowAvx2<Cols>(K, A, W, LdW, Out, LdOut, Gs, Pf);
    else
      gemvInt8TileAvx2<Rows, Cols>(K, A, W, LdW, Out, LdOut, Gs, Pf);
    return;
  }
#endif
  gemvColumnsTile<T, WT, VectorBytes, Rows, Cols>(K, A, W, LdW, Out, LdOut, Gs,
                                                  Pf);
}

/// Pass P of Passes over a strip of CT columns prefetches its share of the
/// next strip's columns.
inline PrefetchColumns prefetchShare(int P, int Passes, int CT) {
  return {P * CT / Passes, (P + 1) * CT / Passes};
}

/// Columns [J, J + CT) for all Rows rows: four (then two, then one) rows at
/// a time, so the tile's weights come from memory once and from L1 for the
/// other rows. (Not a lambda: g++ does not compile a lambda for the target
/// of the function around it.)
template <class T, class WT, int VectorBytes, int CT>
__attribute__((always_inline)) PK_GEMM_CONTRACT inline void
gemvColumnsStrip(int64_t K, int64_t Rows, const T *A, const WT *Wj, int64_t LdW,
                 T *Out, int64_t LdOut, const GroupScales &Gs) {
  const int Passes = int(Rows / 4 + Rows % 4 / 2 + Rows % 2);
  int P = 0;
  int64_t R = 0;
  for (; R + 4 <= Rows; R += 4, ++P)
    gemvStripTile<T, WT, VectorBytes, 4, CT>(K, A + R * K, Wj, LdW,
                                             Out + R * LdOut, LdOut, Gs,
                                             prefetchShare(P, Passes, CT));
  if (R + 2 <= Rows) {
    gemvStripTile<T, WT, VectorBytes, 2, CT>(K, A + R * K, Wj, LdW,
                                             Out + R * LdOut, LdOut, Gs,
                                             prefetchShare(P, Passes, CT));
    R += 2;
    ++P;
  }
  if (R < Rows)
    gemvStripTile<T, WT, VectorBytes, 1, CT>(K, A + R * K, Wj, LdW,
                                             Out + R * LdOut, LdOut, Gs,
                                             prefetchShare(P, Passes, CT));
}

/// All Rows x Cols outputs for B's columns contiguous along k, in strips of
/// ColTile columns. (Blocking K so that A's rows stay in L1 made no
/// difference at M = 4 to 32: A comes from L2 fast enough.)
template <class T, class WT, int VectorBytes, int ColTile>
__attribute__((always_inline)) PK_GEMM_CONTRACT inline void
gemvColumnsBody(int64_t K, int64_t Rows, const T *A, const WT *W, int64_t LdW,
                int64_t Cols, T *Out, int64_t LdOut, const GroupScales &Gs) {
  // The scales of columns J.. (only int8 weights have them).
  auto From = [&Gs](int64_t J) {
    GroupScales G = Gs;
    G.S += J * Gs.LdS;
    return G;
  };
  int64_t J = 0;
  for (; J + ColTile <= Cols; J += ColTile)
    gemvColumnsStrip<T, WT, VectorBytes, ColTile>(K, Rows, A, W + J * LdW, LdW,
                                                  Out + J, LdOut, From(J));
  for (; J < Cols; ++J)
    gemvColumnsStrip<T, WT, VectorBytes, 1>(K, Rows, A, W + J * LdW, LdW,
                                            Out + J, LdOut, From(J));
}

/// The same for B's rows contiguous along j (a [K, N] weight): Out[r *
/// LdOut + j] = sum_k A[r * K + k] * W[k * LdW + j].
template <class T, class WT, int VectorBytes, int Rows>
__attribute__((always_inline)) PK_GEMM_CONTRACT inline void
gemvRowsBody(int64_t K, const T *__restrict A, const WT *__restrict W,
             int64_t LdW, int64_t Cols, T *__restrict Out, int64_t LdOut) {
  PK_GEMM_CONTRACT_HERE
  static_assert(!kScaledWeights<WT>, "int8 weights: w[N, K] only");
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
      loadWeights<T, VectorBytes>(W0, W + Kk * LdW + J);
      loadWeights<T, VectorBytes>(W1, W + Kk * LdW + J + L);
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
        Sum += A[R * K + Kk] * weightValue<T>(W + Kk * LdW + J);
      Out[R * LdOut + J] = Sum;
    }
}

/// Rows of A at a time in the GEMV kernels: a W column (or block) read from
/// memory for the first group is in L1 for the next.
inline constexpr int kGemvRows = 4;

template <class T, class WT = T>
using GemvFn = void (*)(int64_t K, int64_t Rows, const T *A, const WT *W,
                        int64_t LdW, int64_t Cols, T *Out, int64_t LdOut,
                        const GroupScales &Gs);

/// All Rows rows for one layout and level: [K, N] weights kGemvRows rows
/// at a time; w[N, K] in register tiles of ColTile columns.
template <class T, class WT, int VectorBytes, bool ColumnsAlongK, int ColTile>
__attribute__((always_inline)) PK_GEMM_CONTRACT inline void
gemvBody(int64_t K, int64_t Rows, const T *A, const WT *W, int64_t LdW,
         int64_t Cols, T *Out, int64_t LdOut, const GroupScales &Gs) {
  if constexpr (ColumnsAlongK) {
    gemvColumnsBody<T, WT, VectorBytes, ColTile>(K, Rows, A, W, LdW, Cols, Out,
                                                 LdOut, Gs);
  } else {
    int64_t R = 0;
    for (; R + kGemvRows <= Rows; R += kGemvRows)
      gemvRowsBody<T, WT, VectorBytes, kGemvRows>(K, A + R * K, W, LdW, Cols,
                                                  Out + R * LdOut, LdOut);
    for (; R < Rows; ++R)
      gemvRowsBody<T, WT, VectorBytes, 1>(K, A + R * K, W, LdW, Cols,
                                          Out + R * LdOut, LdOut);
  }
}

// Columns of a w[N, K] GEMV tile: 4 rows x ColTile accumulators, ColTile
// weight vectors and one of A in the register file (32 vector registers on
// AVX-512, 16 below). AVX2 takes 3 (12 accumulators, 3 weights, A: 16
// registers): on a Zen 3 (2048 x 2048, weights from DRAM) 3 columns read
// float weights at 1.1-1.25x the speed of 2 for M = 1 to 16 (M = 8: 9.7-10
// against 8.3 GB/s) and bfloat16 weights at 1.05-1.4x, while 4 spill
// (0.7x at M = 4 and 8); the baseline keeps 2 (not measured).
inline constexpr int kAvx512GemvCols = 4, kAvx2GemvCols = 3,
                     kNarrowGemvCols = 2;

template <class T, class WT, bool ColumnsAlongK>
PK_GEMM_CONTRACT void
gemvBaseline(int64_t K, int64_t Rows, const T *A, const WT *W, int64_t LdW,
             int64_t Cols, T *Out, int64_t LdOut, const GroupScales &Gs) {
  gemvBody<T, WT, kBaselineBytes, ColumnsAlongK, kNarrowGemvCols>(
      K, Rows, A, W, LdW, Cols, Out, LdOut, Gs);
}
#if PK_GEMM_X86
template <class T, class WT, bool ColumnsAlongK>
__attribute__((target("avx2,fma"))) PK_GEMM_CONTRACT void
gemvAvx2(int64_t K, int64_t Rows, const T *A, const WT *W, int64_t LdW,
         int64_t Cols, T *Out, int64_t LdOut, const GroupScales &Gs) {
  gemvBody<T, WT, kAvx2Bytes, ColumnsAlongK, kAvx2GemvCols>(
      K, Rows, A, W, LdW, Cols, Out, LdOut, Gs);
}
template <class T, class WT, bool ColumnsAlongK>
__attribute__((target("avx512f"))) PK_GEMM_CONTRACT void
gemvAvx512(int64_t K, int64_t Rows, const T *A, const WT *W, int64_t LdW,
           int64_t Cols, T *Out, int64_t LdOut, const GroupScales &Gs) {
  gemvBody<T, WT, kAvx512Bytes, ColumnsAlongK, kAvx512GemvCols>(
      K, Rows, A, W, LdW, Cols, Out, LdOut, Gs);
}
#endif

/// The float lanes of level L's GEMV vectors: int8 weights' groups must be
/// whole vectors of them.
inline int64_t gemv_float_lanes(GemmIsa L) {
  return L == GemmIsa::Avx512 ? kAvx512Bytes / 4
         : L == GemmIsa::Avx2 ? kAvx2Bytes / 4
                              : kBaselineBytes / 4;
}

/// Level L's GEMV kernel for B's columns contiguous along k
/// (`ColumnsAlongK`) or its rows contiguous along j.
template <class T, class WT, bool ColumnsAlongK>
inline GemvFn<T, WT> gemvKernel(GemmIsa L) {
#if PK_GEMM_X86
  if (L == GemmIsa::Avx512)
    return &gemvAvx512<T, WT, ColumnsAlongK>;
  if (L == GemmIsa::Avx2)
    return &gemvAvx2<T, WT, ColumnsAlongK>;
#else
  (void)L;
#endif
  return &gemvBaseline<T, WT, ColumnsAlongK>;
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
