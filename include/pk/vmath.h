//===- pk/vmath.h - Branch-free, vectorisable elementary functions -------===//
//
// pk::vm::{exp, exp_nonpos, exp2, expm1, log, log2, log1p, tanh, erf, sin,
// cos, sigmoid, pow, rsqrt, floor, ceil, select} for float and double. The
// generated CPU code calls these instead of <cmath> inside `#pragma omp simd`
// loops: libm calls do not vectorise without -ffast-math, these do (g++ >= 12
// and clang++ >= 19, -O2 -fopenmp-simd, SSE2 or AVX2/FMA, no fast-math flag
// needed).
//
// How the code stays vectorisable:
//  * Straight-line code only: no branches, no early returns, no tables. Every
//    special case (inf, NaN, +-0, overflow, underflow, denormals) is computed
//    and then chosen with detail::sel, a bitwise select on an all-ones/zeros
//    mask. Plain `c ? a : b` on floats is avoided on purpose: under GCC's
//    default -ftrapping-math the middle end may sink or thread the arms into
//    real branches, which the if-converter then refuses to vectorise
//    ("control flow in loop").
//  * Integer work on doubles uses only 64-bit add/sub/and/or/xor and logical
//    shifts (all SSE2); double <-> int64 conversions and 64-bit arithmetic
//    shifts (not in SSE2/AVX2) are never used: integers are moved through the
//    0x1.8p52 "shifter" instead. GCC cannot turn a double compare into a
//    64-bit mask without SSE4.2; there (PK_VM_INT_MASKS) the double
//    predicates come from sign bits of differences instead of compares.
//  * std::fma is only used when the target has FMA (it would be a libm call
//    otherwise); the exact products it gives are reproduced with Dekker's
//    splitting without FMA (where the compiler cannot contract either).
//  * sqrt is never called (with the default -fmath-errno it is not
//    vectorised by either compiler); rsqrt uses Newton steps.
//
// Requirements: IEEE binary32/binary64 with round-to-nearest, SSE-style
// evaluation (FLT_EVAL_METHOD == 0, i.e. not x87), no -ffast-math (it would
// break the rounding tricks: (x + 0x1.8p23f) - 0x1.8p23f is not x). Results
// do not depend on whether the compiler contracts a*b+c into an FMA.
//
// Accuracy: max 0.5-2.5 ulp vs the correctly rounded result depending on the
// function (all 2^32 floats checked, random doubles); the per-function
// figures, bounds and ranges are in docs/vmath.md and checked by
// test/unit/VmathTest.cpp. All functions handle +-0, +-inf, NaN and
// denormal inputs and outputs like C's (and keep -0 where C does). sin/cos
// meet their bound for |x| < 2^30 (float) / 2^26 (double) (Cody-Waite
// reduction, exact there); beyond that they return a value in [-1, 1] (float:
// sin 0 / cos 0), and NaN for inf and NaN.
//
// The double erf uses the rational approximations of FreeBSD's s_erf.c:
//   Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved.
//   Developed at SunPro, a Sun Microsystems, Inc. business.
//   Permission to use, copy, modify, and distribute this software is freely
//   granted, provided that this notice is preserved.
// Every other coefficient was fitted for pk (Remez, minimax relative error).
//
//===----------------------------------------------------------------------===//
#ifndef PK_VMATH_H
#define PK_VMATH_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__FAST_MATH__) && !defined(PK_VM_ALLOW_FAST_MATH)
// Reassociation folds (x + 0x1.8p23f) - 0x1.8p23f to x and cancels the error
// terms of the compensated steps: the results are then not accurate (e.g.
// log1p(-1e-16) is off by 2^24 ulp). Compile pk kernels without -ffast-math.
#warning "pk/vmath.h: -ffast-math breaks pk::vm's accuracy (see docs/vmath.md)"
#endif

#if defined(__GNUC__) || defined(__clang__)
#define PK_VM_INLINE static inline __attribute__((always_inline))
#else
#define PK_VM_INLINE static inline
#endif

#if defined(__FMA__) || defined(__ARM_FEATURE_FMA) || defined(__FP_FAST_FMA)
#define PK_VM_HAVE_FMA 1
#else
#define PK_VM_HAVE_FMA 0
#endif

namespace pk::vm {
namespace detail {

// --- bit casts and selects ---------------------------------------------------

PK_VM_INLINE uint32_t bits(float X) {
  uint32_t U;
  std::memcpy(&U, &X, sizeof U);
  return U;
}
PK_VM_INLINE uint64_t bits(double X) {
  uint64_t U;
  std::memcpy(&U, &X, sizeof U);
  return U;
}
PK_VM_INLINE float f32(uint32_t U) {
  float X;
  std::memcpy(&X, &U, sizeof X);
  return X;
}
PK_VM_INLINE double f64(uint64_t U) {
  double X;
  std::memcpy(&X, &U, sizeof X);
  return X;
}

// --- masks and selects ----------------------------------------------------------
// Conditions are all-ones/all-zeros masks (uint32_t for float, uint64_t for
// double) and sel(M, A, B) is (A & M) | (B & ~M): no branch for the middle end
// to thread (see the header comment). Predicates take a finite constant or
// finite value as second operand and follow IEEE (false for NaN operands).

PK_VM_INLINE uint32_t mask(bool C) { return 0u - uint32_t(C); }
PK_VM_INLINE float sel(uint32_t M, float A, float B) {
  return f32((bits(A) & M) | (bits(B) & ~M));
}
PK_VM_INLINE double sel(uint64_t M, double A, double B) {
  return f64((bits(A) & M) | (bits(B) & ~M));
}

PK_VM_INLINE float fabs_(float X) { return f32(bits(X) & 0x7fffffffu); }
PK_VM_INLINE double fabs_(double X) {
  return f64(bits(X) & 0x7fffffffffffffffull);
}

PK_VM_INLINE uint32_t gt(float X, float C) { return mask(X > C); }
PK_VM_INLINE uint32_t lt(float X, float C) { return mask(X < C); }
PK_VM_INLINE uint32_t ge(float X, float C) { return mask(X >= C); }
PK_VM_INLINE uint32_t eq(float X, float C) { return mask(X == C); }
PK_VM_INLINE uint32_t isnan_(float X) { return mask(X != X); }
PK_VM_INLINE uint32_t isinf_(float X) {
  return mask(fabs_(X) == __builtin_huge_valf());
}

#ifndef PK_VM_INT_MASKS
// GCC (12..14) cannot vectorise a double compare whose result is used as a
// 64-bit integer without SSE4.2 (pcmpgtq); there the double predicates are
// computed from sign bits of differences, with integer ops SSE2 has.
#if defined(__GNUC__) && !defined(__clang__) &&                               \
    (defined(__x86_64__) || defined(__i386__)) && !defined(__SSE4_2__)
#define PK_VM_INT_MASKS 1
#else
#define PK_VM_INT_MASKS 0
#endif
#endif

#if PK_VM_INT_MASKS
/// All ones iff V == 0.
PK_VM_INLINE uint64_t zeroMask(uint64_t V) {
  return ((V | (uint64_t(0) - V)) >> 63) - 1u;
}
PK_VM_INLINE uint64_t signMask(double D) {
  return uint64_t(0) - (bits(D) >> 63);
}
PK_VM_INLINE uint64_t notNaN(double X) {
  // |x| bits < 0x7ff0000000000001: the difference of two values < 2^63
  return uint64_t(0) -
         (((bits(X) & 0x7fffffffffffffffull) - 0x7ff0000000000001ull) >> 63);
}
PK_VM_INLINE uint64_t gt(double X, double C) {
  return signMask(C - X) & notNaN(X); // C - X is +0 when equal
}
PK_VM_INLINE uint64_t lt(double X, double C) {
  return signMask((X - C) + 0.0) & notNaN(X); // + 0.0: -0 -> +0
}
PK_VM_INLINE uint64_t ge(double X, double C) {
  return ~signMask((X - C) + 0.0) & notNaN(X);
}
PK_VM_INLINE uint64_t eq(double X, double C) {
  return zeroMask(bits(X - C) & 0x7fffffffffffffffull); // NaN - C is NaN
}
PK_VM_INLINE uint64_t isnan_(double X) { return ~notNaN(X); }
PK_VM_INLINE uint64_t isinf_(double X) {
  return zeroMask((bits(X) & 0x7fffffffffffffffull) ^ 0x7ff0000000000000ull);
}
#else
PK_VM_INLINE uint64_t mask64(bool C) { return uint64_t(0) - uint64_t(C); }
PK_VM_INLINE uint64_t gt(double X, double C) { return mask64(X > C); }
PK_VM_INLINE uint64_t lt(double X, double C) { return mask64(X < C); }
PK_VM_INLINE uint64_t ge(double X, double C) { return mask64(X >= C); }
PK_VM_INLINE uint64_t eq(double X, double C) { return mask64(X == C); }
PK_VM_INLINE uint64_t isnan_(double X) { return mask64(X != X); }
PK_VM_INLINE uint64_t isinf_(double X) {
  return mask64(fabs_(X) == __builtin_huge_val());
}
#endif

/// |Mag| with the sign of S (Mag must be >= +0 or NaN).
PK_VM_INLINE float orsign(float Mag, float S) {
  return f32(bits(Mag) | (bits(S) & 0x80000000u));
}
PK_VM_INLINE double orsign(double Mag, double S) {
  return f64(bits(Mag) | (bits(S) & 0x8000000000000000ull));
}

constexpr float FInf = __builtin_huge_valf();
constexpr double DInf = __builtin_huge_val();
constexpr float FNaN = __builtin_nanf("");
constexpr double DNaN = __builtin_nan("");

// Adding then subtracting the shifter rounds to the nearest integer (for
// |x| < 2^22 resp. 2^51); the low bits of x + shifter hold that integer.
constexpr float FShift = 0x1.8p23f;
constexpr double DShift = 0x1.8p52;

/// 2^K as a float, K an integer-valued float in [-126, 127].
PK_VM_INLINE float pow2i(float K) {
  return f32((bits(K + FShift) + 127u) << 23);
}
/// 2^K as a double, K an integer-valued double in [-1022, 1023].
PK_VM_INLINE double pow2i(double K) {
  return f64((bits(K + DShift) + 1023u) << 52);
}

/// P * 2^K with a single rounding (denormal results round correctly), K a
/// two's-complement integer in [-252, 254]; P in [0.5, 2].
PK_VM_INLINE float ldexp2(float P, uint32_t K) {
  // floor(K / 2) by an arithmetic shift (psrad is SSE2; the 64-bit one
  // below is not, hence the bias there).
  const uint32_t K1 = uint32_t(int32_t(K) >> 1);
  const uint32_t K2 = K - K1;
  return (P * f32((K1 + 127u) << 23)) * f32((K2 + 127u) << 23);
}
/// P * 2^K, K a two's-complement integer in [-2044, 2046].
PK_VM_INLINE double ldexp2(double P, uint64_t K) {
  const uint64_t K1 = ((K + 4096u) >> 1) - 2048u; // floor(K / 2)
  const uint64_t K2 = K - K1;
  return (P * f64((K1 + 1023u) << 52)) * f64((K2 + 1023u) << 52);
}

/// Exact product: A * B == P + E (barring overflow/underflow).
PK_VM_INLINE double twoProdErr(double A, double B, double P) {
#if PK_VM_HAVE_FMA
  return std::fma(A, B, -P);
#else
  // Dekker. Without hardware FMA the compiler cannot contract these.
  const double CA = 134217729.0 * A, CB = 134217729.0 * B;
  const double AH = CA - (CA - A), AL = A - AH;
  const double BH = CB - (CB - B), BL = B - BH;
  return ((AH * BH - P) + AH * BL + AL * BH) + AL * BL;
#endif
}

// --- exp family: x = k ln2 + r, |r| <= ln2/2 ---------------------------------

constexpr float FLog2e = 0x1.715476p+0f;
constexpr float FLn2Hi = 0x1.62e4p-1f;    // 15 bits: k * FLn2Hi exact
constexpr float FLn2Lo = 0x1.7f7d1cp-20f; // ln2 - FLn2Hi
constexpr double DLog2e = 0x1.71547652b82fep+0;
constexpr double DLn2Hi = 0x1.62e42ffp-1;             // 32 bits
constexpr double DLn2Lo = -0x1.718432a1b0e26p-35;     // ln2 - DLn2Hi
constexpr double DLn2 = 0x1.62e42fefa39efp-1;

/// (e^r - 1 - r) / r^2 on |r| <= ln2/2, rel. error 2.7e-9. (A degree-4 fit,
/// 3.7e-9, saves two operations but takes exp to 1.009 ulp when the compiler
/// contracts into FMAs, over its 1-ulp bound: measured over all floats.)
PK_VM_INLINE float expPoly(float R) {
  return 0x1.0p-1f +
         R * (0x1.555556p-3f +
              R * (0x1.5554eap-5f +
                   R * (0x1.11114cp-7f +
                        R * (0x1.6d42cap-10f + R * 0x1.a072c0p-13f))));
}
/// (e^r - 1 - r) / r^2 on |r| <= ln2/2, rel. error 2.7e-18.
PK_VM_INLINE double expPoly(double R) {
  return 0x1.0p-1 +
         R * (0x1.5555555555557p-3 +
              R * (0x1.555555555554ep-5 +
                   R * (0x1.11111111100eep-7 +
                        R * (0x1.6c16c16c1a073p-10 +
                             R * (0x1.a01a01abdf014p-13 +
                                  R * (0x1.a01a019062695p-16 +
                                       R * (0x1.71de024b41060p-19 +
                                            R * (0x1.27e510da1d8dfp-22 +
                                                 R * (0x1.af4db8a8c3dc6p-26 +
                                                      R * 0x1.1f19f4e1760fcp-29)))))))));
}

/// e^r - 1 for |r| <= ln2/2 (relative accuracy).
PK_VM_INLINE float expm1Red(float R) { return R + R * R * expPoly(R); }
PK_VM_INLINE double expm1Red(double R) { return R + R * R * expPoly(R); }

/// e^x for x in [-87, 88] (no special values; normal results only).
PK_VM_INLINE float expCore(float X) {
  const float T = X * FLog2e + FShift;
  const float K = T - FShift;
  const float R = (X - K * FLn2Hi) - K * FLn2Lo;
  return (1.0f + expm1Red(R)) * f32((bits(T) - bits(FShift) + 127u) << 23);
}
/// e^x for x in [-708, 709] (no special values; normal results only).
PK_VM_INLINE double expCore(double X) {
  const double T = X * DLog2e + DShift;
  const double K = T - DShift;
  const double R = (X - K * DLn2Hi) - K * DLn2Lo;
  return (1.0 + expm1Red(R)) * f64((bits(T) - bits(DShift) + 1023u) << 52);
}

/// e^x - 1 for x in [0, 20] resp. [0, 44] (tanh's range).
PK_VM_INLINE float expm1Pos(float X) {
  const float T = X * FLog2e + FShift;
  const float K = T - FShift;
  const float R = (X - K * FLn2Hi) - K * FLn2Lo;
  const float S = pow2i(K);
  return expm1Red(R) * S + (S - 1.0f);
}
PK_VM_INLINE double expm1Pos(double X) {
  const double T = X * DLog2e + DShift;
  const double K = T - DShift;
  const double R = (X - K * DLn2Hi) - K * DLn2Lo;
  const double S = pow2i(K);
  return expm1Red(R) * S + (S - 1.0);
}

// --- log family: x = 2^k m, m in [sqrt(2)/2, sqrt(2)), f = m - 1 -------------
// log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)), s = f / (2 + f)  (fdlibm form)

/// R(z) / z on z in [0, 0.0295], rel. error 1.7e-9.
PK_VM_INLINE float logPoly(float Z) {
  return 0x1.555556p-1f +
         Z * (0x1.9999ecp-2f + Z * (0x1.245c34p-2f + Z * 0x1.ddd19ap-3f));
}
/// R(z) / z on z in [0, 0.0295], rel. error 4.5e-16.
PK_VM_INLINE double logPoly(double Z) {
  return 0x1.5555555555558p-1 +
         Z * (0x1.99999999952a7p-2 +
              Z * (0x1.2492492df7080p-2 +
                   Z * (0x1.c71c62defbbe9p-3 +
                        Z * (0x1.7462b65698b37p-3 +
                             Z * (0x1.39fe2defb5d0ep-3 +
                                  Z * 0x1.2b5a86786e75cp-3)))));
}

/// Splits a positive finite float (denormals included) into K and F = m - 1.
PK_VM_INLINE void logSplit(float X, float &K, float &F) {
  const uint32_t Sub = lt(X, 0x1p-126f);
  const float XS = sel(Sub, X * 0x1p23f, X);
  const uint32_t IX = bits(XS) + (0x3f800000u - 0x3f3504f3u);
  K = float(int32_t(IX >> 23) - 127) - sel(Sub, 23.0f, 0.0f);
  F = f32((IX & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
}
PK_VM_INLINE void logSplit(double X, double &K, double &F) {
  const uint64_t Sub = lt(X, 0x1p-1022);
  const double XS = sel(Sub, X * 0x1p54, X);
  const uint64_t IX = bits(XS) + (0x3ff0000000000000ull - 0x3fe6a09e667f3bcdull);
  // exponent field (< 2^12) -> double without an int64 conversion
  const double E = f64((IX >> 52) | 0x4330000000000000ull) - 0x1p52;
  K = (E - 1023.0) - sel(Sub, 54.0, 0.0);
  F = f64((IX & 0x000fffffffffffffull) + 0x3fe6a09e667f3bcdull) - 1.0;
}

/// log(2^K (1 + F)) + C, C a small correction (log1p).
PK_VM_INLINE float logKernel(float K, float F, float C) {
  const float S = F / (2.0f + F);
  const float Z = S * S;
  const float R = Z * logPoly(Z);
  const float HFSq = 0.5f * F * F;
  return S * (HFSq + R) + (K * FLn2Lo + C) - HFSq + F + K * FLn2Hi;
}
PK_VM_INLINE double logKernel(double K, double F, double C) {
  const double S = F / (2.0 + F);
  const double Z = S * S;
  const double R = Z * logPoly(Z);
  const double HFSq = 0.5 * F * F;
  return S * (HFSq + R) + (K * DLn2Lo + C) - HFSq + F + K * DLn2Hi;
}

// --- trigonometric: x = q pi/2 + r, |r| <= pi/4 -------------------------------

/// sin(r) and cos(r) for |r| <= pi/4, double evaluation, float accuracy.
PK_VM_INLINE double sinPolyF(double R, double Z) {
  return R + R * Z *
                 (-0x1.555555545ab27p-3 +
                  Z * (0x1.11110de91adbfp-7 +
                       Z * (-0x1.a013a1065a61dp-13 + Z * 0x1.6dbc439303560p-19)));
}
PK_VM_INLINE double cosPolyF(double Z) {
  return 1.0 - 0.5 * Z +
         Z * Z *
             (0x1.5555555502197p-5 +
              Z * (-0x1.6c16bf5251ca5p-10 +
                   Z * (0x1.a015c1b3d9565p-16 + Z * -0x1.25238d77a454fp-22)));
}
/// Double accuracy; Tail = the correction for the low part of r.
PK_VM_INLINE double sinPolyD(double R, double Z, double Tail) {
  return R + (Tail + R * Z *
                 (-0x1.5555555555555p-3 +
                  Z * (0x1.1111111110ba5p-7 +
                       Z * (-0x1.a01a019e80e58p-13 +
                            Z * (0x1.71de37936616cp-19 +
                                 Z * (-0x1.ae60081aa6bcep-26 +
                                      Z * 0x1.5e0a28e7fc5aep-33))))));
}
PK_VM_INLINE double cosPolyD(double Z, double Tail) {
  const double HZ = 0.5 * Z;
  const double W = 1.0 - HZ;
  const double C =
      Z * Z *
      (0x1.5555555555555p-5 +
       Z * (-0x1.6c16c16c16962p-10 +
            Z * (0x1.a01a019f4dca3p-16 +
                 Z * (-0x1.27e4fa16d56e3p-22 +
                      Z * (0x1.1eeb67f7faec0p-29 + Z * -0x1.907d070c17f9fp-37)))));
  return W + ((((1.0 - W) - HZ) + C) + Tail);
}

/// sin (Cos = false) or cos (Cos = true) of a float, computed in double.
/// Cody-Waite with pi/2 in 23+23+23+53 bits: exact for |q| < 2^30 (covers
/// |x| < 2^30 with margin).
PK_VM_INLINE float sincosF(float X, bool Cos) {
  // |x| >= 2^30: the reduction is no longer exact; use x = 0 (result in
  // [-1, 1]); inf and NaN go through (NaN result)
  const double XD = double(sel(ge(fabs_(X), 0x1p30f) & ~isinf_(X), 0.0f, X));
  const double T = XD * 0x1.45f306dc9c883p-1 + DShift;
  const double Q = T - DShift;
  double R = XD - Q * 0x1.921fb4p+0;
  R = R - Q * 0x1.4442d0p-24;
  R = R - Q * 0x1.846988p-48;
  R = R - Q * 0x1.8cc51701b839ap-72;
  const double Z = R * R;
  const double SN = sinPolyF(R, Z), CS = cosPolyF(Z);
  const uint64_t N = bits(T) + uint64_t(Cos);
  const uint64_t Swap = uint64_t(0) - (N & 1u);
  const uint64_t Sign = (N & 2u) << 62;
  const double Res = f64(((bits(CS) & Swap) | (bits(SN) & ~Swap)) ^ Sign);
  return float(Res);
}
/// a + b = S + E exactly (Knuth's 2Sum; no ordering requirement).
PK_VM_INLINE double twoSum(double A, double B, double &E) {
  const double S = A + B;
  const double BB = S - A;
  E = (A - (S - BB)) + (B - BB);
  return S;
}

/// Double: pi/2 in 4 x 27 + 53 bits: q * part exact for |q| < 2^26. Each
/// subtraction's rounding error is kept (2Sum), so r = RH + RL to ~2^-100
/// relative even when |r| is large and the steps are not exact.
PK_VM_INLINE double sincosD(double X, bool Cos) {
  const double T = X * 0x1.45f306dc9c883p-1 + DShift;
  const double Q = T - DShift;
  double E2, E3, E4, E5;
  double R = X - Q * 0x1.921fb54p+0; // exact
  R = twoSum(R, -(Q * 0x1.10b461p-30), E2);
  R = twoSum(R, -(Q * 0x1.a62633p-58), E3);
  R = twoSum(R, -(Q * 0x1.45c06ep-86), E4);
  R = twoSum(R, -(Q * 0x1.cd129024e088ap-115), E5);
  const double C = (E2 + E3) + (E4 + E5);
  double RH = R + C;
  double RL = (R - RH) + C;
  const uint64_t Out = gt(fabs_(RH), 0.8); // only beyond |x| < 2^26 pi/2
  RH = sel(Out, 0.0, RH);
  RL = sel(Out, 0.0, RL);
  const double Z = RH * RH;
  const double SN = sinPolyD(RH, Z, RL * (1.0 - 0.5 * Z));
  const double CS = cosPolyD(Z, -RH * RL);
  const uint64_t N = bits(T) + uint64_t(Cos);
  const uint64_t Swap = uint64_t(0) - (N & 1u);
  const uint64_t Sign = (N & 2u) << 62;
  return f64(((bits(CS) & Swap) | (bits(SN) & ~Swap)) ^ Sign);
}

// --- pow helpers -------------------------------------------------------------

/// Masks: is A = |y| (finite or infinite) an integer?
PK_VM_INLINE uint32_t isInt(float A) {
  return ge(A, 0x1p23f) | eq((A + 0x1p23f) - 0x1p23f, A);
}
PK_VM_INLINE uint64_t isInt(double A) {
  return ge(A, 0x1p52) | eq((A + 0x1p52) - 0x1p52, A);
}

/// log(x) as Hi + Lo, relative error ~2^-68, for positive finite x.
PK_VM_INLINE void logDD(double X, double &Hi, double &Lo) {
  double K, F;
  logSplit(X, K, F);
  // s = f / (2 + f) as SH + SL
  const double DH = 2.0 + F;
  const double DL = (2.0 - DH) + F;
  const double SH = F / DH;
#if PK_VM_HAVE_FMA
  const double E = std::fma(-SH, DH, F); // exact: the division's residual
#else
  const double P = SH * DH;
  const double E = (F - P) - twoProdErr(SH, DH, P);
#endif
  const double SL = (E - SH * DL) / DH;
  // log(1+f) = 2s + 2/3 s^3 + s^5 P(s^2); s^3 and 2/3 s^3 in double-double
  const double ZH = SH * SH;
  const double ZL = twoProdErr(SH, SH, ZH) + 2.0 * SH * SL;
  const double S3H = SH * ZH;
  const double S3L = twoProdErr(SH, ZH, S3H) + (SH * ZL + SL * ZH);
  constexpr double C3H = 0x1.5555555555555p-1, C3L = 0x1.5555555555555p-55;
  const double T3H = C3H * S3H;
  const double T3L = twoProdErr(C3H, S3H, T3H) + (C3H * S3L + C3L * S3H);
  const double Tail =
      S3H * ZH *
      (0x1.999999999999ep-2 +
       ZH * (0x1.249249248e519p-2 +
             ZH * (0x1.c71c71d7ec770p-3 +
                   ZH * (0x1.745d09ee0ab14p-3 +
                         ZH * (0x1.3b18b980db1b7p-3 +
                               ZH * (0x1.10189e20427d8p-3 +
                                     ZH * 0x1.087934fcc9914p-3))))));
  // k ln2 (exact hi) + 2 SH: Fast2Sum (|k ln2| > |2 SH| unless k == 0)
  const double A = K * DLn2Hi, B = 2.0 * SH;
  const double S1 = A + B;
  const double E1 = (A - S1) + B;
  const double S2 = S1 + T3H;
  const double E2 = (S1 - S2) + T3H;
  const double L = E1 + E2 + (K * DLn2Lo + 2.0 * SL + T3L + Tail);
  Hi = S2 + L;
  Lo = (S2 - Hi) + L;
}

/// e^(Hi + Lo) with overflow to inf and denormal/zero underflow.
PK_VM_INLINE double expDD(double Hi, double Lo) {
  const uint64_t Big = ~lt(fabs_(Hi), 740.0);
  const double Lo2 = sel(Big, 0.0, Lo);
  double X = sel(gt(Hi, 710.0), 710.0, Hi);
  X = sel(lt(X, -746.0), -746.0, X);
  const double T = X * DLog2e + DShift;
  const double K = T - DShift;
  const double R = ((X - K * DLn2Hi) - K * DLn2Lo) + Lo2;
  const double P = 1.0 + expm1Red(R);
  return ldexp2(P, bits(T) - bits(DShift));
}

/// C's pow special cases (Annex F), applied over a general result G.
template <class T> PK_VM_INLINE T powSpecial(T X, T Y, T G) {
  const T Inf = T(__builtin_huge_val());
  const T AX = fabs_(X), AY = fabs_(Y);
  const auto YInt = isInt(AY);
  const auto YOdd = YInt & ~isInt(AY * T(0.5));
  const auto Neg = lt(X, T(0));
  const auto YNeg = lt(Y, T(0));
  G = sel(eq(AX, T(1)), T(1), G); // |x| = 1: exactly 1 before the sign
  G = sel(Neg & YOdd, -G, G);
  G = sel(Neg & ~YInt, T(__builtin_nan("")), G);
  T Z = sel(YNeg, Inf, T(0)); // x = +-0
  Z = sel(YOdd, orsign(Z, X), Z);
  G = sel(eq(X, T(0)), Z, G);
  T I = sel(YNeg, T(0), Inf); // x = +-inf
  I = sel(Neg & YOdd, -I, I);
  G = sel(isinf_(X), I, G);
  const T YI = sel(eq(AX, T(1)), T(1), sel(~(lt(AX, T(1)) ^ YNeg), Inf, T(0)));
  G = sel(isinf_(Y), YI, G); // y = +-inf
  G = sel(isnan_(X) | isnan_(Y), X + Y, G);
  return sel(eq(Y, T(0)) | eq(X, T(1)), T(1), G);
}

// --- double erf (fdlibm s_erf.c coefficients, selected per interval) ---------

PK_VM_INLINE double erfD(double X) {
  const double AX = fabs_(X);
  // |x| < 1.25: one rational, coefficients of [0, 0.84375) or [0.84375, 1.25)
  const uint64_t A = lt(AX, 0.84375);
  const double V = sel(A, AX * AX, AX - 1.0);
#define PK_VM_C(a, b) sel(A, a, b)
  const double N =
      PK_VM_C(1.28379167095512558561e-01, -2.36211856075265944077e-03) +
      V * (PK_VM_C(-3.25042107247001499370e-01, 4.14856118683748331666e-01) +
      V * (PK_VM_C(-2.84817495755985104766e-02, -3.72207876035701323847e-01) +
      V * (PK_VM_C(-5.77027029648944159157e-03, 3.18346619901161753674e-01) +
      V * (PK_VM_C(-2.37630166566501626084e-05, -1.10894694282396677476e-01) +
      V * (PK_VM_C(0.0, 3.54783043256182359371e-02) +
      V * PK_VM_C(0.0, -2.16637559486879084300e-03))))));
  const double D =
      1.0 +
      V * (PK_VM_C(3.97917223959155352819e-01, 1.06420880400844228286e-01) +
      V * (PK_VM_C(6.50222499887672944485e-02, 5.40397917702171048937e-01) +
      V * (PK_VM_C(5.08130628187576562776e-03, 7.18286544141962662868e-02) +
      V * (PK_VM_C(1.32494738004321644526e-04, 1.26171219808761642112e-01) +
      V * (PK_VM_C(-3.96022827877536812320e-06, 1.36370839120290507362e-02) +
      V * PK_VM_C(0.0, 1.19844998467991074170e-02))))));
#undef PK_VM_C
  const double Q = N / D;
  const double Small = sel(A, AX + AX * Q, 8.45062911510467529297e-01 + Q);
  // 1.25 <= |x| < 6: erf = 1 - exp(-x^2 - 0.5625 + R(s)/S(s)) / x, s = 1/x^2
  double XC = sel(lt(AX, 1.25), 1.25, AX);
  XC = sel(gt(XC, 6.0), 6.0, XC); // also maps inf to 6; NaN stays
  const uint64_t B = lt(XC, 2.857142857142857); // 1/0.35
  const double S = 1.0 / (XC * XC);
#define PK_VM_C(a, b) sel(B, a, b)
  const double RN =
      PK_VM_C(-9.86494403484714822705e-03, -9.86494292470009928597e-03) +
      S * (PK_VM_C(-6.93858572707181764372e-01, -7.99283237680523006574e-01) +
      S * (PK_VM_C(-1.05586262253232909814e+01, -1.77579549177547519889e+01) +
      S * (PK_VM_C(-6.23753324503260060396e+01, -1.60636384855821916062e+02) +
      S * (PK_VM_C(-1.62396669462573470355e+02, -6.37566443368389627722e+02) +
      S * (PK_VM_C(-1.84605092906711035994e+02, -1.02509513161107724954e+03) +
      S * (PK_VM_C(-8.12874355063065934246e+01, -4.83519191608651397019e+02) +
      S * PK_VM_C(-9.81432934416914548592e+00, 0.0)))))));
  const double RD =
      1.0 +
      S * (PK_VM_C(1.96512716674392571292e+01, 3.03380607434824582924e+01) +
      S * (PK_VM_C(1.37657754143519042600e+02, 3.25792512996573918826e+02) +
      S * (PK_VM_C(4.34565877475229228821e+02, 1.53672958608443695994e+03) +
      S * (PK_VM_C(6.45387271733267880336e+02, 3.19985821950859553908e+03) +
      S * (PK_VM_C(4.29008140027567833386e+02, 2.55305040643316442583e+03) +
      S * (PK_VM_C(1.08635005541779435134e+02, 4.74528541206955367215e+02) +
      S * (PK_VM_C(6.57024977031928170135e+00, -2.24409524465858183362e+01) +
      S * PK_VM_C(-6.04244152148580987438e-02, 0.0))))))));
#undef PK_VM_C
  const double Large = 1.0 - expCore(-XC * XC - 0.5625 + RN / RD) / XC;
  return orsign(sel(lt(AX, 1.25), Small, Large), X);
}

} // namespace detail

// =============================================================================
// Public functions. float and double overloads.
// =============================================================================

/// e^x for x <= 0 (or NaN): exp without the overflow clamp, the same bits
/// as exp there. pkc calls it for exp(v - max(v)) (softmax, logsumexp),
/// where v <= max(v) makes the argument <= 0; the clamp was 15% of such a
/// loop. (Also exact up to 88.8 / 710: the clamp only keeps larger x from
/// leaving ldexp2's range.)
PK_VM_INLINE float exp_nonpos(float X) {
  using namespace detail;
  X = sel(lt(X, -104.0f), -104.0f, X);
  const float T = X * FLog2e + FShift;
  const float K = T - FShift;
  const float R = (X - K * FLn2Hi) - K * FLn2Lo;
  return ldexp2(1.0f + expm1Red(R), bits(T) - bits(FShift));
}
PK_VM_INLINE double exp_nonpos(double X) {
  using namespace detail;
  X = sel(lt(X, -746.0), -746.0, X);
  const double T = X * DLog2e + DShift;
  const double K = T - DShift;
  const double R = (X - K * DLn2Hi) - K * DLn2Lo;
  return ldexp2(1.0 + expm1Red(R), bits(T) - bits(DShift));
}

/// e^x.
PK_VM_INLINE float exp(float X) {
  X = detail::sel(detail::gt(X, 88.8f), 88.8f, X);
  return exp_nonpos(X);
}
PK_VM_INLINE double exp(double X) {
  X = detail::sel(detail::gt(X, 710.0), 710.0, X);
  return exp_nonpos(X);
}

/// 2^x.
PK_VM_INLINE float exp2(float X) {
  using namespace detail;
  X = sel(gt(X, 129.0f), 129.0f, X);
  X = sel(lt(X, -151.0f), -151.0f, X);
  const float T = X + FShift;
  const float R = X - (T - FShift); // exact, |r| <= 1/2
  const float P =
      1.0f +
      R * (0x1.62e430p-1f +
           R * (0x1.ebfbdep-3f +
                R * (0x1.c6af6ep-5f +
                     R * (0x1.3b2ba0p-7f +
                          R * (0x1.5f07b4p-10f + R * 0x1.4308fap-13f)))));
  return ldexp2(P, bits(T) - bits(FShift));
}
PK_VM_INLINE double exp2(double X) {
  using namespace detail;
  X = sel(gt(X, 1025.0), 1025.0, X);
  X = sel(lt(X, -1076.0), -1076.0, X);
  const double T = X + DShift;
  const double R = X - (T - DShift); // exact, |r| <= 1/2
  const double RL = R * DLn2;
  const double RE = twoProdErr(R, DLn2, RL) + R * 0x1.abc9e3b39803fp-56;
  return ldexp2(1.0 + (expm1Red(RL) + RE * (1.0 + RL)),
                bits(T) - bits(DShift));
}

/// e^x - 1.
PK_VM_INLINE float expm1(float X) {
  using namespace detail;
  float XC = sel(gt(X, 88.8f), 88.8f, X);
  XC = sel(lt(XC, -18.0f), -18.0f, XC);
  const float T = XC * FLog2e + FShift;
  const float K = T - FShift;
  const float R = (XC - K * FLn2Hi) - K * FLn2Lo;
  // 2^k = 2 * 2^(k-1) when k = 128 (2^128 is not a float)
  const uint32_t Big = gt(K, 127.0f);
  const float S = pow2i(K - sel(Big, 1.0f, 0.0f));
  const float Res =
      (expm1Red(R) * S + (S - sel(Big, 0.5f, 1.0f))) * sel(Big, 2.0f, 1.0f);
  return sel(eq(X, 0.0f), X, Res); // keeps -0
}
PK_VM_INLINE double expm1(double X) {
  using namespace detail;
  double XC = sel(gt(X, 710.0), 710.0, X);
  XC = sel(lt(XC, -38.0), -38.0, XC);
  const double T = XC * DLog2e + DShift;
  const double K = T - DShift;
  const double R = (XC - K * DLn2Hi) - K * DLn2Lo;
  const uint64_t Big = gt(K, 1023.0);
  const double S = pow2i(K - sel(Big, 1.0, 0.0));
  const double Res =
      (expm1Red(R) * S + (S - sel(Big, 0.5, 1.0))) * sel(Big, 2.0, 1.0);
  return sel(eq(X, 0.0), X, Res);
}

/// Natural logarithm.
PK_VM_INLINE float log(float X) {
  using namespace detail;
  float K, F;
  logSplit(X, K, F);
  const float Res = logKernel(K, F, 0.0f);
  const float Special = sel(eq(X, 0.0f), -FInf, sel(lt(X, 0.0f), FNaN, X));
  return sel(gt(X, 0.0f) & ~isinf_(X), Res, Special);
}
PK_VM_INLINE double log(double X) {
  using namespace detail;
  double K, F;
  logSplit(X, K, F);
  const double Res = logKernel(K, F, 0.0);
  const double Special = sel(eq(X, 0.0), -DInf, sel(lt(X, 0.0), DNaN, X));
  return sel(gt(X, 0.0) & ~isinf_(X), Res, Special);
}

/// Base-2 logarithm.
PK_VM_INLINE float log2(float X) {
  using namespace detail;
  float K, F;
  logSplit(X, K, F);
  // log(1+f) = Hi + Lo with Hi = f - f^2/2 rounded to 12 bits, then / ln2
  const float S = F / (2.0f + F);
  const float Z = S * S;
  const float HFSq = 0.5f * F * F;
  const float Hi = f32(bits(F - HFSq) & 0xfffff000u);
  const float Lo = ((F - Hi) - HFSq) + S * (HFSq + Z * logPoly(Z));
  const float VHi = Hi * 0x1.716p+0f;                       // 12 bits
  const float VLo = (Lo + Hi) * -0x1.7135a8p-13f + Lo * 0x1.716p+0f;
  const float W = K + VHi;
  const float Res = W + (VLo + ((K - W) + VHi));
  const float Special = sel(eq(X, 0.0f), -FInf, sel(lt(X, 0.0f), FNaN, X));
  return sel(gt(X, 0.0f) & ~isinf_(X), Res, Special);
}
PK_VM_INLINE double log2(double X) {
  using namespace detail;
  double K, F;
  logSplit(X, K, F);
  const double S = F / (2.0 + F);
  const double Z = S * S;
  const double HFSq = 0.5 * F * F;
  const double Hi = f64(bits(F - HFSq) & 0xffffffff00000000ull);
  const double Lo = ((F - Hi) - HFSq) + S * (HFSq + Z * logPoly(Z));
  const double VHi = Hi * 0x1.71547652p+0; // 1/ln2, 33 bits
  const double VLo = (Lo + Hi) * 0x1.705fc2eefa200p-33 + Lo * 0x1.71547652p+0;
  const double W = K + VHi;
  const double Res = W + (VLo + ((K - W) + VHi));
  const double Special = sel(eq(X, 0.0), -DInf, sel(lt(X, 0.0), DNaN, X));
  return sel(gt(X, 0.0) & ~isinf_(X), Res, Special);
}

/// log(1 + x).
PK_VM_INLINE float log1p(float X) {
  using namespace detail;
  const float U = 1.0f + X;
  float K, F;
  logSplit(U, K, F); // U >= 2^-24 where it matters
  // log(1+x) - log(u) ~ c / u with c the rounding error of u
  const float C = sel(ge(K, 2.0f), 1.0f - (U - X), X - (U - 1.0f)) / U;
  const float Res = logKernel(K, F, C);
  const float Special = sel(eq(X, -1.0f), -FInf, sel(lt(X, -1.0f), FNaN, X));
  return sel(gt(X, -1.0f) & ~isinf_(X) & ~eq(X, 0.0f), Res, Special);
}
PK_VM_INLINE double log1p(double X) {
  using namespace detail;
  const double U = 1.0 + X;
  double K, F;
  logSplit(U, K, F);
  const double C = sel(ge(K, 2.0), 1.0 - (U - X), X - (U - 1.0)) / U;
  const double Res = logKernel(K, F, C);
  const double Special = sel(eq(X, -1.0), -DInf, sel(lt(X, -1.0), DNaN, X));
  return sel(gt(X, -1.0) & ~isinf_(X) & ~eq(X, 0.0), Res, Special);
}

/// Hyperbolic tangent: expm1(2|x|) / (expm1(2|x|) + 2), sign of x.
PK_VM_INLINE float tanh(float X) {
  using namespace detail;
  float A = fabs_(X);
  A = sel(gt(A, 10.0f), 10.0f, A); // tanh(10) rounds to 1
  const float E = expm1Pos(2.0f * A);
  return orsign(E / (E + 2.0f), X);
}
PK_VM_INLINE double tanh(double X) {
  using namespace detail;
  double A = fabs_(X);
  A = sel(gt(A, 22.0), 22.0, A); // tanh(22) rounds to 1
  const double E = expm1Pos(2.0 * A);
  return orsign(E / (E + 2.0), X);
}

/// Logistic sigmoid 1 / (1 + e^-x), as e^x / (1 + e^x) for x < 0.
PK_VM_INLINE float sigmoid(float X) {
  const float E = vm::exp(-detail::fabs_(X));
  return detail::sel(detail::lt(X, 0.0f), E, 1.0f) / (1.0f + E);
}
PK_VM_INLINE double sigmoid(double X) {
  const double E = vm::exp(-detail::fabs_(X));
  return detail::sel(detail::lt(X, 0.0), E, 1.0) / (1.0 + E);
}

/// Error function.
PK_VM_INLINE float erf(float X) {
  using namespace detail;
  const float A = fabs_(X);
  // |x| < 0.875: x + x Q(x^2)
  const float Z = A * A;
  const float Small =
      A + A * (0x1.06eba6p-3f +
               Z * (-0x1.81270cp-2f +
                    Z * (0x1.ce211ep-4f +
                         Z * (-0x1.b6f38ap-6f +
                              Z * (0x1.49c9fep-8f + Z * -0x1.453aaep-11f)))));
  // 0.875 <= |x| <= 4: 1 - exp(H(|x| - 2.4375) - x^2), H = log(erfc(x)) + x^2;
  // erf(x) rounds to 1 beyond 4
  float AC = sel(lt(A, 0.875f), 0.875f, A);
  AC = sel(gt(AC, 4.0f), 4.0f, AC);
  const float U = AC - 2.4375f;
  const float H =
      -0x1.88d854p+0f +
      U * (-0x1.7074e8p-2f +
           U * (0x1.dcbd34p-5f +
                U * (-0x1.766b0ep-7f +
                     U * (0x1.2cc2a4p-9f +
                          U * (-0x1.ce72f8p-12f +
                               U * (0x1.77c66cp-14f + U * -0x1.1544c4p-16f))))));
  const float Large = 1.0f - expCore(H - AC * AC);
  return orsign(sel(lt(A, 0.875f), Small, Large), X);
}
PK_VM_INLINE double erf(double X) { return detail::erfD(X); }

/// Sine.
PK_VM_INLINE float sin(float X) {
  return detail::sel(detail::eq(X, 0.0f), X, detail::sincosF(X, false)); // keeps -0
}
PK_VM_INLINE double sin(double X) {
  return detail::sel(detail::eq(X, 0.0), X, detail::sincosD(X, false));
}
/// Cosine.
PK_VM_INLINE float cos(float X) { return detail::sincosF(X, true); }
PK_VM_INLINE double cos(double X) { return detail::sincosD(X, true); }

/// x^y with C's special cases (pow(x, +-0) = 1, pow(1, y) = 1, NaN for a
/// negative x and a non-integer finite y, signed zeros/infinities for odd
/// integer y, ...). The float version computes in double.
PK_VM_INLINE float pow(float X, float Y) {
  using namespace detail;
  // log|x| in double (float denormals are normal doubles); polynomials sized
  // for a ~1e-12 relative error, plenty for a float result
  const double XD = double(fabs_(X));
  const uint64_t IX = bits(XD) + (0x3ff0000000000000ull - 0x3fe6a09e667f3bcdull);
  const double K = f64((IX >> 52) | 0x4330000000000000ull) - (0x1p52 + 1023.0);
  const double F = f64((IX & 0x000fffffffffffffull) + 0x3fe6a09e667f3bcdull) - 1.0;
  const double S = F / (2.0 + F);
  const double Z = S * S;
  const double HFSq = 0.5 * F * F;
  const double RZ =
      0x1.5555555564f97p-1 +
      Z * (0x1.999998ca734a6p-2 +
           Z * (0x1.2493243fb7b1bp-2 +
                Z * (0x1.c67ab35c4c365p-3 + Z * 0x1.8c8ea2fde5c28p-3)));
  const double L = S * (HFSq + Z * RZ) - HFSq + F + K * DLn2;
  // e^t, t = y log|x|; meaningful for t in [-104, 89] (normal doubles)
  const double T = double(Y) * L;
  const double TS = T * DLog2e + DShift;
  const double KT = TS - DShift;
  const double R = (T - KT * DLn2Hi) - KT * DLn2Lo;
  const double P =
      0x1.0000000004974p-1 +
      R * (0x1.555555673c636p-3 +
           R * (0x1.555555316dfb5p-5 +
                R * (0x1.1110c663ffc83p-7 +
                     R * (0x1.6c16fd4acea49p-10 +
                          R * (0x1.a151246e5a0ecp-13 + R * 0x1.a06cd7221dac1p-16)))));
  const double E =
      (1.0 + (R + R * R * P)) * f64((bits(TS) - bits(DShift) + 1023u) << 52);
  // overflow / underflow decided in float (cheap compares on every target)
  const float TF = float(T);
  const float G = sel(gt(TF, 89.0f), FInf, sel(lt(TF, -104.0f), 0.0f, float(E)));
  return powSpecial(X, Y, G);
}
PK_VM_INLINE double pow(double X, double Y) {
  using namespace detail;
  double LH, LL;
  logDD(fabs_(X), LH, LL);
  const double TH = Y * LH;
  const double TL = twoProdErr(Y, LH, TH) + Y * LL;
  return powSpecial(X, Y, expDD(TH, TL));
}

/// 1 / sqrt(x) (1/sqrt(-0) = -inf as in C).
PK_VM_INLINE float rsqrt(float X) {
  using namespace detail;
  const double XD = double(X);
  // initial guess within 3.5%, then 3 Newton steps in double
  double R = f64(0x5fe6eb50c7b537a9ull - (bits(XD) >> 1));
  const double H = 0.5 * XD;
  R = R * (1.5 - H * R * R);
  R = R * (1.5 - H * R * R);
  R = R * (1.5 - H * R * R);
  const float Special =
      sel(eq(X, 0.0f), orsign(FInf, X), sel(gt(X, 0.0f), 0.0f, FNaN));
  return sel(gt(X, 0.0f) & ~isinf_(X), float(R), Special);
}
PK_VM_INLINE double rsqrt(double X) {
  using namespace detail;
  // keep x r^2 and r^2 normal: scale denormals up and huge values down
  const uint64_t Sub = lt(X, 0x1p-1000), Big = gt(X, 0x1p1000);
  const double XS = X * sel(Sub, 0x1p54, sel(Big, 0x1p-54, 1.0));
  double R = f64(0x5fe6eb50c7b537a9ull - (bits(XS) >> 1));
  const double H = 0.5 * XS;
  R = R * (1.5 - H * R * R);
  R = R * (1.5 - H * R * R);
  R = R * (1.5 - H * R * R);
  // last step on the residual: r + r (1 - x r^2) / 2
  const double RR = R * R;
  const double E = 1.0 - XS * RR - XS * twoProdErr(R, R, RR);
  R = R + R * (0.5 * E);
  R = R * sel(Sub, 0x1p27, sel(Big, 0x1p-27, 1.0));
  const double Special =
      sel(eq(X, 0.0), orsign(DInf, X), sel(gt(X, 0.0), 0.0, DNaN));
  return sel(gt(X, 0.0) & ~isinf_(X), R, Special);
}

/// Correctly rounded square root that vectorises without -fno-math-errno
/// (std::sqrt keeps a scalar errno branch under g++'s default flags). Float:
/// x * rsqrt(x) in double (rsqrt is accurate to ~2^-52 there), rounded once;
/// checked against std::sqrt on all 2^32 floats. Double: the same with a
/// residual correction (s + r (x - s^2) / 2).
PK_VM_INLINE float sqrt(float X) {
  using namespace detail;
  const double XD = double(X);
  double R = f64(0x5fe6eb50c7b537a9ull - (bits(XD) >> 1));
  const double H = 0.5 * XD;
  R = R * (1.5 - H * R * R);
  R = R * (1.5 - H * R * R);
  R = R * (1.5 - H * R * R);
  R = R * (1.5 - H * R * R);
  // 0, -0 and +inf are their own roots; negatives and NaN give NaN.
  const float Special = sel(ge(X, 0.0f), X, FNaN);
  return sel(gt(X, 0.0f) & ~isinf_(X), float(XD * R), Special);
}
PK_VM_INLINE double sqrt(double X) {
  using namespace detail;
  const uint64_t Sub = lt(X, 0x1p-1000), Big = gt(X, 0x1p1000);
  const double XS = X * sel(Sub, 0x1p54, sel(Big, 0x1p-54, 1.0));
  const double R = rsqrt(XS);
  double S = XS * R;
  const double SS = S * S;
  const double E = XS - SS - twoProdErr(S, S, SS);
  S = S + R * (0.5 * E);
  S = S * sel(Sub, 0x1p-27, sel(Big, 0x1p27, 1.0));
  const double Special = sel(ge(X, 0.0), X, DNaN);
  return sel(gt(X, 0.0) & ~isinf_(X), S, Special);
}

// --- floor, ceil and where
// ------------------------------------------------------ Exact (the same bits
// as std::floor, std::ceil and `c ? a : b`, -0 and NaN included), but
// vectorisable: g++ vectorises std::floor only with SSE4.1 and
// -fno-trapping-math, and a float `c ? a : b` not at all once it has sunk the
// arms' arithmetic into branches ("control flow in loop"), so a kernel with
// either ran scalar in every clone.

namespace detail {
/// |x| rounded to the nearest integer with x's sign, for |x| < 2^23 (float)
/// or 2^52 (double): adding and subtracting 2^23 rounds a value in [0, 2^23)
/// to an integer (round to nearest even, no -ffast-math).
PK_VM_INLINE float nearestSigned(float X) {
  return orsign((fabs_(X) + 0x1p23f) - 0x1p23f, X);
}
PK_VM_INLINE double nearestSigned(double X) {
  return orsign((fabs_(X) + 0x1p52) - 0x1p52, X);
}
PK_VM_INLINE uint32_t wholeOrNaN(float X) { return ~lt(fabs_(X), 0x1p23f); }
PK_VM_INLINE uint64_t wholeOrNaN(double X) { return ~lt(fabs_(X), 0x1p52); }
} // namespace detail

/// std::floor: the nearest integer, less one where it is above x; the
/// result has x's sign (floor(-0.5) = -1, floor(-0) = -0). |x| >= 2^23
/// (2^52), infinities and NaN are their own floor.
template <class T> PK_VM_INLINE T floor(T X) {
  if constexpr (std::is_floating_point_v<T>) {
    using namespace detail;
    const T N = nearestSigned(X);
    const T F = N - sel(gt(N, X), T(1), T(0));
    return sel(wholeOrNaN(X), X, orsign(fabs_(F), X));
  } else {
    return X;
  }
}

/// std::ceil, the same way (ceil(-0.5) = -0).
template <class T> PK_VM_INLINE T ceil(T X) {
  if constexpr (std::is_floating_point_v<T>) {
    using namespace detail;
    const T N = nearestSigned(X);
    const T C = N + sel(lt(N, X), T(1), T(0));
    return sel(wholeOrNaN(X), X, orsign(fabs_(C), X));
  } else {
    return X;
  }
}

/// `where`: C ? A : B, for floats as a bitwise select on a mask (see above);
/// integers and bools keep the conditional operator, which g++ vectorises.
template <class T> PK_VM_INLINE T select(bool C, T A, T B) {
  if constexpr (std::is_same_v<T, float>)
    return detail::sel(0u - uint32_t(C), A, B);
  else if constexpr (std::is_same_v<T, double>)
    return detail::sel(uint64_t(0) - uint64_t(C), A, B);
  else
    return C ? A : B;
}

// =============================================================================
// Fused flavour: exp with explicit fused multiply-adds.
// =============================================================================
//
// The generated CPU kernels are compiled with fp-contract=off so that user
// arithmetic gives the same bits on every CPU (<pk/dispatch.h>); that also
// keeps the compiler from fusing the steps of these functions, which is
// 20-30% of an exp-bound loop. The fused versions spell the fused steps out
// (__builtin_fma), so they are fused whatever fp-contract says. They are only
// fast where the code is compiled for FMA (x86-64-v3 and v4, the dispatch
// clones that pk::rt::run_cpu picks them for): elsewhere each step is a libm
// call. Their results differ from the plain ones in the last bit for some x
// and meet the same bounds (docs/vmath.md, test/unit/VmathTest.cpp).

namespace detail {

PK_VM_INLINE float fmadd(float A, float B, float C) {
  return __builtin_fmaf(A, B, C);
}
PK_VM_INLINE double fmadd(double A, double B, double C) {
  return __builtin_fma(A, B, C);
}

/// expPoly by Horner's rule, one fused step per coefficient.
PK_VM_INLINE float expPolyFused(float R) {
  float P = fmadd(R, 0x1.a072c0p-13f, 0x1.6d42cap-10f);
  P = fmadd(R, P, 0x1.11114cp-7f);
  P = fmadd(R, P, 0x1.5554eap-5f);
  P = fmadd(R, P, 0x1.555556p-3f);
  return fmadd(R, P, 0x1.0p-1f);
}
PK_VM_INLINE double expPolyFused(double R) {
  double P = fmadd(R, 0x1.1f19f4e1760fcp-29, 0x1.af4db8a8c3dc6p-26);
  P = fmadd(R, P, 0x1.27e510da1d8dfp-22);
  P = fmadd(R, P, 0x1.71de024b41060p-19);
  P = fmadd(R, P, 0x1.a01a019062695p-16);
  P = fmadd(R, P, 0x1.a01a01abdf014p-13);
  P = fmadd(R, P, 0x1.6c16c16c1a073p-10);
  P = fmadd(R, P, 0x1.11111111100eep-7);
  P = fmadd(R, P, 0x1.555555555554ep-5);
  P = fmadd(R, P, 0x1.5555555555557p-3);
  return fmadd(R, P, 0x1.0p-1);
}

/// 1 + (e^r - 1) for the fused exp pair, r = x - k ln2 with k = T - Shifter
/// (T = x log2e + Shifter, rounded to an integer by the addition).
PK_VM_INLINE float expFusedMantissa(float X, float T, float Shifter) {
  const float K = T - Shifter;
  const float R = fmadd(-K, FLn2Lo, fmadd(-K, FLn2Hi, X));
  return 1.0f + fmadd(R * R, expPolyFused(R), R);
}
/// The shifter plus 151 (= 127 + 24): x log2e + FShift151 rounds to the same
/// integer k as with FShift (151 is an integer, and x log2e is never a tie
/// for |x| < 2^22), and its low bits hold k + 151, the exponent field of
/// 2^(k + 24): one shift makes the scale.
constexpr float FShift151 = 0x1.8p23f + 151.0f;
} // namespace detail

namespace fused {

/// exp_nonpos with fused steps: the reduction x - k ln2 and the polynomial.
/// The scale is one shift: (1 + e) 2^(k + 24) is exact (a normal float for
/// k >= -150, x >= -104), and the product with 2^-24 rounds once, so the
/// result is ldexp2's (fused exp's bits) while k + 151 <= 254, i.e. for
/// every x <= 71 and NaN; pkc calls it for arguments <= 0. 6 vector
/// instructions fewer than ldexp2's halving (softmax's and logsumexp's exp
/// loop: 33 -> 27 AVX-512 instructions per 16 elements).
PK_VM_INLINE float exp_nonpos(float X) {
  using namespace detail;
  X = X < -104.0f ? -104.0f : X; // a compare and a blend; NaN passes
  const float T = fmadd(X, FLog2e, FShift151);
  return (expFusedMantissa(X, T, FShift151) * f32(bits(T) << 23)) * 0x1p-24f;
}
PK_VM_INLINE double exp_nonpos(double X) {
  using namespace detail;
  X = sel(lt(X, -746.0), -746.0, X);
  const double T = fmadd(X, DLog2e, DShift);
  const double K = T - DShift;
  const double R = fmadd(-K, DLn2Lo, fmadd(-K, DLn2Hi, X));
  const double E = fmadd(R * R, expPolyFused(R), R);
  return ldexp2(1.0 + E, bits(T) - bits(DShift));
}

/// exp with fused steps.
PK_VM_INLINE float exp(float X) {
  using namespace detail;
  X = sel(gt(X, 88.8f), 88.8f, X);
  X = sel(lt(X, -104.0f), -104.0f, X);
  const float T = fmadd(X, FLog2e, FShift);
  return ldexp2(expFusedMantissa(X, T, FShift), bits(T) - bits(FShift));
}
PK_VM_INLINE double exp(double X) {
  return exp_nonpos(detail::sel(detail::gt(X, 710.0), 710.0, X));
}

} // namespace fused

// =============================================================================
// Flavours: the functions as static members, so that a kernel body written
// once (a template over the flavour) can be instantiated with either.
// =============================================================================

/// The functions above, for any CPU.
struct Plain {
#define PK_VM_MEMBER(Name)                                                     \
  template <class T> PK_VM_INLINE T Name(T X) { return vm::Name(X); }
  PK_VM_MEMBER(exp)
  PK_VM_MEMBER(exp_nonpos)
  PK_VM_MEMBER(exp2)
  PK_VM_MEMBER(expm1)
  PK_VM_MEMBER(log)
  PK_VM_MEMBER(log2)
  PK_VM_MEMBER(log1p)
  PK_VM_MEMBER(tanh)
  PK_VM_MEMBER(erf)
  PK_VM_MEMBER(sin)
  PK_VM_MEMBER(cos)
  PK_VM_MEMBER(sigmoid)
  PK_VM_MEMBER(rsqrt)
  PK_VM_MEMBER(sqrt)
#undef PK_VM_MEMBER
  template <class T> PK_VM_INLINE T pow(T X, T Y) { return vm::pow(X, Y); }
  /// A * B + C, rounded twice (fp-contract=off keeps it so in the clones):
  /// the accumulation step of the products pkc writes inline (attention's
  /// q . k and p v), whose Fused version rounds once.
  template <class T> PK_VM_INLINE T madd(T A, T B, T C) { return A * B + C; }
};

/// The fused versions where there is one (exp, exp_nonpos), else Plain's.
/// Only for code compiled for FMA (see "Fused flavour" above).
struct Fused : Plain {
  template <class T> PK_VM_INLINE T exp(T X) { return fused::exp(X); }
  template <class T> PK_VM_INLINE T exp_nonpos(T X) {
    return fused::exp_nonpos(X);
  }
  /// One fused multiply-add: a sum of products as pk::rt::gemm's
  /// micro-kernels compute it on these CPUs (the last bit may differ from
  /// Plain's, as a product's does between gemm levels).
  template <class T> PK_VM_INLINE T madd(T A, T B, T C) {
    return detail::fmadd(A, B, C);
  }
};

/// The flavour for code compiled once, for the file's own flags.
#if PK_VM_HAVE_FMA
using Native = Fused;
#else
using Native = Plain;
#endif

} // namespace pk::vm

#undef PK_VM_INLINE

#endif // PK_VMATH_H
