// Differential tests of kernels/kernel_templates.cpp (kernel templates):
// each explicit instantiation eager vs compiled. The compiled ones are
// called through the template, as a user would, so this also checks that
// they keep the template's symbols. Elementwise results are the same float
// (double) operations in the same order, so equal bit for bit; softmax
// differs by pk::vm's exp (within 2 ulp, docs/vmath.md) and the order of
// the sum: relative 1e-5 in float, 1e-12 in double.
#include "common/sample.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace eager {
#include "kernels/kernel_templates.cpp"
}

template <typename T> void t_scale(pk::In<T> x, pk::Out<T> y, T a);
template <typename T, int R> void t_softmax(pk::In<T, R> x, pk::Out<T, R> y);
template <typename T> void t_poly(pk::In<T> x, pk::Out<T> y);

namespace {

const int64_t Sizes[] = {0, 1, 7, 17, 1001, 70001};

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

template <class T>
void expectClose(const std::vector<T> &E, const std::vector<T> &C, double Rtol,
                 const char *What) {
  ASSERT_EQ(E.size(), C.size());
  for (size_t I = 0; I < E.size(); ++I)
    if (!(std::fabs(double(E[I]) - double(C[I])) <=
          Rtol * (1e-30 + std::fabs(double(E[I]))))) {
      ADD_FAILURE() << What << " element " << I << ": eager " << double(E[I])
                    << " compiled " << double(C[I]);
      return;
    }
}

template <class T> std::vector<T> input(int64_t N, unsigned Seed) {
  std::vector<float> F = sample::random(N, Seed);
  return std::vector<T>(F.begin(), F.end());
}

template <class T> void scaleAndPoly() {
  for (int64_t N : Sizes) {
    std::vector<T> X = input<T>(N, 7), E(N), C(N, T(-1));
    eager::t_scale<T>(X, E, T(1.5));
    t_scale<T>(X, C, T(1.5));
    expectSame(E, C, "t_scale");
    std::fill(C.begin(), C.end(), T(-1));
    eager::t_poly<T>(X, E);
    t_poly<T>(X, C);
    expectSame(E, C, "t_poly");
    if (N > 0)
      EXPECT_NEAR(double(C[0]),
                  1 + X[0] / 2.0 + X[0] * X[0] / 4 + X[0] * X[0] * X[0] / 8,
                  1e-5 * (1 + std::fabs(double(C[0]))));
  }
}

TEST(KernelTemplates, ScaleAndPolyFloat) { scaleAndPoly<float>(); }
TEST(KernelTemplates, ScaleAndPolyDouble) { scaleAndPoly<double>(); }

TEST(KernelTemplates, SoftmaxRank2Float) {
  for (auto [Rows, Cols] : {std::pair<int64_t, int64_t>{1, 1},
                            {3, 17},
                            {5, 1000},
                            {0, 4},
                            {300, 33}}) {
    std::vector<float> X = input<float>(Rows * Cols, 9), E(Rows * Cols),
                       C(Rows * Cols, -1.0f);
    eager::t_softmax<float, 2>(pk::In<float, 2>(X.data(), {Rows, Cols}),
                               pk::Out<float, 2>(E.data(), {Rows, Cols}));
    t_softmax<float, 2>(pk::In<float, 2>(X.data(), {Rows, Cols}),
                        pk::Out<float, 2>(C.data(), {Rows, Cols}));
    expectClose(E, C, 1e-5, "t_softmax<float, 2>");
  }
}

TEST(KernelTemplates, SoftmaxRank3Double) {
  const int64_t B = 3, Rows = 7, Cols = 129;
  std::vector<double> X = input<double>(B * Rows * Cols, 11), E(X.size()),
                      C(X.size(), -1.0);
  eager::t_softmax<double, 3>(pk::In<double, 3>(X.data(), {B, Rows, Cols}),
                              pk::Out<double, 3>(E.data(), {B, Rows, Cols}));
  t_softmax<double, 3>(pk::In<double, 3>(X.data(), {B, Rows, Cols}),
                       pk::Out<double, 3>(C.data(), {B, Rows, Cols}));
  expectClose(E, C, 1e-12, "t_softmax<double, 3>");
}

// The compiled body runs (not the eager one, which would agree): its entry
// guard names the kernel, as the instantiation, and writes nothing.
TEST(KernelTemplates, CompiledGuardsNameTheInstantiation) {
  std::vector<double> X(3, 1.0), Y(5, -7.0);
  try {
    t_scale<double>(X, Y, 2.0);
    ADD_FAILURE() << "expected pk::ShapeError";
  } catch (const pk::ShapeError &E) {
    EXPECT_NE(std::string(E.what()).find("t_scale<double>: cannot broadcast"),
              std::string::npos)
        << E.what();
  }
  EXPECT_EQ(Y, std::vector<double>(5, -7.0));
}

} // namespace
