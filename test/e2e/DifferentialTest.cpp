// Differential tests of the sample kernels: eager (the reference, <pk/pk.h>)
// against compiled (pkc's .pk.cpp), over shapes with 0, 1, small primes,
// sizes that are not multiples of any vector width, a large prime, and
// run-time broadcasts. Then the entry guards: wrong shapes raise
// pk::ShapeError before any write.
//
// Tolerances (float32): 0 ulp for + - * / sqrt and comparisons (IEEE
// correctly rounded, pk::vm::sqrt included, and the generated code evaluates
// the same expression tree in the same order). gelu: the compiled tanh is
// pk::vm::tanh (<= 3 ulp, docs/vmath.md), the eager one libm's; through
// 0.5·x·(1 + tanh(z)) an error of 3 ulp of 1 in tanh becomes an absolute
// error of up to 0.5·|x|·3·2^-24 (1 + tanh cancels for large negative x), so
// gelu is compared with |eager - compiled| <= 2e-7·|x| + 4 ulp.
#include "common/sample.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace eager {
#include "adam_step/adam_step.cpp"
#include "axpby/axpby.cpp"
#include "broadcast_bias/broadcast_bias.cpp"
#include "fma/fma.cpp"
#include "gelu/gelu.cpp"
#include "relu_where/relu_where.cpp"
} // namespace eager

// The compiled kernels (pk_add_kernels links their .pk.cpp).
#include "common/compiled.h"

namespace {

const int64_t Sizes[] = {0, 1, 3, 17, 64, 65, 1000, 1000003};

void expectClose(const std::vector<float> &Eager,
                 const std::vector<float> &Compiled, int64_t MaxUlp,
                 const std::string &What) {
  ASSERT_EQ(Eager.size(), Compiled.size()) << What;
  for (size_t I = 0; I < Eager.size(); ++I) {
    int64_t D = sample::ulp_distance(Eager[I], Compiled[I]);
    // ulp_distance counts -0.0 and 0.0 as equal; "0 ulp" here means the
    // same bits (NaN aside): these kernels are elementwise, so the sign of
    // a zero is the same computation's on both sides.
    if (D == 0 && MaxUlp == 0 && !std::isnan(Eager[I]) &&
        std::signbit(Eager[I]) != std::signbit(Compiled[I]))
      D = 1;
    if (D > MaxUlp) {
      ADD_FAILURE() << What << ": element " << I << " eager " << Eager[I]
                    << " compiled " << Compiled[I] << " (" << D << " ulp > "
                    << MaxUlp << ")";
      return;
    }
  }
}

/// Runs `Body` and expects a ShapeError whose message contains `Needle`.
void expectShapeError(const std::function<void()> &Body,
                      const std::string &Needle) {
  try {
    Body();
    ADD_FAILURE() << "expected pk::ShapeError containing: " << Needle;
  } catch (const pk::ShapeError &E) {
    EXPECT_NE(std::string(E.what()).find(Needle), std::string::npos)
        << "message: " << E.what();
  }
}

TEST(Fma, AllSizes) {
  for (int64_t N : Sizes) {
    auto A = sample::random(N, 1), B = sample::random(N, 2),
         C = sample::random(N, 3);
    std::vector<float> E(N), P(N);
    eager::fma(A, B, C, E);
    fma(A, B, C, P);
    expectClose(E, P, 0, "fma N=" + std::to_string(N));
  }
}

TEST(Fma, RunTimeBroadcastOfExtentOne) {
  // a and c have one element: NumPy broadcasts them over o.
  for (int64_t N : {1, 5, 1000003}) {
    auto A = sample::random(1, 1), B = sample::random(N, 2),
         C = sample::random(1, 3);
    std::vector<float> E(N), P(N);
    eager::fma(A, B, C, E);
    fma(A, B, C, P);
    expectClose(E, P, 0, "fma broadcast N=" + std::to_string(N));
  }
}

TEST(Axpby, AllSizes) {
  for (int64_t N : Sizes) {
    auto X = sample::random(N, 1), Y = sample::random(N, 2);
    auto E = Y, P = Y;
    eager::axpby(1.5f, X, -2.0f, E);
    axpby(1.5f, X, -2.0f, P);
    expectClose(E, P, 0, "axpby N=" + std::to_string(N));
  }
}

void expectGeluClose(const std::vector<float> &X, const std::vector<float> &E,
                     const std::vector<float> &P, const std::string &What) {
  for (size_t I = 0; I < E.size(); ++I) {
    if (sample::ulp_distance(E[I], P[I]) <= 4)
      continue;
    if (std::fabs(double(E[I]) - P[I]) <= 2e-7 * std::fabs(X[I]))
      continue;
    ADD_FAILURE() << What << ": gelu(" << X[I] << ") eager " << E[I]
                  << " compiled " << P[I];
    return;
  }
}

TEST(Gelu, AllSizesAndSpecialValues) {
  for (int64_t N : Sizes) {
    auto X = sample::random(N, 4, -8, 8);
    std::vector<float> E(N), P(N);
    eager::gelu(X, E);
    gelu(X, P);
    expectGeluClose(X, E, P, "gelu N=" + std::to_string(N));
  }
  std::vector<float> X = {0.0f,   -0.0f, INFINITY, -INFINITY, NAN,   1e-30f,
                          -1e30f, 3.0f,  -3.0f,    10.0f,     -10.0f};
  std::vector<float> E(X.size()), P(X.size());
  eager::gelu(X, E);
  gelu(X, P);
  expectGeluClose(X, E, P, "gelu special values");
}

TEST(ReluWhere, AllSizes) {
  for (int64_t N : Sizes) {
    auto X = sample::random(N, 5);
    std::vector<float> E(N), P(N);
    eager::relu_where(X, E);
    relu_where(X, P);
    expectClose(E, P, 0, "relu_where N=" + std::to_string(N));
  }
}

TEST(AdamStep, AllSizes) {
  for (int64_t N : Sizes) {
    auto P0 = sample::random(N, 1), M0 = sample::random(N, 2, -0.1f, 0.1f),
         V0 = sample::random(N, 3, 0, 0.1f), G = sample::random(N, 4);
    auto PE = P0, ME = M0, VE = V0, PC = P0, MC = M0, VC = V0;
    eager::adam_step(PE, ME, VE, G, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.19f, 0.002f);
    adam_step(PC, MC, VC, G, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.19f, 0.002f);
    std::string What = " N=" + std::to_string(N);
    expectClose(ME, MC, 0, "adam m" + What);
    expectClose(VE, VC, 0, "adam v" + What);
    expectClose(PE, PC, 0, "adam p" + What);
  }
}

TEST(AdamStep, OutputsOfDifferentShapesRunUnfused) {
  // g and v have one element, so NumPy accepts v shorter than p and m.
  // pkc's fused loop needs equal shapes: it falls back to one loop per
  // output, ordered so that p (which reads the old m and v) runs first.
  const int64_t N = 7;
  auto P0 = sample::random(N, 1), M0 = sample::random(N, 2),
       V0 = sample::random(1, 3, 0, 1), G = sample::random(1, 4);
  auto PE = P0, ME = M0, VE = V0, PC = P0, MC = M0, VC = V0;
  eager::adam_step(PE, ME, VE, G, 0.1f, 0.9f, 0.999f, 1e-8f, 0.19f, 0.002f);
  adam_step(PC, MC, VC, G, 0.1f, 0.9f, 0.999f, 1e-8f, 0.19f, 0.002f);
  expectClose(PE, PC, 0, "adam p");
  expectClose(ME, MC, 0, "adam m");
  expectClose(VE, VC, 0, "adam v");
}

TEST(BroadcastBias, MixedRankShapes) {
  const std::pair<int64_t, int64_t> Shapes[] = {
      {0, 5}, {5, 0}, {1, 1}, {3, 17}, {17, 3}, {64, 65}, {1000, 1003}};
  for (auto [T, D] : Shapes) {
    auto X = sample::random(T * D, 1), B = sample::random(D, 2);
    std::vector<float> E(T * D), P(T * D);
    eager::broadcast_bias({X.data(), {T, D}}, B, {E.data(), {T, D}});
    broadcast_bias({X.data(), {T, D}}, B, {P.data(), {T, D}});
    expectClose(E, P, 0, "bias " + std::to_string(T) + "x" + std::to_string(D));
  }
}

TEST(BroadcastBias, RunTimeBroadcastsOnEitherSide) {
  const int64_t T = 33, D = 19;
  // b of extent 1 stretches along D; x of one row stretches along T.
  auto X = sample::random(T * D, 1), X1 = sample::random(D, 3);
  auto B1 = sample::random(1, 2), B = sample::random(D, 4);
  std::vector<float> E(T * D), P(T * D);
  eager::broadcast_bias({X.data(), {T, D}}, B1, {E.data(), {T, D}});
  broadcast_bias({X.data(), {T, D}}, B1, {P.data(), {T, D}});
  expectClose(E, P, 0, "b of extent 1");
  eager::broadcast_bias({X1.data(), {1, D}}, B, {E.data(), {T, D}});
  broadcast_bias({X1.data(), {1, D}}, B, {P.data(), {T, D}});
  expectClose(E, P, 0, "x of one row");
}

TEST(Guards, WrongShapesThrowBeforeAnyWrite) {
  std::vector<float> A(5, 1), B(3, 1), C(5, 1), O(5, -7);
  expectShapeError([&] { fma(A, B, C, O); }, "fma: cannot broadcast b[3]");
  EXPECT_EQ(O, std::vector<float>(5, -7)) << "nothing written";

  std::vector<float> Y(4, -7);
  expectShapeError([&] { gelu(A, Y); }, "gelu: cannot broadcast");
  EXPECT_EQ(Y, std::vector<float>(4, -7));

  std::vector<float> X(6, 1), Bias(4, 1), Out(6, -7);
  expectShapeError(
      [&] {
        broadcast_bias({X.data(), {2, 3}}, Bias, {Out.data(), {2, 3}});
      },
      "broadcast_bias: cannot broadcast b[4] against x[2, 3] (axis -1)");
  EXPECT_EQ(Out, std::vector<float>(6, -7));

  // adam_step: the first guard that fails is m against g; p is untouched.
  std::vector<float> P(4, 3), M(4, 0), V(4, 0), G(5, 1);
  expectShapeError([&] { adam_step(P, M, V, G, 1, 1, 1, 1, 1, 1); },
                   "adam_step: ");
  EXPECT_EQ(P, std::vector<float>(4, 3));
  EXPECT_EQ(M, std::vector<float>(4, 0));
}

} // namespace
