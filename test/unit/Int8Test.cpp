//===- Int8Test.cpp - Eager semantics of int8_t and uint8_t refs ----------===//
//
// int8_t and uint8_t are storage types (language.md §1): `ref[_]` reads
// them as Array<int32_t> (C++'s integral promotion), arithmetic promotes as
// in C++, a store converts back modulo 2^8, cast<int8_t>/cast<uint8_t> give
// the int32_t value wrapped to the 8-bit range, reductions follow the
// integer rule, and matmul of 8-bit operands sums int64_t products into an
// int32_t result.
//
//===----------------------------------------------------------------------===//
#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

using namespace pk::lang;

namespace {

TEST(Int8Eager, RefsReadAsInt32) {
  std::vector<int8_t> X = {-128, -1, 0, 127};
  std::vector<uint8_t> U = {0, 1, 200, 255};
  In<int8_t> XR(X);
  In<uint8_t> UR(U);
  auto V = XR[_];
  auto W = UR[_];
  static_assert(std::is_same_v<decltype(V), pk::Array<int32_t>>);
  static_assert(std::is_same_v<decltype(W), pk::Array<int32_t>>);
  EXPECT_EQ(V.at(0), -128);
  EXPECT_EQ(V.at(3), 127);
  EXPECT_EQ(W.at(3), 255);
  // out[_] of an 8-bit ref reads as int32_t too.
  std::vector<int8_t> Y(4);
  Out<int8_t> YR(Y);
  static_assert(std::is_same_v<pk::detail::ElemOf<decltype(YR[_])>, int32_t>);
}

TEST(Int8Eager, ArithmeticFollowsCppPromotions) {
  std::vector<int8_t> A = {127, -128, 100};
  std::vector<int8_t> B = {1, -1, 100};
  std::vector<uint8_t> U = {255, 0, 128};
  In<int8_t> AR(A), BR(B);
  In<uint8_t> UR(U);
  // int8 + int8 is int32: no wrap in the value.
  auto S = AR[_] + BR[_];
  static_assert(std::is_same_v<decltype(S), pk::Array<int32_t>>);
  EXPECT_EQ(S.at(0), 128);
  EXPECT_EQ(S.at(1), -129);
  auto P = AR[_] * BR[_];
  EXPECT_EQ(P.at(2), 10000);
  // int8 * float is float.
  auto F = AR[_] * 0.5f;
  static_assert(std::is_same_v<decltype(F), pk::Array<float>>);
  EXPECT_EQ(F.at(1), -64.0f);
  // uint8 with int8 and int32 is int32 (uint8 promotes to int, not
  // unsigned): 0 - 1 is -1, not 4294967295.
  auto D = UR[_] - BR[_] * 2;
  static_assert(std::is_same_v<decltype(D), pk::Array<int32_t>>);
  EXPECT_EQ(D.at(0), 253);
  EXPECT_EQ(D.at(1), 2);
  EXPECT_EQ((UR[_] - 256).at(1), -256);
  // With int64_t it is int64_t, with double double.
  static_assert(std::is_same_v<decltype(UR[_] + cast<int64_t>(AR[_])),
                               pk::Array<int64_t>>);
  static_assert(std::is_same_v<decltype(UR[_] * 1.5), pk::Array<double>>);
}

TEST(Int8Eager, StoresWrapModulo256) {
  std::vector<int32_t> X = {127, 128, 255, 256, -129, 1000, -1};
  std::vector<int8_t> Q(X.size());
  std::vector<uint8_t> U(X.size());
  In<int32_t> XR(X);
  Out<int8_t> QR(Q);
  Out<uint8_t> UR(U);
  QR[_] = XR[_];
  UR[_] = XR[_];
  const int8_t WantQ[] = {127, -128, -1, 0, 127, -24, -1};
  const uint8_t WantU[] = {127, 128, 255, 0, 127, 232, 255};
  for (size_t I = 0; I < X.size(); ++I) {
    EXPECT_EQ(Q[I], WantQ[I]) << I;
    EXPECT_EQ(U[I], WantU[I]) << I;
  }
  // Reading an 8-bit Out after writing it gives the wrapped value.
  auto R = QR[_];
  EXPECT_EQ(R.at(1), -128);
  // A scalar store wraps too; a float or int64_t value converts to int32_t
  // first (what the compiled code does).
  QR[_] = 300;
  EXPECT_EQ(Q[0], 44);
  QR[_] = cast<float>(XR[_]) * 2.0f;
  EXPECT_EQ(Q[1], 0);   // 256
  EXPECT_EQ(Q[5], -48); // 2000 = 7 * 256 + 208
  QR[_] = cast<int64_t>(XR[_]) + int64_t(1);
  EXPECT_EQ(Q[3], 1); // 257
}

TEST(Int8Eager, CastWrapsToTheEightBitRange) {
  pk::Array<int32_t> A({6}, {127, 128, 255, 256, -129, -2147483647 - 1});
  auto C = cast<int8_t>(A);
  static_assert(std::is_same_v<decltype(C), pk::Array<int32_t>>);
  EXPECT_EQ(C.label(), "cast<int8_t>(Array<int32_t>)");
  const int32_t WantC[] = {127, -128, -1, 0, 127, 0};
  for (int I = 0; I < 6; ++I)
    EXPECT_EQ(C.at(I), WantC[I]) << I;
  auto U = cast<uint8_t>(A);
  static_assert(std::is_same_v<decltype(U), pk::Array<int32_t>>);
  const int32_t WantU[] = {127, 128, 255, 0, 127, 0};
  for (int I = 0; I < 6; ++I)
    EXPECT_EQ(U.at(I), WantU[I]) << I;
  // Floats in the range of int32_t truncate to int32_t, then wrap; bool is
  // 0 or 1.
  pk::Array<float> F({4}, {-1.5f, 200.75f, 1000.0f, -0.25f});
  auto CF = cast<int8_t>(F);
  EXPECT_EQ(CF.at(0), -1);
  EXPECT_EQ(CF.at(1), -56);
  EXPECT_EQ(CF.at(2), -24);
  EXPECT_EQ(CF.at(3), 0);
  EXPECT_EQ(cast<uint8_t>(F).at(0), 255);
  EXPECT_EQ(cast<uint8_t>(F > 0.0f).at(1), 1);
}

TEST(Int8Eager, ReductionsFollowTheIntegerRule) {
  // [2, 3]: sums accumulate in int64_t and are int32_t values, means are
  // double, max/min keep int32_t.
  std::vector<int8_t> X = {-128, -128, -128, 127, 1, 3};
  In<int8_t, 2> XR(X.data(), {2, 3});
  auto S = sum(XR[_], -1);
  static_assert(std::is_same_v<decltype(S), pk::Array<int32_t>>);
  EXPECT_EQ(S.at(0), -384);
  EXPECT_EQ(S.at(1), 131);
  auto M = mean(XR[_], -1);
  static_assert(std::is_same_v<decltype(M), pk::Array<double>>);
  EXPECT_EQ(M.at(0), -128.0);
  EXPECT_DOUBLE_EQ(M.at(1), 131.0 / 3.0);
  auto Mx = max(XR[_], 0);
  static_assert(std::is_same_v<decltype(Mx), pk::Array<int32_t>>);
  EXPECT_EQ(Mx.at(0), 127);
  EXPECT_EQ(min(XR[_]).item(), -128);
  EXPECT_EQ(sum(XR[_]).item(), -253);
  std::vector<uint8_t> U(1000, 255);
  In<uint8_t> UR(U);
  EXPECT_EQ(sum(UR[_]).item(), 255000);
  EXPECT_EQ(mean(UR[_]).item(), 255.0);
}

TEST(Int8Eager, MatmulOfInt8IsInt32) {
  // [2, 3] x [3, 2] of int8 values: int32 products, no 8-bit wrap.
  std::vector<int8_t> A = {127, -128, 1, 2, 3, 4};
  std::vector<int8_t> B = {127, 1, 127, 2, -128, 3};
  In<int8_t, 2> AR(A.data(), {2, 3}), BR(B.data(), {3, 2});
  auto C = matmul(AR[_], BR[_]);
  static_assert(std::is_same_v<decltype(C), pk::Array<int32_t>>);
  EXPECT_EQ(C(0, 0), 127 * 127 - 128 * 127 - 128);
  EXPECT_EQ(C(0, 1), 127 - 256 + 3);
  EXPECT_EQ(C(1, 0), 2 * 127 + 3 * 127 - 4 * 128);
  // Float activations with dequantised weights: float.
  pk::Array<float> X({1, 3}, {1.0f, 0.5f, 0.25f});
  auto Y = matmul(X, cast<float>(BR[_]) * 0.5f);
  static_assert(std::is_same_v<decltype(Y), pk::Array<float>>);
  EXPECT_EQ(Y(0, 0), (127.0f + 0.5f * 127.0f - 0.25f * 128.0f) * 0.5f);
}

TEST(Int8Eager, RefLabelsNameTheType) {
  std::vector<int8_t> X(2);
  std::vector<uint8_t> Y(3);
  In<int8_t> XR(X);
  Out<uint8_t> YR(Y);
  try {
    YR[_] = XR[_];
    FAIL() << "no ShapeError";
  } catch (const pk::ShapeError &E) {
    EXPECT_NE(std::string(E.what()).find("In<int8_t, 1>[2]"), std::string::npos)
        << E.what();
    EXPECT_NE(std::string(E.what()).find("Out<uint8_t, 1>[3]"),
              std::string::npos)
        << E.what();
  }
}

} // namespace
