// Differential tests of kernels/tables.cpp (constant tables): eager vs
// compiled over empty, tiny, prime and vector-tail sizes. The compiled code
// does the same float (double, int) operations in the same order as the
// eager code, without contraction, so the results are equal bit for bit.
#include "common/sample.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace eager {
#include "kernels/tables.cpp"
}

void poly_float(pk::In<float> x, pk::Out<float> y);
void poly_double(pk::In<double> x, pk::Out<double> y);
void poly_std_array(pk::In<float> x, pk::Out<float> y);
void mix_rows(pk::In<int32_t> a, pk::In<int32_t> b, pk::In<int32_t> c,
              pk::Out<int32_t> o0, pk::Out<int32_t> o1, pk::Out<float> o2);

namespace {

const int64_t Sizes[] = {0, 1, 7, 17, 1001};

template <class T>
void expectSame(const std::vector<T> &E, const std::vector<T> &C,
                const char *What) {
  ASSERT_EQ(E.size(), C.size());
  for (size_t I = 0; I < E.size(); ++I)
    if (std::memcmp(&E[I], &C[I], sizeof(T)) != 0) {
      ADD_FAILURE() << What << " element " << I << " of " << E.size()
                    << ": eager " << double(E[I]) << " compiled "
                    << double(C[I]);
      return;
    }
}

TEST(Tables, FloatAndStdArrayPolynomials) {
  for (int64_t N : Sizes) {
    std::vector<float> X = sample::random(N, 3);
    std::vector<float> E(N), C(N, -1.0f);
    eager::poly_float(X, E);
    poly_float(X, C);
    expectSame(E, C, "poly_float");
    // Spot check the table itself: exp(1) to degree 5 is 2.71667.
    if (N > 0) {
      std::vector<float> One{1.0f}, P(1);
      poly_float(One, P);
      EXPECT_NEAR(P[0], 2.716667f, 1e-5f);
    }
    std::fill(C.begin(), C.end(), -1.0f);
    eager::poly_std_array(X, E);
    poly_std_array(X, C);
    expectSame(E, C, "poly_std_array");
  }
}

TEST(Tables, DoublePolynomial) {
  for (int64_t N : Sizes) {
    std::vector<float> XF = sample::random(N, 5);
    std::vector<double> X(XF.begin(), XF.end()), E(N), C(N, -1.0);
    eager::poly_double(X, E);
    poly_double(X, C);
    expectSame(E, C, "poly_double");
    for (int64_t I = 0; I < N; ++I)
      EXPECT_NEAR(C[I], std::sin(X[I]), 3e-3) << I; // |x| <= 2: degree 7
  }
}

TEST(Tables, RowsOfAnIntegerTable) {
  for (int64_t N : Sizes) {
    std::vector<int32_t> A(N), B(N), Cc(N);
    for (int64_t I = 0; I < N; ++I) {
      A[I] = int32_t(I % 13) - 6;
      B[I] = int32_t(I % 7) * 3;
      Cc[I] = 100 - int32_t(I);
    }
    std::vector<int32_t> E0(N), E1(N), C0(N, -1), C1(N, -1);
    std::vector<float> E2(N), C2(N, -1.0f);
    eager::mix_rows(A, B, Cc, E0, E1, E2);
    mix_rows(A, B, Cc, C0, C1, C2);
    expectSame(E0, C0, "o0");
    expectSame(E1, C1, "o1");
    expectSame(E2, C2, "o2");
    if (N > 1) {
      EXPECT_EQ(C0[1], A[1] + 2 * B[1] + 3 * Cc[1]);
      EXPECT_EQ(C1[1], -4 * A[1] + 5 * B[1] - 6 * Cc[1]);
    }
  }
}

} // namespace
