// Differential tests of the reduction samples: eager (the reference) against
// compiled, over row counts and row lengths with 0, 1, primes, 1000/1001,
// non-multiples of any vector width, and sizes on both sides of the
// threading threshold; then the guards.
//
// Tolerances: the compiled code accumulates float sums in float, in a
// vectorised order; the eager code sums in double. For a row of D values of
// magnitude ~1 the difference is bounded by ~D·eps relative to the sum, so
// outputs are compared with |eager - compiled| <= atol + rtol·|eager|,
// rtol = 1e-4 (D·eps = 2.4e-4 at D = 4096 is the worst case; observed
// errors are ~100x smaller). Max/min and everything elementwise are exact.
#include "common/sample.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cmath>

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

void expectClose(const std::vector<float> &E, const std::vector<float> &C,
                 double Rtol, double Atol, const std::string &What) {
  ASSERT_EQ(E.size(), C.size()) << What;
  for (size_t I = 0; I < E.size(); ++I) {
    if (std::isnan(E[I]) && std::isnan(C[I]))
      continue;
    if (!(std::fabs(double(E[I]) - C[I]) <= Atol + Rtol * std::fabs(E[I]))) {
      ADD_FAILURE() << What << ": element " << I << " eager " << E[I]
                    << " compiled " << C[I];
      return;
    }
  }
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
  std::vector<float> X, Y;
  rmsnorm({X.data(), {0, 8}}, std::vector<float>(8, 1), {Y.data(), {0, 8}},
          1e-6f);
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
