// Refs may not alias (language.md §1): compiled kernels check, before any
// write, that no written ref shares memory with another ref of the call, and
// raise pk::AliasError naming both. An in-place update is one InOut ref.
#include "common/compiled.h"

#include <pk/ref.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

template <class Fn> std::string aliasMessage(Fn &&Call) {
  try {
    Call();
  } catch (const pk::AliasError &E) {
    return E.what();
  }
  return "(no pk::AliasError)";
}

TEST(Aliasing, OutputSameAsInputIsRefusedBeforeAnyWrite) {
  std::vector<float> X = {1, 2, 3, 4, 5, 6};
  const std::vector<float> Before = X;
  pk::In<float, 2> In(X.data(), {2, 3});
  pk::Out<float, 2> Out(X.data(), {2, 3});
  EXPECT_EQ(aliasMessage([&] { softmax(In, Out); }),
            "softmax: y overlaps x in memory; refs may not alias (an in-place "
            "update is one InOut ref)");
  EXPECT_EQ(X, Before) << "nothing written";
}

TEST(Aliasing, PartialOverlapIsRefused) {
  std::vector<float> Buf(10, 1.0f);
  pk::In<float> A(Buf.data(), {6}), B(Buf.data(), {6}), C(Buf.data(), {6});
  // o starts inside a, b and c.
  pk::Out<float> O(Buf.data() + 4, {6});
  EXPECT_NE(aliasMessage([&] { fma(A, B, C, O); }).find("fma: o overlaps a"),
            std::string::npos);
}

TEST(Aliasing, TwoOutputsSharingMemoryAreRefused) {
  std::vector<float> X(2 * 4, 1.0f), W(4, 1.0f), B(4, 0.0f), Y(2 * 4), Stats(2);
  pk::In<float, 2> In(X.data(), {2, 4});
  EXPECT_NE(aliasMessage([&] {
              layernorm(In, pk::In<float>(W.data(), {4}),
                        pk::In<float>(B.data(), {4}),
                        pk::Out<float, 2>(Y.data(), {2, 4}),
                        pk::Out<float>(Stats.data(), {2}),
                        pk::Out<float>(Stats.data(), {2}), 1e-5f);
            }).find("layernorm: mean_out overlaps rstd_out"),
            std::string::npos);
}

TEST(Aliasing, ReadOnlyRefsMayShareAndEmptyRefsNeverOverlap) {
  // Inputs may be the same array; an empty output overlaps nothing.
  std::vector<float> X = {1, 2, 3}, O(3);
  pk::In<float> A(X.data(), {3});
  fma(A, A, A, pk::Out<float>(O.data(), {3}));
  EXPECT_EQ(O, (std::vector<float>{2, 6, 12}));
  pk::Out<float> Empty(X.data(), {0});
  pk::In<float> Z(X.data(), {0});
  EXPECT_NO_THROW(fma(Z, Z, Z, Empty));
}

TEST(Aliasing, InOutIsTheInPlaceForm) {
  std::vector<float> X = {1, 2, 3}, Y = {1, 1, 1};
  axpby(2.0f, pk::In<float>(X.data(), {3}), 1.0f,
        pk::InOut<float>(Y.data(), {3}));
  EXPECT_EQ(Y, (std::vector<float>{3, 5, 7}));
}

} // namespace
