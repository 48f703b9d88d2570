// Differential tests of the matmul samples (samples/matmul, linear_bias_gelu,
// batched_matmul, attention_causal): eager vs compiled over odd shapes. In a
// file of their own: linear_bias_gelu.cpp and gelu.cpp both define gelu_tanh,
// so their eager copies cannot share a namespace.
//
// Tolerance (float, inputs in [-1, 1]): |eager - compiled| <= 1e-5 + 4e-6 K,
// see MatmulTest.cpp; GELU's slope is at most 1.13, so it does not grow it.
// attention_causal: 2e-5 + 2e-6 (T + d), samples/attention_causal/main.cpp
// says why (outputs are convex combinations of v rows).
#include "AttentionCheck.h"
#include "common/sample.h"
#include "oracle_dump.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace eager {
#include "attention_causal/attention_causal.cpp"
#include "batched_matmul/batched_matmul.cpp"
#include "linear_bias_gelu/linear_bias_gelu.cpp"
#include "matmul/matmul.cpp"
} // namespace eager

// The compiled kernels (declared once for the samples, the bench and the
// e2e tests).
#include "common/compiled.h"

namespace {

void expectWithin(const std::vector<float> &E, const std::vector<float> &C,
                  double Tol, const std::string &What) {
  ASSERT_EQ(E.size(), C.size()) << What;
  for (size_t I = 0; I < E.size(); ++I)
    if (!(std::fabs(double(E[I]) - double(C[I])) <= Tol)) {
      ADD_FAILURE() << What << " element " << I << ": eager " << E[I]
                    << " compiled " << C[I] << " (tolerance " << Tol << ")";
      return;
    }
}

void expectClose(const std::vector<float> &E, const std::vector<float> &C,
                 int64_t K, const std::string &What) {
  expectWithin(E, C, 1e-5 + 4e-6 * double(K), What);
}

std::vector<float> rnd(int64_t N, unsigned Seed) {
  return sample::random(N, Seed, -1, 1);
}

const int64_t Odd[] = {0, 1, 3, 17, 65, 127, 129};

TEST(MatmulSamples, SgemmAndLinearBiasGelu) {
  for (int64_t M : {1, 17, 129})
    for (int64_t N : Odd)
      for (int64_t K : Odd) {
        auto A = rnd(M * K, 1), B = rnd(K * N, 2), W = rnd(N * K, 3),
             Bias = rnd(N, 4);
        std::string D = std::to_string(M) + "x" + std::to_string(N) + "x" +
                        std::to_string(K);
        std::vector<float> E(M * N), C(M * N, NAN);
        eager::sgemm({A.data(), {M, K}}, {B.data(), {K, N}},
                     {E.data(), {M, N}});
        sgemm({A.data(), {M, K}}, {B.data(), {K, N}}, {C.data(), {M, N}});
        expectClose(E, C, K, "sgemm " + D);
        {
          pk_test::OracleDump O("sgemm", "sgemm " + D);
          O.in("a", A, {M, K}).in("b", B, {K, N}).out("c", {M, N});
          O.eagerAndCpu("c", E, C);
        }
        eager::linear_bias_gelu({A.data(), {M, K}}, {W.data(), {N, K}},
                                {Bias.data(), {N}}, {E.data(), {M, N}});
        C.assign(M * N, NAN);
        linear_bias_gelu({A.data(), {M, K}}, {W.data(), {N, K}},
                         {Bias.data(), {N}}, {C.data(), {M, N}});
        expectClose(E, C, K, "linear_bias_gelu " + D);
        pk_test::OracleDump O("linear_bias_gelu", "linear_bias_gelu " + D);
        O.in("x", A, {M, K}).in("w", W, {N, K}).in("b", Bias, {N});
        O.out("y", {M, N});
        O.eagerAndCpu("y", E, C);
      }
}

TEST(MatmulSamples, BatchedMatmul) {
  for (int64_t Bt : {1, 4})
    for (int64_t M : {1, 17, 65})
      for (int64_t N : {1, 33, 129})
        for (int64_t K : {0, 8, 129}) {
          auto A = rnd(Bt * M * K, 5), B = rnd(Bt * K * N, 6),
               W = rnd(K * N, 7);
          std::string D = std::to_string(Bt) + "x" + std::to_string(M) + "x" +
                          std::to_string(N) + "x" + std::to_string(K);
          std::vector<float> E(Bt * M * N), C(Bt * M * N, NAN);
          eager::batched_matmul({A.data(), {Bt, M, K}}, {B.data(), {Bt, K, N}},
                                {E.data(), {Bt, M, N}});
          batched_matmul({A.data(), {Bt, M, K}}, {B.data(), {Bt, K, N}},
                         {C.data(), {Bt, M, N}});
          expectClose(E, C, K, "batched_matmul " + D);
          {
            pk_test::OracleDump O("batched_matmul", "batched_matmul " + D);
            O.in("a", A, {Bt, M, K}).in("b", B, {Bt, K, N});
            O.out("c", {Bt, M, N});
            O.eagerAndCpu("c", E, C);
          }
          eager::batched_matmul_shared({A.data(), {Bt, M, K}},
                                       {W.data(), {K, N}},
                                       {E.data(), {Bt, M, N}});
          C.assign(Bt * M * N, NAN);
          batched_matmul_shared({A.data(), {Bt, M, K}}, {W.data(), {K, N}},
                                {C.data(), {Bt, M, N}});
          expectClose(E, C, K, "batched_matmul_shared " + D);
          pk_test::OracleDump O("batched_matmul_shared",
                                "batched_matmul_shared " + D);
          O.in("a", A, {Bt, M, K}).in("w", W, {K, N});
          O.out("c", {Bt, M, N});
          O.eagerAndCpu("c", E, C);
        }
}

// Causal attention, [H, T, d], scale 1/sqrt(d): T = 1 (one key per row),
// 2, 17 and 129 (odd, past a vector width; row i sees keys 0..i), d = 1, 8
// and 64. Eager stores the [H, T, T] scores; compiled runs one online-softmax
// pass per query row. Every output is checked, so a mask off by one shows on
// the first rows (row 0 sees only key 0) and row i of a wrong mask by about
// 1 / (i + 1).
TEST(MatmulSamples, AttentionCausal) {
  for (int64_t H : {1, 3})
    for (int64_t T : {1, 2, 17, 129})
      for (int64_t D : {1, 8, 64}) {
        const int64_t N = H * T * D;
        auto Q = rnd(N, 11), K = rnd(N, 12), V = rnd(N, 13);
        const float Scale = 1.0f / std::sqrt(float(D));
        std::string Desc = std::to_string(H) + "x" + std::to_string(T) + "x" +
                           std::to_string(D);
        std::vector<float> E(N), C(N, NAN);
        eager::attention_causal({Q.data(), {H, T, D}}, {K.data(), {H, T, D}},
                                {V.data(), {H, T, D}}, {E.data(), {H, T, D}},
                                Scale);
        attention_causal({Q.data(), {H, T, D}}, {K.data(), {H, T, D}},
                         {V.data(), {H, T, D}}, {C.data(), {H, T, D}}, Scale);
        // Each head against its double reference within the derived bound
        // (MatmulBounds.h), which rejects the output without a row's last
        // visible key.
        for (int64_t Hd = 0; Hd < H; ++Hd)
          expectAttention<float>(
              {Q.data() + Hd * T * D, K.data() + Hd * T * D,
               V.data() + Hd * T * D, nullptr, T, T, D, D, double(Scale), true},
              E.data() + Hd * T * D, C.data() + Hd * T * D,
              "attention_causal " + Desc + " head " + std::to_string(Hd));
        pk_test::OracleDump O("attention_causal", "attention_causal " + Desc);
        O.in("q", Q, {H, T, D}).in("k", K, {H, T, D}).in("v", V, {H, T, D});
        O.scalar("scale", Scale).out("o", {H, T, D});
        O.eagerAndCpu("o", E, C);
        // Row 0 of every head attends to key 0 only: o = v[h, 0, :] exactly
        // up to rounding, whatever the scores.
        for (int64_t Hd = 0; Hd < H; ++Hd)
          for (int64_t C0 = 0; C0 < D; ++C0)
            EXPECT_NEAR(C[Hd * T * D + C0], V[Hd * T * D + C0], 1e-6)
                << "attention_causal " << Desc << " head " << Hd << " row 0";
      }
}

} // namespace
