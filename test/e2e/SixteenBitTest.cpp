// Differential tests of kernels over pk::half and pk::bfloat16 refs
// (kernels/half_cases.cpp and the samples rmsnorm_bf16, softmax_half):
// eager (the reference) against the compiled CPU code, and, when this file
// is built into the CUDA shim's pk-cuda-shim-half (PK_HALF_WITH_CUDA), also
// against the generated CUDA run on the shim (forward and a random thread
// order). Shapes: 0, 1, primes, 1000/1001, vector and block tails (17, 129,
// 4097), large (65537, 1000003 elements; 2 x 7001 rows).
//
// Tolerances. Every version computes in float and rounds once when it
// stores a 16-bit element. Their float results differ only by the order of
// float sums (eager sums in double), by the math functions (pk::vm on the
// CPU, libm in eager and on the shim: a few float ulp, docs/vmath.md) and
// on a GPU by fma contraction: relative differences of ~1e-6, far below
// one ulp of the 16-bit types (2^-11 relative for half, 2^-8 for
// bfloat16, at the bottom of a binade). So a stored 16-bit element is the
// same or its neighbour: at most 1 ulp of the 16-bit type apart, and the
// tests also require that at least 99% of the elements of each run are
// bit-identical (a systematic error, e.g. truncating instead of rounding,
// or a conversion through the wrong type, makes half of them differ).
// Where a float sum can cancel (layernorm's x - mean) a float bound is added
// (below). Float outputs are compared exactly where the computation is the
// same float operations on both sides, or with a Higham-style bound for
// sums (as in test/cuda_shim/SampleDifferentialTest.cpp).
#include "common/sample.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace eager {
#include "kernels/half_cases.cpp"
#include "rmsnorm_bf16/rmsnorm_bf16.cpp"
#include "softmax_half/softmax_half.cpp"
} // namespace eager

#include "common/compiled.h"

// The compiled CPU kernels of kernels/half_cases.cpp (pk_add_kernels).
void h_mixed(pk::In<pk::half> a, pk::In<pk::bfloat16> b, pk::In<float> c,
             pk::Out<pk::half> o, pk::Out<pk::bfloat16> p, pk::Out<float> q);
void h_bias_inout(pk::InOut<pk::bfloat16, 2> y, pk::In<pk::half, 1> b);
void h_read_back(pk::In<float> x, pk::Out<pk::half> h, pk::Out<float> err);
void h_snapshot(pk::InOut<pk::bfloat16> y, pk::In<float> x);
void h_row_sum_max(pk::In<pk::half, 2> x, pk::Out<pk::bfloat16, 1> s,
                   pk::Out<pk::half, 1> m);
void h_col_mean(pk::In<pk::bfloat16, 2> x, pk::Out<pk::half, 1> m);
void h_sum_all(pk::In<pk::bfloat16, 2> x, pk::Out<float, 0> total);
void h_layernorm(pk::In<pk::half, 2> x, pk::In<pk::bfloat16> w,
                 pk::In<pk::bfloat16> b, pk::Out<pk::half, 2> y,
                 pk::Out<float> mu_out, float eps);
void h_matmul_bias(pk::In<pk::half, 2> a, pk::In<pk::bfloat16, 2> b,
                   pk::In<pk::half, 1> bias, pk::Out<pk::half, 2> c);
void bf16_linear(pk::In<float, 2> x, pk::In<pk::bfloat16, 2> w,
                 pk::Out<float, 2> y);
void bf16_bf16_linear(pk::In<float, 2> x, pk::In<pk::bfloat16, 2> w,
                      pk::In<float> b, pk::Out<float, 2> y);
void bf16_swiglu(pk::In<pk::bfloat16, 2> x, pk::In<pk::bfloat16, 2> w1,
                 pk::In<pk::bfloat16, 2> w3, pk::Out<float, 2> y);
void bf16_mlp(pk::In<float, 2> x, pk::In<pk::bfloat16, 2> w1,
              pk::In<pk::bfloat16, 2> w2, pk::Out<float, 2> y);

#ifdef PK_HALF_WITH_CUDA
#include <cuda_runtime.h>
#include <pk_shim/shim.h>

#include "ShimDevice.h"

#include "half_cases.pk.h"
#include "rmsnorm_bf16.pk.h"
#include "softmax_half.pk.h"
#endif

namespace {

using Shape2 = std::pair<int64_t, int64_t>;
#ifndef PK_HALF_SMALL_SHAPES
const int64_t Sizes[] = {0, 1, 3, 17, 1000, 1001, 4097, 65537, 1000003};
const Shape2 Shapes[] = {{0, 5},    {1, 1},     {1, 7},    {3, 17},
                         {17, 3},   {5, 1000},  {4, 1001}, {1, 4097},
                         {33, 129}, {300, 257}, {2, 7001}};
#else
// Under ASan + UBSan: odd and tail shapes, no large ones.
const int64_t Sizes[] = {0, 1, 3, 17, 1001, 4097};
const Shape2 Shapes[] = {{0, 5},  {1, 1},    {3, 17},
                         {17, 3}, {4, 1001}, {33, 129}};
#endif
constexpr double U = 0x1p-24; // float's unit roundoff

template <class T>
std::vector<T> random16(int64_t N, unsigned Seed, float Lo = -2, float Hi = 2) {
  return sample::to16<T>(sample::random(N, Seed, Lo, Hi));
}

/// Multiples of 1/8 in [0, 1]: exact in both 16-bit types, and sums of up
/// to 2^21 of them are exact in float in any order.
std::vector<pk::bfloat16> eighths(int64_t N, unsigned Seed) {
  auto V = sample::random(N, Seed, 0, 1);
  for (float &X : V)
    X = std::round(X * 8) / 8;
  return sample::to16<pk::bfloat16>(V);
}

/// Each element within 1 ulp of the 16-bit type, or within Atol[I] when
/// given (float cancellation), and at least MinIdentical of them
/// bit-identical.
template <class T>
void expect16(const std::vector<T> &E, const std::vector<T> &C,
              const std::string &What, const std::vector<double> &Atol = {},
              double MinIdentical = 0.99) {
  ASSERT_EQ(E.size(), C.size()) << What;
  size_t Equal = 0;
  int64_t Worst = 0;
  for (size_t I = 0; I < E.size(); ++I) {
    const int64_t D = sample::ulp_distance16(E[I], C[I]);
    Equal += D == 0;
    Worst = std::max(Worst, D);
    const double Diff =
        std::fabs(static_cast<double>(E[I]) - static_cast<float>(C[I]));
    if (D > 1 && !(!Atol.empty() && Diff <= Atol[I])) {
      ADD_FAILURE() << What << ": element " << I << ": eager "
                    << static_cast<float>(E[I]) << ", got "
                    << static_cast<float>(C[I]) << " (" << D << " ulp)";
      return;
    }
  }
  // PK_DIFF_REPORT=1: the measured differences.
  static const bool Report = std::getenv("PK_DIFF_REPORT") != nullptr;
  if (Report && !E.empty())
    std::printf("%-50s max %lld ulp16, %.3f%% bit-identical\n", What.c_str(),
                static_cast<long long>(Worst), 100.0 * Equal / E.size());
  if (E.size() >= 100)
    EXPECT_GE(Equal, E.size() * MinIdentical)
        << What << ": only " << Equal << " of " << E.size()
        << " elements bit-identical";
}

void expectFloat(const std::vector<float> &E, const std::vector<float> &C,
                 const std::vector<double> &B, const std::string &What) {
  ASSERT_EQ(E.size(), C.size()) << What;
  for (size_t I = 0; I < E.size(); ++I)
    if (!(std::fabs(double(E[I]) - C[I]) <= B[I]) &&
        !(std::isnan(E[I]) && std::isnan(C[I]))) {
      ADD_FAILURE() << What << ": element " << I << ": eager " << E[I]
                    << ", got " << C[I] << " (tolerance " << B[I] << ")";
      return;
    }
}

/// Puts back the gemm level a test pinned.
struct GemmIsaGuard {
  pk::rt::GemmIsa Saved = pk::rt::gemm_isa();
  ~GemmIsaGuard() { pk::rt::set_gemm_isa(Saved); }
};

std::string shapeName(const char *K, int64_t T, int64_t D) {
  return std::string(K) + " " + std::to_string(T) + "x" + std::to_string(D);
}

//===----------------------------------------------------------------------===//
// The CUDA versions (on the shim), when built with them.
//===----------------------------------------------------------------------===//

#ifdef PK_HALF_WITH_CUDA
/// A device buffer of N elements of a value no kernel writes.
template <class T> struct Dev : shimdev::Dev<T> {
  using shimdev::Dev<T>::Dev;
  explicit Dev(int64_t N) : shimdev::Dev<T>(N, T(-7.0f)) {}
};
using shimdev::check;
using shimdev::forEachSchedule;
#define PK_IF_CUDA(...) __VA_ARGS__
#else
#define PK_IF_CUDA(...)
#endif

//===----------------------------------------------------------------------===//
// Elementwise.
//===----------------------------------------------------------------------===//

TEST(SixteenBit, MixedElementwise) {
  for (int64_t N : Sizes) {
    const auto A = random16<pk::half>(N, 1);
    const auto C = sample::random(N, 3);
    const auto Bv = random16<pk::bfloat16>(N, 2);
    std::vector<pk::half> EO(N), PO(N);
    std::vector<pk::bfloat16> EP(N), PP(N);
    std::vector<float> EQ(N), PQ(N);
    eager::h_mixed(A, Bv, C, EO, EP, EQ);
    h_mixed(A, Bv, C, PO, PP, PQ);
    const std::string What = "h_mixed N=" + std::to_string(N);
    expect16(EO, PO, What + " o cpu");
    expect16(EP, PP, What + " p cpu");
    // q = cast<half>(t) - t from the same float t: exact on the CPU (no
    // fma contraction at x86-64's baseline); on CUDA a contracted t may
    // move the rounding by half an ulp of half: 2^-11 |t|.
    std::vector<double> Exact(N, 0.0), HalfUlp(N);
    for (int64_t I = 0; I < N; ++I)
      HalfUlp[I] =
          0x1p-11 * (std::fabs(float(A[I]) * float(Bv[I])) + std::fabs(C[I]));
    expectFloat(EQ, PQ, Exact, What + " q cpu");
    PK_IF_CUDA(forEachSchedule(N, [&](const std::string &S) {
                 Dev<pk::half> DA(A), DO(N);
                 Dev<pk::bfloat16> DB(Bv), DP(N);
                 Dev<float> DC(C), DQ(N);
                 pk::cuda::h_mixed({DA.get(), {N}}, {DB.get(), {N}},
                                   {DC.get(), {N}}, {DO.get(), {N}},
                                   {DP.get(), {N}}, {DQ.get(), {N}});
                 expect16(EO, DO.host(), What + " o " + S);
                 expect16(EP, DP.host(), What + " p " + S);
                 expectFloat(EQ, DQ.host(), HalfUlp, What + " q " + S);
               });)
  }
}

TEST(SixteenBit, SpecialValuesSurviveLoadAndStore) {
  // inf, -inf, NaN, -0, the largest half, a half subnormal, and a sum that
  // overflows half (but not bfloat16 or float).
  const std::vector<float> Vals = {INFINITY, -INFINITY, NAN,     -0.0f,
                                   65504.0f, 0x1p-24f,  60000.0f};
  const auto A = sample::to16<pk::half>(Vals);
  const std::vector<pk::bfloat16> Ones(Vals.size(), pk::bfloat16(1.0f));
  const std::vector<float> C = {0, 0, 0, 0, 0, 0, 60000.0f};
  const int64_t N = Vals.size();
  std::vector<pk::half> EO(N), PO(N);
  std::vector<pk::bfloat16> EP(N), PP(N);
  std::vector<float> EQ(N), PQ(N);
  eager::h_mixed(A, Ones, C, EO, EP, EQ);
  h_mixed(A, Ones, C, PO, PP, PQ);
  for (int64_t I = 0; I < N; ++I)
    EXPECT_EQ(sample::ulp_distance16(EO[I], PO[I]), 0) << I;
  EXPECT_TRUE(std::isinf(float(PO[0])) && float(PO[0]) > 0);
  EXPECT_TRUE(std::isnan(float(PO[2])));
  EXPECT_EQ(PO[3].bits(), 0x0000u); // -0 * 1 + (+0) is +0
  EXPECT_EQ(PO[4].bits(), 0x7bffu);
  EXPECT_EQ(PO[5].bits(), 0x0001u);
  EXPECT_TRUE(std::isinf(float(PO[6]))); // 120000 overflows half
  EXPECT_EQ(float(PP[6]), 3.0f);         // tanh(120000) * 3 in bfloat16
}

TEST(SixteenBit, InOutWithBroadcastRow) {
  for (auto [T, D] : Shapes) {
    const auto Y0 = random16<pk::bfloat16>(T * D, 4);
    const auto B = random16<pk::half>(D, 5);
    auto E = Y0, P = Y0;
    eager::h_bias_inout({E.data(), {T, D}}, B);
    h_bias_inout({P.data(), {T, D}}, B);
    const std::string What = shapeName("h_bias_inout", T, D);
    expect16(E, P, What + " cpu");
    PK_IF_CUDA(forEachSchedule(T * D, [&](const std::string &S) {
                 Dev<pk::bfloat16> DY(Y0);
                 Dev<pk::half> DB(B);
                 pk::cuda::h_bias_inout({DY.get(), {T, D}}, {DB.get(), {D}});
                 expect16(E, DY.host(), What + " " + S);
               });)
  }
}

TEST(SixteenBit, ReadingAStoredHalfGivesTheRoundedValue) {
  for (int64_t N : {int64_t(0), int64_t(17), int64_t(4097)}) {
    const auto X = sample::random(N, 6);
    std::vector<pk::half> EH(N), PH(N);
    std::vector<float> EE(N), PE(N);
    eager::h_read_back(X, EH, EE);
    h_read_back(X, PH, PE);
    for (int64_t I = 0; I < N; ++I) {
      const float Want = float(pk::half(X[I] * 3.0f)) - X[I] * 3.0f;
      ASSERT_EQ(EE[I], Want) << I; // the eager semantics
      ASSERT_EQ(PE[I], Want) << I; // the compiled code agrees exactly
      ASSERT_EQ(PH[I].bits(), EH[I].bits()) << I;
    }
    PK_IF_CUDA(forEachSchedule(N, [&](const std::string &S) {
                 Dev<float> DX(X), DE(N);
                 Dev<pk::half> DH(N);
                 pk::cuda::h_read_back({DX.get(), {N}}, {DH.get(), {N}},
                                       {DE.get(), {N}});
                 expect16(EH, DH.host(), "h_read_back " + S);
                 expectFloat(EE, DE.host(), std::vector<double>(N, 0.0),
                             "h_read_back err " + S);
               });)
  }
}

TEST(SixteenBit, ALocalOfARefIsAFloatSnapshot) {
  for (int64_t N : {int64_t(0), int64_t(1), int64_t(17), int64_t(4097)}) {
    const auto Y0 = random16<pk::bfloat16>(N, 8);
    const auto X = sample::random(N, 9);
    auto EY = Y0, PY = Y0;
    eager::h_snapshot(EY, X);
    h_snapshot(PY, X);
    for (int64_t I = 0; I < N; ++I) {
      const float Old = float(Y0[I]);
      const pk::bfloat16 Want((float(pk::bfloat16(Old + X[I])) - Old) * 64.0f);
      ASSERT_EQ(EY[I].bits(), Want.bits()) << I; // the eager semantics
      ASSERT_EQ(PY[I].bits(), Want.bits()) << I; // the compiled code agrees
    }
    PK_IF_CUDA(forEachSchedule(N, [&](const std::string &S) {
                 Dev<pk::bfloat16> DY(Y0);
                 Dev<float> DX(X);
                 pk::cuda::h_snapshot({DY.get(), {N}}, {DX.get(), {N}});
                 const std::vector<pk::bfloat16> Got = DY.host();
                 for (int64_t I = 0; I < N; ++I)
                   ASSERT_EQ(Got[I].bits(), EY[I].bits()) << S << " " << I;
               });)
  }
}

//===----------------------------------------------------------------------===//
// Reductions: accumulated in float (eager: double).
//===----------------------------------------------------------------------===//

TEST(SixteenBit, RowSumAndMax) {
  for (auto [T, D] : Shapes) {
    if (D == 0)
      continue;
    // Positive values: the sum does not cancel, so its float error is
    // relative (at most (D - 1) u) and below a 16-bit ulp.
    const auto X = random16<pk::half>(T * D, 7, 0, 1);
    std::vector<pk::bfloat16> ES(T), PS(T);
    std::vector<pk::half> EM(T), PM(T);
    eager::h_row_sum_max({X.data(), {T, D}}, ES, EM);
    h_row_sum_max({X.data(), {T, D}}, PS, PM);
    const std::string What = shapeName("h_row_sum_max", T, D);
    expect16(ES, PS, What + " sum cpu");
    for (int64_t I = 0; I < T; ++I)
      ASSERT_EQ(PM[I].bits(), EM[I].bits()) << What << " max is exact";
    PK_IF_CUDA(forEachSchedule(T * D, [&](const std::string &S) {
                 Dev<pk::half> DX(X), DM(T);
                 Dev<pk::bfloat16> DS(T);
                 pk::cuda::h_row_sum_max({DX.get(), {T, D}}, {DS.get(), {T}},
                                         {DM.get(), {T}});
                 expect16(ES, DS.host(), What + " sum " + S);
                 auto M = DM.host();
                 for (int64_t I = 0; I < T; ++I)
                   ASSERT_EQ(M[I].bits(), EM[I].bits()) << What << " max " << S;
               });)
  }
}

TEST(SixteenBit, ColumnMeanAndFullSum) {
  for (auto [T, D] : Shapes) {
    if (T == 0)
      continue; // the mean of an empty column is NaN: covered by eager tests
    const auto X = eighths(T * D, 8);
    std::vector<pk::half> EM(D), PM(D);
    eager::h_col_mean({X.data(), {T, D}}, EM);
    h_col_mean({X.data(), {T, D}}, PM);
    const std::string What = shapeName("h_col_mean", T, D);
    expect16(EM, PM, What + " cpu");
    // Multiples of 1/8: the float sum is exact in any order.
    float ET = -1, PT = -1;
    eager::h_sum_all({X.data(), {T, D}}, pk::Out<float, 0>(&ET, {}));
    h_sum_all({X.data(), {T, D}}, pk::Out<float, 0>(&PT, {}));
    EXPECT_EQ(ET, PT) << What << " sum_all cpu";
    PK_IF_CUDA(forEachSchedule(T * D, [&](const std::string &S) {
                 Dev<pk::bfloat16> DX(X);
                 Dev<pk::half> DM(D);
                 Dev<float> DT(1, -1.0f);
                 pk::cuda::h_col_mean({DX.get(), {T, D}}, {DM.get(), {D}});
                 pk::cuda::h_sum_all({DX.get(), {T, D}}, {DT.get(), {}});
                 expect16(EM, DM.host(), What + " " + S);
                 EXPECT_EQ(DT.host()[0], ET) << What << " sum_all " << S;
               });)
  }
}

TEST(SixteenBit, Layernorm) {
  for (auto [T, D] : Shapes) {
    const auto X = random16<pk::half>(T * D, 9);
    const auto W = random16<pk::bfloat16>(D, 10),
               B = random16<pk::bfloat16>(D, 11);
    std::vector<pk::half> EY(T * D), PY(T * D);
    std::vector<float> EMu(T), PMu(T);
    const float Eps = 1e-5f;
    eager::h_layernorm({X.data(), {T, D}}, W, B, {EY.data(), {T, D}}, EMu, Eps);
    h_layernorm({X.data(), {T, D}}, W, B, {PY.data(), {T, D}}, PMu, Eps);
    // The mean's float error, (D + 1) u mean|x| (<= 2 (D + 1) u), moves each
    // x - mu; through rstd (~1 / std(x) <= ~2 for these inputs) and w (<= 2)
    // it moves y by up to 8 (D + 1) u, possibly across a rounding boundary
    // far from an ulp of y when y is small: that is the float bound added.
    std::vector<double> YAtol(T * D, 8 * (D + 3) * U + 0x1p-11),
        MuTol(T, 2 * (D + 1) * U);
    const std::string What = shapeName("h_layernorm", T, D);
    expect16(EY, PY, What + " y cpu", YAtol);
    expectFloat(EMu, PMu, MuTol, What + " mean cpu");
    PK_IF_CUDA(forEachSchedule(T * D, [&](const std::string &S) {
                 Dev<pk::half> DX(X), DY(T * D);
                 Dev<pk::bfloat16> DW(W), DB(B);
                 Dev<float> DMu(T);
                 pk::cuda::h_layernorm({DX.get(), {T, D}}, {DW.get(), {D}},
                                       {DB.get(), {D}}, {DY.get(), {T, D}},
                                       {DMu.get(), {T}}, Eps);
                 expect16(EY, DY.host(), What + " y " + S, YAtol);
                 expectFloat(EMu, DMu.host(), MuTol, What + " mean " + S);
               });)
  }
}

TEST(SixteenBit, MatmulWithBias) {
  const int64_t Ext[] = {1, 17, 129};
  for (int64_t M : Ext)
    for (int64_t N : Ext)
      for (int64_t K : Ext) {
        const auto A = random16<pk::half>(M * K, 15, -1, 1),
                   Bias = random16<pk::half>(N, 17, -1, 1);
        const auto B = random16<pk::bfloat16>(K * N, 16, -1, 1);
        std::vector<pk::half> E(M * N), P(M * N);
        eager::h_matmul_bias({A.data(), {M, K}}, {B.data(), {K, N}}, Bias,
                             {E.data(), {M, N}});
        h_matmul_bias({A.data(), {M, K}}, {B.data(), {K, N}}, Bias,
                      {P.data(), {M, N}});
        // The float sum of K products in another order than eager's double
        // sum (sample::matmul_atol, the float matmul samples' bound) can
        // cancel, so beside 1 ulp of half it may move an output by that
        // much; such sums cross rounding boundaries more often: 98%
        // bit-identical (measured: at least 99.2%).
        const std::vector<double> Atol(M * N, sample::matmul_atol(K));
        const std::string What = "h_matmul_bias " + std::to_string(M) + "x" +
                                 std::to_string(N) + "x" + std::to_string(K);
        expect16(E, P, What + " cpu", Atol, 0.98);
        PK_IF_CUDA(forEachSchedule(M * N, [&](const std::string &S) {
                     Dev<pk::half> DA(A), DBias(Bias), DC(M * N);
                     Dev<pk::bfloat16> DB(B);
                     pk::cuda::h_matmul_bias(
                         {DA.get(), {M, K}}, {DB.get(), {K, N}},
                         {DBias.get(), {N}}, {DC.get(), {M, N}});
                     expect16(E, DC.host(), What + " " + S, Atol, 0.98);
                   });)
      }
}

// bfloat16 weights in nn.Linear's layout, float activations: the rows of
// a decode step (M <= 32: the GEMV kernels widen w as they read it, every
// column and row tile and their tails) and above (packed), on every gemm
// level this CPU runs. Eager sums the same float products in double; the
// bound is the float matmul samples' (sample::matmul_atol).
TEST(SixteenBit, Bfloat16WeightsInPlace) {
  const GemmIsaGuard Restore;
  for (pk::rt::GemmIsa L : pk::rt::kAllGemmIsas) {
    if (!pk::rt::set_gemm_isa(L))
      continue;
    for (int64_t M : {1, 2, 3, 4, 7, 8, 17, 32, 33})
      for (int64_t N : {1, 5, 33, 130})
        for (int64_t K : {1, 15, 16, 33, 300}) {
          const auto X = sample::random(M * K, 21, -1, 1);
          const auto W = random16<pk::bfloat16>(N * K, 22, -1, 1);
          std::vector<float> E(M * N), P(M * N, -7.0f);
          eager::bf16_linear({X.data(), {M, K}}, {W.data(), {N, K}},
                             {E.data(), {M, N}});
          bf16_linear({X.data(), {M, K}}, {W.data(), {N, K}},
                      {P.data(), {M, N}});
          expectFloat(E, P, std::vector<double>(M * N, sample::matmul_atol(K)),
                      std::string("bf16_linear ") + pk::rt::gemm_isa_name(L) +
                          " " + std::to_string(M) + "x" + std::to_string(N) +
                          "x" + std::to_string(K));
        }
  }
}

/// Puts back whether products of bfloat16 values run on AMX.
struct GemmAmxGuard {
  bool Saved = pk::rt::gemm_amx();
  ~GemmAmxGuard() { pk::rt::set_gemm_amx(Saved); }
};

/// Eager and compiled results equal (both infinite the same way, or both
/// NaN) or within Tol[i].
void expectClose(const std::vector<float> &E, const std::vector<float> &C,
                 const std::vector<double> &Tol, const std::string &What) {
  ASSERT_EQ(E.size(), C.size()) << What;
  for (size_t I = 0; I < E.size(); ++I)
    if (!(E[I] == C[I]) && !(std::fabs(double(E[I]) - C[I]) <= Tol[I]) &&
        !(std::isnan(E[I]) && std::isnan(C[I]))) {
      ADD_FAILURE() << What << ": element " << I << ": eager " << E[I]
                    << ", got " << C[I] << " (tolerance " << Tol[I] << ")";
      return;
    }
}

/// Products of bfloat16 values (bf16_bf16_linear, bf16_swiglu, bf16_mlp) over
/// rows below and above AMX's 16 (and the GEMV's 32), every edge of AMX's 32 x
/// 32 blocks and 32-value steps of k, against eager. The products of two
/// bfloat16 values are exact in float, so the sums differ from eager's double
/// sums only by float rounding in their own order: sample::matmul_atol(K) for
/// the linear; for SwiGLU, silu(g) u moves by that bound times |u| and
/// |silu'(g)| <= 1.1 for g, and by it times |g| for u (g and u summed here
/// in double), plus a few float roundings of the epilogue. Operands with an
/// infinity and a NaN give the same non-finite outputs in any order.
void expectBfloat16Products(const std::string &Level) {
  for (int64_t M : {0, 1, 15, 16, 33, 47, 129})
    for (int64_t N : {1, 17, 33, 100, 257})
      for (int64_t K : {1, 31, 33, 100, 1000}) {
        const std::string What = Level + " " + std::to_string(M) + "x" +
                                 std::to_string(N) + "x" + std::to_string(K);
        auto X = sample::random(M * K, 31, -1, 1);
        auto W = random16<pk::bfloat16>(N * K, 32, -1, 1);
        const auto W3 = random16<pk::bfloat16>(N * K, 33, -1, 1);
        const auto Bias = sample::random(N, 34, -1, 1);
        if (M > 1 && K > 3)
          X[K + 2] = INFINITY; // row 1: +-inf
        if (N > 2 && K > 3)
          W[2 * K + 3] = pk::bfloat16(NAN); // column 2: NaN
        std::vector<float> E(M * N), P(M * N, -7.0f);
        eager::bf16_bf16_linear({X.data(), {M, K}}, {W.data(), {N, K}}, Bias,
                                {E.data(), {M, N}});
        bf16_bf16_linear({X.data(), {M, K}}, {W.data(), {N, K}}, Bias,
                         {P.data(), {M, N}});
        constexpr double U = 0x1p-24;
        std::vector<double> Tol(M * N);
        for (int64_t I = 0; I < M * N; ++I)
          Tol[I] = sample::matmul_atol(K) + 4 * U * std::fabs(E[I]);
        expectClose(E, P, Tol, "bf16_bf16_linear " + What);

        std::vector<pk::bfloat16> Xb(X.begin(), X.end());
        std::vector<float> E2(M * N), P2(M * N, -7.0f);
        eager::bf16_swiglu({Xb.data(), {M, K}}, {W.data(), {N, K}},
                           {W3.data(), {N, K}}, {E2.data(), {M, N}});
        bf16_swiglu({Xb.data(), {M, K}}, {W.data(), {N, K}},
                    {W3.data(), {N, K}}, {P2.data(), {M, N}});
        for (int64_t I = 0; I < M; ++I)
          for (int64_t J = 0; J < N; ++J) {
            double G = 0, Up = 0;
            for (int64_t L = 0; L < K; ++L) {
              G += double(float(Xb[I * K + L])) * float(W[J * K + L]);
              Up += double(float(Xb[I * K + L])) * float(W3[J * K + L]);
            }
            Tol[I * N + J] = sample::matmul_atol(K) *
                                 (1.1 * std::fabs(Up) + std::fabs(G) + 1) +
                             8 * U * std::fabs(E2[I * N + J]);
          }
        expectClose(E2, P2, Tol, "bf16_swiglu " + What);

        // bf16_mlp: h = round(relu(x W1ᵀ)) [M, N] is a bfloat16 buffer, y =
        // h W2ᵀ with W2 [N, N], finite inputs. Eager rounds h from a double
        // sum, the compiled code from a float sum: where the two straddle a
        // rounding boundary, h_k differs by one bfloat16 step (<= 2^-7
        // |h_k|), so y may move by 2^-7 sum_k |W2_jk h_k|, beside the float
        // sum's bound scaled by max |h|.
        const auto Xm = sample::random(M * K, 35, -1, 1);
        const auto W2 = random16<pk::bfloat16>(N * N, 36, -1, 1);
        std::vector<float> E3(M * N), P3(M * N, -7.0f);
        eager::bf16_mlp({Xm.data(), {M, K}}, {W3.data(), {N, K}},
                        {W2.data(), {N, N}}, {E3.data(), {M, N}});
        bf16_mlp({Xm.data(), {M, K}}, {W3.data(), {N, K}}, {W2.data(), {N, N}},
                 {P3.data(), {M, N}});
        std::vector<double> H(N);
        for (int64_t I = 0; I < M; ++I) {
          double HMax = 0;
          for (int64_t J = 0; J < N; ++J) {
            double S = 0;
            for (int64_t L = 0; L < K; ++L)
              S += double(pk::fp16::roundToBfloat16(Xm[I * K + L])) *
                   float(W3[J * K + L]);
            H[J] = std::max(S, 0.0);
            HMax = std::max(HMax, H[J]);
          }
          for (int64_t J = 0; J < N; ++J) {
            double Flips = 0;
            for (int64_t L = 0; L < N; ++L)
              Flips += std::fabs(double(float(W2[J * N + L]))) * H[L];
            Tol[I * N + J] = 0x1p-7 * Flips +
                             sample::matmul_atol(N) * (HMax + 1) +
                             8 * U * std::fabs(E3[I * N + J]);
          }
        }
        expectClose(E3, P3, Tol, "bf16_mlp " + What);
      }
}

// Products of bfloat16 values on the float kernels of every level this CPU
// runs (AMX off): the values are floats like any others.
TEST(SixteenBit, Bfloat16ProductsOnFloatKernels) {
  const GemmIsaGuard Restore;
  const GemmAmxGuard RestoreAmx;
  pk::rt::set_gemm_amx(false);
  for (pk::rt::GemmIsa L : pk::rt::kAllGemmIsas)
    if (pk::rt::set_gemm_isa(L))
      expectBfloat16Products(pk::rt::gemm_isa_name(L));
}

// The same products on AMX tiles (<pk/gemm_amx.h>), where this CPU has
// AMX-BF16 and Linux grants the tile state; skipped elsewhere. Every shape
// of at least 16 rows (kAmxMinRows) runs there, but K = 1: an axis of extent 1
// gets stride 0 (pk's broadcast convention), so w is not contiguous along k
// and the float kernels take it. The count of AMX products grows by one a
// call (the linear, and the dual product: both products in one pass).
TEST(SixteenBit, Bfloat16ProductsOnAmx) {
  if (!pk::rt::amx_bf16_supported())
    GTEST_SKIP() << "AMX-BF16: not on this CPU, or not granted by Linux";
  const GemmIsaGuard Restore;
  const GemmAmxGuard RestoreAmx;
  ASSERT_TRUE(pk::rt::set_gemm_isa(pk::rt::GemmIsa::Avx512));
  ASSERT_TRUE(pk::rt::set_gemm_amx(true));
  ASSERT_TRUE(pk::rt::gemm_amx());
  const int64_t Before = pk::rt::gemm_amx_products();
  expectBfloat16Products("amx");
  // 4 row counts from 16, 5 column counts, 4 depths above 1: the linear,
  // the dual product, the MLP's first product; the MLP's second (depth N,
  // never 1 there) at every column count but 1.
  EXPECT_EQ(pk::rt::gemm_amx_products() - Before, 4 * 5 * 4 * 3 + 4 * 4 * 5);
}

//===----------------------------------------------------------------------===//
// The samples.
//===----------------------------------------------------------------------===//

TEST(SixteenBit, RmsnormBf16Sample) {
  for (auto [T, D] : Shapes) {
    const auto X = random16<pk::bfloat16>(T * D, 12),
               W = random16<pk::bfloat16>(D, 13);
    std::vector<pk::bfloat16> E(T * D), P(T * D);
    eager::rmsnorm_bf16({X.data(), {T, D}}, W, {E.data(), {T, D}}, 1e-6f);
    rmsnorm_bf16({X.data(), {T, D}}, W, {P.data(), {T, D}}, 1e-6f);
    const std::string What = shapeName("rmsnorm_bf16", T, D);
    expect16(E, P, What + " cpu");
    PK_IF_CUDA(forEachSchedule(T * D, [&](const std::string &S) {
                 Dev<pk::bfloat16> DX(X), DW(W), DY(T * D);
                 pk::cuda::rmsnorm_bf16({DX.get(), {T, D}}, {DW.get(), {D}},
                                        {DY.get(), {T, D}}, 1e-6f);
                 expect16(E, DY.host(), What + " " + S);
               });)
  }
}

TEST(SixteenBit, SoftmaxHalfSample) {
  for (auto [T, D] : Shapes) {
    const auto X = random16<pk::half>(T * D, 14, -8, 8);
    std::vector<pk::half> E(T * D), P(T * D);
    eager::softmax_half({X.data(), {T, D}}, {E.data(), {T, D}});
    softmax_half({X.data(), {T, D}}, {P.data(), {T, D}});
    const std::string What = shapeName("softmax_half", T, D);
    expect16(E, P, What + " cpu");
    // Each row sums to 1 within D half-ulps of rounding the outputs.
    for (int64_t R = 0; R < T; ++R) {
      double S = 0;
      for (int64_t J = 0; J < D; ++J)
        S += float(P[R * D + J]);
      EXPECT_NEAR(S, 1.0, 0x1p-11 * D + 1e-6) << What << " row " << R;
    }
    PK_IF_CUDA(forEachSchedule(T * D, [&](const std::string &S) {
                 Dev<pk::half> DX(X), DY(T * D);
                 pk::cuda::softmax_half({DX.get(), {T, D}}, {DY.get(), {T, D}});
                 expect16(E, DY.host(), What + " " + S);
               });)
  }
}

TEST(SixteenBit, GuardsNameTheRefs) {
  std::vector<pk::half> X(6), Y(4);
  try {
    softmax_half({X.data(), {2, 3}}, {Y.data(), {2, 2}});
    FAIL() << "no ShapeError";
  } catch (const pk::ShapeError &E) {
    EXPECT_NE(std::string(E.what()).find("softmax_half"), std::string::npos)
        << E.what();
  }
}

} // namespace
