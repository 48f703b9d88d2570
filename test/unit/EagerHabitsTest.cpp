//===- EagerHabitsTest.cpp - Compound assignment and math on scalars ------===//
//
// The eager semantics of two things C++ programmers write by habit
// (language.md §2 and §3): `ref[_] += v` (a store of `ref[_] + v`) and
// `t += v` on a local (`t = t + v`, storing nothing), and pk's math
// functions on plain C++ scalars (`exp(eps)`, `rsqrt(cast<float>(n))`), whose
// types follow the array versions' element types.
//
//===----------------------------------------------------------------------===//

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

using namespace pk::lang;
using pk::ShapeError;

namespace {

using Shape = std::vector<int64_t>;

template <class T> pk::Array<T> arr(Shape S, std::initializer_list<T> V) {
  return pk::Array<T>(std::move(S), V);
}

template <class T>
void expectValues(const std::vector<T> &Got,
                  std::initializer_list<std::type_identity_t<T>> Want) {
  ASSERT_EQ(Got.size(), Want.size());
  size_t I = 0;
  for (T W : Want) {
    EXPECT_EQ(Got[I], W) << "at " << I;
    ++I;
  }
}

/// The message of the pk::ShapeError that Fn throws.
template <class F> std::string shapeError(F &&Fn) {
  try {
    Fn();
  } catch (const ShapeError &E) {
    return E.what();
  }
  ADD_FAILURE() << "no pk::ShapeError thrown";
  return "";
}

template <class X> X val();

//===----------------------------------------------------------------------===//
// Compound assignment
//===----------------------------------------------------------------------===//

// `out[_] += v` is a store (void, like `out[_] = v`); on a local it is the
// local, of its own type.
static_assert(
    std::is_void_v<decltype(val<pk::WholeProxy<float, 1>>() += 1.0f)>);
static_assert(std::is_same_v<decltype(val<pk::Array<int32_t> &>() += 0.5),
                             pk::Array<int32_t> &>);
static_assert(std::is_same_v<decltype(val<pk::WholeProxy<float, 2> &>() *=
                                      val<pk::Array<double>>()),
                             pk::WholeProxy<float, 2> &>);

TEST(EagerCompound, StoresOnAnInOut) {
  std::vector<float> Acc = {1, 2, 3};
  InOut<float> A(Acc.data(), {3}, "acc");
  A[_] += arr<float>({3}, {10, 20, 30});
  expectValues(Acc, {11, 22, 33});
  A[_] -= 1;
  expectValues(Acc, {10, 21, 32});
  A[_] *= 2.0; // a weak double scalar: computed in float
  expectValues(Acc, {20, 42, 64});
  A[_] /= arr<float>({3}, {4, 7, 8});
  expectValues(Acc, {5, 6, 8});

  std::vector<int32_t> Ks = {7, -7, 9};
  InOut<int32_t> K(Ks.data(), {3}, "k");
  K[_] %= 3; // truncating, as C++
  expectValues(Ks, {1, -1, 0});
  // int32 + float array is float; the store converts back (truncating).
  K[_] += arr<float>({3}, {0.5f, 1.75f, -2.5f});
  expectValues(Ks, {1, 0, -2});
}

TEST(EagerCompound, StoresOnAnOutAfterAWrite) {
  std::vector<double> Ys(4, -1.0);
  Out<double, 2> Y(Ys.data(), {2, 2}, "y");
  Y[_] = arr<double>({2}, {1, 2});
  Y[_] += Y[_]; // reads the written value
  expectValues(Ys, {2, 4, 2, 4});
}

TEST(EagerCompound, BroadcastsTheValueToTheRef) {
  std::vector<float> Ms = {1, 2, 3, 4, 5, 6};
  InOut<float, 2> M(Ms.data(), {2, 3}, "m");
  M[_] += arr<float>({3}, {10, 20, 30}); // a row to each row
  expectValues(Ms, {11, 22, 33, 14, 25, 36});
  M[_] -= arr<float>({2, 1}, {1, 2}); // a column to each column
  expectValues(Ms, {10, 21, 32, 12, 23, 34});
  M[_] *= pk::Array<float>({}, {2}); // rank 0
  expectValues(Ms, {20, 42, 64, 24, 46, 68});
}

TEST(EagerCompound, ShapeErrorsWriteNothing) {
  std::vector<float> Acc = {1, 2, 3};
  InOut<float> A(Acc.data(), {3}, "acc");
  // v that cannot broadcast against the ref at all.
  EXPECT_EQ(shapeError([&] {
              A[_] += arr<float>({4}, {1, 2, 3, 4}).named("v");
            }),
            "cannot broadcast v[4] against acc[3]");
  // v of higher rank: acc + v has v's shape, which the store cannot narrow.
  EXPECT_EQ(shapeError([&] {
              A[_] += pk::Array<float>({2, 3}, "v");
            }),
            "cannot broadcast add(acc, v)[2, 3] to acc[3]");
  expectValues(Acc, {1, 2, 3});
}

TEST(EagerCompound, SixteenBitRefsComputeInFloat) {
  std::vector<pk::half> Hs = {pk::half(1.0f), pk::half(2.0f)};
  InOut<pk::half> H(Hs.data(), {2}, "h");
  H[_] += 0.5f;
  EXPECT_EQ(float(Hs[0]), 1.5f);
  EXPECT_EQ(float(Hs[1]), 2.5f);
}

TEST(EagerCompound, LocalsHaveValueSemantics) {
  std::vector<float> Os = {1, 2, 3};
  Out<float> O(Os.data(), {3}, "o");
  auto T = O[_]; // a snapshot of the ref
  T += 10;       // t = t + 10: a new value, nothing stored
  T *= arr<float>({3}, {1, 2, 3});
  EXPECT_EQ(T.at(0), 11.0f);
  EXPECT_EQ(T.at(2), 39.0f);
  expectValues(Os, {1, 2, 3});

  auto U = T * 2; // an Array local
  U -= 2;
  EXPECT_EQ(U.at(0), 20.0f);
  EXPECT_EQ(T.at(0), 11.0f);

  // `int t; t += 0.5;` keeps t an int: the sum is converted back.
  pk::Array<int32_t> K = arr<int32_t>({2}, {1, -1});
  K += 0.75;
  EXPECT_EQ(K.at(0), 1);
  EXPECT_EQ(K.at(1), 0);
  K %= 2;
  K += arr<int32_t>({2, 1}, {10, 20}); // a local may change shape
  EXPECT_EQ(K.shape(), (Shape{2, 2}));
  EXPECT_EQ(K(1, 0), 21);
}

//===----------------------------------------------------------------------===//
// Math on scalars
//===----------------------------------------------------------------------===//

// The types of the array versions' elements: float stays float, double
// double, integers and bool compute in double.
static_assert(std::is_same_v<decltype(exp(1.0f)), float>);
static_assert(std::is_same_v<decltype(exp(1.0)), double>);
static_assert(std::is_same_v<decltype(exp(1)), double>);
static_assert(std::is_same_v<decltype(exp(int64_t{1})), double>);
static_assert(std::is_same_v<decltype(sqrt(true)), double>);
static_assert(std::is_same_v<decltype(rsqrt(2.0f)), float>);
static_assert(std::is_same_v<decltype(sigmoid(0.0)), double>);
static_assert(std::is_same_v<decltype(floor(3)), double>);
static_assert(std::is_same_v<decltype(tanh(0.5L)), double>);
static_assert(std::is_same_v<decltype(abs(-1.5f)), float>);
static_assert(std::is_same_v<decltype(abs(-1)), int32_t>);
static_assert(std::is_same_v<decltype(abs(int64_t{-1})), int64_t>);
static_assert(std::is_same_v<decltype(abs(true)), int32_t>);
static_assert(std::is_same_v<decltype(pow(2.0f, 3)), float>);
static_assert(std::is_same_v<decltype(pow(2, 3)), double>);
static_assert(std::is_same_v<decltype(pow(2.0f, 0.5)), double>);
static_assert(std::is_same_v<decltype(maximum(2.0f, 3)), float>);
static_assert(std::is_same_v<decltype(minimum(2, int64_t{3})), int64_t>);
static_assert(std::is_same_v<decltype(clamp(0.5f, 0, 1)), float>);
static_assert(std::is_same_v<decltype(cast<float>(int64_t{3})), float>);
static_assert(std::is_same_v<decltype(cast<int32_t>(2.5)), int32_t>);
static_assert(std::is_same_v<decltype(cast<pk::half>(2.5)), float>);
// Arrays still give arrays.
static_assert(
    std::is_same_v<decltype(exp(val<pk::Array<float>>())), pk::Array<float>>);

TEST(EagerScalarMath, ValuesAreTheLibrarysInTheArgumentsPrecision) {
  const float F = 0.1f;
  EXPECT_EQ(exp(F), std::exp(F)); // expf
  EXPECT_EQ(exp(0.1), std::exp(0.1));
  EXPECT_EQ(exp(1), std::exp(1.0));
  EXPECT_EQ(exp2(3.0f), 8.0f);
  EXPECT_EQ(log(F), std::log(F));
  EXPECT_EQ(log2(8), 3.0);
  EXPECT_EQ(log1p(F), std::log1p(F));
  EXPECT_EQ(expm1(F), std::expm1(F));
  EXPECT_EQ(sqrt(2.0f), std::sqrt(2.0f));
  EXPECT_EQ(rsqrt(4.0f), 0.5f);
  EXPECT_EQ(sin(F), std::sin(F));
  EXPECT_EQ(cos(F), std::cos(F));
  EXPECT_EQ(tanh(F), std::tanh(F));
  EXPECT_EQ(erf(F), std::erf(F));
  EXPECT_EQ(sigmoid(0.0f), 0.5f);
  EXPECT_EQ(floor(-1.5f), -2.0f);
  EXPECT_EQ(ceil(-1.5), -1.0);
  EXPECT_EQ(abs(-0.5f), 0.5f); // not ::abs(int)
  EXPECT_EQ(abs(-3), 3);
  EXPECT_EQ(pow(2.0f, 10), 1024.0f);
  EXPECT_EQ(maximum(1.0f, 2.0), 2.0);
  EXPECT_EQ(minimum(1, 2), 1);
  EXPECT_EQ(clamp(5, 0, 3), 3);
  EXPECT_EQ(clamp(-0.5f, 0.0f, 1.0f), 0.0f);
  // NaN propagates as in the array versions (numpy.maximum).
  const float NaN = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(maximum(NaN, 1.0f)));
  EXPECT_TRUE(std::isnan(minimum(1.0f, NaN)));
  // cast converts as the array cast does.
  EXPECT_EQ(cast<int32_t>(-1.7f), -1);
  EXPECT_EQ(cast<bool>(0.5), true);
  EXPECT_EQ(cast<float>(int64_t{1} << 40), 1099511627776.0f);
  EXPECT_EQ(cast<pk::half>(1.0f + 1.0f / 4096), 1.0f); // rounded to half
  EXPECT_EQ(cast<pk::bfloat16>(1.0f + 1.0f / 1024), 1.0f);
}

TEST(EagerScalarMath, ScalarsMixWithArrays) {
  // What the kernels of test/e2e/kernels/habits.cpp write.
  auto X = arr<float>({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto Y = X * rsqrt(cast<float>(X.extent(1)));
  EXPECT_EQ(Y.at(1), 1.0f); // 2 / sqrt(4)
  const float Eps = 0.0f;
  auto Z = X * exp(Eps) + sqrt(maximum(Eps, 1.0f));
  static_assert(std::is_same_v<decltype(Z), pk::Array<float>>);
  EXPECT_EQ(Z.at(0), 2.0f);
}

} // namespace
