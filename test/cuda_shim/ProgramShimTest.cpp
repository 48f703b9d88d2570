// The generated CUDA of whole programs on the shim, against eager: kernel
// sequences whose values live in a workspace the launcher takes from
// cudaMallocAsync on the launch stream (test/e2e/kernels/programs.cpp and
// samples/mlp, samples/rmsnorm_linear). The CPU side is test/e2e's
// ProgramTest and ProgramSamplesTest.
//
// Inputs are multiples of 1/8 in [-1, 1]: products and sums of them are
// exact in float in any order (test/e2e/ProgramTest.cpp), so the kernels
// without transcendental functions must match eager bit for bit; the others
// get the tolerance derived in ProgramSamplesTest.cpp.
#include "common/sample.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cuda_runtime.h>
#include <pk_shim/shim.h>

#include "ShimDevice.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "mlp.pk.h"
#include "programs.pk.h"
#include "rmsnorm_linear.pk.h"

namespace eager {
#include "kernels/programs.cpp"
#include "mlp/mlp.cpp"
#include "rmsnorm_linear/rmsnorm_linear.cpp"
} // namespace eager

namespace {

using shimdev::Dev;

std::vector<float> grid(int64_t N, unsigned Seed, float Scale = 1) {
  std::vector<float> V = sample::random(N, Seed, -1, 1);
  for (float &X : V)
    X = std::round(X * 8) / 8 * Scale;
  return V;
}

void expectClose(const std::vector<float> &E, const std::vector<float> &C,
                 double Atol, const std::string &What) {
  ASSERT_EQ(E.size(), C.size()) << What;
  for (size_t I = 0; I < E.size(); ++I) {
    bool Ok = Atol == 0 ? std::memcmp(&E[I], &C[I], sizeof(float)) == 0
                        : std::fabs(double(E[I]) - double(C[I])) <= Atol;
    if (!Ok) {
      ADD_FAILURE() << What << ": element " << I << " of " << E.size()
                    << ": eager " << E[I] << ", cuda " << C[I];
      return;
    }
  }
}

std::string dims(std::initializer_list<int64_t> D) {
  std::string S;
  for (int64_t X : D)
    S += (S.empty() ? "" : "x") + std::to_string(X);
  return S;
}

TEST(ProgramShim, MatmulOfAMatmul) {
  for (int64_t M : {0, 1, 17, 65})
    for (int64_t J : {1, 33})
      for (int64_t N : {1, 17, 129}) {
        const int64_t K = 17;
        auto A = grid(M * K, 1), B = grid(K * J, 2), C = grid(J * N, 3);
        std::vector<float> E(M * N);
        eager::chain({A.data(), {M, K}}, {B.data(), {K, J}}, {C.data(), {J, N}},
                     {E.data(), {M, N}});
        Dev<float> DA(A), DB(B), DC(C), DO(M * N, std::nanf(""));
        pk::cuda::chain({DA.get(), {M, K}}, {DB.get(), {K, J}},
                        {DC.get(), {J, N}}, {DO.get(), {M, N}});
        expectClose(E, DO.host(), 0, "chain " + dims({M, J, N}));
      }
}

TEST(ProgramShim, TheCallersWorkspace) {
  const int64_t M = 17, K = 17, J = 33, N = 65;
  auto A = grid(M * K, 20), B = grid(K * J, 21), C = grid(J * N, 22);
  std::vector<float> E(M * N);
  eager::chain({A.data(), {M, K}}, {B.data(), {K, J}}, {C.data(), {J, N}},
               {E.data(), {M, N}});
  Dev<float> DA(A), DB(B), DC(C), DO(M * N, std::nanf(""));
  pk::In<float, 2> RA(DA.get(), {M, K}), RB(DB.get(), {K, J}),
      RC(DC.get(), {J, N});
  pk::Out<float, 2> RO(DO.get(), {M, N});
  // The [17, 33] product of a and b, rounded up to 64 bytes.
  const int64_t Bytes = pk::cuda::chain_workspace_bytes(RA, RB, RC, RO);
  EXPECT_EQ(Bytes, (M * J * 4 + 63) / 64 * 64);
  // Too small: refused before any launch, the output untouched.
  Dev<unsigned char> Small(Bytes - 64, 0);
  EXPECT_THROW(pk::cuda::chain(RA, RB, RC, RO, Small.get(), Bytes - 64),
               std::invalid_argument);
  for (float V : DO.host())
    ASSERT_TRUE(std::isnan(V));
  Dev<unsigned char> Ws(Bytes, 0);
  pk::cuda::chain(RA, RB, RC, RO, Ws.get(), Bytes);
  expectClose(E, DO.host(), 0, "chain with the caller's workspace");
  // The shapes are checked first.
  pk::In<float, 2> Wrong(DC.get(), {J + 1, N - 1});
  EXPECT_THROW(pk::cuda::chain_workspace_bytes(RA, RB, Wrong, RO),
               pk::ShapeError);
}

// Both sides of the cost model on the GPU path: the operand buffered
// (centered_costly_linear), the row means buffered and exp(c) in the
// product's prologue (centered_exp_linear). Tolerance as in
// ProgramTest.cpp's ChainsAboveARowStatisticFeedAProduct (K = 17), with the
// shim's own exp and tanh (libm's) against eager's.
TEST(ProgramShim, ChainsAboveARowStatisticFeedAProduct) {
  const int64_t M = 17, K = 17, N = 33;
  auto X = grid(M * K, 17), W = grid(N * K, 18);
  std::vector<float> E1(M * N), E2(M * N);
  eager::centered_costly_linear({X.data(), {M, K}}, {W.data(), {N, K}},
                                {E1.data(), {M, N}});
  eager::centered_exp_linear({X.data(), {M, K}}, {W.data(), {N, K}},
                             {E2.data(), {M, N}});
  Dev<float> DX(X), DW(W), D1(M * N, std::nanf("")), D2(M * N, std::nanf(""));
  pk::cuda::centered_costly_linear({DX.get(), {M, K}}, {DW.get(), {N, K}},
                                   {D1.get(), {M, N}});
  pk::cuda::centered_exp_linear({DX.get(), {M, K}}, {DW.get(), {N, K}},
                                {D2.get(), {M, N}});
  const double Atol = 5e-6 * K + 4.5e-7 * K * K;
  expectClose(E1, D1.host(), Atol, "centered_costly_linear");
  expectClose(E2, D2.host(), Atol, "centered_exp_linear");
}

// act_buf lives in h when h has its extents (no workspace, act written
// once); h broadcasting act's one row takes a workspace for it.
TEST(ProgramShim, TheHiddenActivationsHomeIsItsRef) {
  const int64_t D = 17, F = 33;
  for (auto [M, HM, OM] :
       {std::tuple<int64_t, int64_t, int64_t>{5, 5, 5}, {1, 3, 2}}) {
    auto A = grid(M * D, 4), W1 = grid(F * D, 5), W2 = grid(D * F, 6);
    std::vector<float> EH(HM * F), EO(OM * D);
    eager::chain_keep_hidden({A.data(), {M, D}}, {W1.data(), {F, D}},
                             {W2.data(), {D, F}}, {EH.data(), {HM, F}},
                             {EO.data(), {OM, D}});
    Dev<float> DA(A), DW1(W1), DW2(W2), DH(HM * F, std::nanf("")),
        DO(OM * D, std::nanf(""));
    pk::In<float, 2> RA(DA.get(), {M, D}), RW1(DW1.get(), {F, D}),
        RW2(DW2.get(), {D, F});
    pk::Out<float, 2> RH(DH.get(), {HM, F}), RO(DO.get(), {OM, D});
    const int64_t Bytes =
        pk::cuda::chain_keep_hidden_workspace_bytes(RA, RW1, RW2, RH, RO);
    EXPECT_EQ(Bytes, M == HM ? 0 : (M * F * 4 + 63) / 64 * 64) << dims({M, HM});
    pk::cuda::chain_keep_hidden(RA, RW1, RW2, RH, RO);
    expectClose(EH, DH.host(), 0, "h " + dims({M, HM}));
    expectClose(EO, DO.host(), 0, "o " + dims({M, OM}));
  }
}

TEST(ProgramShim, AStepThatCannotRunFailsBeforeAnyLaunch) {
  // x's two rows cannot broadcast into mean_out's three; the launcher checks
  // that with the guards, before the product's launch.
  auto X = grid(8, 23), W = grid(4 * 5, 24);
  Dev<float> DX(X), DW(W), DY(10, std::nanf("")), DMean(3, std::nanf("")),
      DMax(2, std::nanf(""));
  EXPECT_THROW(pk::cuda::product_then_stats(
                   {DX.get(), {2, 4}}, {DW.get(), {4, 5}}, {DY.get(), {2, 5}},
                   {DMean.get(), {3}}, {DMax.get(), {2}}),
               pk::ShapeError);
  for (float V : DY.host())
    ASSERT_TRUE(std::isnan(V)) << "the product ran before the check";
}

TEST(ProgramShim, AReductionGroupWhoseOutputsDifferRunsUnfused) {
  // x's one row broadcast into mean_out's three: the statistics group runs
  // one kernel per output; with equal rows, one kernel for both.
  auto X = grid(4, 23), W = grid(4 * 5, 24);
  Dev<float> DX(X), DW(W), DY(5, std::nanf("")), DMean(3, std::nanf("")),
      DMax(1, std::nanf(""));
  pk::In<float, 2> RX(DX.get(), {1, 4}), RW(DW.get(), {4, 5});
  pk::Out<float, 2> RY(DY.get(), {1, 5});
  std::vector<float> EY(5), EMean(3), EMax(1);
  eager::product_then_stats({X.data(), {1, 4}}, {W.data(), {4, 5}},
                            {EY.data(), {1, 5}}, {EMean.data(), {3}},
                            {EMax.data(), {1}});
  pk::cuda::product_then_stats(RX, RW, RY, {DMean.get(), {3}},
                               {DMax.get(), {1}});
  expectClose(EY, DY.host(), 0, "product_then_stats y");
  expectClose(EMean, DMean.host(), 0, "product_then_stats mean, 3 rows");
  expectClose(EMax, DMax.host(), 0, "product_then_stats max");
  Dev<float> DMean1(1, std::nanf(""));
  pk::cuda::product_then_stats(RX, RW, RY, {DMean1.get(), {1}},
                               {DMax.get(), {1}});
  expectClose({EMean[0]}, DMean1.host(), 0, "product_then_stats mean");
  expectClose(EMax, DMax.host(), 0, "product_then_stats max");
}

TEST(ProgramShim, StoredHiddenAndThreeLayers) {
  for (int64_t M : {1, 17, 65}) {
    const int64_t D = 17, F = 33;
    auto A = grid(M * D, 4), W1 = grid(F * D, 5), W2 = grid(D * F, 6);
    std::vector<float> EH(M * F), EO(M * D);
    eager::chain_keep_hidden({A.data(), {M, D}}, {W1.data(), {F, D}},
                             {W2.data(), {D, F}}, {EH.data(), {M, F}},
                             {EO.data(), {M, D}});
    Dev<float> DA(A), DW1(W1), DW2(W2), DH(M * F, std::nanf("")),
        DO(M * D, std::nanf(""));
    pk::cuda::chain_keep_hidden({DA.get(), {M, D}}, {DW1.get(), {F, D}},
                                {DW2.get(), {D, F}}, {DH.get(), {M, F}},
                                {DO.get(), {M, D}});
    expectClose(EH, DH.host(), 0, "h " + dims({M}));
    expectClose(EO, DO.host(), 0, "o " + dims({M}));
  }
}

// The whole layer of test/e2e/ProgramTest.cpp's LlamaLayer (same data and
// tolerance, derived there): ten kernels on one stream, attention fused.
TEST(ProgramShim, LlamaLayer) {
  for (int64_t T : {1, 17, 65})
    for (auto [D, F] : {std::pair<int64_t, int64_t>{16, 40}, {33, 17}}) {
      auto X = grid(T * D, 70), G1 = grid(D, 71), G2 = grid(D, 72);
      auto Wq = grid(D * D, 73, 1.0f / 16), Wk = grid(D * D, 74, 1.0f / 16),
           Wv = grid(D * D, 75, 1.0f / 16), Wo = grid(D * D, 76, 1.0f / 16),
           Wg = grid(F * D, 77, 1.0f / 16), Wu = grid(F * D, 78, 1.0f / 16),
           Wd = grid(D * F, 79, 1.0f / 16);
      const float Scale = 1.0f / std::sqrt(float(D));
      std::vector<float> E(T * D);
      eager::llama_layer(
          {X.data(), {T, D}}, {G1.data(), {D}}, {Wq.data(), {D, D}},
          {Wk.data(), {D, D}}, {Wv.data(), {D, D}}, {Wo.data(), {D, D}},
          {G2.data(), {D}}, {Wg.data(), {F, D}}, {Wu.data(), {F, D}},
          {Wd.data(), {D, F}}, {E.data(), {T, D}}, Scale);
      Dev<float> DX(X), DG1(G1), DG2(G2), DWq(Wq), DWk(Wk), DWv(Wv), DWo(Wo),
          DWg(Wg), DWu(Wu), DWd(Wd), DY(T * D, std::nanf(""));
      pk::cuda::llama_layer(
          {DX.get(), {T, D}}, {DG1.get(), {D}}, {DWq.get(), {D, D}},
          {DWk.get(), {D, D}}, {DWv.get(), {D, D}}, {DWo.get(), {D, D}},
          {DG2.get(), {D}}, {DWg.get(), {F, D}}, {DWu.get(), {F, D}},
          {DWd.get(), {D, F}}, {DY.get(), {T, D}}, Scale);
      expectClose(E, DY.host(), 2e-3, "llama_layer " + dims({T, D, F}));
    }
}

TEST(ProgramShim, ReductionsAndViewsOfProducts) {
  for (int64_t M : {0, 1, 17})
    for (int64_t N : {1, 3, 65}) {
      const int64_t K = 17;
      auto A = grid(M * K, 7), B = grid(K * N, 8);
      Dev<float> DA(A), DB(B);
      {
        std::vector<float> E(N);
        eager::column_sums_of_product({A.data(), {M, K}}, {B.data(), {K, N}},
                                      E);
        Dev<float> DO(N, std::nanf(""));
        pk::cuda::column_sums_of_product({DA.get(), {M, K}}, {DB.get(), {K, N}},
                                         {DO.get(), {N}});
        expectClose(E, DO.host(), 0, "column_sums_of_product " + dims({M, N}));
      }
      {
        std::vector<float> E(N * M);
        eager::transposed_product({A.data(), {M, K}}, {B.data(), {K, N}},
                                  {E.data(), {N, M}});
        Dev<float> DO(N * M, std::nanf(""));
        pk::cuda::transposed_product({DA.get(), {M, K}}, {DB.get(), {K, N}},
                                     {DO.get(), {N, M}});
        expectClose(E, DO.host(), 0, "transposed_product " + dims({M, N}));
      }
      {
        auto X = grid(M * N, 9);
        std::vector<float> E(5 * M);
        eager::row_sums_broadcast({X.data(), {M, N}}, {E.data(), {5, M}});
        Dev<float> DX(X), DO(5 * M, std::nanf(""));
        pk::cuda::row_sums_broadcast({DX.get(), {M, N}}, {DO.get(), {5, M}});
        expectClose(E, DO.host(), 0, "row_sums_broadcast " + dims({M, N}));
      }
    }
}

TEST(ProgramShim, ACycleBetweenInOutRefs) {
  for (int64_t M : {0, 1, 17})
    for (int64_t K : {1, 17}) {
      auto A = grid(M * M, 10), B0 = grid(M * K, 11), C0 = grid(M * K, 12);
      auto EB = B0, EC = C0;
      eager::cycle({EC.data(), {M, K}}, {EB.data(), {M, K}},
                   {A.data(), {M, M}});
      Dev<float> DA(A), DB(B0), DC(C0);
      pk::cuda::cycle({DC.get(), {M, K}}, {DB.get(), {M, K}},
                      {DA.get(), {M, M}});
      expectClose(EC, DC.host(), 0, "cycle c " + dims({M, K}));
      expectClose(EB, DB.host(), 0, "cycle b " + dims({M, K}));
    }
}

TEST(ProgramShim, MlpAndRmsnormLinear) {
  for (int64_t T : {1, 3, 17}) {
    const int64_t D = 17, F = 33;
    auto X = grid(T * D, 13), W1 = grid(F * D, 14, 0.125f), B1 = grid(F, 15),
         W2 = grid(D * F, 16), B2 = grid(D, 17);
    std::vector<float> E(T * D);
    eager::mlp({X.data(), {T, D}}, {W1.data(), {F, D}}, B1, {W2.data(), {D, F}},
               B2, {E.data(), {T, D}});
    Dev<float> DX(X), DW1(W1), DB1(B1), DW2(W2), DB2(B2),
        DY(T * D, std::nanf(""));
    pk::cuda::mlp({DX.get(), {T, D}}, {DW1.get(), {F, D}}, {DB1.get(), {F}},
                  {DW2.get(), {D, F}}, {DB2.get(), {D}}, {DY.get(), {T, D}});
    // As ProgramSamplesTest's Mlp: GELU's error summed over F.
    expectClose(E, DY.host(), double(F) * (3.2e-6 + 3.2 * 6e-8) + 1e-6,
                "mlp " + dims({T}));

    auto G = grid(D, 18), W = grid(F * D, 19);
    std::vector<float> ER(T * F);
    eager::rmsnorm_linear({X.data(), {T, D}}, G, {W.data(), {F, D}},
                          {ER.data(), {T, F}}, 1e-5f);
    Dev<float> DG(G), DW(W), DR(T * F, std::nanf(""));
    pk::cuda::rmsnorm_linear({DX.get(), {T, D}}, {DG.get(), {D}},
                             {DW.get(), {F, D}}, {DR.get(), {T, F}}, 1e-5f);
    double Sq = std::sqrt(double(D));
    expectClose(ER, DR.host(), double(D) * Sq * (2e-6 + 6e-8) + 1e-6,
                "rmsnorm_linear " + dims({T}));
  }
}

} // namespace
