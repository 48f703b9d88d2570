//===- pk/int8_product.h - Products of int8 values in groups ----*- C++ -*-===//
//
// The product of llama2.c's runq (Q8_0 activations times Q8_0 weights), as a
// kernel writes it in NumPy terms (samples/llama/common.h, linear_q8):
//
//   dot[g, m, n] = sum over kk < GroupSize of a(g, m, kk) * b(g, n, kk)
//   y[m, n]      = sum over g, in order, of term(g, m, n, dot[g, m, n])
//
// with the dot products exact in int32 (wrapping as an int32 sum does) and
// the sum over the groups in float, one term after the other (runq's order).
// a is any int32 value the caller computes (its lambda fills one group of a
// row at a time, once per call, so quantising the activations costs once per
// call, not once per weight); b is int8 values in memory, read in place (the
// weights are never copied); term and the final store are the caller's
// lambdas, given a block of columns at a time:
//
//   A(g, m, len, int32_t *out)
//       out[kk] = a(g, m, kk) for kk < len (len is GroupSize); a loop of
//       the caller's, so that it vectorises where the caller's code is
//       known (a lambda called once per element kept the loop scalar)
//   Term(g, m, n0, len, const int32_t *dot, float *term)
//       term[l] for the columns n0 + l, l < len, from their dots
//   Store(m, n0, len, const float *sum)
//       the finished sums of row m, columns n0 + l
//
// The dot products run on the best level the CPU has, picked at run time
// (the build's flags do not matter):
//
//   level        when                                       per 64 weights
//   amx          avx512vnni's conditions, the CPU has       1/16 TDPBSSD
//                AMX-INT8 (set_gemm_amx, PK_GEMM_AMX),      (16 x 16 dots
//                at least 16 rows of a, the term known      at once)
//                (Int8TermScales), groups of a multiple of
//                4 contiguous along kk
//   avx512vnni   gemm_isa() is avx512 and the CPU has       1 vpdpbusd
//                AVX512-BW and -VNNI; every a fits int8
//   avx2         gemm_isa() is avx2 or better; every a      4 vpmaddwd
//                fits int16                                 (2 vpmaddubsw
//                                                           + 2 vpmaddwd
//                                                           with the term
//                                                           known, groups
//                                                           of 32k and a in
//                                                           [-127, 127])
//   portable     otherwise (and when b's groups are not     scalar loops
//                contiguous along kk)
//
// Every level computes the same dot products, and the terms and their sum
// with the same float operations in the same order, so the results are the
// same bits on every CPU and for every thread count (columns are split
// between threads; a sum is never split). vpdpbusd multiplies unsigned bytes by
// signed ones: the weights are made unsigned by adding 128 (b ^ 0x80) and
// 128 * sum(a) of the group is subtracted after, which is exact modulo 2^32
// like the sum itself.
//
//===----------------------------------------------------------------------===//
#ifndef PK_INT8_PRODUCT_H
#define PK_INT8_PRODUCT_H

#include <pk/dispatch.h>
#include <pk/gemm_amx.h>
#include <pk/gemm_kernels.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace pk::rt {

/// The extents of an int8 product in groups: `Groups` groups of `GroupSize`
/// along the summed axis, M rows of a, N rows of b.
struct Int8ProductShape {
  int64_t Groups, M, N, GroupSize;
};

/// b(g, n, kk) = Data[g * GroupStride + n * RowStride + kk * KStride].
struct Int8Rows {
  const int8_t *Data;
  int64_t GroupStride, RowStride, KStride;
};

/// One factor of a scaled term: the float Data[g * GroupStride + x *
/// Stride], where x is the row m of a (PerRow) or the column n of b.
struct Int8TermFactor {
  const float *Data = nullptr;
  int64_t GroupStride = 0, Stride = 0;
  bool PerRow = false;
};

/// What the Term lambda computes, when it is float(dot) times at most two
/// factors, multiplied in that order (runq's `cast<float>(dot) * ws * xs`:
/// a scale per weight row and group, one per activation row and group):
/// pkc passes it (Set) besides the lambda, and int8_product then computes
/// the terms itself, sixteen at a time, with the same operations (so the
/// same bits) as the lambda. The AMX level needs it.
struct Int8TermScales {
  bool Set = false;
  int Count = 0;
  Int8TermFactor Factors[2];
};

/// The levels of int8_product's dot products (see the top of this file).
enum class Int8Isa : int { Portable = 0, Avx2 = 1, Avx512Vnni = 2 };

inline const char *int8_isa_name(Int8Isa L) {
  switch (L) {
  case Int8Isa::Avx512Vnni:
    return "avx512vnni";
  case Int8Isa::Avx2:
    return "avx2";
  case Int8Isa::Portable:
    break;
  }
  return "portable";
}

/// The level int8_product runs now: gemm_isa() (PK_GEMM_ISA and
/// set_gemm_isa pin it) and, for avx512, the CPU's AVX512-VNNI.
inline Int8Isa int8_isa() {
#if PK_GEMM_X86
  const GemmIsa L = gemm_isa();
  if (L == GemmIsa::Avx512) {
    static const bool Vnni = [] {
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vnni");
    }();
    if (Vnni)
      return Int8Isa::Avx512Vnni;
  }
  if (L != GemmIsa::Baseline)
    return Int8Isa::Avx2;
#endif
  return Int8Isa::Portable;
}

namespace int8_detail {

/// The caller's lambdas behind plain function pointers, so that the
/// product itself is compiled once (PK_RUNTIME_LIBRARY) and only these
/// adapters per call.
struct AFill {
  /// A32[(m * Groups + g) * GroupSize + kk] = a(g, m, kk) for the rows m in
  /// [M0, M1) and every g and kk; Lo and Hi widened to the values' range.
  void (*Fn)(const void *Ctx, int64_t M0, int64_t M1, int64_t Groups,
             int64_t GroupSize, int32_t *A32, int32_t &Lo, int32_t &Hi);
  const void *Ctx;
};
struct TermFn {
  void (*Fn)(const void *Ctx, int64_t G, int64_t M, int64_t N0, int64_t Len,
             const int32_t *Dot, float *Term);
  const void *Ctx;
};
struct StoreFn {
  void (*Fn)(const void *Ctx, int64_t M, int64_t N0, int64_t Len,
             const float *Sum);
  const void *Ctx;
};

/// The columns one block of a level computes together (one vector lane
/// each once reduced).
inline constexpr int kBlockColumns = 16;

/// Dot[l] = the dot product of the GroupSize values at A with those of
/// Rows[l], exact modulo 2^32, for l < 16 (portable loops).
inline void dotsPortable(const int32_t *A, const int8_t *const *Rows,
                         int64_t KStride, int64_t GroupSize, int Count,
                         int32_t *Dot) {
  for (int L = 0; L < Count; ++L) {
    uint32_t S = 0;
    for (int64_t K = 0; K < GroupSize; ++K)
      S += uint32_t(A[K]) * uint32_t(int32_t(Rows[L][K * KStride]));
    Dot[L] = int32_t(S);
  }
}

#if PK_GEMM_X86
/// Sixteen vectors of 16 int32 partial sums, folded into two: lane 4c + j
/// of Half[0] and of Half[1] hold the sums of V[4c + j] over its 128-bit
/// lanes 0 and 1 (Half[0]) and 2 and 3 (Half[1]). Pairs are folded
/// lane-wise: the 32-bit halves of each 128-bit lane, then the 64-bit
/// halves, then 128-bit lanes across vectors. (The zero-masked forms: g++
/// 12 warns that the unmasked ones' undefined pass-through register may be
/// used uninitialised.)
__attribute__((target("avx512f"), always_inline)) inline void
foldHalves(__m512i V[16], __m512i Half[2]) {
  const __mmask16 All = 0xFFFF;
  const __mmask8 All64 = 0xFF;
  __m512i P[8], Q[4], R[2];
#pragma GCC unroll 8
  for (int I = 0; I < 8; ++I) // lane j of P[i]: {V[2i], V[2i+1]} x 2 halves
    P[I] = _mm512_add_epi32(
        _mm512_maskz_unpacklo_epi32(All, V[2 * I], V[2 * I + 1]),
        _mm512_maskz_unpackhi_epi32(All, V[2 * I], V[2 * I + 1]));
#pragma GCC unroll 4
  for (int I = 0; I < 4; ++I) // each 128-bit lane: V[4i .. 4i+3]'s sums
    Q[I] = _mm512_add_epi32(
        _mm512_maskz_unpacklo_epi64(All64, P[2 * I], P[2 * I + 1]),
        _mm512_maskz_unpackhi_epi64(All64, P[2 * I], P[2 * I + 1]));
#pragma GCC unroll 2
  for (int I = 0; I < 2; ++I) // 128-bit lanes 0+1 and 2+3 of two Q
    R[I] =
        _mm512_add_epi32(_mm512_maskz_shuffle_i32x4(All, Q[2 * I], Q[2 * I + 1],
                                                    _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_maskz_shuffle_i32x4(All, Q[2 * I], Q[2 * I + 1],
                                                    _MM_SHUFFLE(3, 1, 3, 1)));
  // R[i]: lanes 0+1 of V[8i..8i+3], 2+3 of them, lanes 0+1 of V[8i+4..],
  // 2+3 of them; gather each half in row order.
  Half[0] =
      _mm512_maskz_shuffle_i32x4(All, R[0], R[1], _MM_SHUFFLE(2, 0, 2, 0));
  Half[1] =
      _mm512_maskz_shuffle_i32x4(All, R[0], R[1], _MM_SHUFFLE(3, 1, 3, 1));
}

/// Sixteen vectors of 16 int32 partial sums -> one vector whose lane l is
/// the total of V[l].
__attribute__((target("avx512f"), always_inline)) inline __m512i
reduce16(__m512i V[16]) {
  __m512i Half[2];
  foldHalves(V, Half);
  return _mm512_add_epi32(Half[0], Half[1]);
}

/// The VNNI loops prefetch, for each of their 16 rows, the bytes the next
/// block of 16 rows will read at the same place (Ahead = 16 rows further),
/// into L2 (a block of 4096-byte rows is 64 KiB ahead, more than L1 holds).
/// Measured on stories110M's int8 decode (one thread, Xeon, AVX-512 VNNI):
/// 60 tok/s prefetching 512 bytes ahead in the row into L1, 87 into L2,
/// 100 the next block's into L2; rows of 768 bytes end before 512 bytes
/// ahead does much, and the next block's rows are where the memory stream
/// goes on. (4096 x 4096 weights: 12.0, 13.6, 13.7 GB/s.)

/// dotsPortable for 16 rows with AVX512-VNNI: A is the group's values as
/// int8, ASum128 = 128 * their sum.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) inline void
dotsVnni(const int8_t *A, int32_t ASum128, const int8_t *const *Rows,
         int64_t GroupSize, int64_t Ahead, int32_t *Dot) {
  __m512i Acc[16];
#pragma GCC unroll 16
  for (int L = 0; L < 16; ++L)
    Acc[L] = _mm512_setzero_si512();
  const __m512i Flip = _mm512_set1_epi8(int8_t(0x80));
  for (int64_t K = 0; K < GroupSize; K += 64) {
    const __mmask64 Mask = GroupSize - K >= 64
                               ? ~__mmask64(0)
                               : (__mmask64(1) << (GroupSize - K)) - 1;
    const __m512i Av = _mm512_maskz_loadu_epi8(Mask, A + K);
#pragma GCC unroll 16
    for (int L = 0; L < 16; ++L) {
      // b + 128 as unsigned bytes (masked-off bytes become 128, times the
      // zeros loaded for a there).
      const __m512i Bv =
          _mm512_xor_si512(_mm512_maskz_loadu_epi8(Mask, Rows[L] + K), Flip);
      Acc[L] = _mm512_dpbusd_epi32(Acc[L], Bv, Av);
      _mm_prefetch(reinterpret_cast<const char *>(Rows[L] + K) + Ahead,
                   _MM_HINT_T1);
    }
  }
  const __m512i S = _mm512_sub_epi32(reduce16(Acc), _mm512_set1_epi32(ASum128));
  _mm512_storeu_si512(Dot, S);
}

/// The dots of two adjacent groups of 32 (llama.cpp's Q8_0 group size)
/// stored one after the other, for 16 rows of b: one 64-byte vector of each
/// row holds both, and the halves of its sums are the two groups' dots
/// (Dots[0], Dots[1]; 128 * the groups' sums of a not yet subtracted).
/// With Prefetch, each line read is prefetched Ahead bytes further into L2.
/// With One (a last, odd group) only the first group's 32 bytes are read.
template <bool Prefetch>
__attribute__((target("avx512f,avx512bw,avx512vnni"),
               always_inline)) inline void
pairDots16Vnni(const int8_t *A, const int8_t *const *Rows, int64_t Ahead,
               bool One, __m512i Dots[2]) {
  const __m512i Flip = _mm512_set1_epi8(int8_t(0x80));
  const __mmask64 Mask = One ? __mmask64(0xFFFFFFFF) : ~__mmask64(0);
  const __m512i Av = _mm512_maskz_loadu_epi8(Mask, A);
  __m512i Acc[kBlockColumns];
#pragma GCC unroll 16
  for (int L = 0; L < kBlockColumns; ++L) {
    // (Past the group: 128 times the zeros loaded for a.)
    const __m512i Bv =
        _mm512_xor_si512(_mm512_maskz_loadu_epi8(Mask, Rows[L]), Flip);
    Acc[L] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), Bv, Av);
    if (Prefetch)
      _mm_prefetch(reinterpret_cast<const char *>(Rows[L]) + Ahead,
                   _MM_HINT_T1);
  }
  foldHalves(Acc, Dots);
}

/// dotsVnni for two adjacent groups of 32 stored one after the other
/// (pairDots16Vnni).
__attribute__((target("avx512f,avx512bw,avx512vnni"))) inline void
dotsVnniPair(const int8_t *A, const int32_t *ASum128, const int8_t *const *Rows,
             int64_t Ahead, int32_t *Dot0, int32_t *Dot1) {
  __m512i Half[2];
  pairDots16Vnni<true>(A, Rows, Ahead, false, Half);
  _mm512_storeu_si512(Dot0,
                      _mm512_sub_epi32(Half[0], _mm512_set1_epi32(ASum128[0])));
  _mm512_storeu_si512(Dot1,
                      _mm512_sub_epi32(Half[1], _mm512_set1_epi32(ASum128[1])));
}

/// Eight vectors of 8 int32 partial sums -> one vector whose lane l is the
/// total of Acc[l] (a vphaddd tree, then the 128-bit halves added).
__attribute__((target("avx2"), always_inline)) inline __m256i
reduce8Avx2(const __m256i Acc[8]) {
  const __m256i H01 = _mm256_hadd_epi32(Acc[0], Acc[1]);
  const __m256i H23 = _mm256_hadd_epi32(Acc[2], Acc[3]);
  const __m256i H45 = _mm256_hadd_epi32(Acc[4], Acc[5]);
  const __m256i H67 = _mm256_hadd_epi32(Acc[6], Acc[7]);
  const __m256i H0123 = _mm256_hadd_epi32(H01, H23);
  const __m256i H4567 = _mm256_hadd_epi32(H45, H67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(H0123, H4567, 0x20),
                          _mm256_permute2x128_si256(H0123, H4567, 0x31));
}

/// The dots of 8 rows with AVX2 for a group of a multiple of 16 (a as
/// int16, b sign-extended, vpmaddwd), left in a vector: lane l is the dot
/// of A with Rows[l]'s group.
__attribute__((target("avx2"), always_inline)) inline __m256i
dots8Avx2(const int16_t *A, const int8_t *const *Rows, int64_t GroupSize) {
  __m256i Acc[8];
#pragma GCC unroll 8
  for (int L = 0; L < 8; ++L)
    Acc[L] = _mm256_setzero_si256();
  for (int64_t K = 0; K < GroupSize; K += 16) {
    const __m256i Av =
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(A + K));
#pragma GCC unroll 8
    for (int L = 0; L < 8; ++L) {
      const __m256i Bv = _mm256_cvtepi8_epi16(
          _mm_loadu_si128(reinterpret_cast<const __m128i *>(Rows[L] + K)));
      Acc[L] = _mm256_add_epi32(Acc[L], _mm256_madd_epi16(Av, Bv));
    }
  }
  return reduce8Avx2(Acc);
}

/// dotsPortable for 8 rows with AVX2: A is the group's values as int16;
/// the last GroupSize % 16 run as scalar code.
__attribute__((target("avx2"))) inline void dotsAvx2(const int16_t *A,
                                                     const int8_t *const *Rows,
                                                     int64_t GroupSize,
                                                     int32_t *Dot) {
  const int64_t Whole = GroupSize / 16 * 16;
  _mm256_storeu_si256(reinterpret_cast<__m256i *>(Dot),
                      dots8Avx2(A, Rows, Whole));
  if (Whole < GroupSize)
    for (int L = 0; L < 8; ++L) {
      uint32_t T = uint32_t(Dot[L]);
      for (int64_t K = Whole; K < GroupSize; ++K)
        T += uint32_t(int32_t(A[K]) * int32_t(Rows[L][K]));
      Dot[L] = int32_t(T);
    }
}

/// The products of 32 bytes of a, all in [-127, 127], and of b, added in
/// fours into int32 lanes: vpmaddubsw multiplies |b| (unsigned, 128 for
/// -128) by a with b's sign, exact, and adds pairs into int16 without
/// saturating (2 x 128 x 127 < 2^15); vpmaddwd by ones widens the pairs.
/// Per 32 weights of a row, one multiply of bytes and one of words where
/// widening took two of words and two conversions.
__attribute__((target("avx2"), always_inline)) inline __m256i
bytesDotAvx2(__m256i Av, __m256i Bv) {
  return _mm256_madd_epi16(
      _mm256_maddubs_epi16(_mm256_abs_epi8(Bv), _mm256_sign_epi8(Av, Bv)),
      _mm256_set1_epi16(1));
}

/// dots8Avx2 for a whose values are all in [-127, 127] (A as int8) and a
/// group of a multiple of 32 (bytesDotAvx2).
__attribute__((target("avx2"), always_inline)) inline __m256i
dots8Avx2Bytes(const int8_t *A, const int8_t *const *Rows, int64_t GroupSize) {
  __m256i Acc[8];
#pragma GCC unroll 8
  for (int L = 0; L < 8; ++L)
    Acc[L] = _mm256_setzero_si256();
  for (int64_t K = 0; K < GroupSize; K += 32) {
    const __m256i Av =
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(A + K));
#pragma GCC unroll 8
    for (int L = 0; L < 8; ++L)
      Acc[L] = _mm256_add_epi32(
          Acc[L],
          bytesDotAvx2(Av, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(
                               Rows[L] + K))));
  }
  return reduce8Avx2(Acc);
}

/// An 8 x 8 matrix of floats, R[i] its row i, transposed in registers: R[j]
/// becomes its column j.
__attribute__((target("avx2"), always_inline)) inline void
transpose8Avx2(__m256 R[8]) {
  __m256 T[8];
#pragma GCC unroll 4
  for (int I = 0; I < 4; ++I) {
    T[2 * I] = _mm256_unpacklo_ps(R[2 * I], R[2 * I + 1]);
    T[2 * I + 1] = _mm256_unpackhi_ps(R[2 * I], R[2 * I + 1]);
  }
#pragma GCC unroll 2
  for (int I = 0; I < 2; ++I) {
    R[4 * I] = _mm256_shuffle_ps(T[4 * I], T[4 * I + 2], 0x44);
    R[4 * I + 1] = _mm256_shuffle_ps(T[4 * I], T[4 * I + 2], 0xEE);
    R[4 * I + 2] = _mm256_shuffle_ps(T[4 * I + 1], T[4 * I + 3], 0x44);
    R[4 * I + 3] = _mm256_shuffle_ps(T[4 * I + 1], T[4 * I + 3], 0xEE);
  }
#pragma GCC unroll 4
  for (int I = 0; I < 4; ++I) {
    T[I] = _mm256_permute2f128_ps(R[I], R[I + 4], 0x20);
    T[I + 4] = _mm256_permute2f128_ps(R[I], R[I + 4], 0x31);
  }
#pragma GCC unroll 8
  for (int I = 0; I < 8; ++I)
    R[I] = T[I];
}

/// Out[g * 16 + l] = the factor of column N0 + l (the last, Len - 1, for
/// l past it) and group g: the block's per-column factors, one vector of 8
/// per group and half block. A factor laid out along the groups
/// (GroupStride 1, llama2.c's scales [N, G]) is read 8 groups of 8 columns
/// at a time and transposed in registers; a scalar gather cost a quarter
/// of a decode product's time.
__attribute__((target("avx2"))) inline void
columnFactorsAvx2(const Int8TermFactor &Fa, int64_t Groups, int64_t N0, int Len,
                  float *Out) {
  int64_t G0 = 0;
  if (Fa.GroupStride == 1 && Len == kBlockColumns) {
    for (; G0 + 8 <= Groups; G0 += 8)
      for (int H = 0; H < kBlockColumns; H += 8) {
        __m256 R[8];
        // R[j]: column H + j's factors of groups G0 .. G0 + 7; transposed,
        // group G0 + l's factors of the 8 columns.
#pragma GCC unroll 8
        for (int L = 0; L < 8; ++L)
          R[L] = _mm256_loadu_ps(Fa.Data + G0 + (N0 + H + L) * Fa.Stride);
        transpose8Avx2(R);
#pragma GCC unroll 8
        for (int I = 0; I < 8; ++I)
          _mm256_storeu_ps(Out + (G0 + I) * kBlockColumns + H, R[I]);
      }
  }
  for (int L = 0; L < kBlockColumns; ++L) {
    const float *Col = Fa.Data + (N0 + std::min(L, Len - 1)) * Fa.Stride;
    for (int64_t G = G0; G < Groups; ++G)
      Out[G * kBlockColumns + L] = Col[G * Fa.GroupStride];
  }
}

/// int8Blocks on AVX2 when the term is known (Int8TermScales) and the
/// groups are a multiple of 16 long: 8 columns at a time over all the
/// groups, each group's 8 dots of a row left in a vector, converted,
/// scaled and added to the row's sums there: no call to the Term lambda, no
/// store of the dots. A8, when not null, is a as int8 in [-127, 127] (then
/// the groups are a multiple of 32: dots8Avx2Bytes), else A16 is a as int16.
///
/// The term is float(dot) * X0 * X1, Xf being factor f's value for the
/// column (from a buffer of the block's, ColF) times its value for the row
/// (RowF): one of the two is 1.0f, and so is the absent factor's, so the
/// products are exact and the term is the same operations as the lambda's;
/// it is rounded before the add (as in amxInt8Terms), and the sum over the
/// groups runs in order: the same bits as int8Blocks.
///
/// The next 8 columns' weights are prefetched, once per cache line, when
/// they take at most half of a 32 KiB L1: on a Zen 3 (one thread, weights
/// from DRAM, rows of 768 and 2048 bytes) 5.5-7.3 GB/s without, 8.6-9.7
/// with; with rows of 4096 bytes, 32 KiB ahead, 8.4-8.8 without and 6.3-7.9
/// with (the prefetch hints all fill L1 there, and evict the lines in use).
__attribute__((target("avx2"))) inline void
int8BlocksAvx2Scaled(const Int8ProductShape &S, const int16_t *A16,
                     const int8_t *A8, const Int8Rows &B,
                     const Int8TermScales &Sc, const StoreFn &Store,
                     int64_t Begin, int64_t End) {
  const int64_t K = S.Groups * S.GroupSize;
  const int64_t Gc = S.Groups * kBlockColumns;
  std::vector<float> ColF(size_t(2 * Gc), 1.0f),
      RowF(size_t(2 * S.Groups * S.M), 1.0f);
  for (int F = 0; F < Sc.Count; ++F) {
    const Int8TermFactor &Fa = Sc.Factors[F];
    if (Fa.PerRow)
      for (int64_t G = 0; G < S.Groups; ++G)
        for (int64_t M = 0; M < S.M; ++M)
          RowF[size_t((F * S.Groups + G) * S.M + M)] =
              Fa.Data[G * Fa.GroupStride + M * Fa.Stride];
  }
  std::vector<float> Sums(size_t(S.M * kBlockColumns));
  const bool Prefetch = 8 * B.RowStride <= 16384;
  const int64_t PrefetchEvery =
      B.GroupStride > 0 && B.GroupStride < 64 ? 64 / B.GroupStride : 1;
  for (int64_t Bl = Begin; Bl < End; ++Bl) {
    const int64_t N0 = Bl * kBlockColumns;
    const int Len = int(std::min<int64_t>(kBlockColumns, S.N - N0));
    for (int F = 0; F < Sc.Count; ++F)
      if (!Sc.Factors[F].PerRow)
        columnFactorsAvx2(Sc.Factors[F], S.Groups, N0, Len,
                          ColF.data() + F * Gc);
    std::fill(Sums.begin(), Sums.end(), 0.0f);
    for (int H = 0; H < kBlockColumns; H += 8) {
      // Rows past the last column repeat it: read, computed, not used.
      const int8_t *Rows[8];
      for (int L = 0; L < 8; ++L)
        Rows[L] = B.Data + (N0 + std::min(H + L, Len - 1)) * B.RowStride;
      for (int64_t G = 0; G < S.Groups; ++G) {
        if (Prefetch && G % PrefetchEvery == 0) {
#pragma GCC unroll 8
          for (int L = 0; L < 8; ++L)
            _mm_prefetch(reinterpret_cast<const char *>(Rows[L]) +
                             8 * B.RowStride,
                         _MM_HINT_T0);
        }
        const __m256 Col0 =
            _mm256_loadu_ps(ColF.data() + G * kBlockColumns + H);
        const __m256 Col1 =
            _mm256_loadu_ps(ColF.data() + Gc + G * kBlockColumns + H);
        const float *Row0 = RowF.data() + G * S.M;
        const float *Row1 = RowF.data() + (S.Groups + G) * S.M;
        for (int64_t M = 0; M < S.M; ++M) {
          const int64_t At = M * K + G * S.GroupSize;
          __m256 V =
              _mm256_cvtepi32_ps(A8 ? dots8Avx2Bytes(A8 + At, Rows, S.GroupSize)
                                    : dots8Avx2(A16 + At, Rows, S.GroupSize));
          V = _mm256_mul_ps(V, _mm256_mul_ps(Col0, _mm256_set1_ps(Row0[M])));
          V = _mm256_mul_ps(V, _mm256_mul_ps(Col1, _mm256_set1_ps(Row1[M])));
          __asm__("" : "+x"(V));
          float *Sum = Sums.data() + M * kBlockColumns + H;
          _mm256_storeu_ps(Sum, _mm256_add_ps(_mm256_loadu_ps(Sum), V));
        }
        for (const int8_t *&R : Rows)
          R += B.GroupStride;
      }
    }
    for (int64_t M = 0; M < S.M; ++M)
      Store.Fn(Store.Ctx, M, N0, Len, Sums.data() + M * kBlockColumns);
  }
}

/// Lane j = the dot of a's and Row's group j, for the Count (at most 8)
/// groups from A and Row on (GroupStride apart in Row, GroupSize in A), a
/// in [-127, 127] as int8 and groups of a multiple of 32 (bytesDotAvx2); 0
/// past them. Whole: Count is 8. Fixed, when not 0, is
/// both GroupSize and GroupStride (Q8_0's groups of 32, 64 or 128, one
/// after the other: the 16 addresses are then two registers and constant
/// offsets, where the general form spills).
template <bool Whole, int Fixed>
__attribute__((target("avx2"), always_inline)) inline __m256i
groupDotsAvx2Bytes(const int8_t *A, const int8_t *Row, int64_t GroupStride,
                   int64_t GroupSize, int64_t Count) {
  if (Fixed)
    GroupStride = GroupSize = Fixed;
  __m256i Acc[8];
#pragma GCC unroll 8
  for (int J = 0; J < 8; ++J)
    Acc[J] = _mm256_setzero_si256();
  for (int64_t K = 0; K < GroupSize; K += 32)
#pragma GCC unroll 8
    for (int J = 0; J < 8; ++J) {
      if (!Whole && J >= Count)
        break;
      const __m256i Av = _mm256_loadu_si256(
          reinterpret_cast<const __m256i *>(A + J * GroupSize + K));
      const __m256i Bv = _mm256_loadu_si256(
          reinterpret_cast<const __m256i *>(Row + J * GroupStride + K));
      Acc[J] = _mm256_add_epi32(Acc[J], bytesDotAvx2(Av, Bv));
    }
  if (!Whole && Count <= 4) {
    // Half the tree: lane j < 4 of the low half is group j's dot.
    const __m256i H = _mm256_hadd_epi32(_mm256_hadd_epi32(Acc[0], Acc[1]),
                                        _mm256_hadd_epi32(Acc[2], Acc[3]));
    return _mm256_castsi128_si256(_mm_add_epi32(
        _mm256_castsi256_si128(H), _mm256_extracti128_si256(H, 1)));
  }
  return reduce8Avx2(Acc);
}

/// How far ahead int8RowByRowAvx2 prefetches b, in bytes, where its rows
/// follow one another (Q8_0): measured on a Zen 3 (one thread, weights from
/// DRAM, groups of 64, paired A/B against the groups-outermost loop), with
/// none 0.86-1.29x, 1024 0.96-1.06x, 2048 1.0-1.14x, 3072 0.98-1.34x; the
/// hardware's prefetcher alone does not keep enough lines in flight for
/// one stream of rows of 2048 bytes and more.
inline constexpr int64_t kInt8RowByRowAhead = 2048;

/// The terms of groups [G0, G0 + Count) of a row of a (A) and one of b
/// (Row), the factors F[0][g] and F[1][g] (1.0f where the term has fewer):
/// stored at T + G0. float(dot) * F0 * F1, as in int8BlocksAvx2Scaled. With
/// Fixed, the bytes kInt8RowByRowAhead past the groups' are prefetched.
template <bool Whole, int Fixed>
__attribute__((target("avx2"), always_inline)) inline void
groupTermsAvx2(const int8_t *A, const int8_t *Row, int64_t GroupStride,
               int64_t GroupSize, const float *const F[2], int64_t G0,
               int64_t Count, float *T) {
  if (Fixed)
    for (int64_t L = 0; L < 8 * Fixed; L += 64)
      _mm_prefetch(reinterpret_cast<const char *>(Row + G0 * Fixed) +
                       kInt8RowByRowAhead + L,
                   _MM_HINT_T0);
  __m256 V = _mm256_cvtepi32_ps(groupDotsAvx2Bytes<Whole, Fixed>(
      A + G0 * GroupSize, Row + G0 * GroupStride, GroupStride, GroupSize,
      Count));
  // The lanes of the groups (a masked load reads nothing past them).
  const __m256i In = _mm256_cmpgt_epi32(
      _mm256_set1_epi32(int(Count)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
#pragma GCC unroll 2
  for (int I = 0; I < 2; ++I)
    V = _mm256_mul_ps(
        V, Whole ? _mm256_loadu_ps(F[I] + G0)
                 : _mm256_blendv_ps(_mm256_set1_ps(1.0f),
                                    _mm256_maskload_ps(F[I] + G0, In),
                                    _mm256_castsi256_ps(In)));
  _mm256_storeu_ps(T + G0, V);
}

/// groupTermsAvx2 over all the groups of a row of a and one of b: T[g] is
/// the term of group g.
template <int Fixed>
__attribute__((target("avx2"))) inline void
rowTermsAvx2(const int8_t *A, const int8_t *Row, int64_t GroupStride,
             int64_t GroupSize, int64_t Groups, const float *const F[2],
             float *T) {
  int64_t G0 = 0;
  for (; G0 + 8 <= Groups; G0 += 8)
    groupTermsAvx2<true, Fixed>(A, Row, GroupStride, GroupSize, F, G0, 8, T);
  if (G0 < Groups)
    groupTermsAvx2<false, Fixed>(A, Row, GroupStride, GroupSize, F, G0,
                                 Groups - G0, T);
}

/// int8BlocksAvx2Scaled for a few rows of a (a decode step) in int8: each
/// of b's rows is read start to end, one after the other, so that memory
/// sees one stream where the groups-outermost loop reads 8 rows side by
/// side, 32 or 64 bytes of each at a time (short interleaved streams, which
/// the hardware prefetcher does not follow as it follows one). The dots of
/// 8 groups of a row of b are reduced into one vector, whose factors are 8
/// consecutive floats of llama2.c's scales [N, G] (no transposition); the
/// terms of 8 columns are kept, transposed, and added group after group:
/// the same operations in the same order as int8BlocksAvx2Scaled, so the
/// same bits. On a Zen 3 (one thread, M = 1, runq's term, weights from
/// DRAM) 1.26-1.50x the groups-outermost loop with groups of 32, 1.0-1.56x
/// with groups of 64 (docs/design.md).
__attribute__((target("avx2"))) inline void
int8RowByRowAvx2(const Int8ProductShape &S, const int8_t *A8, const Int8Rows &B,
                 const Int8TermScales &Sc, const StoreFn &Store, int64_t Begin,
                 int64_t End) {
  const int64_t K = S.Groups * S.GroupSize;
  const int64_t Gp = (S.Groups + 7) / 8 * 8;
  // Terms[(m * 8 + c) * Gp + g]: the term of group g, row m and column c
  // of the 8 in turn.
  std::vector<float> Terms(size_t(S.M * 8 * Gp));
  std::vector<float> Sums(size_t(S.M * kBlockColumns));
  // The factors contiguous along the groups: a factor of b's rows laid out
  // so (llama2.c's [N, G]) read where it is, a factor of a's rows
  // (RowF[(f * M + m) * Gp + g]) or of b's rows laid out otherwise (ColF)
  // copied, and 1.0f for an absent one.
  std::vector<float> RowF(size_t(2 * S.M * Gp), 1.0f),
      ColF(size_t(2 * Gp), 1.0f);
  for (int F = 0; F < Sc.Count; ++F) {
    const Int8TermFactor &Fa = Sc.Factors[F];
    if (Fa.PerRow)
      for (int64_t M = 0; M < S.M; ++M)
        for (int64_t G = 0; G < S.Groups; ++G)
          RowF[size_t((F * S.M + M) * Gp + G)] =
              Fa.Data[G * Fa.GroupStride + M * Fa.Stride];
  }
  // Q8_0's groups (llama.cpp's 32, llama2.c's 64), one after the other.
  const int64_t Fixed =
      B.GroupStride == S.GroupSize &&
              (S.GroupSize == 32 || S.GroupSize == 64 || S.GroupSize == 128)
          ? S.GroupSize
          : 0;
  for (int64_t Bl = Begin; Bl < End; ++Bl) {
    const int64_t N0 = Bl * kBlockColumns;
    const int Len = int(std::min<int64_t>(kBlockColumns, S.N - N0));
    for (int H = 0; H < Len; H += 8) {
      for (int C = 0; C < 8; ++C) {
        // Columns past the last repeat it: computed, not stored.
        const int64_t N = N0 + std::min(H + C, Len - 1);
        const int8_t *Row = B.Data + N * B.RowStride;
        const float *ColFp[2] = {ColF.data(), ColF.data() + Gp};
        for (int F = 0; F < Sc.Count; ++F) {
          const Int8TermFactor &Fa = Sc.Factors[F];
          if (Fa.PerRow)
            continue;
          if (Fa.GroupStride == 1) {
            ColFp[F] = Fa.Data + N * Fa.Stride;
          } else {
            for (int64_t G = 0; G < S.Groups; ++G)
              ColF[size_t(F * Gp + G)] =
                  Fa.Data[G * Fa.GroupStride + N * Fa.Stride];
          }
        }
        for (int64_t M = 0; M < S.M; ++M) {
          const float *Fp[2];
          for (int F = 0; F < 2; ++F)
            Fp[F] = F < Sc.Count && Sc.Factors[F].PerRow
                        ? RowF.data() + (F * S.M + M) * Gp
                        : ColFp[F];
          const int8_t *Am = A8 + M * K;
          float *T = Terms.data() + (M * 8 + C) * Gp;
          switch (Fixed) {
          case 32:
            rowTermsAvx2<32>(Am, Row, 32, 32, S.Groups, Fp, T);
            break;
          case 64:
            rowTermsAvx2<64>(Am, Row, 64, 64, S.Groups, Fp, T);
            break;
          case 128:
            rowTermsAvx2<128>(Am, Row, 128, 128, S.Groups, Fp, T);
            break;
          default:
            rowTermsAvx2<0>(Am, Row, B.GroupStride, S.GroupSize, S.Groups, Fp,
                            T);
          }
        }
      }
      for (int64_t M = 0; M < S.M; ++M) {
        __m256 Sum = _mm256_setzero_ps();
        for (int64_t G0 = 0; G0 < S.Groups; G0 += 8) {
          __m256 R[8];
#pragma GCC unroll 8
          for (int C = 0; C < 8; ++C)
            R[C] = _mm256_loadu_ps(Terms.data() + (M * 8 + C) * Gp + G0);
          transpose8Avx2(R);
          const int64_t Count = std::min<int64_t>(8, S.Groups - G0);
#pragma GCC unroll 8
          for (int J = 0; J < 8; ++J) {
            if (J >= Count)
              break;
            // Rounded before the add, as in int8BlocksAvx2Scaled.
            __m256 X = R[J];
            __asm__("" : "+x"(X));
            Sum = _mm256_add_ps(Sum, X);
          }
        }
        _mm256_storeu_ps(Sums.data() + M * kBlockColumns + H, Sum);
      }
    }
    for (int64_t M = 0; M < S.M; ++M)
      Store.Fn(Store.Ctx, M, N0, Len, Sums.data() + M * kBlockColumns);
  }
}

/// The 16 dots of one group of a row of a (A, 64 * Steps int8 values) with
/// the same group of 16 rows of b, left in a vector (lane l: row l), 128 *
/// the group's sum of a not yet subtracted. With Ahead, each line read is
/// prefetched Ahead bytes further (the next block's rows) into L2.
template <int Steps, bool Prefetch>
__attribute__((target("avx512f,avx512bw,avx512vnni"),
               always_inline)) inline __m512i
groupDots16Vnni(const int8_t *A, const int8_t *const *Rows, int64_t Ahead) {
  const __m512i Flip = _mm512_set1_epi8(int8_t(0x80));
  __m512i Acc[kBlockColumns];
#pragma GCC unroll 16
  for (int L = 0; L < kBlockColumns; ++L)
    Acc[L] = _mm512_setzero_si512();
#pragma GCC unroll 2
  for (int S = 0; S < Steps; ++S) {
    const __m512i Av = _mm512_loadu_si512(A + 64 * S);
#pragma GCC unroll 16
    for (int L = 0; L < kBlockColumns; ++L) {
      const __m512i Bv =
          _mm512_xor_si512(_mm512_loadu_si512(Rows[L] + 64 * S), Flip);
      Acc[L] = _mm512_dpbusd_epi32(Acc[L], Bv, Av);
      if (Prefetch)
        _mm_prefetch(reinterpret_cast<const char *>(Rows[L] + 64 * S) + Ahead,
                     _MM_HINT_T1);
    }
  }
  return reduce16(Acc);
}

/// The factors of 16 columns for one group: lane l is Data[Offsets[l]]
/// (Offsets[0] for lanes 0-7, [1] for 8-15, 64-bit, so any stride fits).
__attribute__((target("avx512f"), always_inline)) inline __m512
gatherFactors16(const float *Data, const __m512i Offsets[2]) {
  // The masked forms: g++ 12 warns that the plain ones' undefined
  // pass-through registers may be used uninitialised.
  const __mmask8 All = 0xFF;
  const __m256 Lo =
      _mm512_mask_i64gather_ps(_mm256_setzero_ps(), All, Offsets[0], Data, 4);
  const __m256 Hi =
      _mm512_mask_i64gather_ps(_mm256_setzero_ps(), All, Offsets[1], Data, 4);
  const __m512d Low = _mm512_maskz_insertf64x4(All, _mm512_setzero_pd(),
                                               _mm256_castps_pd(Lo), 0);
  return _mm512_castpd_ps(
      _mm512_maskz_insertf64x4(All, Low, _mm256_castps_pd(Hi), 1));
}

/// int8Blocks on AVX512-VNNI when the term is known (Int8TermScales) and
/// the groups are one or two vectors long (Steps = 1, 2: 64 * Steps bytes)
/// or 32 bytes one after the other (Steps = 0: two groups a vector, as
/// dotsVnniPair): the same groups-outermost loop over 16 columns, whose
/// rows of b are read side by side (the next block's prefetched into L2, as
/// dotsVnni does), but each group's 16 dots become terms in registers,
/// their column factors gathered (one vector a group), and are added to the
/// row's sums there: no call of the Term lambda, no store and reload of the
/// dots. The same operations in the same order as the lambda's terms and
/// int8Blocks' sum, so the same bits. At M = 1 the call's cost per group
/// was a quarter of the memory stream's (Xeon, groups of 64: 20 GB/s of
/// weights from L2 with the lambda, 32 without), and the stream from DRAM
/// went 1.10-1.16x faster; at M = 4 and 8, where every row called the
/// lambda, 1.7x and 2.1x (docs/design.md, "Q8_0 times Q8_0").
template <int Steps>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) inline void
int8BlocksVnniScaled(const Int8ProductShape &S, const int8_t *A8,
                     const int32_t *ASum128, const Int8Rows &B,
                     const Int8TermScales &Sc, const StoreFn &Store,
                     int64_t Begin, int64_t End) {
  constexpr int64_t PerStep = Steps == 0 ? 2 : 1; // groups a step
  const int64_t K = S.Groups * S.GroupSize;
  std::vector<float> Sums(size_t(S.M * kBlockColumns));
  const int8_t *Rows[kBlockColumns];
  const int64_t Ahead = kBlockColumns * B.RowStride; // the next block's rows
  for (int64_t Bl = Begin; Bl < End; ++Bl) {
    const int64_t N0 = Bl * kBlockColumns;
    const int Len = int(std::min<int64_t>(kBlockColumns, S.N - N0));
    // Rows past the last column repeat it: read, computed, not used.
    for (int L = 0; L < kBlockColumns; ++L)
      Rows[L] = B.Data + (N0 + std::min(L, Len - 1)) * B.RowStride;
    // Where each column's factors start (past the last: the last's).
    __m512i Offsets[2][2];
    for (int F = 0; F < Sc.Count; ++F) {
      alignas(64) int64_t At[kBlockColumns];
      for (int L = 0; L < kBlockColumns; ++L)
        At[L] = (N0 + std::min(L, Len - 1)) * Sc.Factors[F].Stride;
      Offsets[F][0] = _mm512_load_si512(At);
      Offsets[F][1] = _mm512_load_si512(At + 8);
    }
    std::fill(Sums.begin(), Sums.end(), 0.0f);
    for (int64_t G = 0; G < S.Groups; G += PerStep) {
      const int Here = int(std::min<int64_t>(PerStep, S.Groups - G));
      // Column[h][f]: factor f of the step's group h for the 16 columns.
      __m512 Column[PerStep][2];
      for (int H = 0; H < Here; ++H)
        for (int F = 0; F < 2; ++F) {
          Column[H][F] = _mm512_set1_ps(1.0f);
          if (F < Sc.Count && !Sc.Factors[F].PerRow)
            Column[H][F] = gatherFactors16(
                Sc.Factors[F].Data + (G + H) * Sc.Factors[F].GroupStride,
                Offsets[F]);
        }
      for (int64_t M = 0; M < S.M; ++M) {
        const int8_t *A = A8 + M * K + G * S.GroupSize;
        // The first row's pass over the block's rows prefetches the next.
        __m512i Dots[2];
        if constexpr (Steps == 0) {
          if (M == 0)
            pairDots16Vnni<true>(A, Rows, Ahead, Here == 1, Dots);
          else
            pairDots16Vnni<false>(A, Rows, Ahead, Here == 1, Dots);
        } else {
          Dots[0] = M == 0 ? groupDots16Vnni<Steps, true>(A, Rows, Ahead)
                           : groupDots16Vnni<Steps, false>(A, Rows, Ahead);
        }
        float *Sum = Sums.data() + M * kBlockColumns;
        for (int H = 0; H < Here; ++H) {
          const int64_t Gh = G + H;
          __m512 V = _mm512_maskz_cvtepi32_ps(
              __mmask16(0xFFFF),
              _mm512_sub_epi32(Dots[H],
                               _mm512_set1_epi32(ASum128[M * S.Groups + Gh])));
          // float(dot) times the factors in their order (an absent one is
          // 1.0f in the lambda: no multiply, the same bits).
#pragma GCC unroll 2
          for (int F = 0; F < 2; ++F) {
            if (F >= Sc.Count)
              break;
            const Int8TermFactor &Fa = Sc.Factors[F];
            V = _mm512_mul_ps(
                V, Fa.PerRow ? _mm512_set1_ps(
                                   Fa.Data[Gh * Fa.GroupStride + M * Fa.Stride])
                             : Column[H][F]);
          }
          // Rounded before the add, as the lambda's term is (no
          // contraction).
          __asm__("" : "+v"(V));
          _mm512_storeu_ps(Sum, _mm512_add_ps(_mm512_loadu_ps(Sum), V));
        }
      }
      for (const int8_t *&R : Rows)
        R += Here * B.GroupStride;
    }
    for (int64_t M = 0; M < S.M; ++M)
      Store.Fn(Store.Ctx, M, N0, Len, Sums.data() + M * kBlockColumns);
  }
}
#endif

/// The product for every row and a range [Begin, End) of column blocks, on
/// the calling thread. Groups run outermost in a block, so that each group
/// of the block's rows is read from memory once and from L1 by every row of
/// a.
inline void int8Blocks(const Int8ProductShape &S, Int8Isa Isa,
                       const int32_t *A32, const int8_t *A8, const int16_t *A16,
                       const int32_t *ASum128, const Int8Rows &B,
                       const TermFn &Term, const StoreFn &Store, int64_t Begin,
                       int64_t End) {
  const int64_t K = S.Groups * S.GroupSize;
  const int8_t *Rows[kBlockColumns];
  alignas(64) int32_t Dot[kBlockColumns];
  alignas(64) float T[kBlockColumns];
  std::vector<float> Sums(size_t(S.M * kBlockColumns));
  const int64_t Ahead = kBlockColumns * B.RowStride; // the next block's rows
  for (int64_t Bl = Begin; Bl < End; ++Bl) {
    const int64_t N0 = Bl * kBlockColumns;
    const int Len = int(std::min<int64_t>(kBlockColumns, S.N - N0));
    std::fill(Sums.begin(), Sums.end(), 0.0f);
    // Rows past the last column repeat it: read, computed, not used.
    for (int L = 0; L < kBlockColumns; ++L)
      Rows[L] = B.Data + (N0 + std::min(L, Len - 1)) * B.RowStride;
    // Groups of 32 stored one after the other go two at a time (VNNI).
    const bool Pairs =
        Isa == Int8Isa::Avx512Vnni && S.GroupSize == 32 && B.GroupStride == 32;
    int64_t G = 0;
    for (; Pairs && G + 2 <= S.Groups; G += 2) {
#if PK_GEMM_X86
      for (int64_t M = 0; M < S.M; ++M) {
        alignas(64) int32_t Dot1[kBlockColumns];
        dotsVnniPair(A8 + M * K + G * 32, ASum128 + M * S.Groups + G, Rows,
                     Ahead, Dot, Dot1);
        float *Sum = Sums.data() + M * kBlockColumns;
        Term.Fn(Term.Ctx, G, M, N0, Len, Dot, T);
        for (int L = 0; L < Len; ++L)
          Sum[L] += T[L];
        Term.Fn(Term.Ctx, G + 1, M, N0, Len, Dot1, T);
        for (int L = 0; L < Len; ++L)
          Sum[L] += T[L];
      }
#endif
      for (const int8_t *&R : Rows)
        R += 2 * B.GroupStride;
    }
    for (; G < S.Groups; ++G) {
      for (int64_t M = 0; M < S.M; ++M) {
        const int64_t At = M * K + G * S.GroupSize;
        switch (Isa) {
#if PK_GEMM_X86
        case Int8Isa::Avx512Vnni:
          dotsVnni(A8 + At, ASum128[M * S.Groups + G], Rows, S.GroupSize, Ahead,
                   Dot);
          break;
        case Int8Isa::Avx2:
          dotsAvx2(A16 + At, Rows, S.GroupSize, Dot);
          if (Len > 8)
            dotsAvx2(A16 + At, Rows + 8, S.GroupSize, Dot + 8);
          break;
#endif
        default:
          dotsPortable(A32 + At, Rows, B.KStride, S.GroupSize, Len, Dot);
          break;
        }
        Term.Fn(Term.Ctx, G, M, N0, Len, Dot, T);
        float *Sum = Sums.data() + M * kBlockColumns;
        for (int L = 0; L < Len; ++L)
          Sum[L] += T[L];
      }
      for (const int8_t *&R : Rows)
        R += B.GroupStride;
    }
    for (int64_t M = 0; M < S.M; ++M)
      Store.Fn(Store.Ctx, M, N0, Len, Sums.data() + M * kBlockColumns);
  }
  (void)A8;
  (void)A16;
  (void)ASum128;
}

/// Products run on AMX so far (int8_amx_products()).
inline std::atomic<int64_t> Int8AmxProducts{0};

/// Products with at least this many rows of a run on AMX (where it is on and
/// the term is known, Int8TermScales); fewer rows run the VNNI dots, which
/// read each weight once per row.
inline constexpr int64_t kInt8AmxMinRows = 16;

/// The w-rows and x-rows one AMX micro-kernel call covers.
inline constexpr int64_t kInt8AmxRows = 32;

/// The values of k one AMX step covers for groups of GroupSize: the largest
/// multiple of 4 that divides it, at most 64 (a tile row); 0 when none does
/// (the AMX level then does not run).
inline int64_t int8AmxDepth(int64_t GroupSize) {
  for (int64_t Kc = 64; Kc >= 4; Kc -= 4)
    if (GroupSize % Kc == 0)
      return Kc;
  return 0;
}

#if PK_GEMM_AMX
/// Acc[n][m] += the terms of one group from its dots Cs[n][m], 32 w-rows n
/// by 32 x-rows m: float(dot) times the factors in order, a factor being a
/// value per column n (Col[f][n], the same along a row of Cs) or per row m
/// (Row[f][m], a vector along it). Separate multiplies and add, no fused
/// multiply-add: the same operations, so the same bits, as the Term lambda
/// and the sum of the other levels.
template <int Count, bool Row0, bool Row1>
__attribute__((target("avx512f"))) inline void
amxInt8Terms(const int32_t *Cs, const float (*Col)[kInt8AmxRows],
             const float (*Row)[kInt8AmxRows], float *Acc) {
  for (int N = 0; N < kInt8AmxRows; ++N)
#pragma GCC unroll 2
    for (int H = 0; H < kInt8AmxRows; H += 16) {
      // (The zero-masked form: g++ 12 warns about the unmasked one, as in
      // foldHalves.)
      __m512 V = _mm512_maskz_cvtepi32_ps(__mmask16(0xFFFF),
                                          _mm512_loadu_si512(Cs + N * 32 + H));
      if constexpr (Count >= 1)
        V = _mm512_mul_ps(V, Row0 ? _mm512_loadu_ps(Row[0] + H)
                                  : _mm512_set1_ps(Col[0][N]));
      if constexpr (Count >= 2)
        V = _mm512_mul_ps(V, Row1 ? _mm512_loadu_ps(Row[1] + H)
                                  : _mm512_set1_ps(Col[1][N]));
      // The term rounded before the add: g++ contracts a vector multiply
      // and add into an FMA (-ffp-contract=fast, its default) unless the
      // product goes through something it cannot see into.
      __asm__("" : "+v"(V));
      float *A = Acc + N * 32 + H;
      _mm512_storeu_ps(A, _mm512_add_ps(_mm512_loadu_ps(A), V));
    }
}

using AmxInt8TermsFn = void (*)(const int32_t *, const float (*)[kInt8AmxRows],
                                const float (*)[kInt8AmxRows], float *);

/// amxInt8Terms for the factors' count and kinds.
inline AmxInt8TermsFn amxInt8TermsFor(const Int8TermScales &Sc) {
  const bool R0 = Sc.Count >= 1 && Sc.Factors[0].PerRow;
  const bool R1 = Sc.Count >= 2 && Sc.Factors[1].PerRow;
  switch (Sc.Count) {
  case 0:
    return amxInt8Terms<0, false, false>;
  case 1:
    return R0 ? amxInt8Terms<1, true, false> : amxInt8Terms<1, false, false>;
  default:
    return R0 ? (R1 ? amxInt8Terms<2, true, true>
                    : amxInt8Terms<2, true, false>)
              : (R1 ? amxInt8Terms<2, false, true>
                    : amxInt8Terms<2, false, false>);
  }
}

/// The product on AMX tiles: a (int8, M x K) packed once into tiles of 16
/// rows, quad q of k of row t at [q][t] (4 bytes); the columns (rows of b,
/// read in place) split between the threads in steps of 32. For each 32 x
/// 32 block and each group: the group's dots on tiles (TDPBSSD, exact
/// int32), its terms added to the block's sums in group order, then the
/// Store lambda on each row of the block. The last step of b under 32 rows
/// is copied into zero-padded scratch; a's rows past M are zeros.
inline void int8Amx(const Int8ProductShape &S, bool Threads, const int8_t *A8,
                    const Int8Rows &B, const Int8TermScales &Sc,
                    const StoreFn &Store) {
  constexpr int64_t R = kInt8AmxRows, TileRows = gemm_detail::kAmxTileRows;
  const int64_t GS = S.GroupSize, K = S.Groups * GS, Kc = int8AmxDepth(GS);
  const int64_t Chunks = GS / Kc;
  const int64_t RowsPad = (S.M + R - 1) / R * R;
  std::vector<int8_t> Xp(size_t(RowsPad * K), int8_t(0));
#pragma omp parallel for if (Threads)
  for (int64_t Row = 0; Row < S.M; ++Row) {
    int8_t *Tile =
        Xp.data() + Row / TileRows * TileRows * K + Row % TileRows * 4;
    const int8_t *Src = A8 + Row * K;
    for (int64_t Q = 0; Q < K / 4; ++Q)
      std::memcpy(Tile + Q * 64, Src + 4 * Q, 4);
  }
  const AmxInt8TermsFn Terms = amxInt8TermsFor(Sc);
  Int8AmxProducts.fetch_add(1, std::memory_order_relaxed);
  const int64_t Steps = (S.N + R - 1) / R;
  auto Run = [&](int64_t P0, int64_t P1) {
    if (P0 >= P1)
      return;
    alignas(64) int32_t Cs[R * R];
    alignas(64) float Acc[R * R], Sum[R], Col[2][R], RowF[2][R];
    std::vector<int8_t> Edge(S.N % R ? size_t(R * K) : 0);
    gemm_detail::amxInt8Begin(Kc);
    for (int64_t P = P0; P < P1; ++P) {
      const int64_t N0 = P * R, Nj = std::min(R, S.N - N0);
      const int8_t *W = B.Data + N0 * B.RowStride;
      int64_t Ld = B.RowStride, Gs = B.GroupStride;
      if (Nj < R) {
        std::fill(Edge.begin(), Edge.end(), int8_t(0));
        for (int64_t N = 0; N < Nj; ++N)
          for (int64_t G = 0; G < S.Groups; ++G)
            std::memcpy(Edge.data() + N * K + G * GS,
                        W + N * B.RowStride + G * B.GroupStride, size_t(GS));
        W = Edge.data(), Ld = K, Gs = GS;
      }
      for (int64_t M0 = 0; M0 < S.M; M0 += R) {
        const int64_t Mi = std::min(R, S.M - M0);
        const int8_t *X0 = Xp.data() + M0 * K;
        std::fill(Acc, Acc + R * R, 0.0f);
        for (int64_t G = 0; G < S.Groups; ++G) {
          gemm_detail::amxInt8Micro(Chunks, Kc, W + G * Gs, Ld,
                                    X0 + G * GS * TileRows,
                                    X0 + TileRows * K + G * GS * TileRows, Cs);
          for (int F = 0; F < Sc.Count; ++F) {
            const Int8TermFactor &Fa = Sc.Factors[F];
            const float *D = Fa.Data + G * Fa.GroupStride;
            if (Fa.PerRow)
              for (int64_t I = 0; I < R; ++I)
                RowF[F][I] = D[std::min(M0 + I, S.M - 1) * Fa.Stride];
            else
              for (int64_t I = 0; I < R; ++I)
                Col[F][I] = D[std::min(N0 + I, S.N - 1) * Fa.Stride];
          }
          Terms(Cs, Col, RowF, Acc);
        }
        for (int64_t M = 0; M < Mi; ++M) {
          for (int64_t N = 0; N < Nj; ++N)
            Sum[N] = Acc[N * R + M];
          Store.Fn(Store.Ctx, M0 + M, N0, Nj, Sum);
        }
      }
    }
    gemm_detail::amxEnd();
  };
  if (Threads && Steps > 1) {
#pragma omp parallel
    {
#ifdef _OPENMP
      const int64_t T0 = omp_get_thread_num(), Tn = omp_get_num_threads();
      Run(Steps * T0 / Tn, Steps * (T0 + 1) / Tn);
#else
      Run(0, Steps);
#endif
    }
  } else {
    Run(0, Steps);
  }
}
#endif

/// Whether the product runs on AMX: the CPU has AMX-INT8, the AMX switch is
/// on (set_gemm_amx, PK_GEMM_AMX) and the level is avx512vnni (every a fits
/// int8), the term is known, enough rows, b contiguous along k and groups
/// of a multiple of 4.
inline bool int8UsesAmx(const Int8ProductShape &S, Int8Isa Isa,
                        const Int8Rows &B, const Int8TermScales &Sc) {
#if PK_GEMM_AMX
  return Isa == Int8Isa::Avx512Vnni && Sc.Set && S.M >= kInt8AmxMinRows &&
         B.KStride == 1 && int8AmxDepth(S.GroupSize) > 0 &&
         amx_int8_supported() &&
         gemm_detail::gemm_amx_slot().load(std::memory_order_relaxed) != 0;
#else
  (void)S, (void)Isa, (void)B, (void)Sc;
  return false;
#endif
}

/// Up to this many rows of a, int8RowByRowAvx2 (measured on a Zen 3, see
/// there): with groups of 32 up to 8 rows; with longer groups the
/// groups-outermost loop reduces half as often and is the faster one from 2
/// rows on.
inline int64_t int8RowByRowRows(int64_t GroupSize) {
  return GroupSize == 32 ? 8 : 1;
}

/// The A lambda's adapter (AFill): compiled once per CPU level
/// (PK_CPU_DISPATCH, <pk/dispatch.h>) and flattened, as gemm's fillFrom, so
/// that the lambda's loop is inlined into each clone and vectorised for its
/// level. pkc's A is the activations' quantisation (a division, round() and
/// a saturating cast per element), ~10% of an int8 decode step while its
/// lambda was called once per element: g++ then kept the loop scalar (the
/// captured pointers and strides were reloaded on every element, which the
/// vectoriser takes for gathers; docs/design.md). The values' range is one
/// more pass over the rows just written, still in L1 at decode.
template <class FillA>
PK_CPU_DISPATCH __attribute__((flatten)) void
int8FillFrom(const void *Ctx, int64_t M0, int64_t M1, int64_t Groups,
             int64_t GroupSize, int32_t *A32, int32_t &Lo, int32_t &Hi) {
  const FillA &A = *static_cast<const FillA *>(Ctx);
  for (int64_t M = M0; M < M1; ++M)
    for (int64_t G = 0; G < Groups; ++G)
      A(G, M, GroupSize, A32 + (M * Groups + G) * GroupSize);
  const int32_t *Rows = A32 + M0 * Groups * GroupSize;
  const int64_t Count = (M1 - M0) * Groups * GroupSize;
  int32_t L = Lo, H = Hi;
#pragma omp simd reduction(min : L) reduction(max : H)
  for (int64_t I = 0; I < Count; ++I) {
    L = std::min(L, Rows[I]);
    H = std::max(H, Rows[I]);
  }
  Lo = L;
  Hi = H;
}

/// The product, through the adapters: a's values are computed once (A32),
/// then narrowed for the level when every one fits (else the portable
/// loops run); column blocks are split between the threads in contiguous
/// ranges.
inline void int8ProductCore(const Int8ProductShape &S, bool Threads,
                            const AFill &A, const Int8Rows &B,
                            const TermFn &Term, const StoreFn &Store,
                            const Int8TermScales &Scales) {
  if (S.M <= 0 || S.N <= 0)
    return;
  const int64_t K = S.Groups * S.GroupSize;
  std::vector<int32_t> A32(size_t(S.M * K));
  int32_t Lo = 0, Hi = 0;
  // The rows of a and their range. The A lambda only reads (pkc's computes
  // a value from loads), so threads may fill rows side by side: at prefill
  // rows the quantisation is a large share of the call (at a few rows,
  // entering a parallel region would cost more than it saves).
#ifdef _OPENMP
  if (Threads && S.M >= kInt8AmxMinRows) {
#pragma omp parallel
    {
      const int64_t T0 = omp_get_thread_num(), Tn = omp_get_num_threads();
      int32_t L = 0, H = 0;
      A.Fn(A.Ctx, S.M * T0 / Tn, S.M * (T0 + 1) / Tn, S.Groups, S.GroupSize,
           A32.data(), L, H);
#pragma omp critical(pk_int8_range)
      {
        Lo = std::min(Lo, L);
        Hi = std::max(Hi, H);
      }
    }
  } else {
    A.Fn(A.Ctx, 0, S.M, S.Groups, S.GroupSize, A32.data(), Lo, Hi);
  }
#else
  A.Fn(A.Ctx, 0, S.M, S.Groups, S.GroupSize, A32.data(), Lo, Hi);
#endif
  Int8Isa Isa =
      B.KStride == 1 && S.GroupSize > 0 ? int8_isa() : Int8Isa::Portable;
  if (Isa == Int8Isa::Avx512Vnni && (Lo < -128 || Hi > 127))
    Isa = Int8Isa::Avx2;
  if (Isa == Int8Isa::Avx2 && (Lo < -32768 || Hi > 32767))
    Isa = Int8Isa::Portable;
  std::vector<int8_t> A8;
  std::vector<int16_t> A16;
  std::vector<int32_t> ASum128;
  if (Isa == Int8Isa::Avx512Vnni) {
    A8.resize(A32.size());
#pragma omp simd
    for (size_t I = 0; I < A32.size(); ++I)
      A8[I] = int8_t(A32[I]);
#if PK_GEMM_AMX
    if (int8UsesAmx(S, Isa, B, Scales))
      return int8Amx(S, Threads, A8.data(), B, Scales, Store);
#endif
    ASum128.resize(size_t(S.M * S.Groups));
    for (int64_t I = 0; I < S.M * S.Groups; ++I) {
      uint32_t Total = 0;
      for (int64_t K0 = 0; K0 < S.GroupSize; ++K0)
        Total += uint32_t(A32[size_t(I * S.GroupSize + K0)]);
      ASum128[size_t(I)] = int32_t(Total * 128u);
    }
  } else if (Isa == Int8Isa::Avx2) {
    A16.assign(A32.begin(), A32.end());
  }
  const bool Bytes = Isa == Int8Isa::Avx2 && Scales.Set &&
                     S.GroupSize % 32 == 0 && Lo >= -127 && Hi <= 127;
  if (Bytes)
    A8.assign(A32.begin(), A32.end());
  const int64_t Blocks = (S.N + kBlockColumns - 1) / kBlockColumns;
  // AVX2 with the term known and groups of whole vectors: the terms in
  // registers (int8BlocksAvx2Scaled).
  const bool Avx2Scaled =
      Isa == Int8Isa::Avx2 && Scales.Set && S.GroupSize % 16 == 0;
  // AVX512-VNNI with the term known and groups of one or two vectors (or
  // pairs of groups of 32 in one): the terms in registers
  // (int8BlocksVnniScaled).
  const bool VnniScaled = Isa == Int8Isa::Avx512Vnni && Scales.Set &&
                          (S.GroupSize == 64 || S.GroupSize == 128 ||
                           (S.GroupSize == 32 && B.GroupStride == 32));
  auto Run = [&](int64_t Begin, int64_t End) {
#if PK_GEMM_X86
    if (Avx2Scaled && Bytes && S.M <= int8RowByRowRows(S.GroupSize))
      return int8RowByRowAvx2(S, A8.data(), B, Scales, Store, Begin, End);
    if (Avx2Scaled)
      return int8BlocksAvx2Scaled(S, A16.data(), Bytes ? A8.data() : nullptr, B,
                                  Scales, Store, Begin, End);
    if (VnniScaled && S.GroupSize == 32)
      return int8BlocksVnniScaled<0>(S, A8.data(), ASum128.data(), B, Scales,
                                     Store, Begin, End);
    if (VnniScaled && S.GroupSize == 64)
      return int8BlocksVnniScaled<1>(S, A8.data(), ASum128.data(), B, Scales,
                                     Store, Begin, End);
    if (VnniScaled)
      return int8BlocksVnniScaled<2>(S, A8.data(), ASum128.data(), B, Scales,
                                     Store, Begin, End);
#endif
    int8Blocks(S, Isa, A32.data(), A8.data(), A16.data(), ASum128.data(), B,
               Term, Store, Begin, End);
  };
  (void)VnniScaled;
  (void)Avx2Scaled;
  if (Threads && Blocks > 1) {
#pragma omp parallel
    {
#ifdef _OPENMP
      const int64_t T0 = omp_get_thread_num(), Tn = omp_get_num_threads();
      Run(Blocks * T0 / Tn, Blocks * (T0 + 1) / Tn);
#else
      Run(0, Blocks);
#endif
    }
  } else {
    Run(0, Blocks);
  }
}

} // namespace int8_detail

/// How many int8 products have run on AMX in this process (tests check
/// with it that the path they mean to test ran).
inline int64_t int8_amx_products() {
  return int8_detail::Int8AmxProducts.load(std::memory_order_relaxed);
}

/// y[m, n] = sum over g of Term(g, m, n, the int32 dot of a(g, m, .) and
/// b(g, n, .)), as described at the top of this file. `Threads`: split the
/// columns between OpenMP threads. `Scales`, when set, says what T computes
/// (Int8TermScales).
template <class FillA, class Term, class Store>
void int8_product(const Int8ProductShape &S, bool Threads, const FillA &A,
                  const Int8Rows &B, const Term &T, const Store &St,
                  const Int8TermScales &Scales = {}) {
  using namespace int8_detail;
  const AFill Fill{&int8FillFrom<FillA>, &A};
  const TermFn Terms{[](const void *Ctx, int64_t G, int64_t M, int64_t N0,
                        int64_t Len, const int32_t *Dot, float *Out) {
                       (*static_cast<const Term *>(Ctx))(G, M, N0, Len, Dot,
                                                         Out);
                     },
                     &T};
  const StoreFn Stores{[](const void *Ctx, int64_t M, int64_t N0, int64_t Len,
                          const float *Sum) {
                         (*static_cast<const Store *>(Ctx))(M, N0, Len, Sum);
                       },
                       &St};
  int8ProductCore(S, Threads, Fill, B, Terms, Stores, Scales);
}

} // namespace pk::rt

#endif // PK_INT8_PRODUCT_H
