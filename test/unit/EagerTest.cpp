//===- EagerTest.cpp - The eager (reference) semantics of <pk/pk.h> -------===//
//
// Every expected value below is what NumPy computes for the same expression
// (worked out by hand and written as a literal), except where pk documents a
// difference on purpose: integer / and % truncate toward zero like C++, and a
// float literal never widens a float array.
//
//===----------------------------------------------------------------------===//

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using namespace pk::lang;
using pk::ShapeError;

namespace {

using Shape = std::vector<int64_t>;
const float NaNf = std::numeric_limits<float>::quiet_NaN();

/// Checks shape and values exactly (floats within 4 ULPs).
template <class T>
void expectArray(const pk::Array<T> &A, const Shape &S,
                 std::initializer_list<std::type_identity_t<T>> Values) {
  ASSERT_EQ(A.shape(), S) << A.label();
  ASSERT_EQ(A.size(), static_cast<int64_t>(Values.size())) << A.label();
  int64_t I = 0;
  for (T V : Values) {
    if constexpr (std::is_same_v<T, float>)
      EXPECT_FLOAT_EQ(A.at(I), V) << A.label() << " at " << I;
    else if constexpr (std::is_same_v<T, double>)
      EXPECT_DOUBLE_EQ(A.at(I), V) << A.label() << " at " << I;
    else
      EXPECT_EQ(A.at(I), V) << A.label() << " at " << I;
    ++I;
  }
}

template <class T>
void expectNear(const pk::Array<T> &A, const Shape &S,
                std::initializer_list<double> Values, double Tol) {
  ASSERT_EQ(A.shape(), S) << A.label();
  ASSERT_EQ(A.size(), static_cast<int64_t>(Values.size())) << A.label();
  int64_t I = 0;
  for (double V : Values) {
    EXPECT_NEAR(static_cast<double>(A.at(I)), V, Tol)
        << A.label() << " at " << I;
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

template <class T> pk::Array<T> arr(Shape S, std::initializer_list<T> V) {
  return pk::Array<T>(std::move(S), V);
}

/// NumPy: a = (np.arange(24) * 7 % 24).reshape(2, 3, 4)
pk::Array<int32_t> perm234() {
  return pk::Array<int32_t>({2, 3, 4},
                            {0,  7,  14, 21, 4,  11, 18, 1,  8,  15, 22, 5,
                             12, 19, 2,  9,  16, 23, 6,  13, 20, 3,  10, 17},
                            "a");
}

template <class X> using A = pk::Array<X>;
template <class X> X val(); // declval without <utility> noise below
} // namespace

//===----------------------------------------------------------------------===//
// Types and promotion (compile-time)
//===----------------------------------------------------------------------===//

// Weak scalars: a float literal never widens a float array.
static_assert(std::is_same_v<decltype(val<A<float>>() * 2.0), A<float>>);
static_assert(std::is_same_v<decltype(2.0 * val<A<float>>()), A<float>>);
static_assert(std::is_same_v<decltype(val<A<float>>() + 1), A<float>>);
static_assert(std::is_same_v<decltype(val<A<double>>() * 2.0f), A<double>>);
// Integer/bool array with a floating scalar: the scalar's type.
static_assert(std::is_same_v<decltype(val<A<int32_t>>() + 1.5f), A<float>>);
static_assert(std::is_same_v<decltype(val<A<int32_t>>() * 0.5), A<double>>);
static_assert(std::is_same_v<decltype(val<A<int64_t>>() + 1.0f), A<float>>);
static_assert(std::is_same_v<decltype(val<A<bool>>() * 1.0f), A<float>>);
// Integer with integer: C++ usual arithmetic conversions.
static_assert(std::is_same_v<decltype(val<A<int32_t>>() + 1), A<int32_t>>);
static_assert(
    std::is_same_v<decltype(val<A<int32_t>>() + int64_t{1}), A<int64_t>>);
static_assert(std::is_same_v<decltype(val<A<int64_t>>() + 1), A<int64_t>>);
static_assert(std::is_same_v<decltype(val<A<bool>>() + 1), A<int32_t>>);
static_assert(
    std::is_same_v<decltype(val<A<int32_t>>() * size_t{2}), A<int64_t>>);
// Array with array: C++ usual arithmetic conversions.
static_assert(std::is_same_v<decltype(val<A<int32_t>>() + val<A<int64_t>>()),
                             A<int64_t>>);
static_assert(
    std::is_same_v<decltype(val<A<int32_t>>() + val<A<float>>()), A<float>>);
static_assert(
    std::is_same_v<decltype(val<A<float>>() + val<A<double>>()), A<double>>);
static_assert(
    std::is_same_v<decltype(val<A<int64_t>>() * val<A<float>>()), A<float>>);
static_assert(
    std::is_same_v<decltype(val<A<bool>>() + val<A<bool>>()), A<int32_t>>);
static_assert(
    std::is_same_v<decltype(val<A<bool>>() / val<A<bool>>()), A<int32_t>>);
static_assert(std::is_same_v<decltype(-val<A<bool>>()), A<int32_t>>);
static_assert(std::is_same_v<decltype(-val<A<float>>()), A<float>>);
static_assert(std::is_same_v<decltype(val<A<int32_t>>() % 3), A<int32_t>>);
static_assert(std::is_same_v<decltype(val<A<int64_t>>() % val<A<int32_t>>()),
                             A<int64_t>>);
// Comparisons and logic.
static_assert(std::is_same_v<decltype(val<A<float>>() < 0.5), A<bool>>);
static_assert(
    std::is_same_v<decltype(val<A<int32_t>>() == val<A<double>>()), A<bool>>);
static_assert(
    std::is_same_v<decltype(val<A<bool>>() & val<A<bool>>()), A<bool>>);
static_assert(std::is_same_v<decltype(!val<A<bool>>()), A<bool>>);
// Math: float in, float out; integers compute in double; abs keeps integers.
static_assert(std::is_same_v<decltype(exp(val<A<float>>())), A<float>>);
static_assert(std::is_same_v<decltype(exp(val<A<double>>())), A<double>>);
static_assert(std::is_same_v<decltype(sqrt(val<A<int32_t>>())), A<double>>);
static_assert(std::is_same_v<decltype(floor(val<A<int64_t>>())), A<double>>);
static_assert(std::is_same_v<decltype(abs(val<A<int32_t>>())), A<int32_t>>);
static_assert(std::is_same_v<decltype(abs(val<A<bool>>())), A<int32_t>>);
static_assert(std::is_same_v<decltype(abs(val<A<float>>())), A<float>>);
static_assert(std::is_same_v<decltype(pow(val<A<float>>(), 2)), A<float>>);
static_assert(std::is_same_v<decltype(pow(val<A<float>>(), 2.0)), A<float>>);
static_assert(std::is_same_v<decltype(pow(2, val<A<int32_t>>())), A<double>>);
static_assert(std::is_same_v<decltype(maximum(val<A<float>>(), 0)), A<float>>);
static_assert(
    std::is_same_v<decltype(minimum(1.0, val<A<float>>())), A<float>>);
static_assert(
    std::is_same_v<decltype(maximum(val<A<int32_t>>(), 0.5)), A<double>>);
static_assert(
    std::is_same_v<decltype(clamp(val<A<float>>(), 0.0, 1.0)), A<float>>);
static_assert(
    std::is_same_v<decltype(clamp(val<A<int32_t>>(), 0, 10)), A<int32_t>>);
// where: promotion of the two branches, weak scalars included.
static_assert(std::is_same_v<
              decltype(where(val<A<bool>>(), val<A<float>>(), 0.0)), A<float>>);
static_assert(
    std::is_same_v<decltype(where(val<A<bool>>(), val<A<int32_t>>(), 0.5f)),
                   A<float>>);
static_assert(
    std::is_same_v<decltype(where(val<A<bool>>(), 1, 0)), A<int32_t>>);
static_assert(
    std::is_same_v<decltype(where(val<A<bool>>(), 1, 0.5)), A<double>>);
static_assert(std::is_same_v<decltype(where(val<A<bool>>(), val<A<int32_t>>(),
                                            val<A<int64_t>>())),
                             A<int64_t>>);
// Conversion, reductions, shape ops, index, linear algebra.
static_assert(
    std::is_same_v<decltype(cast<double>(val<A<float>>())), A<double>>);
static_assert(std::is_same_v<decltype(sum(val<A<float>>())), A<float>>);
static_assert(std::is_same_v<decltype(sum(val<A<int32_t>>(), 0)), A<int32_t>>);
static_assert(std::is_same_v<decltype(sum(val<A<bool>>())), A<int64_t>>);
static_assert(std::is_same_v<decltype(mean(val<A<int32_t>>())), A<double>>);
static_assert(
    std::is_same_v<decltype(mean(val<A<bool>>(), 0, keepdims)), A<double>>);
static_assert(
    std::is_same_v<decltype(mean(val<A<float>>(), -1, keepdims)), A<float>>);
static_assert(std::is_same_v<decltype(max(val<A<bool>>())), A<bool>>);
static_assert(std::is_same_v<decltype(min(val<A<int64_t>>(), 1)), A<int64_t>>);
static_assert(std::is_same_v<decltype(index(val<A<float>>(), 0)), A<int64_t>>);
static_assert(
    std::is_same_v<decltype(broadcast_to(1.0f, val<A<int32_t>>())), A<float>>);
static_assert(std::is_same_v<
              decltype(matmul(val<A<int32_t>>(), val<A<float>>())), A<float>>);
static_assert(std::is_same_v<decltype(transpose(val<A<bool>>())), A<bool>>);
// Out/InOut reads are arrays of the ref's type.
static_assert(std::is_same_v<decltype(val<Out<float, 2>>()[_] * 2), A<float>>);
static_assert(
    std::is_same_v<decltype(sum(val<InOut<int32_t>>()[_])), A<int32_t>>);
static_assert(std::is_same_v<decltype(val<In<double, 3>>()[_]), A<double>>);
// Not operations: refs must be read with [_]; scalar-scalar is plain C++.
template <class X, class Y>
concept Addable = requires(X x, Y y) {
  x + y;
};
static_assert(!Addable<In<float>, float>);
static_assert(!Addable<In<float>, A<float>>);
static_assert(Addable<A<float>, A<int32_t>>);
template <class X>
concept HasPkExp = requires(X x) {
  pk::exp(x);
};
// Math functions take scalars too (language.md §3; EagerHabitsTest.cpp).
static_assert(HasPkExp<float>);
static_assert(!HasPkExp<In<float>>);
static_assert(HasPkExp<A<int32_t>>);
template <class X>
concept HasSum = requires(X x) {
  pk::sum(x);
};
static_assert(!HasSum<float>);
static_assert(!HasSum<In<float>>);

//===----------------------------------------------------------------------===//
// pk::Array
//===----------------------------------------------------------------------===//

TEST(EagerArray, Basics) {
  pk::Array<float> Z({2, 3});
  EXPECT_EQ(Z.rank(), 2);
  EXPECT_EQ(Z.size(), 6);
  EXPECT_EQ(Z.extent(1), 3);
  // extent(i) takes 0 <= i < rank, on arrays, refs and windows alike.
  EXPECT_THROW(Z.extent(2), pk::ShapeError);
  EXPECT_THROW(Z.extent(-1), pk::ShapeError);
  std::vector<float> Data(6);
  pk::In<float, 2> Ref(Data.data(), {2, 3});
  EXPECT_EQ(Ref.extent(0), 2);
  EXPECT_THROW(Ref.extent(-1), pk::ShapeError);
  EXPECT_THROW(Ref.extent(2), pk::ShapeError);
  EXPECT_EQ(Ref.slice(1, 1, 3).extent(1), 2);
  EXPECT_THROW(Ref.slice(1, 1, 3).extent(2), pk::ShapeError);
  EXPECT_EQ(Z.label(), "Array<float>");
  for (int64_t I = 0; I < 6; ++I)
    EXPECT_EQ(Z.at(I), 0.0f);

  auto B = arr<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6}).named("b");
  EXPECT_EQ(B.label(), "b");
  EXPECT_EQ(B(1, 2), 6);
  EXPECT_EQ(B(0, 1), 2);
  B(1, 0) = 40;
  EXPECT_EQ(B.at(3), 40);
  EXPECT_EQ(B.data()[3], 40);
  EXPECT_THROW(B.at(6), std::out_of_range);
  EXPECT_THROW(B(2, 0), std::out_of_range);
  EXPECT_THROW(B(0), std::out_of_range);

  pk::Array<double> S; // rank 0
  EXPECT_EQ(S.rank(), 0);
  EXPECT_EQ(S.size(), 1);
  EXPECT_EQ(S(), 0.0);
  EXPECT_EQ(pk::Array<int64_t>({}, {7}).item(), 7);
  EXPECT_THROW(B.item(), ShapeError);

  pk::Array<bool> M({3}, {true, false, true});
  EXPECT_TRUE(M.data()[0]);
  EXPECT_FALSE(M.data()[1]);
  EXPECT_EQ(pk::Array<bool>({2}).at(1), false);

  // Copies are deep; assignment replaces the value.
  auto C = B;
  C.at(0) = -1;
  EXPECT_EQ(B.at(0), 1);
  C = B * 2;
  expectArray(C, {2, 3}, {2, 4, 6, 80, 10, 12});

  EXPECT_THROW(pk::Array<float>({2, 2}, {1, 2, 3}), ShapeError);
  EXPECT_THROW(pk::Array<float>({-1}), ShapeError);
  pk::Array<float> E({3, 0});
  EXPECT_EQ(E.size(), 0);
  const float Src[] = {1, 2, 3, 4};
  expectArray(pk::Array<float>({2, 2}, Src), {2, 2}, {1, 2, 3, 4});
}

//===----------------------------------------------------------------------===//
// Refs
//===----------------------------------------------------------------------===//

TEST(EagerRef, ReadIsACopyWithTheRefLabel) {
  float Xs[] = {1, 2, 3, 4, 5, 6};
  In<float, 2> X(Xs, {2, 3});
  auto V = X[_];
  static_assert(std::is_same_v<decltype(V), pk::Array<float>>);
  expectArray(V, {2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(V.label(), "In<float, 2>");
  Xs[0] = 100; // a value, not a view
  EXPECT_EQ(V.at(0), 1.0f);
  EXPECT_EQ(X.named("x")[_].label(), "x");
  EXPECT_EQ((In<float, 2>(Xs, {2, 3}, "xx")[_].label()), "xx");

  int64_t Ys[2] = {};
  Out<int64_t> Y(Ys, {2});
  EXPECT_EQ(Y[_].label(), "Out<int64_t, 1>");
  bool Bs[1] = {};
  InOut<bool, 0> B(Bs, {});
  EXPECT_EQ(B[_].label(), "InOut<bool, 0>");
  EXPECT_EQ(B[_].rank(), 0);
}

TEST(EagerRef, FromStdVector) {
  std::vector<float> Xs = {1, 2, 3};
  std::vector<float> Ys(3);
  std::vector<int32_t> Cs = {10, 20, 30};
  In<float> X(Xs, "x");
  Out<float> Y(Ys, "y");
  InOut<int32_t> C(Cs);
  EXPECT_EQ(X.shape()[0], 3);
  Y[_] = X[_] * 2 + 1;
  C[_] = C[_] + cast<int32_t>(X[_]);
  EXPECT_EQ(Ys, (std::vector<float>{3, 5, 7}));
  EXPECT_EQ(Cs, (std::vector<int32_t>{11, 22, 33}));
  EXPECT_EQ(X[_].label(), "x");
}

TEST(EagerRef, StoresBroadcastAndConvert) {
  float Ys[6] = {};
  Out<float, 2> Y(Ys, {2, 3}, "y");
  Y[_] = 2.5; // scalar, converted to float
  for (float V : Ys)
    EXPECT_EQ(V, 2.5f);
  Y[_] = arr<double>({3}, {1, 2, 3}); // [3] -> [2, 3], double -> float
  expectArray(Y[_], {2, 3}, {1, 2, 3, 1, 2, 3});
  Y[_] = arr<int32_t>({2, 1}, {7, 8}); // [2, 1] -> [2, 3]
  expectArray(Y[_], {2, 3}, {7, 7, 7, 8, 8, 8});
  Y[_] = pk::Array<float>({}, {4}); // rank 0
  expectArray(Y[_], {2, 3}, {4, 4, 4, 4, 4, 4});
  Y[_] = arr<float>({1, 3}, {4, 5, 6}); // [1, 3] -> [2, 3]
  expectArray(Y[_], {2, 3}, {4, 5, 6, 4, 5, 6});

  int32_t Is[3] = {};
  Out<int32_t> I(Is, {3});
  I[_] = arr<float>({3}, {1.7f, -1.7f, 2.0f}); // truncation, like static_cast
  expectArray(I[_], {3}, {1, -1, 2});
  bool Bs[3] = {};
  Out<bool> B(Bs, {3});
  B[_] = arr<float>({3}, {0.0f, 0.5f, -2.0f});
  expectArray(B[_], {3}, {false, true, true});
}

TEST(EagerRef, StoreShapeErrors) {
  float Ys[6] = {};
  Out<float, 2> Y(Ys, {2, 3}, "y");
  EXPECT_EQ(shapeError([&] {
              Y[_] = arr<float>({4}, {1, 2, 3, 4}).named("v");
            }),
            "cannot broadcast v[4] to y[2, 3]");
  // Broadcasting is one way: [1, 3] does not widen y's extent 1.
  float Zs[3] = {};
  Out<float, 2> Z(Zs, {1, 3}, "z");
  EXPECT_EQ(shapeError([&] {
              Z[_] = pk::Array<float>({2, 3}, "v");
            }),
            "cannot broadcast v[2, 3] to z[1, 3]");
  // A value of higher rank than the ref is an error, even with extent 1.
  float Ws[3] = {};
  Out<float, 1> W(Ws, {3}, "w");
  EXPECT_EQ(shapeError([&] {
              W[_] = pk::Array<float>({1, 3}, "v");
            }),
            "cannot broadcast v[1, 3] to w[3]");
  // Unnamed refs are named by their type.
  Out<float, 1> U(Ws, {3});
  EXPECT_EQ(shapeError([&] { U[_] = pk::Array<float>({2}); }),
            "cannot broadcast Array<float>[2] to Out<float, 1>[3]");
  // Nothing was written by the failed stores.
  for (float V : Ws)
    EXPECT_EQ(V, 0.0f);
}

TEST(EagerRef, ReadAfterWriteAndSnapshots) {
  float Os[3] = {};
  Out<float> O(Os, {3}, "o");
  O[_] = 1;
  auto Twice = O[_] * 2; // reads the stored value
  expectArray(Twice, {3}, {2, 2, 2});

  auto T = O[_]; // a snapshot: later stores do not change it
  O[_] = 5;
  expectArray(T, {3}, {1, 1, 1});
  T = T * 3; // re-assigning a local makes a new value and stores nothing
  expectArray(T, {3}, {3, 3, 3});
  expectArray(O[_], {3}, {5, 5, 5});

  float Cs[3] = {1, 2, 3};
  InOut<float> C(Cs, {3}, "c");
  C[_] = C[_] * C[_] + 1;
  C[_] = C[_] - 1;
  expectArray(C[_], {3}, {1, 4, 9});
  O[_] = C[_];
  EXPECT_EQ(Os[2], 9.0f);

  // Rank 0 refs.
  double S = 1.5;
  InOut<double, 0> R(&S, {});
  R[_] = R[_] * 2;
  EXPECT_EQ(S, 3.0);
}

TEST(EagerRef, ProxyIsAnOperandOfEveryOp) {
  float Ys[4] = {1, -2, 3, -4};
  InOut<float, 2> Y(Ys, {2, 2}, "y");
  expectArray(Y[_] * 2, {2, 2}, {2, -4, 6, -8});
  expectArray(2 - Y[_], {2, 2}, {1, 4, -1, 6});
  expectArray(-Y[_], {2, 2}, {-1, 2, -3, 4});
  expectArray(Y[_] > 0, {2, 2}, {true, false, true, false});
  expectArray(!(Y[_] > 0), {2, 2}, {false, true, false, true});
  expectArray(abs(Y[_]), {2, 2}, {1, 2, 3, 4});
  expectArray(maximum(Y[_], 0), {2, 2}, {1, 0, 3, 0});
  expectArray(where(Y[_] > 0, Y[_], 0.0f), {2, 2}, {1, 0, 3, 0});
  expectArray(sum(Y[_]), {}, {-2});
  expectArray(sum(Y[_], 1), {2}, {-1, -1});
  expectArray(cast<int32_t>(Y[_]), {2, 2}, {1, -2, 3, -4});
  expectArray(transpose(Y[_]), {2, 2}, {1, 3, -2, -4});
  expectArray(matmul(Y[_], Y[_]), {2, 2}, {-5, 6, -9, 10});
  EXPECT_EQ(broadcast_to(Y[_], pk::Array<float>({3, 2, 2})).shape(),
            (Shape{3, 2, 2}));
  expectArray(expand_dims(Y[_], 0), {1, 2, 2}, {1, -2, 3, -4});
  expectArray(index(Y[_], 1), {2, 2}, {0, 1, 0, 1});
}

//===----------------------------------------------------------------------===//
// Broadcasting
//===----------------------------------------------------------------------===//

TEST(EagerBroadcast, NumPyRules) {
  auto X = arr<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  // [2, 3] + [3]
  expectArray(X + arr<float>({3}, {10, 20, 30}), {2, 3},
              {11, 22, 33, 14, 25, 36});
  // [3] + [2, 3]: either side
  expectArray(arr<float>({3}, {10, 20, 30}) + X, {2, 3},
              {11, 22, 33, 14, 25, 36});
  // extent 1 on both sides: [2, 1] * [1, 3] -> [2, 3]
  expectArray(arr<int32_t>({2, 1}, {1, 2}) * arr<int32_t>({1, 3}, {10, 20, 30}),
              {2, 3}, {10, 20, 30, 20, 40, 60});
  // [2, 1, 2] + [3, 1] -> [2, 3, 2]
  expectArray(arr<int32_t>({2, 1, 2}, {0, 1, 100, 101}) +
                  arr<int32_t>({3, 1}, {10, 20, 30}),
              {2, 3, 2},
              {10, 11, 20, 21, 30, 31, 110, 111, 120, 121, 130, 131});
  // rank 0 broadcasts everywhere, on either side
  auto S = pk::Array<float>({}, {5});
  expectArray(S + X, {2, 3}, {6, 7, 8, 9, 10, 11});
  expectArray(X - S, {2, 3}, {-4, -3, -2, -1, 0, 1});
  expectArray(S * S, {}, {25});
  // [1] with [2, 3], [1, 1] with [3]
  expectArray(X * arr<float>({1}, {2}), {2, 3}, {2, 4, 6, 8, 10, 12});
  expectArray(arr<float>({1, 1}, {1}) + arr<float>({3}, {1, 2, 3}), {1, 3},
              {2, 3, 4});
  // Extent 0 stays 0 against 1, fails against anything else.
  expectArray(pk::Array<float>({0}) + arr<float>({1}, {1}), {0}, {});
  expectArray(pk::Array<float>({3, 0}) + pk::Array<float>({3, 1}), {3, 0}, {});
  expectArray(pk::Array<float>({0}) * 2.0f, {0}, {});
  EXPECT_EQ(
      shapeError([] { return pk::Array<float>({0}) + pk::Array<float>({2}); }),
      "cannot broadcast Array<float>[2] against Array<float>[0]");
}

TEST(EagerBroadcast, ErrorMessages) {
  float Xs[6] = {}, Ws[4] = {};
  In<float, 2> X(Xs, {2, 3}, "x");
  In<float, 1> W(Ws, {4}, "w");
  // The later operand is named against the earlier one.
  EXPECT_EQ(shapeError([&] { return X[_] * W[_]; }),
            "cannot broadcast w[4] against x[2, 3]");
  EXPECT_EQ(shapeError([&] { return W[_] + X[_]; }),
            "cannot broadcast x[2, 3] against w[4]");
  // Computed values are named by the op that made them.
  EXPECT_EQ(shapeError([&] { return X[_] * 2 + W[_]; }),
            "cannot broadcast w[4] against mul(x, 2)[2, 3]");
  EXPECT_EQ(shapeError([&] { return exp(X[_]) < W[_]; }),
            "cannot broadcast w[4] against exp(x)[2, 3]");
  // Unnamed refs are named by their type.
  EXPECT_EQ(shapeError([&] {
              return In<float, 2>(Xs, {2, 3})[_] - In<float, 1>(Ws, {4})[_];
            }),
            "cannot broadcast In<float, 1>[4] against In<float, 2>[2, 3]");
  // A rank-2 conflict on the leading axis.
  EXPECT_EQ(shapeError([] {
              return pk::Array<int32_t>({2, 3}, "a") +
                     pk::Array<int32_t>({3, 3}, "b");
            }),
            "cannot broadcast b[3, 3] against a[2, 3]");
  // Three operands: the one that fixed the conflicting extent is named.
  EXPECT_EQ(shapeError([] {
              return where(pk::Array<bool>({3, 1}, "m"),
                           pk::Array<float>({1, 4}, "a"),
                           pk::Array<float>({3, 5}, "b"));
            }),
            "cannot broadcast b[3, 5] against a[1, 4]");
  EXPECT_EQ(shapeError([] {
              return where(pk::Array<bool>({2}, "m"),
                           pk::Array<float>({3}, "a"), 0.0f);
            }),
            "cannot broadcast a[3] against m[2]");
  EXPECT_EQ(shapeError([] {
              return clamp(pk::Array<float>({2}, "x"), 0.0f,
                           pk::Array<float>({3}, "hi"));
            }),
            "cannot broadcast hi[3] against x[2]");
}

TEST(EagerBroadcast, Labels) {
  float Xs[2] = {}, Ws[2] = {};
  In<float> X(Xs, {2}, "x");
  In<float> W(Ws, {2}, "w");
  EXPECT_EQ((X[_] * W[_]).label(), "mul(x, w)");
  EXPECT_EQ((X[_] + 0.5f).label(), "add(x, 0.5)");
  EXPECT_EQ((1e-5f * X[_]).label(), "mul(1e-05, x)");
  EXPECT_EQ((X[_] == 0).label(), "eq(x, 0)");
  EXPECT_EQ((-X[_]).label(), "neg(x)");
  EXPECT_EQ(exp(X[_]).label(), "exp(x)");
  EXPECT_EQ(where(X[_] > W[_], X[_], true).label(), "where(gt(x, w), x, true)");
  EXPECT_EQ(sum(X[_]).label(), "sum(x)");
  EXPECT_EQ(mean(X[_], -1, keepdims).label(), "mean(x, -1, keepdims)");
  EXPECT_EQ(max(X[_], 0).label(), "max(x, 0)");
  EXPECT_EQ(cast<int32_t>(X[_]).label(), "cast<int32_t>(x)");
  EXPECT_EQ(expand_dims(X[_], 1).label(), "expand_dims(x, 1)");
  EXPECT_EQ(broadcast_to(X[_], W).label(), "broadcast_to(x, w)");
  EXPECT_EQ(index(X[_], 0).label(), "index(x, 0)");
  // Long operand labels are elided.
  auto Deep = exp(exp(exp(exp(exp(exp(X[_])))))) * W[_];
  EXPECT_EQ(Deep.label(), "mul(exp(exp(exp(exp(exp(exp(x)))))), w)");
  auto Deeper = exp(exp(exp(exp(exp(exp(exp(exp(X[_])))))))) * W[_];
  EXPECT_EQ(Deeper.label(), "mul(..., w)");
}

//===----------------------------------------------------------------------===//
// Arithmetic, comparison, logic
//===----------------------------------------------------------------------===//

TEST(EagerArith, Values) {
  auto F = arr<float>({3}, {1, 2, 4});
  expectArray(F / 4, {3}, {0.25f, 0.5f, 1});
  expectArray(1 - F, {3}, {0, -1, -3});
  expectArray(F * F + F, {3}, {2, 6, 20});
  expectArray(F * 0.1, {3}, {0.1f, 0.2f, 0.4f});
  expectArray(arr<int32_t>({3}, {1, 2, 3}) * 0.5, {3}, {0.5, 1.0, 1.5});
  expectArray(arr<int32_t>({2}, {1, 2}) +
                  arr<int64_t>({2}, {int64_t{1} << 40, 5}),
              {2}, {(int64_t{1} << 40) + 1, 7});
  expectArray(arr<float>({2}, {1, 2}) + arr<double>({2}, {0.25, 0.5}), {2},
              {1.25, 2.5});
  // bool arithmetic promotes to int32 (C++ integral promotion).
  auto T = arr<bool>({3}, {true, true, false});
  auto U = arr<bool>({3}, {true, false, false});
  expectArray(T + U, {3}, {2, 1, 0});
  expectArray(T - U, {3}, {0, 1, 0});
  expectArray(-T, {3}, {-1, -1, 0});
  expectArray(T * 3, {3}, {3, 3, 0});
  expectArray(-arr<float>({2}, {1, -2}), {2}, {-1, 2});
}

TEST(EagerArith, IntegerDivisionTruncatesLikeCpp) {
  // pk follows C++, not NumPy: NumPy's // and % floor (-7 // 2 == -4,
  // -7 % 3 == 2), pk's / and % truncate toward zero.
  auto I = arr<int32_t>({4}, {-7, 7, -8, 8});
  expectArray(I / 2, {4}, {-3, 3, -4, 4});
  expectArray(I % 3, {4}, {-1, 1, -2, 2});
  expectArray(I % -3, {4}, {-1, 1, -2, 2});
  EXPECT_EQ((I % 3).label(), "rem(Array<int32_t>, 3)");
  expectArray(10 / arr<int32_t>({2}, {3, -4}), {2}, {3, -2});
  expectArray(arr<int64_t>({2}, {9, -9}) % arr<int32_t>({2}, {4, 4}), {2},
              {int64_t{1}, int64_t{-1}});
  // An integer divided by a float scalar is a float (C++).
  expectArray(arr<int32_t>({1}, {7}) / 2.0f, {1}, {3.5f});
}

TEST(EagerCompare, ComparisonsAndLogic) {
  auto X = arr<float>({3}, {1, 2, 3});
  expectArray(X < 2, {3}, {true, false, false});
  expectArray(X <= 2, {3}, {true, true, false});
  expectArray(X > 2, {3}, {false, false, true});
  expectArray(X >= 2, {3}, {false, true, true});
  expectArray(X == 2, {3}, {false, true, false});
  expectArray(X != 2, {3}, {true, false, true});
  expectArray(2 < X, {3}, {false, false, true});
  expectArray(X == arr<int32_t>({2, 1}, {1, 3}), {2, 3},
              {true, false, false, false, false, true});
  // Weak scalars also in comparisons: 0.1 becomes float, so float(0.1) ==
  // 0.1 holds (as for NumPy 2 with a Python float).
  expectArray(arr<float>({1}, {0.1f}) == 0.1, {1}, {true});

  auto M = arr<bool>({4}, {true, true, false, false});
  auto N = arr<bool>({4}, {true, false, true, false});
  expectArray(M & N, {4}, {true, false, false, false});
  expectArray(M | N, {4}, {true, true, true, false});
  expectArray(!M, {4}, {false, false, true, true});
  expectArray(M & true, {4}, {true, true, false, false});
  expectArray(false | N, {4}, {true, false, true, false});
  expectArray((X > 1) & (X < 3), {3}, {false, true, false});
  expectArray(M == N, {4}, {true, false, false, true});
}

//===----------------------------------------------------------------------===//
// Elementwise math
//===----------------------------------------------------------------------===//

TEST(EagerMath, UnaryFunctions) {
  expectArray(exp(arr<float>({2}, {0, 1})), {2}, {1, 2.7182817f});
  expectArray(exp(arr<int32_t>({1}, {1})), {1}, {2.718281828459045});
  expectArray(exp2(arr<float>({2}, {3, -1})), {2}, {8, 0.5f});
  expectArray(log(arr<double>({2}, {1, 2.718281828459045})), {2}, {0.0, 1.0});
  expectArray(log2(arr<int64_t>({2}, {8, 1})), {2}, {3.0, 0.0});
  expectArray(log1p(arr<float>({2}, {0, 1})), {2}, {0, 0.6931472f});
  expectArray(expm1(arr<float>({2}, {0, 1})), {2}, {0, 1.7182817f});
  expectArray(sqrt(arr<float>({3}, {4, 9, 2})), {3}, {2, 3, 1.4142135f});
  expectArray(rsqrt(arr<float>({2}, {4, 0.25f})), {2}, {0.5f, 2});
  expectArray(sin(arr<float>({2}, {0, 1.5707964f})), {2}, {0, 1});
  expectArray(cos(arr<double>({2}, {0, 3.141592653589793})), {2}, {1.0, -1.0});
  expectArray(tanh(arr<float>({2}, {0, 1})), {2}, {0, 0.7615942f});
  expectArray(erf(arr<double>({2}, {0, 1})), {2}, {0.0, 0.8427007929497149});
  expectArray(sigmoid(arr<float>({3}, {0, 2, -2})), {3},
              {0.5f, 0.8807971f, 0.11920292f});
  expectArray(floor(arr<float>({3}, {-1.5f, 1.5f, 2})), {3}, {-2, 1, 2});
  expectArray(ceil(arr<float>({3}, {-1.5f, 1.5f, 2})), {3}, {-1, 2, 2});
  expectArray(floor(arr<int32_t>({1}, {3})), {1}, {3.0});
  expectArray(abs(arr<float>({3}, {-1.5f, 2, 0})), {3}, {1.5f, 2, 0});
  expectArray(abs(arr<int32_t>({2}, {-3, 4})), {2}, {3, 4});
  expectArray(abs(arr<bool>({2}, {true, false})), {2}, {1, 0});
  // |-0.0| is +0.0 (the sign bit cleared, as C's fabs and NumPy's abs), in
  // eager code and in pk::scalar::abs, which the compiled CPU and CUDA code
  // call: `x < 0 ? -x : x` kept -0.0, so 1 / abs(x) was -inf (a fuzz finding).
  EXPECT_FALSE(std::signbit(abs(arr<float>({1}, {-0.0f})).at(0)));
  EXPECT_FALSE(std::signbit(abs(arr<double>({1}, {-0.0})).at(0)));
  EXPECT_FALSE(std::signbit(pk::scalar::abs(-0.0f)));
  EXPECT_FALSE(std::signbit(pk::scalar::abs(-0.0)));
  EXPECT_EQ(1.0f / pk::scalar::abs(-0.0f),
            std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(pk::scalar::abs(std::nanf(""))));
  EXPECT_EQ(pk::scalar::abs(-std::numeric_limits<double>::infinity()),
            std::numeric_limits<double>::infinity());
  // Float precision: exp of a float array is expf.
  auto E = exp(arr<float>({1}, {0.1f}));
  EXPECT_EQ(E.at(0), std::exp(0.1f));
  // NaN and infinities pass through like NumPy.
  EXPECT_TRUE(std::isnan(sqrt(arr<float>({1}, {-1})).at(0)));
  EXPECT_EQ(log(arr<float>({1}, {0})).at(0),
            -std::numeric_limits<float>::infinity());
  // Rank 0.
  expectArray(exp(pk::Array<float>({}, {0})), {}, {1});
}

TEST(EagerMath, PowMaximumMinimumClamp) {
  expectArray(pow(arr<float>({2}, {2, 3}), 2), {2}, {4, 9});
  expectArray(pow(2, arr<float>({3}, {1, 2, -1})), {3}, {2, 4, 0.5f});
  expectArray(pow(arr<float>({2}, {4, 9}), arr<float>({1}, {0.5f})), {2},
              {2, 3});
  expectArray(pow(arr<int32_t>({2}, {2, 3}), 3), {2}, {8.0, 27.0});

  auto A = arr<float>({3}, {1, 5, 3});
  auto B = arr<float>({3}, {4, 2, 3});
  expectArray(maximum(A, B), {3}, {4, 5, 3});
  expectArray(minimum(A, B), {3}, {1, 2, 3});
  expectArray(maximum(A, 2), {3}, {2, 5, 3});
  expectArray(minimum(4.0, A), {3}, {1, 4, 3});
  expectArray(maximum(arr<int32_t>({2}, {-1, 3}), 0.5), {2}, {0.5, 3.0});
  expectArray(maximum(arr<float>({2, 1}, {0, 10}), arr<float>({2}, {5, 20})),
              {2, 2}, {5, 20, 10, 20});
  // NaN propagates from either side, like numpy.maximum.
  auto Nan = arr<float>({2}, {NaNf, 1});
  EXPECT_TRUE(std::isnan(maximum(Nan, 0).at(0)));
  EXPECT_EQ(maximum(Nan, 0).at(1), 1.0f);
  EXPECT_TRUE(std::isnan(maximum(0, Nan).at(0)));
  EXPECT_TRUE(std::isnan(minimum(Nan, 0).at(0)));
  EXPECT_TRUE(std::isnan(minimum(0, Nan).at(0)));

  expectArray(clamp(arr<float>({4}, {-1, 0.5f, 2, 1}), 0, 1), {4},
              {0, 0.5f, 1, 1});
  expectArray(clamp(arr<int32_t>({3}, {-5, 5, 50}), 0, 10), {3}, {0, 5, 10});
  expectArray(clamp(0.5f, arr<float>({2}, {0, 0.7f}), 1.0f), {2}, {0.5f, 0.7f});
  expectArray(clamp(arr<float>({2}, {-3, 3}), arr<float>({2, 1}, {-1, -2}),
                    arr<float>({2}, {1, 2})),
              {2, 2}, {-1, 2, -2, 2});
}

//===----------------------------------------------------------------------===//
// where, cast, index
//===----------------------------------------------------------------------===//

TEST(EagerSelect, Where) {
  auto M = arr<bool>({3}, {true, false, true});
  auto A = arr<float>({3}, {1, 2, 3});
  auto B = arr<float>({3}, {10, 20, 30});
  expectArray(where(M, A, B), {3}, {1, 20, 3});
  expectArray(where(M, A, 0), {3}, {1, 0, 3});
  expectArray(where(M, -1.0, A), {3}, {-1, 2, -1});
  expectArray(where(M, 1, 0), {3}, {1, 0, 1});
  expectArray(where(M, arr<int32_t>({3}, {1, 2, 3}), 0.5f), {3}, {1, 0.5f, 3});
  // All three broadcast: [2, 1] mask, [3] and scalar branches.
  expectArray(where(arr<bool>({2, 1}, {true, false}), A, 0.0f), {2, 3},
              {1, 2, 3, 0, 0, 0});
  // A rank-0 mask.
  expectArray(where(pk::Array<bool>({}, {false}), A, B), {3}, {10, 20, 30});
}

TEST(EagerSelect, CausalMaskWithIndex) {
  auto S = arr<float>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  expectArray(index(S, 0), {3, 3}, {0, 0, 0, 1, 1, 1, 2, 2, 2});
  expectArray(index(S, 1), {3, 3}, {0, 1, 2, 0, 1, 2, 0, 1, 2});
  expectArray(index(S, -1), {3, 3}, {0, 1, 2, 0, 1, 2, 0, 1, 2});
  const float Inf = std::numeric_limits<float>::infinity();
  expectArray(where(index(S, -1) <= index(S, -2), S, -Inf), {3, 3},
              {1, -Inf, -Inf, 4, 5, -Inf, 7, 8, 9});
  auto T = pk::Array<int32_t>({2, 3, 2});
  expectArray(index(T, 1), {2, 3, 2}, {0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2});
  expectArray(index(pk::Array<float>({0, 3}), 1), {0, 3}, {});
  EXPECT_EQ(shapeError([&] { return index(S.named("s"), 2); }),
            "index: axis 2 is out of range for s[3, 3]");
}

TEST(EagerSelect, Cast) {
  expectArray(cast<int32_t>(arr<float>({3}, {1.7f, -1.7f, 0})), {3},
              {1, -1, 0});
  expectArray(cast<bool>(arr<float>({3}, {0, 2.5f, -0.0f})), {3},
              {false, true, false});
  expectArray(cast<float>(arr<bool>({2}, {true, false})), {2}, {1, 0});
  expectArray(cast<double>(arr<int64_t>({1}, {int64_t{1} << 40})), {1},
              {1099511627776.0});
  expectArray(cast<int64_t>(arr<int32_t>({2, 1}, {-1, 2})), {2, 1},
              {int64_t{-1}, int64_t{2}});
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

TEST(EagerReduce, EveryAxisOf234) {
  const auto A = perm234();
  expectArray(sum(A), {}, {276});
  expectArray(sum(A, 0), {3, 4},
              {12, 26, 16, 30, 20, 34, 24, 14, 28, 18, 32, 22});
  expectArray(sum(A, 1), {2, 4}, {12, 33, 54, 27, 48, 45, 18, 39});
  expectArray(sum(A, 2), {2, 3}, {42, 34, 50, 42, 58, 50});
  expectArray(max(A), {}, {23});
  expectArray(max(A, 0), {3, 4},
              {12, 19, 14, 21, 16, 23, 18, 13, 20, 15, 22, 17});
  expectArray(max(A, 1), {2, 4}, {8, 15, 22, 21, 20, 23, 10, 17});
  expectArray(max(A, 2), {2, 3}, {21, 18, 22, 19, 23, 20});
  expectArray(min(A), {}, {0});
  expectArray(min(A, 0), {3, 4}, {0, 7, 2, 9, 4, 11, 6, 1, 8, 3, 10, 5});
  expectArray(min(A, 1), {2, 4}, {0, 7, 14, 1, 12, 3, 2, 9});
  expectArray(min(A, 2), {2, 3}, {0, 1, 5, 2, 6, 3});
  expectArray(mean(A), {}, {11.5});
  expectArray(
      mean(A, 0), {3, 4},
      {6.0, 13.0, 8.0, 15.0, 10.0, 17.0, 12.0, 7.0, 14.0, 9.0, 16.0, 11.0});
  expectArray(mean(A, 1), {2, 4},
              {4.0, 11.0, 18.0, 9.0, 16.0, 15.0, 6.0, 13.0});
  expectArray(mean(A, 2), {2, 3}, {10.5, 8.5, 12.5, 10.5, 14.5, 12.5});
  // The same on floats.
  auto F = cast<float>(A);
  expectArray(mean(F, 2), {2, 3}, {10.5f, 8.5f, 12.5f, 10.5f, 14.5f, 12.5f});
  expectArray(sum(F, 1), {2, 4}, {12, 33, 54, 27, 48, 45, 18, 39});
}

TEST(EagerReduce, NegativeAxesAndKeepdims) {
  const auto A = perm234();
  expectArray(sum(A, -1), {2, 3}, {42, 34, 50, 42, 58, 50});
  expectArray(sum(A, -2), {2, 4}, {12, 33, 54, 27, 48, 45, 18, 39});
  expectArray(max(A, -3), {3, 4},
              {12, 19, 14, 21, 16, 23, 18, 13, 20, 15, 22, 17});
  expectArray(sum(A, 2, keepdims), {2, 3, 1}, {42, 34, 50, 42, 58, 50});
  expectArray(sum(A, -1, keepdims), {2, 3, 1}, {42, 34, 50, 42, 58, 50});
  expectArray(min(A, 1, keepdims), {2, 1, 4}, {0, 7, 14, 1, 12, 3, 2, 9});
  EXPECT_EQ(mean(A, 0, keepdims).shape(), (Shape{1, 3, 4}));
  EXPECT_EQ(max(A, -2, keepdims).shape(), (Shape{2, 1, 4}));
  // keepdims makes the result broadcast back: x - mean(x, -1, keepdims).
  auto F = arr<float>({2, 2}, {1, 3, 10, 20});
  expectArray(F - mean(F, -1, keepdims), {2, 2}, {-1, 1, -5, 5});
  // Rank 1 to rank 0; rank 0 as a whole.
  expectArray(sum(arr<float>({3}, {1, 2, 3}), 0), {}, {6});
  expectArray(sum(arr<float>({3}, {1, 2, 3}), 0, keepdims), {1}, {6});
  expectArray(max(pk::Array<float>({}, {4})), {}, {4});
}

TEST(EagerReduce, AxisOutOfRange) {
  const auto A = perm234();
  EXPECT_EQ(shapeError([&] { return sum(A, 3); }),
            "sum: axis 3 is out of range for a[2, 3, 4]");
  EXPECT_EQ(shapeError([&] { return mean(A, -4, keepdims); }),
            "mean: axis -4 is out of range for a[2, 3, 4]");
  EXPECT_EQ(shapeError([] { return max(pk::Array<float>({}, {1}), 0); }),
            "max: axis 0 is out of range for Array<float>[]");
}

TEST(EagerReduce, EmptyArrays) {
  pk::Array<float> E({0}, "e");
  expectArray(sum(E), {}, {0});
  EXPECT_TRUE(std::isnan(mean(E).item()));
  EXPECT_EQ(shapeError([&] { return max(E); }), "max of an empty axis: e[0]");
  EXPECT_EQ(shapeError([&] { return min(E, 0); }),
            "min of an empty axis: e[0] (axis 0)");

  pk::Array<float> M({3, 0}, "m");
  expectArray(sum(M, 1), {3}, {0, 0, 0});
  expectArray(sum(M, -1, keepdims), {3, 1}, {0, 0, 0});
  auto Mean = mean(M, 1);
  ASSERT_EQ(Mean.shape(), Shape{3});
  for (int64_t I = 0; I < 3; ++I)
    EXPECT_TRUE(std::isnan(Mean.at(I)));
  EXPECT_EQ(shapeError([&] { return max(M, 1); }),
            "max of an empty axis: m[3, 0] (axis 1)");
  EXPECT_EQ(shapeError([&] { return max(M); }),
            "max of an empty axis: m[3, 0]");
  // Reducing the non-empty axis gives an empty result, no error (NumPy).
  expectArray(sum(M, 0), {0}, {});
  expectArray(max(M, 0), {0}, {});
  expectArray(mean(M, 0, keepdims), {1, 0}, {});
  // Integer and bool sums of nothing.
  expectArray(sum(pk::Array<bool>({0})), {}, {int64_t{0}});
  EXPECT_TRUE(std::isnan(mean(pk::Array<int32_t>({2, 0}), 1).at(1)));
}

TEST(EagerReduce, TypesAndAccuracy) {
  auto B = arr<bool>({2, 3}, {true, false, true, true, true, true});
  expectArray(sum(B), {}, {int64_t{5}});
  expectArray(sum(B, 1), {2}, {int64_t{2}, int64_t{3}});
  expectArray(mean(B, 0), {3}, {1.0, 0.5, 1.0});
  expectArray(max(B, 1), {2}, {true, true});
  expectArray(min(B, 1), {2}, {false, true});
  expectArray(mean(arr<int32_t>({2}, {1, 2})), {}, {1.5});
  expectArray(sum(arr<int64_t>({2}, {int64_t{1} << 40, 1})), {},
              {(int64_t{1} << 40) + 1});
  // Float sums accumulate in double: naive float summation would give 0.
  expectArray(sum(arr<float>({3}, {1e8f, 1.0f, -1e8f})), {}, {1.0f});
  expectArray(mean(arr<float>({3}, {1e8f, 3.0f, -1e8f})), {}, {1.0f});
  // A mean of integers sums in double like NumPy's (and the compiled
  // code's): two INT64_MAX average to INT64_MAX, where an int64 sum wraps
  // to -2 and averaged to -1 (long-mode fuzzer, seed 9750 kernel k1: a
  // mean of saturated casts). Integer sums still wrap (language.md §3).
  const int64_t Big = std::numeric_limits<int64_t>::max();
  expectArray(mean(arr<int64_t>({2}, {Big, Big})), {}, {double(Big)});
  expectArray(mean(arr<int64_t>({2, 2}, {Big, Big, -Big, 3}), 1), {2},
              {double(Big), (3.0 - double(Big)) / 2});
  expectArray(sum(arr<int64_t>({2}, {Big, Big})), {}, {int64_t{-2}});
  // NaN propagates through max/min like NumPy.
  EXPECT_TRUE(std::isnan(max(arr<float>({3}, {1, NaNf, 2})).item()));
  EXPECT_TRUE(std::isnan(min(arr<float>({3}, {NaNf, 1, 2})).item()));
  expectArray(max(arr<float>({3}, {-3, -1, -2})), {}, {-1});
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

TEST(EagerShape, ExpandDimsSqueeze) {
  auto X = arr<float>({2, 3}, {1, 2, 3, 4, 5, 6}).named("x");
  EXPECT_EQ(expand_dims(X, 0).shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(expand_dims(X, 1).shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(expand_dims(X, 2).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(expand_dims(X, -1).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(expand_dims(X, -3).shape(), (Shape{1, 2, 3}));
  expectArray(expand_dims(X, 1), {2, 1, 3}, {1, 2, 3, 4, 5, 6});
  expectArray(expand_dims(pk::Array<int32_t>({}, {3}), 0), {1}, {3});
  EXPECT_EQ(shapeError([&] { return expand_dims(X, 3); }),
            "expand_dims: axis 3 is out of range for x[2, 3]");
  EXPECT_EQ(shapeError([&] { return expand_dims(X, -4); }),
            "expand_dims: axis -4 is out of range for x[2, 3]");

  auto Y = arr<float>({2, 1, 3}, {1, 2, 3, 4, 5, 6}).named("y");
  expectArray(squeeze(Y, 1), {2, 3}, {1, 2, 3, 4, 5, 6});
  expectArray(squeeze(Y, -2), {2, 3}, {1, 2, 3, 4, 5, 6});
  expectArray(squeeze(arr<float>({1}, {7}), 0), {}, {7});
  EXPECT_EQ(shapeError([&] { return squeeze(Y, 0); }),
            "squeeze: axis 0 of y[2, 1, 3] has extent 2, not 1");
  EXPECT_EQ(shapeError([&] { return squeeze(Y, 3); }),
            "squeeze: axis 3 is out of range for y[2, 1, 3]");
  // expand_dims then a reduction with keepdims agree.
  expectArray(expand_dims(sum(X, 1), 1), {2, 1}, {6, 15});
}

TEST(EagerShape, BroadcastTo) {
  auto V = arr<float>({3}, {1, 2, 3}).named("v");
  expectArray(broadcast_to(V, pk::Array<int32_t>({2, 3})), {2, 3},
              {1, 2, 3, 1, 2, 3});
  float Ws[6] = {};
  In<float, 2> W(Ws, {2, 3}, "w");
  expectArray(broadcast_to(V, W), {2, 3}, {1, 2, 3, 1, 2, 3});
  Out<float, 2> O(Ws, {2, 3}, "o");
  expectArray(broadcast_to(arr<float>({2, 1}, {1, 2}), O), {2, 3},
              {1, 1, 1, 2, 2, 2});
  expectArray(broadcast_to(O[_] + 1, W), {2, 3}, {1, 1, 1, 1, 1, 1});
  expectArray(broadcast_to(0.5f, W), {2, 3},
              {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f});
  expectArray(broadcast_to(2, pk::Array<float>({2})), {2}, {2, 2});
  expectArray(broadcast_to(V, pk::Array<float>({0, 3})), {0, 3}, {});
  // One-directional, like numpy.broadcast_to.
  EXPECT_EQ(shapeError([&] {
              return broadcast_to(V, pk::Array<float>({1, 1}, "t"));
            }),
            "cannot broadcast v[3] to t[1, 1]");
  EXPECT_EQ(shapeError([&] {
              return broadcast_to(arr<float>({2, 3}, {1, 2, 3, 4, 5, 6}),
                                  In<float, 1>(Ws, {3}));
            }),
            "cannot broadcast Array<float>[2, 3] to In<float, 1>[3]");
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

TEST(EagerLinalg, Matmul2) {
  auto A = arr<float>({2, 2}, {1, 2, 3, 4});
  auto B = arr<float>({2, 2}, {5, 6, 7, 8});
  expectArray(matmul(A, B), {2, 2}, {19, 22, 43, 50});
  auto C = arr<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto D = arr<int32_t>({3, 2}, {7, 8, 9, 10, 11, 12});
  expectArray(matmul(C, D), {2, 2}, {58, 64, 139, 154});
  expectArray(matmul(D, C), {3, 3}, {39, 54, 69, 49, 68, 87, 59, 82, 105});
  expectArray(matmul(C, arr<double>({3, 1}, {0.5, 0.25, 0})), {2, 1},
              {1.0, 3.25});
  // K = 0 gives zeros; M = 0 an empty result.
  expectArray(matmul(pk::Array<float>({2, 0}), pk::Array<float>({0, 2})),
              {2, 2}, {0, 0, 0, 0});
  expectArray(matmul(pk::Array<float>({0, 3}), pk::Array<float>({3, 2})),
              {0, 2}, {});
}

TEST(EagerLinalg, MatmulBatched) {
  // [2, 2, 2] x [2, 2]: the rank-2 operand is shared by both batches.
  auto A = arr<float>({2, 2, 2}, {1, 2, 3, 4, 1, 0, 0, 1});
  auto B = arr<float>({2, 2}, {5, 6, 7, 8});
  expectArray(matmul(A, B), {2, 2, 2}, {19, 22, 43, 50, 5, 6, 7, 8});
  // [2, 2] x [2, 2, 2]
  expectArray(matmul(B, A), {2, 2, 2}, {23, 34, 31, 46, 5, 6, 7, 8});
  // [1, 2, 2] x [3, 2, 1]: the batch extent 1 broadcasts.
  auto C = arr<int32_t>({1, 2, 2}, {1, 2, 3, 4});
  auto D = arr<int32_t>({3, 2, 1}, {1, 0, 0, 1, 1, 1});
  expectArray(matmul(C, D), {3, 2, 1}, {1, 3, 2, 4, 3, 7});
  // [2, 1, 3] x [2, 3, 1]
  auto E = arr<int64_t>({2, 1, 3}, {1, 2, 3, 4, 5, 6});
  auto F = arr<int64_t>({2, 3, 1}, {1, 1, 1, 2, 0, 1});
  expectArray(matmul(E, F), {2, 1, 1}, {int64_t{6}, int64_t{14}});
}

TEST(EagerLinalg, MatmulErrors) {
  float Xs[6] = {}, Ws[8] = {};
  In<float, 2> X(Xs, {2, 3}, "x");
  In<float, 2> W(Ws, {4, 2}, "w");
  EXPECT_EQ(shapeError([&] { return matmul(X[_], W[_]); }),
            "cannot matmul x[2, 3] with w[4, 2]: inner extents 3 and 4 differ");
  EXPECT_EQ(shapeError([] {
              return matmul(pk::Array<float>({2, 2, 3}, "a"),
                            pk::Array<float>({3, 3, 4}, "b"));
            }),
            "cannot matmul a[2, 2, 3] with b[3, 3, 4]: batch extents 2 and 3 "
            "differ");
  EXPECT_EQ(shapeError([] {
              return matmul(pk::Array<float>({3}, "v"),
                            pk::Array<float>({3, 3}, "m"));
            }),
            "matmul needs operands of rank 2 or more: v[3]");
  // Rank 4 and batch broadcasting: test/unit/ViewsTest.cpp.
}

TEST(EagerLinalg, Transpose) {
  auto A = arr<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  expectArray(transpose(A), {3, 2}, {1, 4, 2, 5, 3, 6});
  expectArray(transpose(transpose(A)), {2, 3}, {1, 2, 3, 4, 5, 6});
  auto B = arr<float>({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  expectArray(transpose(B), {2, 3, 2}, {1, 4, 2, 5, 3, 6, 7, 10, 8, 11, 9, 12});
  expectArray(transpose(pk::Array<float>({2, 0, 3})), {2, 3, 0}, {});
  // A A^T
  expectArray(matmul(A, transpose(A)), {2, 2}, {14, 32, 32, 77});
  EXPECT_EQ(shapeError([] { return transpose(pk::Array<float>({3}, "v")); }),
            "transpose needs rank >= 2: v[3]");
}

//===----------------------------------------------------------------------===//
// Whole kernels, run eagerly
//===----------------------------------------------------------------------===//

namespace {
PK_KERNEL void rmsnorm(In<float, 2> x, In<float, 1> w, Out<float, 2> y,
                       float eps) {
  auto ms = mean(x[_] * x[_], -1, keepdims); // [T, 1]
  y[_] = x[_] * rsqrt(ms + eps) * w[_];      // [T,D] * [T,1] * [D]
}

PK_KERNEL void softmax(In<float, 2> x, Out<float, 2> y) {
  auto e = exp(x[_] - max(x[_], -1, keepdims));
  y[_] = e / sum(e, -1, keepdims);
}

PK_KERNEL void scale_inplace(InOut<double, 1> v, double k, int64_t steps) {
  for (int i = 0; i < 3; ++i)
    v[_] = v[_] * k;
  v[_] = v[_] + static_cast<double>(steps);
}
} // namespace

TEST(EagerKernel, RmsNorm) {
  const float Xs[] = {1, 2, 3, 4, 5, 6};
  const float Ws[] = {1, 0.5f, 2};
  float Ys[6] = {};
  rmsnorm(In<float, 2>(Xs, {2, 3}, "x"), In<float, 1>(Ws, {3}, "w"),
          Out<float, 2>(Ys, {2, 3}, "y"), 1e-5f);
  // NumPy (float64): x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * w
  const double Expected[] = {0.4629095539120194, 0.4629095539120194,
                             2.7774573234721163, 0.7895418801448779,
                             0.4934636750905487, 2.368625640434634};
  for (int I = 0; I < 6; ++I)
    EXPECT_NEAR(Ys[I], Expected[I], 1e-6) << I;
}

TEST(EagerKernel, RmsNormShapeError) {
  const float Xs[6] = {}, Ws[4] = {};
  float Ys[6] = {};
  EXPECT_EQ(shapeError([&] {
              rmsnorm(In<float, 2>(Xs, {2, 3}, "x"), In<float, 1>(Ws, {4}, "w"),
                      Out<float, 2>(Ys, {2, 3}, "y"), 1e-5f);
            }),
            "cannot broadcast w[4] against mul(x, rsqrt(...))[2, 3]");
  EXPECT_EQ(shapeError([&] {
              rmsnorm(In<float, 2>(Xs, {2, 3}, "x"), In<float, 1>(Ws, {3}, "w"),
                      Out<float, 2>(Ys, {3, 2}, "y"), 1e-5f);
            }),
            "cannot broadcast mul(mul(x, rsqrt(...)), w)[2, 3] to y[3, 2]");
}

TEST(EagerKernel, SoftmaxAndLoops) {
  const float Xs[] = {0, 1, 2, 0, 0, 0};
  float Ys[6] = {};
  softmax(In<float, 2>(Xs, {2, 3}), Out<float, 2>(Ys, {2, 3}));
  // NumPy: scipy.special.softmax([0, 1, 2]) and [1/3] * 3
  expectNear(Out<float, 2>(Ys, {2, 3})[_], {2, 3},
             {0.09003057317038046, 0.24472847105479767, 0.6652409557748219,
              1.0 / 3, 1.0 / 3, 1.0 / 3},
             1e-6);

  std::vector<double> V = {1, 2};
  scale_inplace(InOut<double, 1>(V), 2.0, 10);
  EXPECT_EQ(V, (std::vector<double>{18, 26}));
}
