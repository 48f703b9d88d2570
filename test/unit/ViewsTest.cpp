//===- ViewsTest.cpp - Eager views, windows, gathers and arg-reductions ---===//
//
// The eager semantics of reshape, permute_dims, slice, concat, ref windows
// (`ref.slice(axis, begin, end)`), take, argmax/argmin and matmul of any rank
// (language.md §2 and §3). Every expected value is what NumPy 2 computes for
// the same expression (np.reshape, np.transpose with axes, basic slicing,
// np.concatenate, np.take, np.argmax/np.argmin, np.matmul), written as a
// literal; where pk differs on purpose (slices and windows never clamp, take
// never wraps a negative index) the test checks pk's ShapeError.
//
//===----------------------------------------------------------------------===//

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace pk::lang;
using pk::ShapeError;

namespace {

using Shape = std::vector<int64_t>;
const float NaNf = std::numeric_limits<float>::quiet_NaN();

template <class T>
void expectArray(const pk::Array<T> &A, const Shape &S,
                 const std::vector<T> &Values) {
  ASSERT_EQ(A.shape(), S) << A.label();
  ASSERT_EQ(A.size(), static_cast<int64_t>(Values.size())) << A.label();
  for (int64_t I = 0; I < A.size(); ++I)
    EXPECT_EQ(A.at(I), Values[static_cast<size_t>(I)])
        << A.label() << " at " << I;
}

/// 0, 1, 2, ... with shape S.
template <class T> pk::Array<T> iota(const Shape &S, const char *Label) {
  pk::Array<T> A(S, Label);
  for (int64_t I = 0; I < A.size(); ++I)
    A.at(I) = static_cast<T>(I);
  return A;
}

template <class Fn> std::string shapeError(Fn &&F) {
  try {
    (void)F();
  } catch (const ShapeError &E) {
    return E.what();
  }
  return "(no ShapeError)";
}

//===----------------------------------------------------------------------===//
// reshape
//===----------------------------------------------------------------------===//

TEST(EagerViews, ReshapeKeepsRowMajorOrderAndInfersOneExtent) {
  auto X = iota<int32_t>({2, 3}, "x");
  expectArray(reshape(X, {3, 2}), {3, 2}, {0, 1, 2, 3, 4, 5});
  expectArray(reshape(X, {-1}), {6}, {0, 1, 2, 3, 4, 5});
  expectArray(reshape(X, {1, -1, 2}), {1, 3, 2}, {0, 1, 2, 3, 4, 5});
  // Run-time extents, as in a head split: [T, H * Dh] -> [T, H, Dh].
  int64_t T = X.extent(0), H = 3;
  expectArray(reshape(X, {T, H, -1}), {2, 3, 1}, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(reshape(X, {3, 2}).label(), "reshape(x, {3, 2})");
  // Empty arrays: -1 next to a non-zero extent is 0 (NumPy).
  auto E = iota<float>({0, 4}, "e");
  expectArray(reshape(E, {-1, 2}), {0, 2}, {});
  // Rank 0 to rank 1 and back.
  auto S = reshape(pk::Array<float>({}, {2.5f}, "s"), {1, 1});
  expectArray(S, {1, 1}, {2.5f});
  expectArray(reshape(S, {}), {}, {2.5f});
}

TEST(EagerViews, ReshapeErrorsNameTheValueAndTheExtents) {
  auto X = iota<int32_t>({2, 3}, "x");
  EXPECT_EQ(shapeError([&] {
              return reshape(X, {-1, -1});
            }),
            "reshape: cannot reshape x[2, 3] (6 elements) into {-1, -1}: "
            "more than one extent is -1");
  EXPECT_EQ(shapeError([&] {
              return reshape(X, {4, 2});
            }),
            "reshape: cannot reshape x[2, 3] (6 elements) into {4, 2}: the "
            "sizes differ");
  EXPECT_EQ(shapeError([&] {
              return reshape(X, {4, -1});
            }),
            "reshape: cannot reshape x[2, 3] (6 elements) into {4, -1}: 6 is "
            "not a multiple of 4");
  EXPECT_EQ(shapeError([&] {
              return reshape(X, {-2, -3});
            }),
            "reshape: cannot reshape x[2, 3] (6 elements) into {-2, -3}: "
            "extent -2 is negative");
  EXPECT_EQ(shapeError([&] {
              return reshape(iota<float>({0}, "e"), {0, -1});
            }),
            "reshape: cannot reshape e[0] (0 elements) into {0, -1}: 0 is not "
            "a multiple of 0");
}

//===----------------------------------------------------------------------===//
// permute_dims
//===----------------------------------------------------------------------===//

TEST(EagerViews, PermuteDimsMovesAxes) {
  auto A = iota<int64_t>({2, 3, 4}, "a");
  const std::vector<int64_t> Want = {0,  4,  8,  12, 16, 20, 1,  5,
                                     9,  13, 17, 21, 2,  6,  10, 14,
                                     18, 22, 3,  7,  11, 15, 19, 23};
  expectArray(permute_dims(A, {2, 0, 1}), {4, 2, 3}, Want);
  expectArray(permute_dims(A, {-1, 0, 1}), {4, 2, 3}, Want);
  expectArray(permute_dims(A, {0, 1, 2}), {2, 3, 4},
              std::vector<int64_t>(A.data(), A.data() + 24));
  // A head merge: [H, T, Dh] -> [T, H, Dh] -> [T, H * Dh].
  auto M = reshape(permute_dims(A, {1, 0, 2}), {3, -1});
  expectArray(M, {3, 8}, {0,  1,  2,  3,  12, 13, 14, 15, 4,  5,  6,  7,
                          16, 17, 18, 19, 8,  9,  10, 11, 20, 21, 22, 23});
  expectArray(permute_dims(iota<float>({0, 3}, "e"), {1, 0}), {3, 0}, {});
}

TEST(EagerViews, PermuteDimsErrors) {
  auto A = iota<float>({2, 3, 4}, "a");
  EXPECT_EQ(shapeError([&] {
              return permute_dims(A, {1, 0});
            }),
            "permute_dims: {1, 0} has 2 axes for a[2, 3, 4] of rank 3");
  EXPECT_EQ(shapeError([&] {
              return permute_dims(A, {0, 2, -1});
            }),
            "permute_dims: axis -1 appears twice in {0, 2, -1} for a[2, 3, 4]");
  EXPECT_EQ(shapeError([&] {
              return permute_dims(A, {0, 1, 3});
            }),
            "permute_dims: axis 3 is out of range for a[2, 3, 4]");
}

//===----------------------------------------------------------------------===//
// slice and concat
//===----------------------------------------------------------------------===//

TEST(EagerViews, SliceTakesAHalfOpenRangeOfOneAxis) {
  auto X = iota<int32_t>({3, 4}, "x");
  expectArray(slice(X, 1, 1, 3), {3, 2}, {1, 2, 5, 6, 9, 10});
  expectArray(slice(X, -1, 1, 3), {3, 2}, {1, 2, 5, 6, 9, 10});
  // Negative bounds count from the end: x[-2:3].
  expectArray(slice(X, 0, -2, 3), {2, 4}, {4, 5, 6, 7, 8, 9, 10, 11});
  expectArray(slice(X, 1, 2, 2), {3, 0}, {});
  // Rotary embeddings' halves of the last axis, put back together.
  auto Lo = slice(X, -1, 0, 2), Hi = slice(X, -1, 2, 4);
  expectArray(concat({-Hi, Lo}, -1), {3, 4},
              {-2, -3, 0, 1, -6, -7, 4, 5, -10, -11, 8, 9});
  EXPECT_EQ(Lo.label(), "slice(x, -1, 0, 2)");
}

TEST(EagerViews, SliceNeverClamps) {
  auto X = iota<int32_t>({3, 4}, "x");
  const std::string Need = " (it needs 0 <= begin <= end <= 4 once negative "
                           "bounds count from the end)";
  EXPECT_EQ(shapeError([&] { return slice(X, 1, 2, 5); }),
            "slice: [2, 5) is outside axis 1 of x[3, 4]" + Need);
  EXPECT_EQ(shapeError([&] { return slice(X, 1, 3, 2); }),
            "slice: [3, 2) is outside axis 1 of x[3, 4]" + Need);
  EXPECT_EQ(shapeError([&] { return slice(X, 1, -5, 2); }),
            "slice: [-5, 2) is outside axis 1 of x[3, 4]" + Need);
  EXPECT_EQ(shapeError([&] { return slice(X, 2, 0, 1); }),
            "slice: axis 2 is out of range for x[3, 4]");
}

TEST(EagerViews, ConcatJoinsAlongOneAxis) {
  pk::Array<int32_t> A({2, 2}, {1, 2, 3, 4}, "a");
  pk::Array<int32_t> B({2, 1}, {5, 6}, "b");
  expectArray(concat({A, B}, 1), {2, 3}, {1, 2, 5, 3, 4, 6});
  expectArray(concat({A, A * 10, A * 100}, 0), {6, 2},
              {1, 2, 3, 4, 10, 20, 30, 40, 100, 200, 300, 400});
  expectArray(concat({A}, 0), {2, 2}, {1, 2, 3, 4});
  expectArray(concat({pk::Array<int32_t>({0, 2}, "e"), A}, 0), {2, 2},
              {1, 2, 3, 4});
  EXPECT_EQ(concat({A, B}, 1).label(), "concat({a, b}, 1)");
  // A ref's value joins like any other.
  std::vector<float> Buf = {7, 8};
  In<float> R(Buf, "r");
  pk::Array<float> F({1}, {9}, "f");
  expectArray(concat({R[_], F}, 0), {3}, {7.0f, 8.0f, 9.0f});
}

TEST(EagerViews, ConcatErrors) {
  pk::Array<int32_t> A({2, 2}, {1, 2, 3, 4}, "a");
  pk::Array<int32_t> B({2, 1}, {5, 6}, "b");
  EXPECT_EQ(shapeError([&] {
              return concat({A, B}, 0);
            }),
            "concat: b[2, 1] does not fit a[2, 2] along axis 0 (the other "
            "extents must be equal)");
  EXPECT_EQ(shapeError([&] {
              return concat({A, pk::Array<int32_t>({4}, "v")}, 0);
            }),
            "concat: v[4] does not fit a[2, 2] along axis 0 (the other "
            "extents must be equal)");
  EXPECT_EQ(
      shapeError([&] { return concat({pk::Array<int32_t>({}, {1}, "s")}, 0); }),
      "concat: s[] has rank 0");
  EXPECT_EQ(shapeError([&] {
              return concat({A, B}, 2);
            }),
            "concat: axis 2 is out of range for a[2, 2]");
}

//===----------------------------------------------------------------------===//
// Windows of refs
//===----------------------------------------------------------------------===//

TEST(EagerWindows, ReadNestedWindows) {
  std::vector<float> Buf(10);
  for (size_t I = 0; I < Buf.size(); ++I)
    Buf[I] = static_cast<float>(I);
  In<float, 2> X(Buf.data(), {2, 5}, "x");
  auto W = X.slice(1, 1, 4);
  EXPECT_EQ(W.extent(0), 2);
  EXPECT_EQ(W.extent(1), 3);
  EXPECT_EQ(W.label(), "x.slice(1, 1, 4)");
  expectArray(W[_], {2, 3}, {1.0f, 2.0f, 3.0f, 6.0f, 7.0f, 8.0f});
  expectArray(W.slice(0, 1, 2)[_], {1, 3}, {6.0f, 7.0f, 8.0f});
  expectArray(X.slice(-1, 2, 2)[_], {2, 0}, {});
  // The window's extent in an expression, as a kernel would use it.
  expectArray(W[_] * static_cast<float>(W.extent(1)), {2, 3},
              {3.0f, 6.0f, 9.0f, 18.0f, 21.0f, 24.0f});
}

/// A KV-cache append written the way a decoder layer writes it.
PK_KERNEL void appendKV(In<float, 3> k, InOut<float, 3> cache, int64_t pos,
                        Out<float, 2> prefixSum) {
  auto T = k.extent(1);
  cache.slice(1, pos, pos + T)[_] = k[_];
  prefixSum[_] = sum(cache.slice(1, 0, pos + T)[_], 1);
}

TEST(EagerWindows, WriteThenReadAnOverlappingWindow) {
  // cache [2, 4, 2], zeros; k [2, 2, 2] = 1..8 written at positions 1, 2.
  std::vector<float> Cache(16, 0.0f), K(8), Sum(4, -1.0f);
  for (size_t I = 0; I < K.size(); ++I)
    K[I] = static_cast<float>(I + 1);
  appendKV(In<float, 3>(K.data(), {2, 2, 2}, "k"),
           InOut<float, 3>(Cache.data(), {2, 4, 2}, "cache"), 1,
           Out<float, 2>(Sum.data(), {2, 2}, "prefixSum"));
  EXPECT_EQ(Cache, (std::vector<float>{0, 0, 1, 2, 3, 4, 0, 0, //
                                       0, 0, 5, 6, 7, 8, 0, 0}));
  // Positions 0..2 of each head: 0 + 1 + 3, 0 + 2 + 4; 0 + 5 + 7, 0 + 6 + 8.
  EXPECT_EQ(Sum, (std::vector<float>{4, 6, 12, 14}));
}

TEST(EagerWindows, StoresBroadcastAndConvert) {
  std::vector<pk::bfloat16> Buf(6, pk::bfloat16(0.0f));
  Out<pk::bfloat16, 2> Y(Buf.data(), {2, 3}, "y");
  Y.slice(1, 1, 3)[_] = pk::Array<double>({2}, {1.5, 1.0 / 3.0}, "v");
  Y.slice(0, 1, 2).slice(1, 0, 1)[_] = 7;
  const float Third = pk::to_float(pk::bfloat16(1.0f / 3.0f));
  std::vector<float> Got;
  for (auto V : Buf)
    Got.push_back(pk::to_float(V));
  EXPECT_EQ(Got, (std::vector<float>{0.0f, 1.5f, Third, 7.0f, 1.5f, Third}));
  // int8: stored modulo 2^8 like any int8 ref, read as int32_t.
  std::vector<int8_t> B8 = {1, 2, 3, 4};
  InOut<int8_t, 1> Z(B8, "z");
  Z.slice(0, 2, 4)[_] = Z.slice(0, 0, 2)[_] + 127;
  EXPECT_EQ(B8, (std::vector<int8_t>{1, 2, -128, -127}));
  expectArray(In<int8_t, 1>(B8.data(), {4}).slice(0, 2, 4)[_], {2},
              std::vector<int32_t>{-128, -127});
}

TEST(EagerWindows, BadBoundsRaiseBeforeAnyWrite) {
  std::vector<float> Buf(8, 1.0f);
  Out<float, 2> Y(Buf.data(), {2, 4}, "cache");
  EXPECT_EQ(shapeError([&] {
              Y.slice(1, 3, 5)[_] = 0.0f;
              return 0;
            }),
            "slice: the window [3, 5) of axis 1 is outside cache[2, 4] (it "
            "needs 0 <= begin <= end <= 4)");
  EXPECT_EQ(shapeError([&] {
              Y.slice(1, 2, 1)[_] = 0.0f;
              return 0;
            }),
            "slice: the window [2, 1) of axis 1 is outside cache[2, 4] (it "
            "needs 0 <= begin <= end <= 4)");
  const int64_t Pos = -1;
  EXPECT_EQ(shapeError([&] {
              Y.slice(1, Pos, 2)[_] = 0.0f;
              return 0;
            }),
            "slice: the window [-1, 2) of axis 1 of cache[2, 4] has a "
            "negative bound (a window's bounds are never negative)");
  EXPECT_EQ(shapeError([&] { return Y.slice(0, 0, 1).slice(1, 0, 9); }),
            "slice: the window [0, 9) of axis 1 is outside "
            "cache.slice(0, 0, 1)[1, 4] (it needs 0 <= begin <= end <= 4)");
  EXPECT_EQ(shapeError([&] {
              Y.slice(0, 0, 1)[_] = pk::Array<float>({3}, "v");
              return 0;
            }),
            "cannot broadcast v[3] to cache.slice(0, 0, 1)[1, 4]");
  EXPECT_EQ(Buf, std::vector<float>(8, 1.0f));
}

//===----------------------------------------------------------------------===//
// take
//===----------------------------------------------------------------------===//

TEST(EagerGather, TakeWithIndicesOfRankZeroToTwo) {
  auto T = iota<float>({4, 3}, "table");
  // An embedding lookup: rows 3 and 0.
  pk::Array<int32_t> Rows({2}, {3, 0}, "tokens");
  expectArray(take(T, Rows, 0), {2, 3}, {9.0f, 10.0f, 11.0f, 0.0f, 1.0f, 2.0f});
  EXPECT_EQ(take(T, Rows, 0).label(), "take(table, tokens, 0)");
  // A scalar or a rank-0 index removes the axis.
  expectArray(take(T, int64_t{2}, 0), {3}, {6.0f, 7.0f, 8.0f});
  expectArray(take(T, pk::Array<int64_t>({}, {1}, "i"), 1), {4},
              {1.0f, 4.0f, 7.0f, 10.0f});
  // Rank-2 indices along axis 1.
  pk::Array<int64_t> I2({2, 2}, {2, 0, 1, 1}, "i2");
  expectArray(take(T, I2, -1), {4, 2, 2},
              {2.0f, 0.0f, 1.0f, 1.0f, 5.0f, 3.0f, 4.0f, 4.0f, 8.0f, 6.0f, 7.0f,
               7.0f, 11.0f, 9.0f, 10.0f, 10.0f});
  expectArray(take(T, pk::Array<int32_t>({0}, "none"), 0), {0, 3}, {});
}

TEST(EagerGather, TakeChecksEveryIndex) {
  auto T = iota<float>({4, 3}, "table");
  EXPECT_EQ(shapeError([&] {
              return take(T, pk::Array<int32_t>({3}, {0, 4, 1}, "tokens"), 0);
            }),
            "take: index 4 (element 1 of tokens) is outside [0, 4) of axis 0 "
            "of table[4, 3]");
  EXPECT_EQ(shapeError([&] { return take(T, -1, 1); }),
            "take: index -1 is outside [0, 3) of axis 1 of table[4, 3]");
  EXPECT_EQ(shapeError([&] { return take(T, 0, 2); }),
            "take: axis 2 is out of range for table[4, 3]");
}

//===----------------------------------------------------------------------===//
// argmax, argmin
//===----------------------------------------------------------------------===//

TEST(EagerArgReductions, FirstOccurrenceAndNaN) {
  pk::Array<float> V({3, 4}, {1, 3, 3, 0, NaNf, 5, NaNf, 5, 2, 2, 1, NaNf},
                     "v");
  expectArray(argmax(V, -1), {3}, std::vector<int64_t>{1, 0, 3});
  expectArray(argmin(V, -1), {3}, std::vector<int64_t>{3, 0, 3});
  expectArray(argmax(V, 0), {4}, std::vector<int64_t>{1, 1, 1, 2});
  expectArray(argmin(V, 0), {4}, std::vector<int64_t>{1, 2, 1, 2});
  expectArray(argmax(V, 1, keepdims), {3, 1}, std::vector<int64_t>{1, 0, 3});
  EXPECT_EQ(argmax(V, 1, keepdims).label(), "argmax(v, 1, keepdims)");
  pk::Array<int32_t> I({2, 3}, {4, -1, 4, 0, 7, 7}, "i");
  expectArray(argmax(I, 0), {3}, std::vector<int64_t>{0, 1, 1});
  expectArray(argmin(I, 1), {2}, std::vector<int64_t>{1, 0});
  // Greedy decoding: the token with the largest logit.
  pk::Array<float> Logits({1, 5}, {0.1f, 2.0f, -1.0f, 2.0f, 1.0f}, "logits");
  expectArray(argmax(Logits, -1), {1}, std::vector<int64_t>{1});
  expectArray(argmax(pk::Array<float>({0, 3}, "e"), 1), {0},
              std::vector<int64_t>{});
}

TEST(EagerArgReductions, EmptyAxisIsAnError) {
  EXPECT_EQ(shapeError([] {
              return argmax(pk::Array<float>({2, 0}, "e"), 1);
            }),
            "argmax of an empty axis: e[2, 0] (axis 1)");
  EXPECT_EQ(shapeError([] { return argmin(pk::Array<float>({0}, "e"), 0); }),
            "argmin of an empty axis: e[0] (axis 0)");
}

//===----------------------------------------------------------------------===//
// matmul of any rank >= 2
//===----------------------------------------------------------------------===//

TEST(EagerLinalgRank4, BatchAxesBroadcast) {
  auto A = iota<double>({2, 1, 2, 3}, "a");
  auto B = iota<double>({1, 3, 3, 2}, "b") - 5.0;
  expectArray(matmul(A, B), {2, 3, 2, 2},
              {-5.0, -2.0, -32.0, -20.0, 13.0,  16.0,  40.0,  52.0,
               31.0, 34.0, 112.0, 124.0, -59.0, -38.0, -86.0, -56.0,
               67.0, 88.0, 94.0,  124.0, 193.0, 214.0, 274.0, 304.0});
  // A rank-2 operand is shared by every batch.
  auto W = iota<double>({3, 2}, "w") - 2.0;
  expectArray(matmul(A, W), {2, 1, 2, 2},
              {4.0, 7.0, 4.0, 16.0, 4.0, 25.0, 4.0, 34.0});
  // Grouped-query attention's scores: [B, Hkv, G, T, D] x [B, Hkv, 1, D, S].
  auto Q = iota<float>({1, 2, 2, 1, 2}, "q");
  auto K = iota<float>({1, 2, 1, 2, 3}, "kT");
  expectArray(matmul(Q, K), {1, 2, 2, 1, 3},
              {3.0f, 4.0f, 5.0f, 9.0f, 14.0f, 19.0f, 69.0f, 78.0f, 87.0f, 99.0f,
               112.0f, 125.0f});
  EXPECT_EQ(
      shapeError([&] {
        return matmul(iota<float>({2, 2, 3}, "a"), iota<float>({3, 3, 4}, "b"));
      }),
      "cannot matmul a[2, 2, 3] with b[3, 3, 4]: batch extents 2 and 3 "
      "differ");
}

} // namespace
