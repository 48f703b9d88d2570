// Differential tests of test/e2e/kernels/habits.cpp: compound assignment on
// refs and locals, and pk math on uniform scalars, eager vs compiled over
// shapes with extents 0, 1 and primes. Arithmetic (+ - * / % on floats and
// integers, and the 16-bit store) is exact; results that involve exp,
// sigmoid, rsqrt, log1p or tanh of a scalar agree within a few ulp (pk::vm
// in the compiled code, libm in eager: README, "Tolerances").
#include "common/sample.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace eager {
#include "kernels/habits.cpp"
}

void accumulate(pk::InOut<float, 2> acc, pk::In<float, 1> v,
                pk::In<float, 2> w);
void ratio(pk::In<float, 2> x, pk::Out<float, 2> y, float s);
void int_update(pk::InOut<int32_t, 1> k, pk::In<int32_t, 1> d);
void half_accumulate(pk::InOut<pk::half, 1> h, pk::In<float, 1> x);
void scale_by_width(pk::In<float, 2> x, pk::Out<float, 2> y, int64_t width,
                    float eps);
void scalar_types(pk::In<double, 1> x, pk::Out<double, 1> y, int32_t n,
                  double t);

namespace {

/// |eager - compiled| <= Rtol * max(|eager|, 1): 0 is exact.
template <class T>
void expectClose(const std::vector<T> &E, const std::vector<T> &C,
                 const std::string &What, double Rtol) {
  ASSERT_EQ(E.size(), C.size()) << What;
  for (size_t I = 0; I < E.size(); ++I) {
    const double A = double(E[I]), B = double(C[I]);
    if (!(std::fabs(A - B) <= Rtol * std::fmax(std::fabs(A), 1.0))) {
      ADD_FAILURE() << What << " element " << I << ": eager " << A
                    << " compiled " << B;
      return;
    }
  }
}

/// Rows x columns: empty either way, single elements, primes, a long row.
const int64_t Shapes[][2] = {{0, 5},  {5, 0},   {1, 1},    {2, 3},
                             {7, 13}, {31, 61}, {1, 1009}, {997, 3}};

std::string tag(int64_t R, int64_t C) {
  return std::to_string(R) + "x" + std::to_string(C);
}

TEST(Habits, CompoundStoresOnRefs) {
  unsigned Seed = 1;
  for (auto [R, C] : Shapes) {
    auto A0 = sample::random(R * C, Seed++);
    auto V = sample::random(C, Seed++);
    auto W = sample::random(R * C, Seed++);
    auto AE = A0, AC = A0;
    eager::accumulate({AE.data(), {R, C}}, V, {W.data(), {R, C}});
    accumulate({AC.data(), {R, C}}, V, {W.data(), {R, C}});
    expectClose(AE, AC, "accumulate " + tag(R, C), 0);

    // y / (y + 4) with y = 1.5 x: the local t does not change y.
    auto X = sample::random(R * C, Seed++, 0, 2);
    std::vector<float> YE(R * C, -1), YC(R * C, -2);
    eager::ratio({X.data(), {R, C}}, {YE.data(), {R, C}}, 1.5f);
    ratio({X.data(), {R, C}}, {YC.data(), {R, C}}, 1.5f);
    expectClose(YE, YC, "ratio " + tag(R, C), 0);
    if (R * C != 0) {
      EXPECT_EQ(YE[0], 1.5f * X[0] / (1.5f * X[0] + 4.0f));
    }

    const int64_t N = R * C;
    std::vector<int32_t> K0(N), D(N);
    for (int64_t I = 0; I < N; ++I) {
      K0[I] = static_cast<int32_t>(A0[I] * 1000); // negatives too
      D[I] = static_cast<int32_t>(W[I] * 100);
    }
    auto KE = K0, KC = K0;
    eager::int_update({KE.data(), {N}}, {D.data(), {N}});
    int_update({KC.data(), {N}}, {D.data(), {N}});
    expectClose(KE, KC, "int_update " + tag(R, C), 0);

    std::vector<float> HX = sample::random(N, Seed++);
    auto H0 = sample::to16<pk::half>(sample::random(N, Seed++));
    auto HE = H0, HC = H0;
    eager::half_accumulate({HE.data(), {N}}, {HX.data(), {N}});
    half_accumulate({HC.data(), {N}}, {HX.data(), {N}});
    expectClose(sample::to_floats(HE), sample::to_floats(HC),
                "half_accumulate " + tag(R, C), 0);
  }
}

TEST(Habits, CompoundStoreShapeErrorsWriteNothing) {
  // v's extent must broadcast against acc's last axis: the compiled code
  // checks at entry, before any write; eager at the first `+=`.
  std::vector<float> A(6, 1.0f), V(4, 1.0f), W(6, 1.0f);
  EXPECT_THROW(eager::accumulate({A.data(), {2, 3}}, V, {W.data(), {2, 3}}),
               pk::ShapeError);
  EXPECT_THROW(accumulate({A.data(), {2, 3}}, V, {W.data(), {2, 3}}),
               pk::ShapeError);
  for (float X : A)
    EXPECT_EQ(X, 1.0f);
}

TEST(Habits, MathOnUniformScalars) {
  unsigned Seed = 100;
  for (auto [R, C] : Shapes) {
    auto X = sample::random(R * C, Seed++);
    for (float Eps : {0.0f, 1e-5f, -0.75f, 3.0f}) {
      std::vector<float> YE(R * C), YC(R * C);
      eager::scale_by_width({X.data(), {R, C}}, {YE.data(), {R, C}}, C, Eps);
      scale_by_width({X.data(), {R, C}}, {YC.data(), {R, C}}, C, Eps);
      expectClose(YE, YC, "scale_by_width " + tag(R, C), 2e-6);
    }
    std::vector<double> XD(X.begin(), X.end()), YE(R * C), YC(R * C);
    for (double T : {0.25, -1.5, 2.75}) {
      eager::scalar_types({XD.data(), {R * C}}, {YE.data(), {R * C}},
                          int32_t(C), T);
      scalar_types({XD.data(), {R * C}}, {YC.data(), {R * C}}, int32_t(C), T);
      expectClose(YE, YC, "scalar_types " + tag(R, C), 1e-6);
    }
  }
  // The value itself: x / sqrt(width) + exp(0) * sigmoid(0) + 0.25.
  std::vector<float> X = {2, 4, 6, 8}, Y(4);
  scale_by_width({X.data(), {1, 4}}, {Y.data(), {1, 4}}, 4, 0.0f);
  EXPECT_NEAR(Y[0], 1.0f + 0.5f + 0.25f, 1e-6);
  EXPECT_NEAR(Y[3], 4.0f + 0.5f + 0.25f, 1e-6);
}

} // namespace
