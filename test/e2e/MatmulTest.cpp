// Differential tests of test/e2e/kernels/matmul_cases.cpp: eager vs compiled over
// every (M, N, K) in {0, 1, 3, 17, 65, 127, 129} for the plain layouts
// (tails of every micro-tile and vector width, K = 0 included) and over a
// smaller set for the fused and batched variants.
//
// Tolerance for float: |eager - compiled| <= 1e-5 + 4e-6 * K * max|a| *
// max|b| (inputs in [-1, 1]). The eager matmul accumulates in double, the
// compiled one in float in another order: each of the K products and
// partial sums is rounded once, ~K * 2^-24 * |term| in the worst case, and
// epilogues (tanh, relu, residual) do not grow it. float64 gets the same
// bound in units of its epsilon, 1.9e-14 + 7.5e-15 K (MatmulBounds.h; the
// test checks that a product computed in float fails it); int32 and the
// transpose are exact, compared bit for bit.
//
// Attention: the bound per query row derived in MatmulBounds.h (~8e-5 at
// T = 130, d = 64), compiled against eager and each against a double
// reference; the reference without the last visible key of each row must
// fail it.
#include "AttentionCheck.h"
#include "MatmulBounds.h"
#include "common/sample.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

namespace eager {
#include "kernels/matmul_cases.cpp"
}

void mm_nn(pk::In<float, 2> a, pk::In<float, 2> b, pk::Out<float, 2> c);
void mm_nt(pk::In<float, 2> a, pk::In<float, 2> bt, pk::Out<float, 2> c);
void mm_tn(pk::In<float, 2> at, pk::In<float, 2> b, pk::Out<float, 2> c);
void mm_tt(pk::In<float, 2> at, pk::In<float, 2> bt, pk::Out<float, 2> c);
void mm_epilogue(pk::In<float, 2> a, pk::In<float, 2> b, pk::In<float, 2> r,
                 pk::In<float, 1> bias, pk::Out<float, 2> c, float scale);
void mm_prologue(pk::In<float, 2> a, pk::In<float, 2> b, pk::In<float, 1> g,
                 pk::Out<float, 2> c);
void mm_two_outputs(pk::In<float, 2> a, pk::In<float, 2> b, pk::Out<float, 2> c,
                    pk::Out<float, 2> d);
void bmm(pk::In<float, 3> a, pk::In<float, 3> b, pk::Out<float, 3> c);
void bmm_shared_b(pk::In<float, 3> a, pk::In<float, 2> b, pk::Out<float, 3> c);
void bmm_shared_a(pk::In<float, 2> a, pk::In<float, 3> b, pk::Out<float, 3> c);
void bmm_qk(pk::In<float, 3> q, pk::In<float, 3> k, pk::Out<float, 3> s,
            float scale);
void mm_accumulate(pk::InOut<float, 2> c, pk::In<float, 2> a,
                   pk::In<float, 2> b);
void mm_f64(pk::In<double, 2> a, pk::In<double, 2> b, pk::Out<double, 2> c);
void mm_i32(pk::In<int32_t, 2> a, pk::In<int32_t, 2> b, pk::Out<int32_t, 2> c);
void transpose_copy(pk::In<float, 3> x, pk::Out<float, 3> y);
bool matmul_cases_use_runtime_library();
void attention_causal_heads(pk::In<float, 3> q, pk::In<float, 3> k,
                            pk::In<float, 3> v, pk::Out<float, 3> o,
                            float scale);
void attention_masked(pk::In<float, 2> q, pk::In<float, 2> k,
                      pk::In<float, 2> v, pk::In<float, 2> bias,
                      pk::Out<float, 2> o);
void attention_f64(pk::In<double, 3> q, pk::In<double, 3> k,
                   pk::In<double, 3> v, pk::Out<double, 3> o);

namespace {

const int64_t Odd[] = {0, 1, 3, 17, 65, 127, 129};
const int64_t Few[] = {1, 17, 129};

/// The index of the first element of C not within matmul_bounds::tolerance
/// of E (bit for bit where it is 0: -0.0 is not 0.0), -1 if none.
template <class T>
int64_t firstMismatch(const std::vector<T> &E, const std::vector<T> &C,
                      double Tol) {
  for (size_t I = 0; I < E.size(); ++I)
    if (Tol == 0 ? std::memcmp(&E[I], &C[I], sizeof(T)) != 0
                 : !(std::fabs(double(E[I]) - double(C[I])) <= Tol))
      return int64_t(I);
  return -1;
}

template <class T>
void expectClose(const std::vector<T> &E, const std::vector<T> &C, int64_t K,
                 const std::string &What) {
  ASSERT_EQ(E.size(), C.size()) << What;
  const double Tol = matmul_bounds::tolerance<T>(K);
  if (int64_t I = firstMismatch(E, C, Tol); I >= 0)
    ADD_FAILURE() << What << " element " << I << " of " << E.size()
                  << ": eager " << double(E[I]) << " compiled "
                  << double(C[I]) << " (tolerance " << Tol << ")";
}

std::string dims(int64_t M, int64_t N, int64_t K) {
  return "M=" + std::to_string(M) + " N=" + std::to_string(N) +
         " K=" + std::to_string(K);
}

std::vector<float> rnd(int64_t N, unsigned Seed) {
  return sample::random(N, Seed, -1, 1);
}

// A compiled output starts as NaN: every element must be written.
std::vector<float> poisoned(int64_t N) {
  return std::vector<float>(N, std::nanf(""));
}

// pk_add_kernels links pk's runtime library (lib/Runtime) and compiles the
// generated code with PK_RUNTIME_LIBRARY, so that the product's tile loops,
// packing, GEMV and micro-kernels are compiled once there, not in every file
// that multiplies; the tests below run the compiled kernels through it (the
// float, bfloat16-weight and double instances).
TEST(GemmRuntimeLibrary, KernelFilesAreCompiledAgainstIt) {
  EXPECT_TRUE(matmul_cases_use_runtime_library());
  EXPECT_FALSE(eager::matmul_cases_use_runtime_library())
      << "the test itself is not compiled by pk_add_kernels";
}

TEST(Matmul, EveryLayoutOverOddShapes) {
  for (int64_t M : Odd)
    for (int64_t N : Odd)
      for (int64_t K : Odd) {
        auto A = rnd(M * K, 1 + M), B = rnd(K * N, 2 + N);
        std::string D = dims(M, N, K);
        // a [M,K], b [K,N]; the transposed operands hold the same values.
        std::vector<float> AT(K * M), BT(N * K);
        for (int64_t I = 0; I < M; ++I)
          for (int64_t J = 0; J < K; ++J)
            AT[J * M + I] = A[I * K + J];
        for (int64_t I = 0; I < K; ++I)
          for (int64_t J = 0; J < N; ++J)
            BT[J * K + I] = B[I * N + J];
        std::vector<float> E(M * N);
        eager::mm_nn({A.data(), {M, K}}, {B.data(), {K, N}},
                     {E.data(), {M, N}});
        auto C = poisoned(M * N);
        mm_nn({A.data(), {M, K}}, {B.data(), {K, N}}, {C.data(), {M, N}});
        expectClose(E, C, K, "mm_nn " + D);
        C = poisoned(M * N);
        mm_nt({A.data(), {M, K}}, {BT.data(), {N, K}}, {C.data(), {M, N}});
        expectClose(E, C, K, "mm_nt " + D);
        C = poisoned(M * N);
        mm_tn({AT.data(), {K, M}}, {B.data(), {K, N}}, {C.data(), {M, N}});
        expectClose(E, C, K, "mm_tn " + D);
        C = poisoned(M * N);
        mm_tt({AT.data(), {K, M}}, {BT.data(), {N, K}}, {C.data(), {M, N}});
        expectClose(E, C, K, "mm_tt " + D);
      }
}

TEST(Matmul, SeveralBlocksAndTiles) {
  // Past one K block (256), one C tile (128 x 512) and the threading
  // threshold, with tails in every direction; a row and a column vector.
  const int64_t Shapes[][3] = {
      {257, 600, 531}, {1, 1000, 1000}, {300, 1, 700}, {130, 517, 257}};
  for (auto [M, N, K] : Shapes) {
    auto A = rnd(M * K, 21), B = rnd(K * N, 22), Bias = rnd(N, 23),
         R = rnd(M * N, 24);
    std::vector<float> BT(N * K);
    for (int64_t I = 0; I < K; ++I)
      for (int64_t J = 0; J < N; ++J)
        BT[J * K + I] = B[I * N + J];
    std::string D = dims(M, N, K);
    std::vector<float> E(M * N);
    eager::mm_nn({A.data(), {M, K}}, {B.data(), {K, N}}, {E.data(), {M, N}});
    auto C = poisoned(M * N);
    mm_nn({A.data(), {M, K}}, {B.data(), {K, N}}, {C.data(), {M, N}});
    expectClose(E, C, K, "mm_nn " + D);
    C = poisoned(M * N);
    mm_nt({A.data(), {M, K}}, {BT.data(), {N, K}}, {C.data(), {M, N}});
    expectClose(E, C, K, "mm_nt " + D);
    eager::mm_epilogue({A.data(), {M, K}}, {B.data(), {K, N}},
                       {R.data(), {M, N}}, {Bias.data(), {N}},
                       {E.data(), {M, N}}, -1.5f);
    C = poisoned(M * N);
    mm_epilogue({A.data(), {M, K}}, {B.data(), {K, N}}, {R.data(), {M, N}},
                {Bias.data(), {N}}, {C.data(), {M, N}}, -1.5f);
    expectClose(E, C, K, "mm_epilogue " + D);
  }
}

TEST(Matmul, FusedEpiloguesAndPrologues) {
  for (int64_t M : Few)
    for (int64_t N : Odd)
      for (int64_t K : Odd) {
        auto A = rnd(M * K, 3), B = rnd(K * N, 4), R = rnd(M * N, 5);
        auto Bias = rnd(N, 6), G = rnd(K, 7);
        std::string D = dims(M, N, K);
        std::vector<float> E(M * N), E2(M * N);
        auto C = poisoned(M * N), C2 = poisoned(M * N);
        eager::mm_epilogue({A.data(), {M, K}}, {B.data(), {K, N}},
                           {R.data(), {M, N}}, {Bias.data(), {N}},
                           {E.data(), {M, N}}, 0.75f);
        mm_epilogue({A.data(), {M, K}}, {B.data(), {K, N}}, {R.data(), {M, N}},
                    {Bias.data(), {N}}, {C.data(), {M, N}}, 0.75f);
        expectClose(E, C, K, "mm_epilogue " + D);
        eager::mm_prologue({A.data(), {M, K}}, {B.data(), {K, N}},
                           {G.data(), {K}}, {E.data(), {M, N}});
        C = poisoned(M * N);
        mm_prologue({A.data(), {M, K}}, {B.data(), {K, N}}, {G.data(), {K}},
                    {C.data(), {M, N}});
        expectClose(E, C, K, "mm_prologue " + D);
        eager::mm_two_outputs({A.data(), {M, K}}, {B.data(), {K, N}},
                              {E.data(), {M, N}}, {E2.data(), {M, N}});
        C = poisoned(M * N);
        mm_two_outputs({A.data(), {M, K}}, {B.data(), {K, N}},
                       {C.data(), {M, N}}, {C2.data(), {M, N}});
        expectClose(E, C, K, "mm_two_outputs c " + D);
        expectClose(E2, C2, K, "mm_two_outputs d " + D);
        // c += a b: the old c is read where the new one is written.
        E = R;
        C = R;
        eager::mm_accumulate({E.data(), {M, N}}, {A.data(), {M, K}},
                             {B.data(), {K, N}});
        mm_accumulate({C.data(), {M, N}}, {A.data(), {M, K}},
                      {B.data(), {K, N}});
        expectClose(E, C, K, "mm_accumulate " + D);
      }
}

TEST(Matmul, BatchedWithBroadcasting) {
  for (int64_t Bt : {1, 3})
    for (int64_t M : Few)
      for (int64_t N : {1, 17, 65})
        for (int64_t K : {0, 3, 129}) {
          std::string D = "B=" + std::to_string(Bt) + " " + dims(M, N, K);
          auto A = rnd(Bt * M * K, 8), B = rnd(Bt * K * N, 9);
          std::vector<float> E(Bt * M * N);
          auto C = poisoned(Bt * M * N);
          eager::bmm({A.data(), {Bt, M, K}}, {B.data(), {Bt, K, N}},
                     {E.data(), {Bt, M, N}});
          bmm({A.data(), {Bt, M, K}}, {B.data(), {Bt, K, N}},
              {C.data(), {Bt, M, N}});
          expectClose(E, C, K, "bmm " + D);
          // One batch of b against every batch of a, as rank 3 with
          // extent 1 (broadcast at run time) and as rank 2.
          eager::bmm({A.data(), {Bt, M, K}}, {B.data(), {1, K, N}},
                     {E.data(), {Bt, M, N}});
          C = poisoned(Bt * M * N);
          bmm({A.data(), {Bt, M, K}}, {B.data(), {1, K, N}},
              {C.data(), {Bt, M, N}});
          expectClose(E, C, K, "bmm (b broadcast) " + D);
          C = poisoned(Bt * M * N);
          bmm_shared_b({A.data(), {Bt, M, K}}, {B.data(), {K, N}},
                       {C.data(), {Bt, M, N}});
          expectClose(E, C, K, "bmm_shared_b " + D);
          auto B3 = rnd(Bt * K * N, 10), A2 = rnd(M * K, 11);
          eager::bmm_shared_a({A2.data(), {M, K}}, {B3.data(), {Bt, K, N}},
                              {E.data(), {Bt, M, N}});
          C = poisoned(Bt * M * N);
          bmm_shared_a({A2.data(), {M, K}}, {B3.data(), {Bt, K, N}},
                       {C.data(), {Bt, M, N}});
          expectClose(E, C, K, "bmm_shared_a " + D);
          C = poisoned(Bt * M * N);
          bmm({A2.data(), {1, M, K}}, {B3.data(), {Bt, K, N}},
              {C.data(), {Bt, M, N}});
          expectClose(E, C, K, "bmm (a broadcast) " + D);
        }
}

TEST(Matmul, AttentionScores) {
  // q kᵀ · scale over heads: q [H, T, d], k [H, S, d].
  for (int64_t T : {1, 17, 130})
    for (int64_t Dh : {1, 64}) {
      const int64_t H = 2, S = T + 3;
      auto Q = rnd(H * T * Dh, 12), Kk = rnd(H * S * Dh, 13);
      std::vector<float> E(H * T * S);
      auto C = poisoned(H * T * S);
      eager::bmm_qk({Q.data(), {H, T, Dh}}, {Kk.data(), {H, S, Dh}},
                    {E.data(), {H, T, S}}, 0.125f);
      bmm_qk({Q.data(), {H, T, Dh}}, {Kk.data(), {H, S, Dh}},
             {C.data(), {H, T, S}}, 0.125f);
      expectClose(E, C, Dh, "bmm_qk T=" + std::to_string(T));
    }
}

TEST(Matmul, Float64AndInt32) {
  for (int64_t M : Few)
    for (int64_t N : Odd)
      for (int64_t K : {0, 1, 17, 129}) {
        std::string D = dims(M, N, K);
        std::vector<double> A(M * K), B(K * N), E(M * N), C(M * N, -1);
        std::vector<int32_t> IA(M * K), IB(K * N), IE(M * N), IC(M * N, -1);
        for (int64_t I = 0; I < M * K; ++I) {
          A[I] = std::sin(double(I)) * 0.9;
          IA[I] = int32_t(I % 7) - 3;
        }
        for (int64_t I = 0; I < K * N; ++I) {
          B[I] = std::cos(double(I) * 0.7);
          IB[I] = int32_t(I % 5) - 2;
        }
        eager::mm_f64({A.data(), {M, K}}, {B.data(), {K, N}},
                      {E.data(), {M, N}});
        mm_f64({A.data(), {M, K}}, {B.data(), {K, N}}, {C.data(), {M, N}});
        expectClose(E, C, K, "mm_f64 " + D);
        // The same product computed in float (a double matmul lowered to
        // float arithmetic) must fail the double tolerance.
        std::vector<double> F(M * N);
        for (int64_t I = 0; I < M; ++I)
          for (int64_t J = 0; J < N; ++J) {
            float Acc = 0;
            for (int64_t X = 0; X < K; ++X)
              Acc += float(A[I * K + X]) * float(B[X * N + J]);
            F[I * N + J] = Acc;
          }
        if (K >= 17 && M * N > 0) {
          EXPECT_GE(firstMismatch(E, F, matmul_bounds::tolerance<double>(K)),
                    0)
              << "mm_f64 " << D << ": a float product passes";
        }
        eager::mm_i32({IA.data(), {M, K}}, {IB.data(), {K, N}},
                      {IE.data(), {M, N}});
        mm_i32({IA.data(), {M, K}}, {IB.data(), {K, N}}, {IC.data(), {M, N}});
        expectClose(IE, IC, K, "mm_i32 " + D);
      }
}

TEST(Matmul, TransposeIsAView) {
  for (int64_t Bt : {1, 2})
    for (int64_t R : {1, 3, 65})
      for (int64_t C : {1, 17, 130}) {
        auto X = rnd(Bt * R * C, 14);
        std::vector<float> E(Bt * R * C);
        auto P = poisoned(Bt * R * C);
        eager::transpose_copy({X.data(), {Bt, R, C}}, {E.data(), {Bt, C, R}});
        transpose_copy({X.data(), {Bt, R, C}}, {P.data(), {Bt, C, R}});
        ASSERT_EQ(firstMismatch(E, P, 0), -1) << "transpose_copy";
      }
}

// Attention (one online-softmax pass per query row) against eager's
// materialised softmax, within the bound per row derived in MatmulBounds.h.
TEST(Matmul, AttentionFusedOverOddShapes) {
  for (int64_t T : {1, 2, 17, 130})
    for (int64_t D : {1, 8, 64})
      for (int64_t J : {1, 3, 64}) {
        const int64_t H = 2, S = T;
        auto Q = rnd(H * T * D, 31), K = rnd(H * S * D, 32),
             V = rnd(H * S * J, 33);
        std::string W = "T=" + std::to_string(T) + " d=" + std::to_string(D) +
                        " j=" + std::to_string(J);
        std::vector<float> E(H * T * J);
        auto C = poisoned(H * T * J);
        eager::attention_causal_heads({Q.data(), {H, T, D}},
                                      {K.data(), {H, S, D}},
                                      {V.data(), {H, S, J}},
                                      {E.data(), {H, T, J}}, 0.125f);
        attention_causal_heads({Q.data(), {H, T, D}}, {K.data(), {H, S, D}},
                               {V.data(), {H, S, J}}, {C.data(), {H, T, J}},
                               0.125f);
        for (int64_t Hd = 0; Hd < H; ++Hd)
          expectAttention<float>({Q.data() + Hd * T * D, K.data() + Hd * S * D,
                                  V.data() + Hd * S * J, nullptr, T, S, D, J,
                                  0.125, true},
                                 E.data() + Hd * T * J, C.data() + Hd * T * J,
                                 "attention_causal_heads " + W + " head " +
                                     std::to_string(Hd));
        // Keys != queries, an additive mask with -inf entries (never a
        // whole row), rank 2.
        const int64_t S2 = T + 5;
        auto K2 = rnd(S2 * D, 34), V2 = rnd(S2 * J, 35), B = rnd(T * S2, 36);
        for (int64_t I = 0; I < T * S2; I += 3)
          if (I % S2 != 0)
            B[I] = -INFINITY;
        std::vector<float> E2(T * J);
        auto C2 = poisoned(T * J);
        eager::attention_masked({Q.data(), {T, D}}, {K2.data(), {S2, D}},
                                {V2.data(), {S2, J}}, {B.data(), {T, S2}},
                                {E2.data(), {T, J}});
        attention_masked({Q.data(), {T, D}}, {K2.data(), {S2, D}},
                         {V2.data(), {S2, J}}, {B.data(), {T, S2}},
                         {C2.data(), {T, J}});
        expectAttention<float>(
            {Q.data(), K2.data(), V2.data(), B.data(), T, S2, D, J, 0.5, false},
            E2.data(), C2.data(), "attention_masked " + W);
      }
}

TEST(Matmul, AttentionFloat64AndBroadcastHeads) {
  // One head of k and v shared by 3 heads of q (extent 1, broadcast).
  const int64_t H = 3, T = 33, D = 16, J = 5;
  std::vector<double> Q(H * T * D), K(T * D), V(T * J), E(H * T * J),
      C(H * T * J, NAN);
  for (size_t I = 0; I < Q.size(); ++I)
    Q[I] = std::sin(double(I));
  for (size_t I = 0; I < K.size(); ++I)
    K[I] = std::cos(double(I) * 0.3);
  for (size_t I = 0; I < V.size(); ++I)
    V[I] = std::sin(double(I) * 0.7);
  eager::attention_f64({Q.data(), {H, T, D}}, {K.data(), {1, T, D}},
                       {V.data(), {1, T, J}}, {E.data(), {H, T, J}});
  attention_f64({Q.data(), {H, T, D}}, {K.data(), {1, T, D}},
                {V.data(), {1, T, J}}, {C.data(), {H, T, J}});
  for (int64_t Hd = 0; Hd < H; ++Hd)
    expectAttention<double>({Q.data() + Hd * T * D, K.data(), V.data(), nullptr,
                             T, T, D, J, 1.0, false},
                            E.data() + Hd * T * J, C.data() + Hd * T * J,
                            "attention_f64 head " + std::to_string(Hd));
}

// The CPU attention's blocked sums (q . k over d, e v over the keys) take
// <pk/attention.h>'s register paths where the CPU has AVX-512: four rows at a
// time, each the same chain of multiply-adds in the same order as the loops
// pkc writes around them (which run with the paths off, and on other CPUs).
// Every output bit must agree both ways: rows that fill groups of four and
// rows that leave 1 to 3, keys short of and past a block of 64, d and j on
// both sides of a vector's 16 lanes and a chunk's 64, an additive mask with
// -inf entries (keys of weight 0, which both skip).
TEST(Matmul, AttentionRegisterPathsGiveTheLoopsBits) {
  if (!pk::rt::attention_blocks_available())
    GTEST_SKIP() << "no AVX-512 on this CPU: the kernels' own loops only";
  struct Restore {
    ~Restore() { pk::rt::set_attention_blocks(true); }
  } RestoreBlocks;
  auto Same = [](const std::vector<float> &Off, const std::vector<float> &On,
                 const std::string &What) {
    ASSERT_EQ(Off.size(), On.size()) << What;
    for (size_t I = 0; I < Off.size(); ++I)
      if (std::memcmp(&Off[I], &On[I], sizeof(float)) != 0) {
        ADD_FAILURE() << What << " element " << I << ": loops " << Off[I]
                      << ", register path " << On[I];
        return;
      }
  };
  for (int64_t T : {4, 5, 7, 33, 66, 130})
    for (int64_t D : {1, 17, 64})
      for (int64_t J : {1, 15, 16, 17, 64, 65, 130}) {
        const int64_t H = 2;
        auto Q = rnd(H * T * D, 41), K = rnd(H * T * D, 42),
             V = rnd(H * T * J, 43);
        const std::string W = "T=" + std::to_string(T) +
                              " d=" + std::to_string(D) +
                              " j=" + std::to_string(J);
        std::vector<float> Out[2];
        for (bool On : {false, true}) {
          pk::rt::set_attention_blocks(On);
          Out[On] = poisoned(H * T * J);
          attention_causal_heads({Q.data(), {H, T, D}}, {K.data(), {H, T, D}},
                                 {V.data(), {H, T, J}},
                                 {Out[On].data(), {H, T, J}}, 0.125f);
        }
        Same(Out[0], Out[1], "attention_causal_heads " + W);
        const int64_t S2 = T + 61;
        auto K2 = rnd(S2 * D, 44), V2 = rnd(S2 * J, 45), B = rnd(T * S2, 46);
        for (int64_t I = 0; I < T * S2; I += 3)
          if (I % S2 != 0)
            B[I] = -INFINITY;
        for (bool On : {false, true}) {
          pk::rt::set_attention_blocks(On);
          Out[On] = poisoned(T * J);
          attention_masked({Q.data(), {T, D}}, {K2.data(), {S2, D}},
                           {V2.data(), {S2, J}}, {B.data(), {T, S2}},
                           {Out[On].data(), {T, J}});
        }
        Same(Out[0], Out[1], "attention_masked " + W);
      }
}

TEST(Matmul, ShapeErrorsBeforeAnyWrite) {
  std::vector<float> A(6, 1), B(12, 1), C(8, 7.0f);
  // a [2,3] x b [4,3]: inner extents 3 and 4.
  EXPECT_THROW(
      mm_nn({A.data(), {2, 3}}, {B.data(), {4, 3}}, {C.data(), {2, 3}}),
      pk::ShapeError);
  // c has the wrong shape.
  EXPECT_THROW(
      mm_nn({A.data(), {2, 3}}, {B.data(), {3, 4}}, {C.data(), {2, 3}}),
      pk::ShapeError);
  // batches 2 and 3 do not broadcast.
  std::vector<float> A3(2 * 2 * 3, 1), B3(3 * 3 * 2, 1), C3(12, 7.0f);
  EXPECT_THROW(bmm({A3.data(), {2, 2, 3}}, {B3.data(), {3, 3, 2}},
                   {C3.data(), {3, 2, 2}}),
               pk::ShapeError);
  // batches 3 and 2 do not broadcast either (c has a's 3).
  std::vector<float> A4(3 * 2 * 3, 1), B4(2 * 3 * 2, 1);
  EXPECT_THROW(bmm({A4.data(), {3, 2, 3}}, {B4.data(), {2, 3, 2}},
                   {C3.data(), {3, 2, 2}}),
               pk::ShapeError);
  for (float V : C)
    EXPECT_EQ(V, 7.0f);
  for (float V : C3)
    EXPECT_EQ(V, 7.0f);
}

TEST(Matmul, Int32ProductsDoNotOverflow) {
  // 50000 * 50000 does not fit int32; eager multiplies and sums in int64
  // and converts the sum (modulo 2^32), and so must the compiled kernel
  // (wrapped int32 products would agree modulo 2^32 but are undefined
  // behaviour: UBSan, in the asan preset, reports them).
  const int64_t M = 2, N = 3, K = 5;
  std::vector<int32_t> A(M * K, 50000), B(K * N, -50000), E(M * N), C(M * N);
  A[3] = 7;
  eager::mm_i32({A.data(), {M, K}}, {B.data(), {K, N}}, {E.data(), {M, N}});
  mm_i32({A.data(), {M, K}}, {B.data(), {K, N}}, {C.data(), {M, N}});
  EXPECT_EQ(E, C);
  EXPECT_EQ(E[N], static_cast<int32_t>(int64_t(5) * 50000 * -50000));
}

} // namespace
