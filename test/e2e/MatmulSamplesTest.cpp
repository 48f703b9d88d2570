// Differential tests of the matmul samples (samples/matmul, linear_bias_gelu,
// batched_matmul): eager vs compiled over odd shapes. In a file of their own:
// linear_bias_gelu.cpp and gelu.cpp both define gelu_tanh, so their eager
// copies cannot share a namespace.
//
// Tolerance (float, inputs in [-1, 1]): |eager - compiled| <= 1e-5 + 4e-6 K,
// see MatmulTest.cpp; GELU's slope is at most 1.13, so it does not grow it.
#include "common/sample.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace eager {
#include "batched_matmul/batched_matmul.cpp"
#include "linear_bias_gelu/linear_bias_gelu.cpp"
#include "matmul/matmul.cpp"
} // namespace eager

void sgemm(pk::In<float, 2> a, pk::In<float, 2> b, pk::Out<float, 2> c);
void linear_bias_gelu(pk::In<float, 2> x, pk::In<float, 2> w,
                      pk::In<float, 1> b, pk::Out<float, 2> y);
void batched_matmul(pk::In<float, 3> a, pk::In<float, 3> b,
                    pk::Out<float, 3> c);
void batched_matmul_shared(pk::In<float, 3> a, pk::In<float, 2> w,
                           pk::Out<float, 3> c);

namespace {

void expectClose(const std::vector<float> &E, const std::vector<float> &C,
                 int64_t K, const std::string &What) {
  ASSERT_EQ(E.size(), C.size()) << What;
  const double Tol = 1e-5 + 4e-6 * double(K);
  for (size_t I = 0; I < E.size(); ++I)
    if (!(std::fabs(double(E[I]) - double(C[I])) <= Tol)) {
      ADD_FAILURE() << What << " element " << I << ": eager " << E[I]
                    << " compiled " << C[I] << " (tolerance " << Tol << ")";
      return;
    }
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
        eager::linear_bias_gelu({A.data(), {M, K}}, {W.data(), {N, K}},
                                {Bias.data(), {N}}, {E.data(), {M, N}});
        C.assign(M * N, NAN);
        linear_bias_gelu({A.data(), {M, K}}, {W.data(), {N, K}},
                         {Bias.data(), {N}}, {C.data(), {M, N}});
        expectClose(E, C, K, "linear_bias_gelu " + D);
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
          eager::batched_matmul_shared({A.data(), {Bt, M, K}},
                                       {W.data(), {K, N}},
                                       {E.data(), {Bt, M, N}});
          C.assign(Bt * M * N, NAN);
          batched_matmul_shared({A.data(), {Bt, M, K}}, {W.data(), {K, N}},
                                {C.data(), {Bt, M, N}});
          expectClose(E, C, K, "batched_matmul_shared " + D);
        }
}

} // namespace
