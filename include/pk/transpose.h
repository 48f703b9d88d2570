//===- pk/transpose.h - A block of a matrix, transposed ---------*- C++ -*-===//
//
// The CPU attention pkc writes (docs/design.md, "Attention") transposes each
// block of up to 64 keys once per tile of queries, pk_kt[d][s] from the
// keys' rows k[s][d], so that q . k over d is a sum of whole vectors across
// the block's keys. Element by element, with a store 256 bytes from the last,
// that copy was an eighth of the kernel's time. transpose_block moves 16 x 16
// squares through AVX-512 registers where the CPU has AVX-512 (chosen at run
// time: a default build is compiled for SSE2) and the rest one element at a
// time. A copy: the values are the same bits on every path.
//
//===----------------------------------------------------------------------===//
#ifndef PK_TRANSPOSE_H
#define PK_TRANSPOSE_H

#include <pk/dispatch.h>

#include <cstdint>
#include <type_traits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) &&        \
    !defined(__CUDACC__)
#define PK_TRANSPOSE_AVX512 1
#include <immintrin.h>
#else
#define PK_TRANSPOSE_AVX512 0
#endif

namespace pk::rt {

namespace transpose_detail {

/// Dst[c * LdD + r] = Src[r * LdS + c] for rows [R0, Rows) and columns
/// [C0, Cols).
template <class T>
inline void transposeElements(const T *Src, int64_t LdS, int64_t R0,
                              int64_t Rows, int64_t C0, int64_t Cols, T *Dst,
                              int64_t LdD) {
  for (int64_t R = R0; R < Rows; ++R)
    for (int64_t C = C0; C < Cols; ++C)
      Dst[C * LdD + R] = Src[R * LdS + C];
}

#if PK_TRANSPOSE_AVX512
/// transpose_block for floats: each whole 16 x 16 square in 64 shuffles
/// (32-bit pairs, then 64-bit pairs, then 128-bit quarters), the edges
/// element by element.
__attribute__((target("avx512f"), noinline)) inline void
transposeFloatsAvx512(const float *Src, int64_t LdS, int64_t Rows, int64_t Cols,
                      float *Dst, int64_t LdD) {
  const int64_t Rows16 = Rows - Rows % 16, Cols16 = Cols - Cols % 16;
  // The zero-masked forms with every lane kept: the plain ones start from
  // _mm512_undefined_*(), which g++ 12 reports as maybe-uninitialized
  // under -Wall.
  const __mmask16 All = __mmask16(-1);
  const __mmask8 All8 = __mmask8(-1);
  for (int64_t R0 = 0; R0 < Rows16; R0 += 16)
    for (int64_t C0 = 0; C0 < Cols16; C0 += 16) {
      __m512 X[16], P[16], Q[16];
      for (int I = 0; I < 16; ++I)
        X[I] = _mm512_loadu_ps(Src + (R0 + I) * LdS + C0);
      // P[2i], P[2i+1]: rows 2i and 2i+1 interleaved, per 128-bit quarter
      // (a0 b0 a1 b1 and a2 b2 a3 b3).
      for (int I = 0; I < 16; I += 2) {
        P[I] = _mm512_maskz_unpacklo_ps(All, X[I], X[I + 1]);
        P[I + 1] = _mm512_maskz_unpackhi_ps(All, X[I], X[I + 1]);
      }
      // Q[4g + j]: in quarter l, column 4l + j of rows 4g..4g+3.
      for (int G = 0; G < 4; ++G) {
        const __m512d A = _mm512_castps_pd(P[4 * G]),
                      B = _mm512_castps_pd(P[4 * G + 1]),
                      C = _mm512_castps_pd(P[4 * G + 2]),
                      D = _mm512_castps_pd(P[4 * G + 3]);
        Q[4 * G] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(All8, A, C));
        Q[4 * G + 1] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(All8, A, C));
        Q[4 * G + 2] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(All8, B, D));
        Q[4 * G + 3] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(All8, B, D));
      }
      // Column 4l + j: quarter l of Q[j], Q[4 + j], Q[8 + j], Q[12 + j].
      for (int J = 0; J < 4; ++J) {
        const __m512 Even01 =
                         _mm512_maskz_shuffle_f32x4(All, Q[J], Q[4 + J], 0x88),
                     Odd01 =
                         _mm512_maskz_shuffle_f32x4(All, Q[J], Q[4 + J], 0xDD),
                     Even23 = _mm512_maskz_shuffle_f32x4(All, Q[8 + J],
                                                         Q[12 + J], 0x88),
                     Odd23 = _mm512_maskz_shuffle_f32x4(All, Q[8 + J],
                                                        Q[12 + J], 0xDD);
        float *Out = Dst + (C0 + J) * LdD + R0;
        _mm512_storeu_ps(Out,
                         _mm512_maskz_shuffle_f32x4(All, Even01, Even23, 0x88));
        _mm512_storeu_ps(Out + 4 * LdD,
                         _mm512_maskz_shuffle_f32x4(All, Odd01, Odd23, 0x88));
        _mm512_storeu_ps(Out + 8 * LdD,
                         _mm512_maskz_shuffle_f32x4(All, Even01, Even23, 0xDD));
        _mm512_storeu_ps(Out + 12 * LdD,
                         _mm512_maskz_shuffle_f32x4(All, Odd01, Odd23, 0xDD));
      }
    }
  transposeElements(Src, LdS, 0, Rows16, Cols16, Cols, Dst, LdD);
  transposeElements(Src, LdS, Rows16, Rows, int64_t(0), Cols, Dst, LdD);
}

#endif

} // namespace transpose_detail

/// Dst[c * LdD + r] = Src[r * LdS + c] for r < Rows and c < Cols: a block of
/// Rows rows (LdS elements apart; 0 repeats one row) transposed into Cols
/// rows of Dst, LdD elements apart. Src and Dst must not overlap.
template <class T>
inline void transpose_block(const T *Src, int64_t LdS, int64_t Rows,
                            int64_t Cols, T *Dst, int64_t LdD) {
#if PK_TRANSPOSE_AVX512
  if constexpr (std::is_same_v<T, float>)
    if (Rows >= 16 && Cols >= 16 && cpu_has_avx512f())
      return transpose_detail::transposeFloatsAvx512(Src, LdS, Rows, Cols, Dst,
                                                     LdD);
#endif
  transpose_detail::transposeElements(Src, LdS, int64_t(0), Rows, int64_t(0),
                                      Cols, Dst, LdD);
}

} // namespace pk::rt

#endif // PK_TRANSPOSE_H
