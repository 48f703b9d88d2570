//===- HalfTest.cpp - pk::half and pk::bfloat16 conversions ---------------===//
//
// The conversions of <pk/half.h> against references: every one of the 65536
// bit patterns of each type goes to float and back (identity, except that a
// NaN becomes quiet), and float -> 16 bits is compared with an independent
// reference over every bit pattern near the interesting boundaries (and with
// g++'s _Float16 where the compiler has it). The eager semantics of 16-bit
// refs (read as float, stores round) are at the end.
//
//===----------------------------------------------------------------------===//

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace pk::lang;

namespace {

uint32_t bitsOf(float F) {
  uint32_t U;
  std::memcpy(&U, &F, 4);
  return U;
}
float fromBits(uint32_t U) {
  float F;
  std::memcpy(&F, &U, 4);
  return F;
}

/// The value of binary16 bits, computed with ldexp (independent of the
/// bit tricks in half.h).
double refHalfValue(uint16_t H) {
  int Sign = H >> 15, Exp = (H >> 10) & 31, Man = H & 1023;
  double V;
  if (Exp == 31)
    V = Man ? NAN : INFINITY;
  else if (Exp == 0)
    V = std::ldexp(Man, -24);
  else
    V = std::ldexp(1024 + Man, Exp - 25);
  return Sign ? -V : V;
}

/// Round-to-nearest-even of a float to `MantBits` bits of mantissa and
/// exponents down to `MinExp` (the smallest normal's exponent; below it the
/// grid is fixed: subnormals), `MaxFinite` the largest finite value.
/// Computed in double on the grid, with the tie rule written out.
double refRound(double X, int MantBits, int MinExp, double MaxFinite) {
  if (std::isnan(X) || std::isinf(X) || X == 0)
    return X;
  double A = std::fabs(X);
  int E = std::ilogb(A);
  if (E < MinExp)
    E = MinExp;
  double Ulp = std::ldexp(1.0, E - MantBits);
  double Q = A / Ulp; // exact in double (a float has 24 bits)
  double Lo = std::floor(Q);
  double R;
  if (Q - Lo > 0.5 || (Q - Lo == 0.5 && std::fmod(Lo, 2.0) != 0))
    R = (Lo + 1) * Ulp;
  else
    R = Lo * Ulp;
  // Overflow: everything at or beyond the midpoint between MaxFinite and
  // the next grid value (MaxFinite + Ulp of its binade) rounds to infinity.
  int EM = std::ilogb(MaxFinite);
  double Mid = MaxFinite + std::ldexp(1.0, EM - MantBits) / 2;
  if (A >= Mid)
    R = INFINITY;
  return X < 0 ? -R : R;
}

double refToHalf(float F) { return refRound(F, 10, -14, 65504.0); }
double refToBf16(float F) {
  return refRound(F, 7, -126, std::ldexp(255.0, 127 - 7));
}

bool sameValue(double A, double B) {
  if (std::isnan(A) || std::isnan(B))
    return std::isnan(A) && std::isnan(B);
  return A == B && std::signbit(A) == std::signbit(B);
}

/// Float bit patterns worth checking: every pattern around the boundaries
/// of both types' ranges and a random sample of the rest.
std::vector<uint32_t> floatSample() {
  std::vector<uint32_t> S;
  for (uint32_t Base :
       {0x00000000u, 0x33000000u, 0x33800000u, 0x38000000u, 0x38800000u,
        0x3f800000u, 0x477fe000u, 0x477ff000u, 0x47800000u, 0x7f7f0000u,
        0x7f7fffffu, 0x7f800000u, 0x7fc00000u, 0x00800000u, 0x00010000u})
    for (uint32_t D = 0; D < 0x4000; ++D)
      for (uint32_t Sign : {0u, 0x80000000u}) {
        S.push_back(Sign | ((Base - 0x2000u + D) & 0x7fffffffu));
      }
  std::mt19937 Rng(7);
  for (int I = 0; I < 2000000; ++I)
    S.push_back(Rng());
  return S;
}

TEST(HalfConversion, EveryHalfRoundTrips) {
  int Nans = 0;
  for (uint32_t B = 0; B < 65536; ++B) {
    const uint16_t H = static_cast<uint16_t>(B);
    const float F = pk::fp16::halfToFloat(H);
    ASSERT_TRUE(sameValue(F, refHalfValue(H))) << std::hex << B;
    const uint16_t Back = pk::fp16::floatToHalf(F);
    if (std::isnan(F)) {
      ++Nans;
      // NaN stays NaN, made quiet, payload kept (the quiet bit aside).
      EXPECT_EQ(Back, H | 0x0200u) << std::hex << B;
    } else {
      ASSERT_EQ(Back, H) << std::hex << B;
    }
  }
  EXPECT_EQ(Nans, 2 * 1023);
}

TEST(HalfConversion, EveryBfloat16RoundTrips) {
  int Nans = 0;
  for (uint32_t B = 0; B < 65536; ++B) {
    const uint16_t H = static_cast<uint16_t>(B);
    const float F = pk::fp16::bfloat16ToFloat(H);
    ASSERT_EQ(bitsOf(F), B << 16);
    const uint16_t Back = pk::fp16::floatToBfloat16(F);
    if (std::isnan(F)) {
      ++Nans;
      EXPECT_EQ(Back, H | 0x0040u) << std::hex << B;
    } else {
      ASSERT_EQ(Back, H) << std::hex << B;
    }
  }
  EXPECT_EQ(Nans, 2 * 127);
}

TEST(HalfConversion, FloatToHalfMatchesReference) {
  for (uint32_t U : floatSample()) {
    const float F = fromBits(U);
    const double Got = pk::fp16::halfToFloat(pk::fp16::floatToHalf(F));
    ASSERT_TRUE(sameValue(Got, refToHalf(F)))
        << std::hex << U << " " << F << " -> " << Got;
  }
}

TEST(HalfConversion, FloatToBfloat16MatchesReference) {
  for (uint32_t U : floatSample()) {
    const float F = fromBits(U);
    const double Got = pk::fp16::bfloat16ToFloat(pk::fp16::floatToBfloat16(F));
    ASSERT_TRUE(sameValue(Got, refToBf16(F)))
        << std::hex << U << " " << F << " -> " << Got;
  }
}

#if defined(__FLT16_MAX__) && !defined(__clang__)
// g++ 12 on x86-64 has _Float16 with IEEE conversions (soft-float or F16C):
// a second, independent reference for float -> half, bit for bit.
TEST(HalfConversion, FloatToHalfMatchesFloat16) {
  for (uint32_t U : floatSample()) {
    const float F = fromBits(U);
    const _Float16 R = static_cast<_Float16>(F);
    uint16_t RB;
    std::memcpy(&RB, &R, 2);
    const uint16_t Got = pk::fp16::floatToHalf(F);
    if (std::isnan(F))
      ASSERT_EQ(Got & 0x7e00u, 0x7e00u) << std::hex << U;
    else
      ASSERT_EQ(Got, RB) << std::hex << U << " " << F;
  }
}
#endif

TEST(HalfConversion, Landmarks) {
  using pk::fp16::floatToBfloat16;
  using pk::fp16::floatToHalf;
  // Ties go to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f), 0x3c00u);
  EXPECT_EQ(floatToHalf(1.0f + 3 * 0x1p-11f), 0x3c02u);
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01u);
  // Largest finite, the overflow threshold (65520 is the tie with 2^16:
  // to even, i.e. infinity), infinities, signed zero.
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bffu);
  EXPECT_EQ(floatToHalf(65519.996f), 0x7bffu);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00u);
  EXPECT_EQ(floatToHalf(1e30f), 0x7c00u);
  EXPECT_EQ(floatToHalf(-INFINITY), 0xfc00u);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000u);
  // Subnormals: the smallest is 2^-24; half of it ties to 0, a bit more
  // rounds up; the largest subnormal and the smallest normal.
  EXPECT_EQ(floatToHalf(0x1p-24f), 0x0001u);
  EXPECT_EQ(floatToHalf(0x1p-25f), 0x0000u);
  EXPECT_EQ(floatToHalf(0x1.000002p-25f), 0x0001u);
  EXPECT_EQ(floatToHalf(3 * 0x1p-25f), 0x0002u);
  EXPECT_EQ(floatToHalf(1023 * 0x1p-24f), 0x03ffu);
  EXPECT_EQ(floatToHalf(0x1p-14f), 0x0400u);
  EXPECT_EQ(pk::fp16::halfToFloat(0x0001u), 0x1p-24f);
  EXPECT_TRUE(std::isnan(pk::fp16::halfToFloat(floatToHalf(NAN))));
  // bfloat16: ties to even, overflow, NaN never becomes infinity.
  EXPECT_EQ(floatToBfloat16(1.0f + 0x1p-8f), 0x3f80u);
  EXPECT_EQ(floatToBfloat16(1.0f + 3 * 0x1p-8f), 0x3f82u);
  EXPECT_EQ(floatToBfloat16(fromBits(0x7f7fffffu)), 0x7f80u);
  EXPECT_EQ(floatToBfloat16(fromBits(0x7f800001u)), 0x7fc0u);
  EXPECT_EQ(floatToBfloat16(fromBits(0xff80ffffu)), 0xffc0u);
}

TEST(HalfType, ClassInterface) {
  static_assert(sizeof(pk::half) == 2 && sizeof(pk::bfloat16) == 2);
  static_assert(std::is_trivially_copyable_v<pk::half>);
  static_assert(std::is_same_v<pk::ComputeType<pk::half>, float>);
  static_assert(std::is_same_v<pk::ComputeType<double>, double>);
  pk::half H(0.1f);
  EXPECT_EQ(H.bits(), 0x2e66u);
  EXPECT_EQ(static_cast<float>(H), pk::fp16::halfToFloat(0x2e66u));
  EXPECT_EQ(pk::to_float(pk::bfloat16::fromBits(0x4049u)), 3.140625f);
}

//===----------------------------------------------------------------------===//
// Eager semantics of 16-bit refs
//===----------------------------------------------------------------------===//

TEST(HalfEager, RefsReadAsFloatAndStoresRound) {
  std::vector<pk::half> X = {pk::half(1.0f), pk::half(2.0f), pk::half(3.0f)};
  std::vector<pk::bfloat16> Y(3);
  In<pk::half> XR(X);
  auto V = XR[_];
  static_assert(std::is_same_v<decltype(V), pk::Array<float>>);
  Out<pk::bfloat16> YR(Y);
  // 1/3 computed in float, then rounded to bfloat16 once by the store.
  YR[_] = V / 3.0f;
  for (int I = 0; I < 3; ++I)
    EXPECT_EQ(Y[I].bits(), pk::fp16::floatToBfloat16((I + 1.0f) / 3.0f));
  // A double value is rounded to float first, then to the 16-bit type.
  YR[_] = cast<double>(V) / 3.0;
  EXPECT_EQ(Y[0].bits(),
            pk::fp16::floatToBfloat16(static_cast<float>(1.0 / 3.0)));
  // out[_] of a 16-bit ref reads as float too.
  static_assert(std::is_same_v<pk::detail::ElemOf<decltype(YR[_])>, float>);
}

TEST(HalfEager, CastRoundsToSixteenBits) {
  pk::Array<float> A({3}, {1.0f + 0x1p-11f, 1.0f + 0x1p-9f, 70000.0f});
  auto H = cast<pk::half>(A);
  static_assert(std::is_same_v<decltype(H), pk::Array<float>>);
  EXPECT_EQ(H.at(0), 1.0f);
  EXPECT_EQ(H.at(1), 1.0f + 0x1p-9f);
  EXPECT_TRUE(std::isinf(H.at(2)));
  auto B = cast<pk::bfloat16>(A);
  EXPECT_EQ(B.at(0), 1.0f);
  EXPECT_EQ(B.at(2), 70144.0f);
}

TEST(HalfEager, RefLabelsNameTheType) {
  std::vector<pk::half> X(2);
  std::vector<pk::half> Y(3);
  In<pk::half> XR(X);
  Out<pk::half> YR(Y);
  try {
    YR[_] = XR[_];
    FAIL() << "no ShapeError";
  } catch (const pk::ShapeError &E) {
    EXPECT_NE(std::string(E.what()).find("In<pk::half, 1>[2]"),
              std::string::npos)
        << E.what();
  }
}

} // namespace
