// Differential tests of the reduction samples: eager (the reference) against
// compiled, over row counts and row lengths with 0, 1, primes, 1000/1001,
// non-multiples of any vector width, and sizes on both sides of the
// threading threshold; then the guards.
//
// Tolerances: the compiled code accumulates float sums in float, in a
// vectorised order; the eager code sums in double. Outputs are compared with
// |eager - compiled| <= atol + rtol·|eager| (rtol = 1e-4 for sums, 1e-3 for
// layernorm's out and rstd, 1e-5 for logsumexp). These are EMPIRICAL, not
// derived for every shape tested: a float sum of n terms in any order is
// within (n - 1) u sum|t| of exact (u = 2^-24; Higham, ch. 4), which gives
// rmsnorm (n / 2 + 13) u relative, below 1e-4 only up to D ~ 3300, softmax
// (n + 98) u (inputs in [-20, 20]) only up to D ~ 1580, and layernorm's
// outputs near 0 the mean's (n + 1) u mean|x| absolute, above atol from
// D ~ 1000; the shapes reach D = 4096 and column sums over 300 rows.
// Measured (PK_DIFF_REPORT=1 prints the share of each tolerance used): at
// most 3.5% (column_mean 129x1024), sum_all 1%, layernorm's mean 1.5%, the
// others below 0.7%: a margin of ~30x. Max/min and everything elementwise
// are exact, compared bit for bit (-0.0 is not 0.0).
#include "common/sample.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace eager {
#include "add_rmsnorm/add_rmsnorm.cpp"
#include "causal_softmax/causal_softmax.cpp"
#include "column_mean/column_mean.cpp"
#include "layernorm/layernorm.cpp"
#include "logsumexp/logsumexp.cpp"
#include "rmsnorm/rmsnorm.cpp"
#include "softmax/softmax.cpp"
#include "sum_all/sum_all.cpp"
} // namespace eager

#include "common/compiled.h"

namespace {

const std::pair<int64_t, int64_t> Shapes[] = {
    {1, 1},   {1, 7},    {3, 17},   {17, 3},    {5, 1000},  {4, 1001},
    {64, 65}, {1, 4096}, {33, 129}, {300, 257}, {129, 1024}};

/// |eager - compiled| <= Atol + Rtol |eager| per element, NaN where eager
/// is NaN, and bit for bit (-0.0 is not 0.0) where both tolerances are 0.
/// PK_DIFF_REPORT=1 prints the largest fraction of the tolerance used.
void expectClose(const std::vector<float> &E, const std::vector<float> &C,
                 double Rtol, double Atol, const std::string &What) {
  static const bool Report = std::getenv("PK_DIFF_REPORT") != nullptr;
  ASSERT_EQ(E.size(), C.size()) << What;
  double Used = 0;
  for (size_t I = 0; I < E.size(); ++I) {
    if (std::isnan(E[I]) && std::isnan(C[I]))
      continue;
    const double Diff = std::fabs(double(E[I]) - C[I]),
                 Tol = Atol + Rtol * std::fabs(E[I]);
    if (Rtol == 0 && Atol == 0 ? std::memcmp(&E[I], &C[I], sizeof(float)) != 0
                               : !(Diff <= Tol)) {
      ADD_FAILURE() << What << ": element " << I << " eager " << E[I]
                    << " compiled " << C[I];
      return;
    }
    if (Tol > 0)
      Used = std::max(Used, Diff / Tol);
  }
  if (Report)
    std::printf("PK_DIFF_REPORT %s: %.4f of the tolerance\n", What.c_str(),
                Used);
}

std::string name(const char *K, int64_t T, int64_t D) {
  return std::string(K) + " " + std::to_string(T) + "x" + std::to_string(D);
}

TEST(Rmsnorm, Shapes) {
  for (auto [T, D] : Shapes) {
    auto X = sample::random(T * D, 1), W = sample::random(D, 2);
    std::vector<float> E(T * D), C(T * D);
    eager::rmsnorm({X.data(), {T, D}}, W, {E.data(), {T, D}}, 1e-6f);
    rmsnorm({X.data(), {T, D}}, W, {C.data(), {T, D}}, 1e-6f);
    expectClose(E, C, 1e-4, 1e-6, name("rmsnorm", T, D));
  }
}

TEST(Rmsnorm, ZeroRowsAndBroadcastWeight) {
  // No rows: eager and compiled both return and write nothing (the buffer
  // behind the empty output keeps its values).
  std::vector<float> X(8, 1.0f), One(8, 1.0f), YE(8, -7.0f), YC(8, -7.0f);
  EXPECT_NO_THROW(eager::rmsnorm({X.data(), {0, 8}}, One, {YE.data(), {0, 8}},
                                 1e-6f));
  EXPECT_NO_THROW(rmsnorm({X.data(), {0, 8}}, One, {YC.data(), {0, 8}}, 1e-6f));
  EXPECT_EQ(YE, std::vector<float>(8, -7.0f)) << "eager wrote a row of 0";
  EXPECT_EQ(YC, std::vector<float>(8, -7.0f)) << "compiled wrote a row of 0";
  // w of extent 1 broadcasts along D.
  const int64_t T = 5, D = 9;
  auto Xs = sample::random(T * D, 3), W1 = sample::random(1, 4);
  std::vector<float> E(T * D), C(T * D);
  eager::rmsnorm({Xs.data(), {T, D}}, W1, {E.data(), {T, D}}, 1e-6f);
  rmsnorm({Xs.data(), {T, D}}, W1, {C.data(), {T, D}}, 1e-6f);
  expectClose(E, C, 1e-4, 1e-6, "rmsnorm w[1]");
}

TEST(Softmax, ShapesAndSpecialValues) {
  for (auto [T, D] : Shapes) {
    auto X = sample::random(T * D, 5, -20, 20);
    std::vector<float> E(T * D), C(T * D);
    eager::softmax({X.data(), {T, D}}, {E.data(), {T, D}});
    softmax({X.data(), {T, D}}, {C.data(), {T, D}});
    expectClose(E, C, 1e-4, 1e-12, name("softmax", T, D));
  }
  // A row with -inf entries and a row with a NaN (NaN propagates).
  std::vector<float> X = {-INFINITY, 0.0f, 1.0f, NAN, 1.0f, 2.0f};
  std::vector<float> E(6), C(6);
  eager::softmax({X.data(), {2, 3}}, {E.data(), {2, 3}});
  softmax({X.data(), {2, 3}}, {C.data(), {2, 3}});
  expectClose(E, C, 1e-6, 0, "softmax special values");
}

TEST(Layernorm, Shapes) {
  for (auto [T, D] : Shapes) {
    auto X = sample::random(T * D, 1), W = sample::random(D, 2),
         B = sample::random(D, 3);
    std::vector<float> E(T * D), C(T * D), ME(T), MC(T), RE(T), RC(T);
    eager::layernorm({X.data(), {T, D}}, W, B, {E.data(), {T, D}}, ME, RE,
                     1e-5f);
    layernorm({X.data(), {T, D}}, W, B, {C.data(), {T, D}}, MC, RC, 1e-5f);
    std::string N = name("layernorm", T, D);
    expectClose(E, C, 1e-3, 1e-4, N + " out");
    expectClose(ME, MC, 1e-4, 1e-6, N + " mean");
    expectClose(RE, RC, 1e-3, 1e-5, N + " rstd");
  }
}

TEST(Logsumexp, Shapes) {
  for (auto [T, D] : Shapes) {
    auto X = sample::random(T * D, 7, -30, 30);
    std::vector<float> E(T), C(T);
    eager::logsumexp({X.data(), {T, D}}, E);
    logsumexp({X.data(), {T, D}}, C);
    expectClose(E, C, 1e-5, 1e-6, name("logsumexp", T, D));
  }
}

TEST(CausalSoftmax, SquareAndRectangular) {
  for (auto [T, D] : Shapes) {
    auto S = sample::random(T * D, 9, -5, 5);
    std::vector<float> E(T * D), C(T * D);
    eager::causal_softmax({S.data(), {T, D}}, {E.data(), {T, D}});
    causal_softmax({S.data(), {T, D}}, {C.data(), {T, D}});
    expectClose(E, C, 1e-4, 1e-12, name("causal_softmax", T, D));
  }
}

TEST(ColumnMean, ShapesIncludingEmptyColumns) {
  for (auto [T, D] : Shapes) {
    auto X = sample::random(T * D, 11);
    std::vector<float> E(D), C(D);
    eager::column_mean({X.data(), {T, D}}, E);
    column_mean({X.data(), {T, D}}, C);
    expectClose(E, C, 1e-4, 1e-6, name("column_mean", T, D));
  }
  // Zero rows: the mean of an empty axis is NaN, as in NumPy.
  std::vector<float> X, E(4), C(4);
  eager::column_mean({X.data(), {0, 4}}, E);
  column_mean({X.data(), {0, 4}}, C);
  for (float V : C)
    EXPECT_TRUE(std::isnan(V));
  expectClose(E, C, 0, 0, "column_mean of 0 rows");
}

TEST(AddRmsnorm, UpdatesTheResidualOnceAndNormalisesTheNewValue) {
  for (auto [T, D] : Shapes) {
    auto H0 = sample::random(T * D, 1), X = sample::random(T * D, 2),
         W = sample::random(D, 3);
    auto HE = H0, HC = H0;
    std::vector<float> E(T * D), C(T * D);
    eager::add_rmsnorm({HE.data(), {T, D}}, {X.data(), {T, D}}, W,
                       {E.data(), {T, D}}, 1e-6f);
    add_rmsnorm({HC.data(), {T, D}}, {X.data(), {T, D}}, W, {C.data(), {T, D}},
                1e-6f);
    std::string N = name("add_rmsnorm", T, D);
    expectClose(HE, HC, 0, 0, N + " h");
    expectClose(E, C, 1e-4, 1e-6, N + " y");
  }
}

TEST(SumAll, ShapesAndEmpty) {
  for (auto [T, D] : Shapes) {
    auto X = sample::random(T * D, 13, 0, 1);
    std::vector<float> E(1), C(1);
    eager::sum_all({X.data(), {T, D}}, {E.data(), {}});
    sum_all({X.data(), {T, D}}, {C.data(), {}});
    expectClose(E, C, 1e-4, 1e-6, name("sum_all", T, D));
  }
  std::vector<float> X, C(1, -1);
  sum_all({X.data(), {0, 3}}, {C.data(), {}});
  EXPECT_EQ(C[0], 0.0f) << "the sum of nothing is 0";
}

TEST(ReductionGuards, WrongShapesThrowBeforeAnyWrite) {
  std::vector<float> X(12, 1), W(5, 1), Y(12, -7);
  try {
    rmsnorm({X.data(), {3, 4}}, W, {Y.data(), {3, 4}}, 1e-6f);
    ADD_FAILURE() << "expected pk::ShapeError";
  } catch (const pk::ShapeError &E) {
    EXPECT_NE(std::string(E.what()).find("rmsnorm: cannot broadcast w[5]"),
              std::string::npos)
        << E.what();
  }
  EXPECT_EQ(Y, std::vector<float>(12, -7));
  // max over an empty axis is an error at entry, as in the eager code.
  std::vector<float> Empty, Out;
  EXPECT_THROW(softmax({Empty.data(), {3, 0}}, {Out.data(), {3, 0}}),
               pk::ShapeError);
  EXPECT_THROW(eager::softmax({Empty.data(), {3, 0}}, {Out.data(), {3, 0}}),
               pk::ShapeError);
}

} // namespace
