//===- pk/attention.h - Attention's sums in AVX-512 registers ---*- C++ -*-===//
//
// The CPU attention pkc writes (docs/design.md, "Attention") computes, per
// tile of query rows and block of 64 keys, two small products: the block's
// scores q . k (the tile's rows of q against the block's keys, transposed
// into pk_kt[d][s]) and the output rows' update e v (each row's weights of
// the block's keys against the keys' rows of v: e is exp(s - max), the
// softmax's numerator, divided by the row's sum at the end). Written as loops
// over arrays, g++ keeps two rows' sums in registers but loads each vector of
// keys or values once per row (a memory operand of each multiply-add): the
// loops waited on loads, not on the multiply-adds.
//
// attention_block_scores and attention_block_values compute the same sums
// four rows at a time in AVX-512 registers, each vector of keys or values
// loaded once for the four, where the CPU has AVX-512 (chosen at run time:
// a default build is compiled for SSE2). Each sum is the same chain of
// multiply-adds in the same order as the loops pkc writes around them (over
// d for a score, over the block's keys for an output element, a key of
// weight 0 skipped), fused or not as the kernel's pk::vm flavour says: the
// results are the same bits as those loops'. They return false where they
// have no such path (another type, another CPU), and the kernel's own loops
// run instead.
//
//===----------------------------------------------------------------------===//
#ifndef PK_ATTENTION_H
#define PK_ATTENTION_H

#include <pk/dispatch.h>
#include <pk/vmath.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) &&        \
    !defined(__CUDACC__)
#define PK_ATTENTION_AVX512 1
#include <immintrin.h>
#else
#define PK_ATTENTION_AVX512 0
#endif

// The unfused flavour's a * b + c must stay two roundings in the functions
// below, which g++ would otherwise contract into one.
#if defined(__clang__)
#define PK_ATTENTION_NO_CONTRACT
#define PK_ATTENTION_NO_CONTRACT_HERE _Pragma("clang fp contract(off)")
#else
#define PK_ATTENTION_NO_CONTRACT __attribute__((optimize("fp-contract=off")))
#define PK_ATTENTION_NO_CONTRACT_HERE
#endif

namespace pk::rt {

/// The width of a block of keys: the columns of pk_kt and of a row of
/// scores.
inline constexpr int64_t attention_block_keys = 64;

namespace attention_detail {

#if PK_ATTENTION_AVX512
/// A * B + C, one rounding (Fused) or two.
template <bool Fused>
__attribute__((target("avx512f"), always_inline))
PK_ATTENTION_NO_CONTRACT inline __m512
madd(__m512 A, __m512 B, __m512 C) {
  if constexpr (Fused)
    return _mm512_fmadd_ps(A, B, C);
  else
    return _mm512_add_ps(_mm512_mul_ps(A, B), C);
}

/// S[r][l] for MR rows from Q (rows D apart): 4 x MR vectors of sums across
/// d, each vector of pk_kt loaded once for the MR rows.
template <bool Fused, int MR>
__attribute__((target("avx512f"), always_inline))
PK_ATTENTION_NO_CONTRACT inline void
scoresRows(const float *Q, int64_t D, const float *Kt, float *S) {
  constexpr int64_t W = attention_block_keys;
  __m512 Acc[MR][4];
  for (int R = 0; R < MR; ++R)
    for (int C = 0; C < 4; ++C)
      Acc[R][C] = _mm512_setzero_ps();
  for (int64_t Dd = 0; Dd < D; ++Dd) {
    __m512 K[4];
    for (int C = 0; C < 4; ++C)
      K[C] = _mm512_loadu_ps(Kt + Dd * W + 16 * C);
    for (int R = 0; R < MR; ++R) {
      const __m512 Qv = _mm512_set1_ps(Q[R * D + Dd]);
      for (int C = 0; C < 4; ++C)
        Acc[R][C] = madd<Fused>(Qv, K[C], Acc[R][C]);
    }
  }
  for (int R = 0; R < MR; ++R)
    for (int C = 0; C < 4; ++C)
      _mm512_storeu_ps(S + R * W + 16 * C, Acc[R][C]);
}

template <bool Fused>
__attribute__((target("avx512f"), noinline))
PK_ATTENTION_NO_CONTRACT inline void
scoresAvx512(const float *Q, int64_t Rows, int64_t D, const float *Kt,
             float *S) {
  PK_ATTENTION_NO_CONTRACT_HERE
  constexpr int64_t W = attention_block_keys;
  int64_t R = 0;
  for (; R + 4 <= Rows; R += 4)
    scoresRows<Fused, 4>(Q + R * D, D, Kt, S + R * W);
  switch (Rows - R) {
  case 3:
    scoresRows<Fused, 3>(Q + R * D, D, Kt, S + R * W);
    break;
  case 2:
    scoresRows<Fused, 2>(Q + R * D, D, Kt, S + R * W);
    break;
  case 1:
    scoresRows<Fused, 1>(Q + R * D, D, Kt, S + R * W);
    break;
  default:
    break;
  }
}

/// Acc[r][j0 + j] for MR rows and NV vectors of 16 (the last one's lanes
/// Last): over the block's keys in order, each row's weight E[r][s] times
/// v's row s, where that weight is not 0.
template <bool Fused, int MR, int NV>
__attribute__((target("avx512f"), always_inline))
PK_ATTENTION_NO_CONTRACT inline void
valuesRows(const float *E, int64_t Keys, const float *V, int64_t LdV,
           float *Acc, int64_t J, __mmask16 Last) {
  constexpr int64_t W = attention_block_keys;
  auto Mask = [&](int C) { return C == NV - 1 ? Last : __mmask16(0xFFFF); };
  __m512 O[MR][NV];
  for (int R = 0; R < MR; ++R)
    for (int C = 0; C < NV; ++C)
      O[R][C] = _mm512_maskz_loadu_ps(Mask(C), Acc + R * J + 16 * C);
  for (int64_t S = 0; S < Keys; ++S) {
    float Ev[MR];
    bool All = true;
    for (int R = 0; R < MR; ++R) {
      Ev[R] = E[R * W + S];
      All &= Ev[R] != 0.0f;
    }
    __m512 Vv[NV];
    for (int C = 0; C < NV; ++C)
      Vv[C] = _mm512_maskz_loadu_ps(Mask(C), V + S * LdV + 16 * C);
    if (All) {
      for (int R = 0; R < MR; ++R) {
        const __m512 Eb = _mm512_set1_ps(Ev[R]);
        for (int C = 0; C < NV; ++C)
          O[R][C] = madd<Fused>(Eb, Vv[C], O[R][C]);
      }
    } else {
      for (int R = 0; R < MR; ++R) {
        if (Ev[R] == 0.0f)
          continue;
        const __m512 Eb = _mm512_set1_ps(Ev[R]);
        for (int C = 0; C < NV; ++C)
          O[R][C] = madd<Fused>(Eb, Vv[C], O[R][C]);
      }
    }
  }
  for (int R = 0; R < MR; ++R)
    for (int C = 0; C < NV; ++C)
      _mm512_mask_storeu_ps(Acc + R * J + 16 * C, Mask(C), O[R][C]);
}

/// MR rows as valuesRows, over all of J: 64 columns at a time,
/// then 16, then the rest under a mask.
template <bool Fused, int MR>
__attribute__((target("avx512f"), always_inline))
PK_ATTENTION_NO_CONTRACT inline void
valuesColumns(const float *E, int64_t Keys, const float *V, int64_t LdV,
              float *Acc, int64_t J) {
  const __mmask16 Full = 0xFFFF;
  int64_t J0 = 0;
  for (; J0 + 64 <= J; J0 += 64)
    valuesRows<Fused, MR, 4>(E, Keys, V + J0, LdV, Acc + J0, J, Full);
  for (; J0 + 16 <= J; J0 += 16)
    valuesRows<Fused, MR, 1>(E, Keys, V + J0, LdV, Acc + J0, J, Full);
  if (J0 < J)
    valuesRows<Fused, MR, 1>(E, Keys, V + J0, LdV, Acc + J0, J,
                             __mmask16((1u << (J - J0)) - 1));
}

template <bool Fused>
__attribute__((target("avx512f"), noinline))
PK_ATTENTION_NO_CONTRACT inline void
valuesAvx512(const float *E, int64_t Rows, int64_t Keys, const float *V,
             int64_t LdV, int64_t J, float *Acc) {
  PK_ATTENTION_NO_CONTRACT_HERE
  constexpr int64_t W = attention_block_keys;
  int64_t R = 0;
  for (; R + 4 <= Rows; R += 4)
    valuesColumns<Fused, 4>(E + R * W, Keys, V, LdV, Acc + R * J, J);
  switch (Rows - R) {
  case 3:
    valuesColumns<Fused, 3>(E + R * W, Keys, V, LdV, Acc + R * J, J);
    break;
  case 2:
    valuesColumns<Fused, 2>(E + R * W, Keys, V, LdV, Acc + R * J, J);
    break;
  case 1:
    valuesColumns<Fused, 1>(E + R * W, Keys, V, LdV, Acc + R * J, J);
    break;
  default:
    break;
  }
}

#endif

/// On unless PK_ATTENTION_BLOCKS=0 is in the environment.
inline std::atomic<bool> &blocksSwitch() {
  static std::atomic<bool> On{[] {
    const char *Env = std::getenv("PK_ATTENTION_BLOCKS");
    return !(Env && std::strcmp(Env, "0") == 0);
  }()};
  return On;
}

} // namespace attention_detail

/// Whether this CPU has the register paths below for floats.
inline bool attention_blocks_available() {
#if PK_ATTENTION_AVX512
  return cpu_has_avx512f();
#else
  return false;
#endif
}

/// Turns the register paths below on or off for the whole process (tests
/// and benchmarks compare the two: the same bits). They are on unless the
/// environment has PK_ATTENTION_BLOCKS=0.
inline void set_attention_blocks(bool On) {
  attention_detail::blocksSwitch().store(On, std::memory_order_relaxed);
}

/// Whether the kernels take the register paths now (available and on).
inline bool attention_blocks() {
  return attention_blocks_available() &&
         attention_detail::blocksSwitch().load(std::memory_order_relaxed);
}

/// The block's scores before the score's own statements: S[r * 64 + l] =
/// the sum over d < D of Q[r * D + d] * Kt[d * 64 + l], for r < Rows and
/// every l < 64, each a chain of VM::madd in the order of d from zero.
/// False (nothing written) where there is no fast path for T on this CPU.
template <class VM, class T>
inline bool attention_block_scores(const T *Q, int64_t Rows, int64_t D,
                                   const T *Kt, T *S) {
#if PK_ATTENTION_AVX512
  if constexpr (std::is_same_v<T, float>) {
    if (!attention_blocks())
      return false;
    attention_detail::scoresAvx512<std::is_base_of_v<vm::Fused, VM>>(Q, Rows, D,
                                                                     Kt, S);
    return true;
  }
#endif
  (void)Q, (void)Rows, (void)D, (void)Kt, (void)S;
  return false;
}

/// The output rows' update by the block's values: for r < Rows and j < J,
/// Acc[r * J + j] = VM::madd(E[r * 64 + s], V[s * LdV + j], Acc[r * J + j])
/// for each key s < Keys in order whose weight E[r * 64 + s] is not 0 (v's
/// row s is then not read for that row: eager multiplies it by 0, which an
/// inf or NaN there would turn into NaN). V is contiguous along j; LdV may
/// be 0. False (nothing written) where there is no fast path.
template <class VM, class T>
inline bool attention_block_values(const T *E, int64_t Rows, int64_t Keys,
                                   const T *V, int64_t LdV, int64_t J, T *Acc) {
#if PK_ATTENTION_AVX512
  if constexpr (std::is_same_v<T, float>) {
    if (!attention_blocks())
      return false;
    attention_detail::valuesAvx512<std::is_base_of_v<vm::Fused, VM>>(
        E, Rows, Keys, V, LdV, J, Acc);
    return true;
  }
#endif
  (void)E, (void)Rows, (void)Keys, (void)V, (void)LdV, (void)J, (void)Acc;
  return false;
}

} // namespace pk::rt

#undef PK_ATTENTION_NO_CONTRACT
#undef PK_ATTENTION_NO_CONTRACT_HERE

#endif // PK_ATTENTION_H
