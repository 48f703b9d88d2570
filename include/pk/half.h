//===- pk/half.h - 16-bit floating-point storage types ----------*- C++ -*-===//
//
// pk::half (IEEE 754 binary16) and pk::bfloat16 (the top half of a binary32):
// storage types. Refs of them hold 16-bit elements; kernels compute in float
// (reading an element gives a float, a store rounds the float to 16 bits).
//
// Portable: the types are a uint16_t, the conversions are integer bit
// operations on the float's representation, so they give the same bits with
// any compiler and on any host, with no dependence on _Float16 or on the FPU's
// rounding mode. Both directions round to nearest, ties to even; infinities
// and NaNs are kept (a NaN stays a NaN, made quiet, with the top bits of its
// payload); floats too large for half become infinities; half subnormals are
// produced and read exactly. The functions are branch-free (selects), so a
// conversion loop vectorises under `#pragma omp simd`.
//
// The generated CPU code converts with pk::to_float() and the constructors;
// the generated CUDA code uses cuda_fp16.h / cuda_bf16.h on the same bits
// (the types are layout-compatible with __half and __nv_bfloat16).
//
//===----------------------------------------------------------------------===//
#ifndef PK_HALF_H
#define PK_HALF_H

#include <cstdint>
#include <cstring>
#include <type_traits>

// The conversions run inside generated `omp simd` loops, which vectorise only
// if every call in them is inlined; g++ stops inlining in large kernels.
#if defined(__GNUC__) || defined(__clang__)
#define PK_FP16_INLINE inline __attribute__((always_inline))
#else
#define PK_FP16_INLINE inline
#endif

namespace pk {

namespace fp16 {

// __builtin_bit_cast (g++ 11, clang 9) keeps the conversion loops free of
// memory temporaries, which g++ would not vectorise; memcpy elsewhere.
PK_FP16_INLINE uint32_t floatBits(float F) {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_bit_cast(uint32_t, F);
#else
  uint32_t U;
  std::memcpy(&U, &F, sizeof U);
  return U;
#endif
}

PK_FP16_INLINE float bitsFloat(uint32_t U) {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_bit_cast(float, U);
#else
  float F;
  std::memcpy(&F, &U, sizeof F);
  return F;
#endif
}

/// C ? A : B with masks instead of a branch: g++ will not if-convert a
/// ternary whose arms contain float operations (they could trap), so the
/// selects are integer arithmetic and the loops vectorise.
PK_FP16_INLINE uint32_t select(bool C, uint32_t A, uint32_t B) {
  const uint32_t M = 0u - static_cast<uint32_t>(C);
  return (A & M) | (B & ~M);
}

/// binary16 bits -> float (exact: every half is a float).
PK_FP16_INLINE float halfToFloat(uint16_t H) {
  const uint32_t Sign = static_cast<uint32_t>(H & 0x8000u) << 16;
  const uint32_t Mag = H & 0x7fffu; // exponent and mantissa
  // Normal numbers: move the 10 mantissa bits to the top of float's 23 and
  // rebias the exponent by 127 - 15.
  const uint32_t Normal = (Mag << 13) + ((127u - 15u) << 23);
  // Infinity and NaN (exponent 31): float's exponent 255, mantissa kept.
  const uint32_t Special = (Mag << 13) | 0x7f800000u;
  // Zero and subnormals: the value is Mag * 2^-24. Integer operations only
  // (g++ treats an int -> float conversion or a float multiply as possibly
  // trapping and then will not vectorise a loop that also has a select,
  // e.g. a max): normalise Mag so that its leading one is bit 10, by shifts
  // of 8, 4, 2, 1 and 1 (binary search), then the value is 1.f *
  // 2^(-14 - Shift).
  uint32_t M = Mag, Shift = 1;
  Shift += select(M < 0x4u, 8u, 0u);
  M = select(M < 0x4u, M << 8, M);
  Shift += select(M < 0x40u, 4u, 0u);
  M = select(M < 0x40u, M << 4, M);
  Shift += select(M < 0x100u, 2u, 0u);
  M = select(M < 0x100u, M << 2, M);
  Shift += select(M < 0x200u, 1u, 0u);
  M = select(M < 0x200u, M << 1, M);
  const uint32_t Sub =
      select(Mag == 0, 0u, ((113u - Shift) << 23) | ((M << 1 & 0x3ffu) << 13));
  const uint32_t Exp = Mag >> 10;
  const uint32_t R = select(Exp == 0, Sub, select(Exp == 31, Special, Normal));
  return bitsFloat(Sign | R);
}

/// float -> binary16 bits, rounding to nearest even.
PK_FP16_INLINE uint16_t floatToHalf(float F) {
  const uint32_t U = floatBits(F);
  const uint32_t Sign = (U >> 16) & 0x8000u;
  const uint32_t A = U & 0x7fffffffu;
  // Normal results (|F| >= 2^-14): drop 13 mantissa bits, rounding to
  // nearest even (add just under half an ulp, plus one if the kept lowest
  // bit is odd), then rebias the exponent. A carry out of the mantissa bumps
  // the exponent, which is the right result, up to infinity (0x7c00) for
  // |F| >= 65520.
  const uint32_t Odd = (A >> 13) & 1u;
  const uint32_t Normal = (A + 0xfffu + Odd - ((127u - 15u) << 23)) >> 13;
  // Subnormal results (|F| < 2^-14): adding 0.5 (2^-1) puts the value's
  // 2^-24 units in the low mantissa bits of the sum, and the float addition
  // rounds them to nearest even for us. 2^-14 itself rounds up to 0x0400,
  // the smallest normal, which is also right.
  const uint32_t Sub = floatBits(bitsFloat(A) + 0.5f) - 0x3f000000u;
  // Overflow (|F| >= 65520 rounds to infinity; also float infinity).
  const uint32_t Inf = 0x7c00u;
  // NaN: quiet, with the top 10 mantissa bits.
  const uint32_t Nan = 0x7e00u | ((A >> 13) & 0x3ffu);
  uint32_t R = select(A < 0x38800000u, Sub, Normal);
  R = select(A >= 0x477ff000u, Inf, R);
  R = select(A > 0x7f800000u, Nan, R);
  return static_cast<uint16_t>(Sign | R);
}

/// bfloat16 bits -> float (exact).
PK_FP16_INLINE float bfloat16ToFloat(uint16_t H) {
  return bitsFloat(static_cast<uint32_t>(H) << 16);
}

/// float -> bfloat16 bits, rounding to nearest even. Overflow reaches
/// infinity through the carry (as for half above).
PK_FP16_INLINE uint16_t floatToBfloat16(float F) {
  const uint32_t U = floatBits(F);
  const uint32_t Rounded = (U + 0x7fffu + ((U >> 16) & 1u)) >> 16;
  // NaN: quiet, with the top 7 mantissa bits (not rounded: rounding could
  // carry a NaN into infinity).
  const uint32_t Nan = (U >> 16) | 0x0040u;
  return static_cast<uint16_t>(
      select((U & 0x7fffffffu) > 0x7f800000u, Nan, Rounded));
}

/// A float rounded to the nearest half or bfloat16 (what cast<pk::half>
/// computes: the value stays a float).
PK_FP16_INLINE float roundToHalf(float F) {
  return halfToFloat(floatToHalf(F));
}
PK_FP16_INLINE float roundToBfloat16(float F) {
  return bfloat16ToFloat(floatToBfloat16(F));
}

} // namespace fp16

/// IEEE 754 binary16: 1 sign, 5 exponent, 10 mantissa bits. Converts to
/// float implicitly (exactly) and from float explicitly (rounding to
/// nearest even), so `pk::half h(x); float f = h;` both work and no float
/// is rounded by accident.
class half {
public:
  half() = default;
  explicit half(float F) : Bits(fp16::floatToHalf(F)) {}
  operator float() const { return fp16::halfToFloat(Bits); }
  static half fromBits(uint16_t B) {
    half H;
    H.Bits = B;
    return H;
  }
  uint16_t bits() const { return Bits; }

private:
  uint16_t Bits;
};

/// bfloat16: float's 8-bit exponent, 7 mantissa bits. Same interface as
/// pk::half.
class bfloat16 {
public:
  bfloat16() = default;
  explicit bfloat16(float F) : Bits(fp16::floatToBfloat16(F)) {}
  operator float() const { return fp16::bfloat16ToFloat(Bits); }
  static bfloat16 fromBits(uint16_t B) {
    bfloat16 H;
    H.Bits = B;
    return H;
  }
  uint16_t bits() const { return Bits; }

private:
  uint16_t Bits;
};

static_assert(sizeof(half) == 2 && alignof(half) == 2);
static_assert(sizeof(bfloat16) == 2 && alignof(bfloat16) == 2);

/// The float value of a 16-bit element (what a load in generated code does).
PK_FP16_INLINE float to_float(half H) { return fp16::halfToFloat(H.bits()); }
PK_FP16_INLINE float to_float(bfloat16 H) {
  return fp16::bfloat16ToFloat(H.bits());
}

/// The type kernels compute a ref's elements in: float for the 16-bit
/// storage types, the element type itself otherwise.
template <class T> struct ComputeTypeOf { using type = T; };
template <> struct ComputeTypeOf<half> { using type = float; };
template <> struct ComputeTypeOf<bfloat16> { using type = float; };
template <class T> using ComputeType = typename ComputeTypeOf<T>::type;

/// True for pk::half and pk::bfloat16.
template <class T>
inline constexpr bool IsStorage16 =
    std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

} // namespace pk

#endif // PK_HALF_H
