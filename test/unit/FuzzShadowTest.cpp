//===- FuzzShadowTest.cpp - The fuzz shadows' bounds at special values ----===//
//
// test/fuzz/harness/fuzz_shadow.h bounds |eager - compiled| for the random
// kernels. Where a value may be NaN on one side only (0 * inf with the 0
// uncertain, seed 9818 k26) its bound is NaN, and the harness then accepts a
// NaN on one side; everywhere else NaN-ness must match exactly, so no other
// bound may come out NaN. These tests pin both halves on scalars.
//
//===----------------------------------------------------------------------===//

#include "fuzz_shadow.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace {

constexpr double Inf = std::numeric_limits<double>::infinity();
constexpr double NaN = std::numeric_limits<double>::quiet_NaN();

fzs::E err(double X) { return fzs::val(X); }
double at(const fzs::E &B) {
  EXPECT_EQ(B.size(), 1);
  return B.data()[0];
}
pk::Array<double> arr(std::initializer_list<double> L) {
  return {std::vector<int64_t>{int64_t(L.size())}, L};
}

TEST(FuzzShadow, MagnitudeOfNaNIsZero) {
  EXPECT_EQ(at(fzs::mag(NaN)), 0.0);
  EXPECT_EQ(at(fzs::mag(-Inf)), Inf);
  EXPECT_EQ(at(fzs::mag(-2.5)), 2.5);
}

TEST(FuzzShadow, UncertainZeroTimesInfinityMayBeNaN) {
  // seed 9818: d = x - mean(x) is 0 in eager and 1e-15 compiled; d * inf
  // is NaN in eager and inf compiled
  EXPECT_TRUE(std::isnan(
      at(fzs::mul_err(0.0, Inf, err(1e-15), fzs::zero(), fzs::U32, NaN))));
  EXPECT_TRUE(std::isnan(
      at(fzs::mul_err(Inf, 1e-16, fzs::zero(), err(1e-15), fzs::U32, Inf))));
  // an operand that may overflow to an infinity, times an exact 0
  EXPECT_TRUE(std::isnan(
      at(fzs::mul_err(3e38, 0.0, err(Inf), fzs::zero(), fzs::U32, 0.0))));
}

TEST(FuzzShadow, DeterminedProductsAreNotMayBeNaN) {
  // exact 0 * exact inf: NaN on both sides, its NaN-ness checked
  const double B0 =
      at(fzs::mul_err(0.0, Inf, fzs::zero(), fzs::zero(), fzs::U32, NaN));
  EXPECT_FALSE(std::isnan(B0));
  // an inexact operand that cannot be 0, times inf: inf on both sides
  const double B1 =
      at(fzs::mul_err(1.0, Inf, err(1e-6), fzs::zero(), fzs::U32, Inf));
  EXPECT_FALSE(std::isnan(B1));
  // a NaN operand with a bound: NaN on both sides
  const double B2 =
      at(fzs::mul_err(NaN, Inf, err(1e-6), fzs::zero(), fzs::U32, NaN));
  EXPECT_FALSE(std::isnan(B2));
  // an error of 0 beside an infinity adds nothing (was 0 * inf = NaN)
  const double B3 =
      at(fzs::mul_err(2.0, Inf, err(0.0), fzs::zero(), fzs::U32, Inf));
  EXPECT_FALSE(std::isnan(B3));
  EXPECT_EQ(at(fzs::mul_err(2.0, 3.0, err(1e-7), fzs::zero(), fzs::U32, 6.0)),
            3e-7 + fzs::U32 * 6.0);
}

TEST(FuzzShadow, MayBeNaNPropagates) {
  EXPECT_TRUE(std::isnan(
      at(fzs::add_err(1.0, 2.0, err(NaN), err(0.0), fzs::U32, 3.0))));
  EXPECT_TRUE(std::isnan(
      at(fzs::mul_err(1.0, 2.0, fzs::zero(), err(NaN), fzs::U32, 2.0))));
  EXPECT_TRUE(std::isnan(at(fzs::exp_err(1.0, err(NaN), 8 * fzs::U32))));
  EXPECT_TRUE(std::isnan(at(fzs::sqrt_err(1.0, 1.0, err(NaN), fzs::U32))));
  EXPECT_TRUE(std::isnan(at(fzs::sum_err(arr({1.0, 2.0}), arr({0.0, NaN}), 0,
                                         false, fzs::U32, 3.0))));
}

TEST(FuzzShadow, InfinityMinusInfinity) {
  // exact +inf + exact -inf: NaN on both sides
  EXPECT_FALSE(std::isnan(
      at(fzs::add_err(Inf, -Inf, fzs::zero(), fzs::zero(), fzs::U32, NaN))));
  // a value that may overflow, plus -inf: -inf or NaN
  EXPECT_TRUE(std::isnan(
      at(fzs::add_err(3e38, -Inf, err(Inf), fzs::zero(), fzs::U32, -Inf))));
  // a finite uncertain value plus inf: inf on both sides
  EXPECT_FALSE(std::isnan(
      at(fzs::add_err(1.0, Inf, err(1e-6), fzs::zero(), fzs::U32, Inf))));
  // sums: two terms that may be infinite, one of them uncertain
  EXPECT_TRUE(std::isnan(at(fzs::sum_err(arr({Inf, 3e38}), arr({0.0, Inf}), 0,
                                         false, fzs::U32, Inf))));
  EXPECT_FALSE(std::isnan(at(fzs::sum_err(arr({Inf, 1.0}), arr({0.0, 1e-6}), 0,
                                          false, fzs::U32, Inf))));
  EXPECT_FALSE(std::isnan(at(fzs::sum_err(arr({Inf, -Inf}), arr({0.0, 0.0}), 0,
                                          false, fzs::U32, NaN))));
}

TEST(FuzzShadow, Quotients) {
  // exact 0 / exact 0 and exact a / exact 0: determined
  EXPECT_FALSE(std::isnan(
      at(fzs::div_err(0.0, 0.0, fzs::zero(), fzs::zero(), fzs::U32, NaN))));
  EXPECT_FALSE(std::isnan(
      at(fzs::div_err(1.0, 0.0, fzs::zero(), fzs::zero(), fzs::U32, Inf))));
  // 0 / 0 within the bounds, inf / inf within the bounds
  EXPECT_TRUE(std::isnan(
      at(fzs::div_err(1e-20, 0.0, err(1e-15), err(1e-15), fzs::U32, Inf))));
  EXPECT_TRUE(std::isnan(
      at(fzs::div_err(Inf, 3e38, fzs::zero(), err(Inf), fzs::U32, Inf))));
  // a divisor that may be 0 under a nonzero numerator: unbounded, not NaN
  const double B =
      at(fzs::div_err(1.0, 1e-20, fzs::zero(), err(1e-15), fzs::U32, 1e20));
  EXPECT_EQ(B, Inf);
}

TEST(FuzzShadow, FunctionsAtTheirPoles) {
  // exp(-inf) with an unbounded argument: unbounded, not NaN
  EXPECT_EQ(at(fzs::exp_err(0.0, err(Inf), 8 * fzs::U32)), Inf);
  // log(0), rsqrt(0), pow(0, c) of exact arguments: determined
  EXPECT_FALSE(
      std::isnan(at(fzs::log_err(-Inf, 0.0, err(0.0), 8 * fzs::U32, 1.0))));
  EXPECT_FALSE(
      std::isnan(at(fzs::rsqrt_err(Inf, 0.0, err(0.0), 8 * fzs::U32))));
  EXPECT_FALSE(
      std::isnan(at(fzs::pow_err(0.0, 0.0, err(0.0), 2.0, 8 * fzs::U32))));
  EXPECT_FALSE(std::isnan(at(fzs::expm1_err(Inf, err(0.0), 8 * fzs::U32))));
}

TEST(FuzzShadow, EmptyMeanIsNaNOnBothSides) {
  const pk::Array<double> Empty(std::vector<int64_t>{0});
  const double B = at(fzs::mean_err(Empty, fzs::zero(), 0, false, fzs::U32,
                                    pk::mean(Empty, 0)));
  EXPECT_EQ(B, 0.0);
}

} // namespace
