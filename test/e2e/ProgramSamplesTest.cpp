// The whole-program samples (mlp, swiglu_mlp, rmsnorm_linear,
// attention_probs, layernorm_backward), eager vs compiled over shapes with
// 0, 1, primes and gemm tile tails. Inputs are multiples of 1/8 in [-1, 1]
// (exact products and sums, see ProgramTest.cpp); the tolerances cover what
// is not exact: transcendental functions (pk::vm against libm, a few ulp:
// 1e-6 relative is used for each), one rounding of each mean, and how those
// errors add up through the next product (worst case, every term of one
// sign).
#include "common/sample.h"
#include "oracle_dump.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace eager {
#include "attention_probs/attention_probs.cpp"
#include "layernorm_backward/layernorm_backward.cpp"
#include "mlp/mlp.cpp"
#include "rmsnorm_linear/rmsnorm_linear.cpp"
#include "swiglu_mlp/swiglu_mlp.cpp"
} // namespace eager

void mlp(pk::In<float, 2> x, pk::In<float, 2> w1, pk::In<float, 1> b1,
         pk::In<float, 2> w2, pk::In<float, 1> b2, pk::Out<float, 2> y);
void swiglu_mlp(pk::In<float, 2> x, pk::In<float, 2> w_gate,
                pk::In<float, 2> w_up, pk::In<float, 2> w_down,
                pk::Out<float, 2> y);
void rmsnorm_linear(pk::In<float, 2> x, pk::In<float, 1> g, pk::In<float, 2> w,
                    pk::Out<float, 2> y, float eps);
void attention_probs(pk::In<float, 3> q, pk::In<float, 3> k, pk::In<float, 3> v,
                     pk::Out<float, 3> p, pk::Out<float, 3> o, float scale);
void layernorm_backward(pk::InOut<float, 2> dinp, pk::InOut<float, 1> dweight,
                        pk::InOut<float, 1> dbias, pk::In<float, 2> dout,
                        pk::In<float, 2> inp, pk::In<float, 1> weight,
                        pk::In<float, 1> mean_, pk::In<float, 1> rstd);

namespace {

const int64_t Tokens[] = {0, 1, 3, 17, 65};

std::vector<float> grid(int64_t N, unsigned Seed, float Scale = 1) {
  std::vector<float> V = sample::random(N, Seed, -1, 1);
  for (float &X : V)
    X = std::round(X * 8) / 8 * Scale;
  return V;
}

std::vector<float> poisoned(int64_t N) {
  return std::vector<float>(N, std::nanf(""));
}

void expectClose(const std::vector<float> &E, const std::vector<float> &C,
                 double Atol, const std::string &What) {
  ASSERT_EQ(E.size(), C.size()) << What;
  for (size_t I = 0; I < E.size(); ++I)
    if (!(std::fabs(double(E[I]) - double(C[I])) <= Atol)) {
      ADD_FAILURE() << What << " element " << I << " of " << E.size()
                    << ": eager " << E[I] << " compiled " << C[I] << " (atol "
                    << Atol << ")";
      return;
    }
}

std::string dims(std::initializer_list<int64_t> D) {
  std::string S;
  for (int64_t X : D)
    S += (S.empty() ? "" : "x") + std::to_string(X);
  return S;
}

TEST(ProgramSamples, Mlp) {
  for (int64_t T : Tokens)
    for (int64_t F : {1, 17, 129}) {
      const int64_t D = 17;
      // w1 scaled by 1/8: the first product is a multiple of 1/512 <= 17/8.
      auto X = grid(T * D, 1), W1 = grid(F * D, 2, 0.125f), B1 = grid(F, 3),
           W2 = grid(D * F, 4), B2 = grid(D, 5);
      std::vector<float> E(T * D), C = poisoned(T * D);
      auto Run = [&](auto K, std::vector<float> &Y) {
        K({X.data(), {T, D}}, {W1.data(), {F, D}}, B1, {W2.data(), {D, F}}, B2,
          {Y.data(), {T, D}});
      };
      Run(eager::mlp, E);
      Run(mlp, C);
      // GELU of |h| <= 3.2: off by 1e-6 * 3.2; y sums F of them (|w2| <= 1)
      // and rounds F + 1 terms of size <= 3.2 (2^-24 each).
      expectClose(E, C, double(F) * (3.2e-6 + 3.2 * 6e-8) + 1e-6,
                  "mlp " + dims({T, F}));
      pk_test::OracleDump O("mlp", "mlp " + dims({T, F}));
      O.in("x", X, {T, D}).in("w1", W1, {F, D}).in("b1", B1, {F});
      O.in("w2", W2, {D, F}).in("b2", B2, {D}).out("y", {T, D});
      O.eagerAndCpu("y", E, C);
    }
}

TEST(ProgramSamples, SwigluMlp) {
  for (int64_t T : Tokens)
    for (int64_t F : {1, 17, 129}) {
      const int64_t D = 17;
      auto X = grid(T * D, 6), Wg = grid(F * D, 7, 0.125f),
           Wu = grid(F * D, 8, 0.125f), Wd = grid(D * F, 9);
      std::vector<float> E(T * D), C = poisoned(T * D);
      auto Run = [&](auto K, std::vector<float> &Y) {
        K({X.data(), {T, D}}, {Wg.data(), {F, D}}, {Wu.data(), {F, D}},
          {Wd.data(), {D, F}}, {Y.data(), {T, D}});
      };
      Run(eager::swiglu_mlp, E);
      Run(swiglu_mlp, C);
      // g, u exact and <= 17/8; silu(g) u is off by 1e-6 relative (the
      // sigmoid): <= 1e-6 * 4.6; y sums F of them plus its own rounding.
      expectClose(E, C, double(F) * (4.6e-6 + 4.6 * 6e-8) + 1e-6,
                  "swiglu_mlp " + dims({T, F}));
      pk_test::OracleDump O("swiglu_mlp", "swiglu_mlp " + dims({T, F}));
      O.in("x", X, {T, D}).in("w_gate", Wg, {F, D}).in("w_up", Wu, {F, D});
      O.in("w_down", Wd, {D, F}).out("y", {T, D});
      O.eagerAndCpu("y", E, C);
    }
}

TEST(ProgramSamples, RmsnormLinear) {
  for (int64_t T : Tokens)
    for (int64_t D : {1, 17, 129})
      for (int64_t N : {1, 17, 65}) {
        auto X = grid(T * D, 10), G = grid(D, 11), W = grid(N * D, 12);
        std::vector<float> E(T * N), C = poisoned(T * N);
        auto Run = [&](auto K, std::vector<float> &Y) {
          K({X.data(), {T, D}}, G, {W.data(), {N, D}}, {Y.data(), {T, N}},
            1e-5f);
        };
        Run(eager::rmsnorm_linear, E);
        Run(rmsnorm_linear, C);
        // r = rsqrt(mean(x^2) + eps) is off by <= 2e-6 relative (the mean's
        // rounding and rsqrt's ulps), so is every x r g; y sums D of them,
        // each <= sqrt(D) (|x r| <= sqrt(D)) times |g w| <= 1.
        double Sq = std::sqrt(double(D));
        expectClose(E, C, double(D) * Sq * (2e-6 + 6e-8) + 1e-6,
                    "rmsnorm_linear " + dims({T, D, N}));
        pk_test::OracleDump O("rmsnorm_linear",
                              "rmsnorm_linear " + dims({T, D, N}));
        O.in("x", X, {T, D}).in("g", G, {D}).in("w", W, {N, D});
        O.scalar("eps", 1e-5f).out("y", {T, N});
        O.eagerAndCpu("y", E, C);
      }
}

TEST(ProgramSamples, AttentionProbs) {
  for (int64_t T : {0, 1, 3, 17, 65})
    for (int64_t D : {1, 17}) {
      const int64_t H = 2;
      auto Q = grid(H * T * D, 13), K = grid(H * T * D, 14),
           V = grid(H * T * D, 15);
      const float Scale = 0.25f; // exact scores
      std::vector<float> EP(H * T * T), EO(H * T * D), CP = poisoned(H * T * T),
                                                       CO = poisoned(H * T * D);
      auto Run = [&](auto Kn, std::vector<float> &P, std::vector<float> &O) {
        Kn({Q.data(), {H, T, D}}, {K.data(), {H, T, D}}, {V.data(), {H, T, D}},
           {P.data(), {H, T, T}}, {O.data(), {H, T, D}}, Scale);
      };
      if (T == 0) {
        // No keys: the max over them is undefined (NumPy raises); both
        // raise, and the compiled kernel before any write.
        EXPECT_THROW(Run(eager::attention_probs, EP, EO), pk::ShapeError);
        EXPECT_THROW(Run(attention_probs, CP, CO), pk::ShapeError);
        continue;
      }
      Run(eager::attention_probs, EP, EO);
      Run(attention_probs, CP, CO);
      // exp off by 1e-6 relative, the sum of T of them rounds: each
      // probability (<= 1) is off by <= 2e-6 + T * 6e-8; o sums T of those
      // times |v| <= 1.
      double ErrP = 2e-6 + double(T) * 6e-8;
      expectClose(EP, CP, ErrP, "p " + dims({T, D}));
      expectClose(EO, CO, double(T) * ErrP + 1e-6, "o " + dims({T, D}));
      pk_test::OracleDump O("attention_probs",
                            "attention_probs " + dims({T, D}));
      O.in("q", Q, {H, T, D}).in("k", K, {H, T, D}).in("v", V, {H, T, D});
      O.scalar("scale", Scale).out("p", {H, T, T}).out("o", {H, T, D});
      O.eagerAndCpu("p", EP, CP);
      O.eagerAndCpu("o", EO, CO);
    }
}

TEST(ProgramSamples, LayernormBackward) {
  for (int64_t N : Tokens)
    for (int64_t C : {1, 17, 129}) {
      auto Dout = grid(N * C, 16), Inp = grid(N * C, 17), W = grid(C, 18);
      // Statistics on the grid too: mean a multiple of 1/8, rstd 1 or 2.
      auto Mean = grid(N, 19), Rstd = grid(N, 20);
      for (float &R : Rstd)
        R = R < 0 ? 2.0f : 1.0f;
      auto Dinp0 = grid(N * C, 21), Dw0 = grid(C, 22), Db0 = grid(C, 23);
      auto ED = Dinp0, EW = Dw0, EB = Db0, CD = Dinp0, CW = Dw0, CB = Db0;
      auto Run = [&](auto K, std::vector<float> &Di, std::vector<float> &Dw,
                     std::vector<float> &Db) {
        K({Di.data(), {N, C}}, Dw, Db, {Dout.data(), {N, C}},
          {Inp.data(), {N, C}}, W, Mean, Rstd);
      };
      Run(eager::layernorm_backward, ED, EW, EB);
      Run(layernorm_backward, CD, CW, CB);
      // dbias and dweight are sums of exact products (norm is a multiple
      // of 1/8 <= 4): exact. dinp's two row means round once each (<= 2^-24
      // relative of |mean| <= 4): off by <= (1 + 4) * 4 * 6e-8 after rstd.
      expectClose(EB, CB, 0, "dbias " + dims({N, C}));
      expectClose(EW, CW, 0, "dweight " + dims({N, C}));
      expectClose(ED, CD, 2.4e-6, "dinp " + dims({N, C}));
      pk_test::OracleDump O("layernorm_backward",
                            "layernorm_backward " + dims({N, C}));
      O.in("dinp", Dinp0, {N, C}).in("dweight", Dw0, {C}).in("dbias", Db0, {C});
      O.in("dout", Dout, {N, C}).in("inp", Inp, {N, C}).in("weight", W, {C});
      O.in("mean_", Mean, {N}).in("rstd", Rstd, {N});
      O.out("dinp", {N, C}).out("dweight", {C}).out("dbias", {C});
      O.eagerAndCpu("dinp", ED, CD);
      O.eagerAndCpu("dweight", EW, CW);
      O.eagerAndCpu("dbias", EB, CB);
    }
}

} // namespace
