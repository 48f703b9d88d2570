// Differential tests of kernels over int8_t and uint8_t refs
// (kernels/int8_cases.cpp): eager (the reference) against the compiled CPU
// code, and, when this file is built into the CUDA shim's pk-cuda-shim-int8
// (PK_INT8_WITH_CUDA), also against the generated CUDA run on the shim
// (forward and a random thread order). Shapes: 0, 1, primes, 1000/1001,
// vector and block tails (17, 129, 4097), large (65537, 1000003 elements;
// 2 x 7001 rows).
//
// Every comparison is bit for bit. The integer results are exact in every
// version (8-bit values compute in int32_t, sums accumulate in int64_t); the
// float results are the same float operations on both sides (a product of
// an int8 value and a scale, a quotient and a floor) or sums that are exact
// in any order (integers times powers of two, far below 2^24 ulps), so an
// fma contraction or another summation order cannot move them either. The
// inputs cover the whole 8-bit ranges, and the int32 inputs whole ranges
// where no product overflows; the IntegerOverflow tests at the end take
// values whose sums and products overflow (they wrap: language.md §3).
#include "common/sample.h"

#include <pk/gemm.h>
#include <pk/pk.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace eager {
#include "kernels/int8_cases.cpp"
} // namespace eager

// The compiled CPU kernels of kernels/int8_cases.cpp (pk_add_kernels).
void q_dequant(pk::In<int8_t, 2> q, pk::In<float, 1> scale,
               pk::Out<float, 2> w);
void q_arith(pk::In<int8_t> a, pk::In<int8_t> b, pk::In<uint8_t> u,
             pk::Out<int32_t> s, pk::Out<int8_t> w, pk::Out<uint8_t> v,
             pk::Out<float> f);
void q_cast(pk::In<int32_t> x, pk::In<float> y, pk::Out<int32_t> ci,
            pk::Out<int32_t> cu, pk::Out<int8_t> yq);
void q_read_back(pk::In<int32_t> x, pk::Out<int8_t> q, pk::Out<int32_t> r);
void q_inout(pk::InOut<uint8_t, 2> img, pk::In<int8_t, 1> delta);
void q_row_reduce(pk::In<int8_t, 2> x, pk::In<uint8_t, 2> u,
                  pk::Out<int32_t, 1> s, pk::Out<int8_t, 1> mx,
                  pk::Out<int32_t, 1> mn, pk::Out<double, 1> m);
void q_col_sum(pk::In<int8_t, 2> x, pk::Out<int32_t, 1> s);
void q_sum_all(pk::In<uint8_t, 2> x, pk::Out<int64_t, 0> total);
void q_quantize_rows(pk::In<float, 2> x, pk::Out<int8_t, 2> q,
                     pk::Out<float, 1> scale);
void q_linear(pk::In<float, 2> x, pk::In<int8_t, 2> w, pk::In<float, 1> scale,
              pk::Out<float, 2> y);
void q_matmul_i32(pk::In<int8_t, 2> a, pk::In<int8_t, 2> b,
                  pk::Out<int32_t, 2> c);
void q_dequant_groups(pk::In<int8_t, 2> q, pk::In<float, 2> scale,
                      pk::Out<float, 2> w);
void q_linear_groups(pk::In<float, 2> x, pk::In<int8_t, 2> w,
                     pk::In<float, 2> scale, pk::Out<float, 2> y);
void q_repeat_computed(pk::In<int8_t, 2> x, pk::Out<int32_t, 2> rows,
                       pk::Out<int32_t, 2> centred, int64_t r);
void q_linear_runq(pk::In<float, 2> x, pk::In<int8_t, 2> w,
                   pk::In<float, 2> scale, pk::Out<float, 2> y);
void q_float_to_int(pk::In<float> x, pk::In<double> y, pk::Out<int32_t> ci,
                    pk::Out<int64_t> cl, pk::Out<int32_t> di,
                    pk::Out<int64_t> sl, pk::Out<int32_t> c8);
void q_divide(pk::In<int32_t> a, pk::In<int32_t> b, pk::In<int64_t> c,
              pk::In<int64_t> d, pk::Out<int32_t> q, pk::Out<int32_t> r,
              pk::Out<int64_t> q64, pk::Out<int64_t> r64);

void q_wrap(pk::In<int32_t> a, pk::In<int32_t> b, pk::In<int64_t> c,
            pk::In<int64_t> d, pk::Out<int32_t> s, pk::Out<int32_t> p,
            pk::Out<int32_t> n, pk::Out<int64_t> s64, pk::Out<int64_t> p64,
            pk::Out<int64_t> n64);

void q_wrap_sum(pk::In<int64_t, 2> c, pk::In<int64_t, 2> d,
                pk::In<int32_t, 2> a, pk::Out<int64_t, 1> rows,
                pk::Out<int64_t, 1> cols, pk::Out<int64_t, 0> all,
                pk::Out<int32_t, 1> rows32, pk::Out<int64_t, 2> prod);

#ifdef PK_INT8_WITH_CUDA
#include <cuda_runtime.h>
#include <pk_shim/shim.h>

#include "ShimDevice.h"

#include "int8_cases.pk.h"
#endif

namespace {

using Shape2 = std::pair<int64_t, int64_t>;
const int64_t Sizes[] = {0, 1, 3, 17, 1000, 1001, 4097, 65537, 1000003};
const Shape2 Shapes[] = {{0, 5},    {1, 1},     {1, 7},    {3, 17},
                         {17, 3},   {5, 1000},  {4, 1001}, {1, 4097},
                         {33, 129}, {300, 257}, {2, 7001}};

/// N uniform integers in [Lo, Hi] as T; the first elements are the range's
/// ends and the values next to them (where wrapping shows).
template <class T>
std::vector<T> randomInts(int64_t N, unsigned Seed, int64_t Lo, int64_t Hi) {
  std::mt19937_64 G(Seed);
  std::uniform_int_distribution<int64_t> D(Lo, Hi);
  std::vector<T> V(static_cast<size_t>(N));
  const int64_t Ends[] = {Lo, Hi, Lo + 1, Hi - 1};
  for (int64_t I = 0; I < N; ++I)
    V[I] = static_cast<T>(I < 4 ? Ends[I] : D(G));
  return V;
}
std::vector<int8_t> randomI8(int64_t N, unsigned Seed) {
  return randomInts<int8_t>(N, Seed, -128, 127);
}
std::vector<uint8_t> randomU8(int64_t N, unsigned Seed) {
  return randomInts<uint8_t>(N, Seed, 0, 255);
}

/// Bit-for-bit equality (floats too: -0 vs +0 or another NaN would show).
template <class T>
void expectSame(const std::vector<T> &E, const std::vector<T> &C,
                const std::string &What) {
  ASSERT_EQ(E.size(), C.size()) << What;
  for (size_t I = 0; I < E.size(); ++I)
    if (std::memcmp(&E[I], &C[I], sizeof(T)) != 0) {
      ADD_FAILURE() << What << ": element " << I << ": eager " << +E[I]
                    << ", got " << +C[I];
      return;
    }
}

std::string shapeName(const char *K, int64_t T, int64_t D) {
  return std::string(K) + " " + std::to_string(T) + "x" + std::to_string(D);
}

//===----------------------------------------------------------------------===//
// The CUDA versions (on the shim), when built with them.
//===----------------------------------------------------------------------===//

#ifdef PK_INT8_WITH_CUDA
/// A device buffer of N elements of a value no kernel writes.
template <class T> struct Dev : shimdev::Dev<T> {
  using shimdev::Dev<T>::Dev;
  explicit Dev(int64_t N) : shimdev::Dev<T>(N, T(77)) {}
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

TEST(Int8, Dequantise) {
  for (auto [T, D] : Shapes) {
    const auto Q = randomI8(T * D, 1);
    const auto S = sample::random(D, 2, 0.001f, 0.1f);
    std::vector<float> E(T * D), P(T * D);
    eager::q_dequant({Q.data(), {T, D}}, S, {E.data(), {T, D}});
    q_dequant({Q.data(), {T, D}}, S, {P.data(), {T, D}});
    const std::string What = shapeName("q_dequant", T, D);
    expectSame(E, P, What + " cpu");
    PK_IF_CUDA(forEachSchedule(T * D, [&](const std::string &Sch) {
                 Dev<int8_t> DQ(Q);
                 Dev<float> DS(S), DW(T * D);
                 pk::cuda::q_dequant({DQ.get(), {T, D}}, {DS.get(), {D}},
                                     {DW.get(), {T, D}});
                 expectSame(E, DW.host(), What + " " + Sch);
               });)
  }
}

TEST(Int8, ArithmeticPromotesAndStoresWrap) {
  for (int64_t N : Sizes) {
    const auto A = randomI8(N, 3), B = randomI8(N, 4);
    const auto U = randomU8(N, 5);
    std::vector<int32_t> ES(N), PS(N);
    std::vector<int8_t> EW(N), PW(N);
    std::vector<uint8_t> EV(N), PV(N);
    std::vector<float> EF(N), PF(N);
    eager::q_arith(A, B, U, ES, EW, EV, EF);
    q_arith(A, B, U, PS, PW, PV, PF);
    const std::string What = "q_arith N=" + std::to_string(N);
    expectSame(ES, PS, What + " s cpu");
    expectSame(EW, PW, What + " w cpu");
    expectSame(EV, PV, What + " v cpu");
    expectSame(EF, PF, What + " f cpu");
    if (N >= 4) {
      // The ends of the ranges: -128 * 127 + 0 - 300, and the wraps of
      // -128 + 127, 127 + (-128)... (randomInts puts Lo, Hi, Lo+1, Hi-1
      // first).
      EXPECT_EQ(PS[0], -128 * -128 + 0 - 300);
      EXPECT_EQ(PW[0], static_cast<int8_t>(-256));
      EXPECT_EQ(PW[1], static_cast<int8_t>(254));
      EXPECT_EQ(PV[0], static_cast<uint8_t>(0 * 3 + 128));
      EXPECT_EQ(PV[1], static_cast<uint8_t>(255 * 3 - 127));
    }
    PK_IF_CUDA(forEachSchedule(N, [&](const std::string &Sch) {
                 Dev<int8_t> DA(A), DB(B), DW(N);
                 Dev<uint8_t> DU(U), DV(N);
                 Dev<int32_t> DS(N);
                 Dev<float> DF(N);
                 pk::cuda::q_arith({DA.get(), {N}}, {DB.get(), {N}},
                                   {DU.get(), {N}}, {DS.get(), {N}},
                                   {DW.get(), {N}}, {DV.get(), {N}},
                                   {DF.get(), {N}});
                 expectSame(ES, DS.host(), What + " s " + Sch);
                 expectSame(EW, DW.host(), What + " w " + Sch);
                 expectSame(EV, DV.host(), What + " v " + Sch);
                 expectSame(EF, DF.host(), What + " f " + Sch);
               });)
  }
}

TEST(Int8, CastsWrapToTheEightBitRange) {
  for (int64_t N : Sizes) {
    // |x * 3| < 2^31; floats in the range of int32_t (float -> integer
    // outside it is undefined in C++).
    const auto X = randomInts<int32_t>(N, 6, -700000000, 700000000);
    const auto Y = sample::random(N, 7, -1000, 1000);
    std::vector<int32_t> ECI(N), PCI(N), ECU(N), PCU(N);
    std::vector<int8_t> EYQ(N), PYQ(N);
    eager::q_cast(X, Y, ECI, ECU, EYQ);
    q_cast(X, Y, PCI, PCU, PYQ);
    const std::string What = "q_cast N=" + std::to_string(N);
    expectSame(ECI, PCI, What + " ci cpu");
    expectSame(ECU, PCU, What + " cu cpu");
    expectSame(EYQ, PYQ, What + " yq cpu");
    for (int64_t I = 0; I < N; ++I)
      ASSERT_EQ(PCI[I], static_cast<int8_t>(X[I])) << What << " " << I;
    PK_IF_CUDA(forEachSchedule(N, [&](const std::string &Sch) {
                 Dev<int32_t> DX(X), DCI(N), DCU(N);
                 Dev<float> DY(Y);
                 Dev<int8_t> DYQ(N);
                 pk::cuda::q_cast({DX.get(), {N}}, {DY.get(), {N}},
                                  {DCI.get(), {N}}, {DCU.get(), {N}},
                                  {DYQ.get(), {N}});
                 expectSame(ECI, DCI.host(), What + " ci " + Sch);
                 expectSame(ECU, DCU.host(), What + " cu " + Sch);
                 expectSame(EYQ, DYQ.host(), What + " yq " + Sch);
               });)
  }
}

TEST(Int8, ReadingAStoredInt8GivesTheWrappedValue) {
  for (int64_t N : {int64_t(0), int64_t(17), int64_t(4097)}) {
    const auto X = randomInts<int32_t>(N, 8, -300000000, 300000000);
    std::vector<int8_t> EQ(N), PQ(N);
    std::vector<int32_t> ER(N), PR(N);
    eager::q_read_back(X, EQ, ER);
    q_read_back(X, PQ, PR);
    for (int64_t I = 0; I < N; ++I) {
      const int32_t Want = static_cast<int8_t>(X[I] * 7) - X[I] * 7;
      ASSERT_EQ(ER[I], Want) << I; // the eager semantics
      ASSERT_EQ(PR[I], Want) << I; // the compiled code agrees
      ASSERT_EQ(PQ[I], EQ[I]) << I;
    }
    PK_IF_CUDA(forEachSchedule(N, [&](const std::string &Sch) {
                 Dev<int32_t> DX(X), DR(N);
                 Dev<int8_t> DQ(N);
                 pk::cuda::q_read_back({DX.get(), {N}}, {DQ.get(), {N}},
                                       {DR.get(), {N}});
                 expectSame(EQ, DQ.host(), "q_read_back q " + Sch);
                 expectSame(ER, DR.host(), "q_read_back r " + Sch);
               });)
  }
}

TEST(Int8, InOutWithBroadcastRow) {
  for (auto [T, D] : Shapes) {
    const auto Img0 = randomU8(T * D, 9);
    const auto Delta = randomI8(D, 10);
    auto E = Img0, P = Img0;
    eager::q_inout({E.data(), {T, D}}, Delta);
    q_inout({P.data(), {T, D}}, Delta);
    const std::string What = shapeName("q_inout", T, D);
    expectSame(E, P, What + " cpu");
    PK_IF_CUDA(forEachSchedule(T * D, [&](const std::string &Sch) {
                 Dev<uint8_t> DImg(Img0);
                 Dev<int8_t> DDelta(Delta);
                 pk::cuda::q_inout({DImg.get(), {T, D}}, {DDelta.get(), {D}});
                 expectSame(E, DImg.host(), What + " " + Sch);
               });)
  }
}

//===----------------------------------------------------------------------===//
// Reductions: the integer rule (int64_t accumulation, exact).
//===----------------------------------------------------------------------===//

TEST(Int8, RowReductions) {
  for (auto [T, D] : Shapes) {
    const auto X = randomI8(T * D, 11);
    const auto U = randomU8(T * D, 12);
    std::vector<int32_t> ES(T), PS(T), EMn(T), PMn(T);
    std::vector<int8_t> EMx(T), PMx(T);
    std::vector<double> EM(T), PM(T);
    eager::q_row_reduce({X.data(), {T, D}}, {U.data(), {T, D}}, ES, EMx, EMn,
                        EM);
    q_row_reduce({X.data(), {T, D}}, {U.data(), {T, D}}, PS, PMx, PMn, PM);
    const std::string What = shapeName("q_row_reduce", T, D);
    expectSame(ES, PS, What + " sum cpu");
    expectSame(EMx, PMx, What + " max cpu");
    expectSame(EMn, PMn, What + " min cpu");
    expectSame(EM, PM, What + " mean cpu");
    PK_IF_CUDA(forEachSchedule(T * D, [&](const std::string &Sch) {
                 Dev<int8_t> DX(X), DMx(T);
                 Dev<uint8_t> DU(U);
                 Dev<int32_t> DS(T), DMn(T);
                 Dev<double> DM(T);
                 pk::cuda::q_row_reduce({DX.get(), {T, D}}, {DU.get(), {T, D}},
                                        {DS.get(), {T}}, {DMx.get(), {T}},
                                        {DMn.get(), {T}}, {DM.get(), {T}});
                 expectSame(ES, DS.host(), What + " sum " + Sch);
                 expectSame(EMx, DMx.host(), What + " max " + Sch);
                 expectSame(EMn, DMn.host(), What + " min " + Sch);
                 expectSame(EM, DM.host(), What + " mean " + Sch);
               });)
  }
}

TEST(Int8, ColumnAndFullSums) {
  for (auto [T, D] : Shapes) {
    const auto X = randomI8(T * D, 13);
    const auto U = randomU8(T * D, 14);
    std::vector<int32_t> E(D), P(D);
    eager::q_col_sum({X.data(), {T, D}}, E);
    q_col_sum({X.data(), {T, D}}, P);
    const std::string What = shapeName("q_col_sum", T, D);
    expectSame(E, P, What + " cpu");
    int64_t ET = -1, PT = -1;
    eager::q_sum_all({U.data(), {T, D}}, pk::Out<int64_t, 0>(&ET, {}));
    q_sum_all({U.data(), {T, D}}, pk::Out<int64_t, 0>(&PT, {}));
    int64_t Want = 0;
    for (uint8_t V : U)
      Want += V;
    EXPECT_EQ(ET, Want) << What;
    EXPECT_EQ(PT, Want) << What << " sum_all cpu";
    PK_IF_CUDA(forEachSchedule(T * D, [&](const std::string &Sch) {
                 Dev<int8_t> DX(X);
                 Dev<uint8_t> DU(U);
                 Dev<int32_t> DS(D);
                 Dev<int64_t> DT(1, -1);
                 pk::cuda::q_col_sum({DX.get(), {T, D}}, {DS.get(), {D}});
                 pk::cuda::q_sum_all({DU.get(), {T, D}}, {DT.get(), {}});
                 expectSame(E, DS.host(), What + " " + Sch);
                 EXPECT_EQ(DT.host()[0], Want) << What << " sum_all " << Sch;
               });)
  }
}

TEST(Int8, QuantizeRows) {
  for (auto [T, D] : Shapes) {
    auto X = sample::random(T * D, 15, -3, 3);
    if (T > 1) // a zero row keeps scale 1
      std::fill(X.begin() + D, X.begin() + 2 * D, 0.0f);
    std::vector<int8_t> EQ(T * D), PQ(T * D);
    std::vector<float> ES(T), PS(T);
    eager::q_quantize_rows({X.data(), {T, D}}, {EQ.data(), {T, D}}, ES);
    const std::string What = shapeName("q_quantize_rows", T, D);
    // Also with streaming stores of the int8 output (pk/stream.h).
    for (int64_t Threshold : {pk::rt::kNeverStream, int64_t(0)}) {
      const int64_t Saved = pk::rt::stream_threshold();
      pk::rt::set_stream_threshold(Threshold);
      std::fill(PQ.begin(), PQ.end(), int8_t(77));
      q_quantize_rows({X.data(), {T, D}}, {PQ.data(), {T, D}}, PS);
      pk::rt::set_stream_threshold(Saved);
      const std::string Cpu = Threshold == 0 ? " cpu streamed" : " cpu";
      expectSame(EQ, PQ, What + " q" + Cpu);
      expectSame(ES, PS, What + " scale" + Cpu);
    }
    if (T > 1)
      EXPECT_EQ(PS[1], 1.0f) << What;
    PK_IF_CUDA(forEachSchedule(T * D, [&](const std::string &Sch) {
                 Dev<float> DX(X), DS(T);
                 Dev<int8_t> DQ(T * D);
                 pk::cuda::q_quantize_rows({DX.get(), {T, D}},
                                           {DQ.get(), {T, D}}, {DS.get(), {T}});
                 expectSame(EQ, DQ.host(), What + " q " + Sch);
                 expectSame(ES, DS.host(), What + " scale " + Sch);
               });)
  }
}

//===----------------------------------------------------------------------===//
// Matrix products of 8-bit weights.
//===----------------------------------------------------------------------===//

TEST(Int8, MatmulOfDequantisedWeights) {
  const int64_t Ext[] = {1, 17, 129};
  for (int64_t M : Ext)
    for (int64_t N : Ext)
      for (int64_t K : Ext) {
        // Small integer activations and power-of-two scales: every product
        // and every partial sum is exact in float (< 2^17 units of the
        // column's scale), so any order of summation gives the same bits.
        const auto XI = randomInts<int32_t>(M * K, 16, -8, 8);
        const std::vector<float> X(XI.begin(), XI.end());
        const auto W = randomI8(K * N, 17);
        const auto Exp = randomInts<int32_t>(N, 18, -10, 0);
        std::vector<float> S(N);
        for (int64_t J = 0; J < N; ++J)
          S[J] = std::ldexp(1.0f, Exp[J]);
        std::vector<float> E(M * N), P(M * N);
        eager::q_linear({X.data(), {M, K}}, {W.data(), {K, N}}, S,
                        {E.data(), {M, N}});
        q_linear({X.data(), {M, K}}, {W.data(), {K, N}}, S, {P.data(), {M, N}});
        const std::string What = "q_linear " + std::to_string(M) + "x" +
                                 std::to_string(N) + "x" + std::to_string(K);
        expectSame(E, P, What + " cpu");
        PK_IF_CUDA(forEachSchedule(M * N, [&](const std::string &Sch) {
                     Dev<float> DX(X), DS(S), DY(M * N);
                     Dev<int8_t> DW(W);
                     pk::cuda::q_linear({DX.get(), {M, K}}, {DW.get(), {K, N}},
                                        {DS.get(), {N}}, {DY.get(), {M, N}});
                     expectSame(E, DY.host(), What + " " + Sch);
                   });)
      }
}

/// Power-of-two scales 2^-10..2^0, one per group of gs along K: w [N, K].
std::vector<float> groupScales(int64_t N, int64_t G, unsigned Seed) {
  const auto Exp = randomInts<int32_t>(N * G, Seed, -10, 0);
  std::vector<float> S(N * G);
  for (int64_t I = 0; I < N * G; ++I)
    S[I] = std::ldexp(1.0f, Exp[I]);
  return S;
}

TEST(Int8, GroupScalesRepeated) {
  // K = G * gs: one group, groups of 1, and the Q8_0 sizes 32 and 64 with
  // tails of the vector widths; K = 0 as groups of 0 (no group at all would
  // divide by 0 in the kernel's own `gs`, plain C++).
  const int64_t Groups[][2] = {{1, 1},  {1, 7},  {7, 1}, {3, 32},
                               {5, 64}, {2, 33}, {4, 0}};
  for (int64_t N : {0, 1, 3, 17, 129})
    for (const auto &GG : Groups) {
      const int64_t G = GG[0], Gs = GG[1], K = G * Gs;
      const auto Q = randomI8(N * K, 21);
      const auto S = groupScales(N, G, 22);
      std::vector<float> E(N * K), P(N * K, -1.0f);
      eager::q_dequant_groups({Q.data(), {N, K}}, {S.data(), {N, G}},
                              {E.data(), {N, K}});
      q_dequant_groups({Q.data(), {N, K}}, {S.data(), {N, G}},
                       {P.data(), {N, K}});
      const std::string What = "q_dequant_groups N=" + std::to_string(N) +
                               " G=" + std::to_string(G) +
                               " gs=" + std::to_string(Gs);
      expectSame(E, P, What + " cpu");
      // Element (n, k) is q * the scale of group k / gs (not a neighbour's).
      for (int64_t I = 0; I < N * K; ++I)
        ASSERT_EQ(E[I], float(Q[I]) * S[(I / K) * G + (I % K) / Gs]) << What;
      PK_IF_CUDA(forEachSchedule(N * K, [&](const std::string &Sch) {
                   Dev<int8_t> DQ(Q);
                   Dev<float> DS(S), DW(N * K);
                   pk::cuda::q_dequant_groups({DQ.get(), {N, K}},
                                              {DS.get(), {N, G}},
                                              {DW.get(), {N, K}});
                   expectSame(E, DW.host(), What + " " + Sch);
                 });)
    }
}

TEST(Int8, GroupScalesThatDoNotDivideAreShapeErrors) {
  // K = 10 over 3 groups: gs = 3, and 3 groups of 3 cover 9 columns, which
  // cannot broadcast against 10 (eager and compiled alike, before any
  // write).
  const auto Q = randomI8(2 * 10, 23);
  const std::vector<float> S(2 * 3, 1.0f);
  std::vector<float> W(2 * 10, 5.0f);
  EXPECT_THROW(eager::q_dequant_groups({Q.data(), {2, 10}}, {S.data(), {2, 3}},
                                       {W.data(), {2, 10}}),
               pk::ShapeError);
  EXPECT_THROW(q_dequant_groups({Q.data(), {2, 10}}, {S.data(), {2, 3}},
                                {W.data(), {2, 10}}),
               pk::ShapeError);
  EXPECT_EQ(W, std::vector<float>(2 * 10, 5.0f));
  std::vector<int32_t> R(4), C(2 * 10);
  EXPECT_THROW(q_repeat_computed({Q.data(), {2, 10}}, {R.data(), {0, 10}},
                                 {C.data(), {2, 10}}, -1),
               pk::ShapeError);
  EXPECT_THROW(eager::q_repeat_computed({Q.data(), {2, 10}},
                                        {R.data(), {0, 10}},
                                        {C.data(), {2, 10}}, -1),
               pk::ShapeError);
}

TEST(Int8, RepeatOfComputedValues) {
  for (const Shape2 &MK : Shapes)
    for (int64_t R : {0, 1, 3}) {
      const auto [M, K] = MK;
      const auto X = randomI8(M * K, 24);
      std::vector<int32_t> ER(M * R * K), PR(M * R * K, 9), EC(M * K),
          PC(M * K, 9);
      eager::q_repeat_computed({X.data(), {M, K}}, {ER.data(), {M * R, K}},
                               {EC.data(), {M, K}}, R);
      q_repeat_computed({X.data(), {M, K}}, {PR.data(), {M * R, K}},
                        {PC.data(), {M, K}}, R);
      const std::string What =
          shapeName("q_repeat_computed", M, K) + " r=" + std::to_string(R);
      expectSame(ER, PR, What + " rows cpu");
      expectSame(EC, PC, What + " centred cpu");
      for (int64_t I = 0; I < M * R * K; ++I)
        ASSERT_EQ(ER[I], X[(I / K / R) * K + I % K] * 2 + 1) << What;
      PK_IF_CUDA(forEachSchedule(M * K, [&](const std::string &Sch) {
                   Dev<int8_t> DX(X);
                   Dev<int32_t> DR(M * R * K), DC(M * K);
                   pk::cuda::q_repeat_computed({DX.get(), {M, K}},
                                               {DR.get(), {M * R, K}},
                                               {DC.get(), {M, K}}, R);
                   expectSame(ER, DR.host(), What + " rows " + Sch);
                   expectSame(EC, DC.host(), What + " centred " + Sch);
                 });)
    }
}

TEST(Int8, MatmulOfGroupScaledWeights) {
  // nn.Linear's w [N, K] with Q8_0 scales [N, K / gs]: the GEMV path (M up
  // to 32) and the packed one, every level; exact data as above.
  const int64_t Ms[] = {1, 3, 8, 33, 129};
  const int64_t Ns[] = {1, 17, 129};
  const int64_t Groups[][2] = {{1, 1}, {3, 32}, {2, 64}, {5, 7}, {4, 0}};
  for (int64_t M : Ms)
    for (int64_t N : Ns)
      for (const auto &GG : Groups) {
        const int64_t G = GG[0], Gs = GG[1], K = G * Gs;
        const auto XI = randomInts<int32_t>(M * K, 25, -8, 8);
        const std::vector<float> X(XI.begin(), XI.end());
        const auto W = randomI8(N * K, 26);
        const auto S = groupScales(N, G, 27);
        std::vector<float> E(M * N), P(M * N, -1.0f);
        eager::q_linear_groups({X.data(), {M, K}}, {W.data(), {N, K}},
                               {S.data(), {N, G}}, {E.data(), {M, N}});
        const std::string What = "q_linear_groups " + std::to_string(M) + "x" +
                                 std::to_string(N) + "x" + std::to_string(G) +
                                 "*" + std::to_string(Gs);
        const pk::rt::GemmIsa Saved = pk::rt::gemm_isa();
        for (pk::rt::GemmIsa Isa : pk::rt::kAllGemmIsas) {
          if (!pk::rt::set_gemm_isa(Isa))
            continue; // a level this CPU lacks (GemmLevel reports it)
          std::fill(P.begin(), P.end(), -1.0f);
          q_linear_groups({X.data(), {M, K}}, {W.data(), {N, K}},
                          {S.data(), {N, G}}, {P.data(), {M, N}});
          expectSame(E, P, What + " cpu " + pk::rt::gemm_isa_name(Isa));
        }
        pk::rt::set_gemm_isa(Saved);
        PK_IF_CUDA(forEachSchedule(M * N, [&](const std::string &Sch) {
                     Dev<float> DX(X), DS(S), DY(M * N);
                     Dev<int8_t> DW(W);
                     pk::cuda::q_linear_groups(
                         {DX.get(), {M, K}}, {DW.get(), {N, K}},
                         {DS.get(), {N, G}}, {DY.get(), {M, N}});
                     expectSame(E, DY.host(), What + " " + Sch);
                   });)
      }
}

TEST(Int8, MatmulInt8IntoInt32) {
  const int64_t Ext[] = {0, 1, 17, 129};
  for (int64_t M : Ext)
    for (int64_t N : Ext)
      for (int64_t K : Ext) {
        const auto A = randomI8(M * K, 19), B = randomI8(K * N, 20);
        std::vector<int32_t> E(M * N), P(M * N, 77);
        eager::q_matmul_i32({A.data(), {M, K}}, {B.data(), {K, N}},
                            {E.data(), {M, N}});
        q_matmul_i32({A.data(), {M, K}}, {B.data(), {K, N}},
                     {P.data(), {M, N}});
        const std::string What = "q_matmul_i32 " + std::to_string(M) + "x" +
                                 std::to_string(N) + "x" + std::to_string(K);
        expectSame(E, P, What + " cpu");
        if (M * N > 0) {
          int64_t Want = 0;
          for (int64_t K0 = 0; K0 < K; ++K0)
            Want += int64_t(A[K0]) * B[K0 * N];
          EXPECT_EQ(P[0], Want) << What;
        }
        PK_IF_CUDA(forEachSchedule(M * N, [&](const std::string &Sch) {
                     Dev<int8_t> DA(A), DB(B);
                     Dev<int32_t> DC(M * N);
                     pk::cuda::q_matmul_i32({DA.get(), {M, K}},
                                            {DB.get(), {K, N}},
                                            {DC.get(), {M, N}});
                     expectSame(E, DC.host(), What + " " + Sch);
                   });)
      }
}

/// runq's quantize + matmul (llama2.c runq.c), written out: the expected
/// values of q_linear_runq. Each group's scale is max|x| / 127, its values
/// round(x / scale) (0 for a group of zeros), its dot product exact, and the
/// terms float(dot) * w_scale * x_scale are added in float, in order.
std::vector<float> runqLinear(const std::vector<float> &X,
                              const std::vector<int8_t> &W,
                              const std::vector<float> &S, int64_t T, int64_t N,
                              int64_t G, int64_t Gs) {
  const int64_t K = G * Gs;
  std::vector<int32_t> Q(T * K);
  std::vector<float> Xs(T * G);
  for (int64_t I = 0; I < T * G; ++I) {
    float Max = 0.0f;
    for (int64_t L = 0; L < Gs; ++L)
      Max = std::max(Max, std::abs(X[I * Gs + L]));
    Xs[I] = Max / 127.0f;
    for (int64_t L = 0; L < Gs; ++L)
      Q[I * Gs + L] =
          Xs[I] > 0.0f ? static_cast<int32_t>(std::round(X[I * Gs + L] / Xs[I]))
                       : 0;
  }
  std::vector<float> Y(T * N);
  for (int64_t Ti = 0; Ti < T; ++Ti)
    for (int64_t Ni = 0; Ni < N; ++Ni) {
      float Val = 0.0f;
      for (int64_t Gi = 0; Gi < G; ++Gi) {
        int32_t Dot = 0;
        for (int64_t L = 0; L < Gs; ++L)
          Dot += Q[Ti * K + Gi * Gs + L] * int32_t(W[Ni * K + Gi * Gs + L]);
        Val += float(Dot) * S[Ni * G + Gi] * Xs[Ti * G + Gi];
      }
      Y[Ti * N + Ni] = Val;
    }
  return Y;
}

TEST(Int8, RunqProductIsExactWhereItsSumIs) {
  // Data whose every step is exact, so eager (sums in double), compiled
  // (pk::rt::int8_product's dots, then a float sum) and runq agree bit for
  // bit: each group's largest |x| is 127 * 2^e (its scale 2^e), x a multiple
  // of 2^e, weights in [-3, 3] and scales powers of two, so every term and
  // partial sum is an integer times 2^-7 far below 2^24 of them.
  const int64_t Groups[][2] = {{1, 32}, {2, 64},  {3, 17},
                               {4, 1},  {1, 130}, {5, 16}};
  // (No T = 0: reshape's -1 of an empty array is an error, as in NumPy.)
  std::mt19937 Rng(29);
  for (int64_t T : {1, 2, 5})
    for (int64_t N : {1, 7, 16, 17, 33})
      for (const auto &GG : Groups) {
        const int64_t G = GG[0], Gs = GG[1], K = G * Gs;
        std::vector<float> X(T * K), S(N * G);
        std::vector<int8_t> W(N * K);
        for (int64_t I = 0; I < T * G; ++I) {
          const float Unit = std::ldexp(1.0f, int(Rng() % 3) - 2);
          for (int64_t L = 0; L < Gs; ++L)
            X[I * Gs + L] = Unit * float(int(Rng() % 255) - 127);
          X[I * Gs + Rng() % Gs] = Unit * (Rng() % 2 ? 127.0f : -127.0f);
        }
        for (int8_t &V : W)
          V = int8_t(int(Rng() % 7) - 3);
        for (float &V : S)
          V = std::ldexp(1.0f, -1 - int(Rng() % 4));
        std::vector<float> E(T * N), P(T * N, -1.0f);
        eager::q_linear_runq({X.data(), {T, K}}, {W.data(), {N, K}},
                             {S.data(), {N, G}}, {E.data(), {T, N}});
        q_linear_runq({X.data(), {T, K}}, {W.data(), {N, K}},
                      {S.data(), {N, G}}, {P.data(), {T, N}});
        const std::string What =
            "q_linear_runq T=" + std::to_string(T) + " N=" + std::to_string(N) +
            " G=" + std::to_string(G) + " gs=" + std::to_string(Gs);
        expectSame(E, P, What + " cpu");
        expectSame(runqLinear(X, W, S, T, N, G, Gs), P, What + " runq");
        PK_IF_CUDA(forEachSchedule(T * N, [&](const std::string &Sch) {
                     Dev<float> DX(X), DS(S), DY(T * N);
                     Dev<int8_t> DW(W);
                     pk::cuda::q_linear_runq(
                         {DX.get(), {T, K}}, {DW.get(), {N, K}},
                         {DS.get(), {N, G}}, {DY.get(), {T, N}});
                     expectSame(E, DY.host(), What + " " + Sch);
                   });)
      }
}

TEST(Int8, RunqProductOfRandomData) {
  // Whole int8 weights, random activations (a group of zeros among them)
  // and scales: the compiled product within a float sum's bound of runq's
  // (G terms: |err| <= G * 2^-23 * sum |term|); the dots and terms are the
  // same bits, only the order of the sum over the groups may differ.
  const int64_t Groups[][2] = {{8, 32}, {4, 64}, {3, 100}, {12, 64}};
  std::mt19937 Rng(31);
  std::uniform_real_distribution<float> U(-2.0f, 2.0f), Sc(0.001f, 0.05f);
  for (int64_t T : {1, 3, 9})
    for (int64_t N : {5, 64, 129})
      for (const auto &GG : Groups) {
        const int64_t G = GG[0], Gs = GG[1], K = G * Gs;
        std::vector<float> X(T * K), S(N * G);
        for (float &V : X)
          V = U(Rng);
        std::fill(X.begin(), X.begin() + Gs, 0.0f); // a group of zeros
        for (float &V : S)
          V = Sc(Rng);
        const std::vector<int8_t> W = randomI8(N * K, unsigned(T * N + G));
        std::vector<float> P(T * N, -1.0f);
        q_linear_runq({X.data(), {T, K}}, {W.data(), {N, K}},
                      {S.data(), {N, G}}, {P.data(), {T, N}});
        const std::vector<float> R = runqLinear(X, W, S, T, N, G, Gs);
        std::vector<float> Bound(T * N, 0.0f);
        {
          // sum |term| from the same quantisation (runqLinear with |w|).
          std::vector<int8_t> AbsW(W.size());
          for (size_t I = 0; I < W.size(); ++I)
            AbsW[I] = int8_t(std::min(127, std::abs(int(W[I]))));
          std::vector<float> AbsX(X.size());
          for (size_t I = 0; I < X.size(); ++I)
            AbsX[I] = std::abs(X[I]);
          Bound = runqLinear(AbsX, AbsW, S, T, N, G, Gs);
        }
        for (int64_t I = 0; I < T * N; ++I)
          ASSERT_LE(std::abs(P[I] - R[I]),
                    float(G) * std::ldexp(1.0f, -23) * Bound[I] * 1.01f +
                        1e-30f)
              << "T=" << T << " N=" << N << " G=" << G << " gs=" << Gs
              << " element " << I << ": got " << P[I] << ", runq " << R[I];
      }
}

//===----------------------------------------------------------------------===//
// Integer division: no data traps.
//===----------------------------------------------------------------------===//

/// Divisors and dividends where C++'s / and % are undefined or trap (0, -1
/// under the most negative value) mixed with ordinary ones, both signs.
template <class T>
void divisionData(int64_t N, std::vector<T> &A, std::vector<T> &B,
                  unsigned Seed) {
  const T Min = std::numeric_limits<T>::min(),
          Max = std::numeric_limits<T>::max();
  const T SpecialA[] = {Min, Min, Min, 7, -7, 0, Max, Min + 1};
  const T SpecialB[] = {T(-1), T(0), T(1), T(0), T(-1), T(0), T(-1), T(-1)};
  std::mt19937_64 G(Seed);
  std::uniform_int_distribution<int64_t> Small(-9, 9);
  A.resize(N);
  B.resize(N);
  for (int64_t I = 0; I < N; ++I) {
    const int64_t K = I % 16;
    if (K < 8) {
      A[I] = SpecialA[K];
      B[I] = SpecialB[K];
    } else {
      A[I] =
          static_cast<T>(static_cast<int64_t>(G() >> 1) * (G() & 1 ? 1 : -1));
      B[I] = static_cast<T>(Small(G)); // zeros and -1s among them
    }
  }
}

/// The language's quotient and remainder, computed in 128 bits (where
/// nothing overflows) and wrapped to T: the expected values, written
/// independently of pk::scalar.
template <class T> T wantQuotient(T A, T B) {
  if (B == 0)
    return 0;
  const __int128 Q = static_cast<__int128>(A) / B;
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(Q));
}
template <class T> T wantRemainder(T A, T B) {
  return B == 0 ? T(0) : static_cast<T>(static_cast<__int128>(A) % B);
}

TEST(IntegerDivision, ByZeroGivesZeroAndMinOverMinusOneWraps) {
  for (int64_t N : Sizes) {
    std::vector<int32_t> A, B;
    std::vector<int64_t> C, D;
    divisionData(N, A, B, 21);
    divisionData(N, C, D, 22);
    std::vector<int32_t> EQ(N), ER(N), PQ(N, 77), PR(N, 77);
    std::vector<int64_t> EQ64(N), ER64(N), PQ64(N, 77), PR64(N, 77);
    eager::q_divide(A, B, C, D, EQ, ER, EQ64, ER64);
    q_divide(A, B, C, D, PQ, PR, PQ64, PR64);
    const std::string What = "q_divide N=" + std::to_string(N);
    for (int64_t I = 0; I < N; ++I) {
      ASSERT_EQ(EQ[I], wantQuotient(A[I], B[I]))
          << What << " eager " << A[I] << " / " << B[I];
      ASSERT_EQ(ER[I], wantRemainder(A[I], B[I]))
          << What << " eager " << A[I] << " % " << B[I];
      ASSERT_EQ(EQ64[I], wantQuotient(C[I], D[I]))
          << What << " eager " << C[I] << " / " << D[I];
      ASSERT_EQ(ER64[I], wantRemainder(C[I], D[I]))
          << What << " eager " << C[I] << " % " << D[I];
    }
    expectSame(EQ, PQ, What + " q cpu");
    expectSame(ER, PR, What + " r cpu");
    expectSame(EQ64, PQ64, What + " q64 cpu");
    expectSame(ER64, PR64, What + " r64 cpu");
    PK_IF_CUDA(forEachSchedule(N, [&](const std::string &Sch) {
                 Dev<int32_t> DA(A), DB(B), DQ(N), DR(N);
                 Dev<int64_t> DC(C), DD(D), DQ64(N), DR64(N);
                 pk::cuda::q_divide({DA.get(), {N}}, {DB.get(), {N}},
                                    {DC.get(), {N}}, {DD.get(), {N}},
                                    {DQ.get(), {N}}, {DR.get(), {N}},
                                    {DQ64.get(), {N}}, {DR64.get(), {N}});
                 expectSame(EQ, DQ.host(), What + " q " + Sch);
                 expectSame(ER, DR.host(), What + " r " + Sch);
                 expectSame(EQ64, DQ64.host(), What + " q64 " + Sch);
                 expectSame(ER64, DR64.host(), What + " r64 " + Sch);
               });)
  }
}

//===----------------------------------------------------------------------===//
// Float -> integer conversions: defined for every value.
//===----------------------------------------------------------------------===//

/// What the language says a float converts to (NaN 0, saturation beyond the
/// range, truncation toward zero inside), computed in long double where
/// every bound is exact: written independently of pk::scalar::convert.
template <class T, class F> T wantConversion(F V) {
  const long double X = V;
  const long double Max = std::numeric_limits<T>::max();
  const long double Min = std::numeric_limits<T>::min();
  if (X != X)
    return 0;
  if (X >= Max + 1.0L)
    return std::numeric_limits<T>::max();
  if (X <= Min - 1.0L)
    return std::numeric_limits<T>::min();
  return static_cast<T>(std::trunc(X));
}

TEST(FloatToInt, NanIsZeroAndOutOfRangeSaturates) {
  const float Inf = std::numeric_limits<float>::infinity();
  const float NaN = std::numeric_limits<float>::quiet_NaN();
  // Every boundary of int32 and int64 in float and double, around them,
  // the specials, then random magnitudes up to 1e20 of both signs.
  const std::vector<double> Special = {NaN,
                                       -NaN,
                                       Inf,
                                       -Inf,
                                       0.0,
                                       -0.0,
                                       0.5,
                                       -0.5,
                                       0.999,
                                       -0.999,
                                       1.5,
                                       -1.5,
                                       127.9,
                                       -128.9,
                                       2147483520.0,
                                       2147483647.0,
                                       2147483647.5,
                                       2147483648.0,
                                       2147483904.0,
                                       -2147483648.0,
                                       -2147483648.5,
                                       -2147483649.0,
                                       -2147483904.0,
                                       3e9,
                                       -3e9,
                                       9223371487098961920.0,
                                       9223372036854775807.0,
                                       -9223372036854775808.0,
                                       -9223373136366403584.0,
                                       1e19,
                                       -1e19,
                                       1e30,
                                       -1e30};
  for (int64_t N : Sizes) {
    std::vector<float> X(N);
    std::vector<double> Y(N);
    std::mt19937_64 G(23);
    std::uniform_real_distribution<double> Exponent(-2, 20);
    for (int64_t I = 0; I < N; ++I) {
      const double V = I < static_cast<int64_t>(Special.size())
                           ? Special[I]
                           : std::pow(10.0, Exponent(G)) * (G() & 1 ? 1 : -1);
      X[I] = static_cast<float>(V);
      Y[I] = V;
    }
    std::vector<int32_t> ECI(N), PCI(N, 77), EDI(N), PDI(N, 77), EC8(N),
        PC8(N, 77);
    std::vector<int64_t> ECL(N), PCL(N, 77), ESL(N), PSL(N, 77);
    eager::q_float_to_int(X, Y, ECI, ECL, EDI, ESL, EC8);
    q_float_to_int(X, Y, PCI, PCL, PDI, PSL, PC8);
    const std::string What = "q_float_to_int N=" + std::to_string(N);
    for (int64_t I = 0; I < N; ++I) {
      ASSERT_EQ(ECI[I], wantConversion<int32_t>(X[I])) << What << " " << X[I];
      ASSERT_EQ(ECL[I], wantConversion<int64_t>(X[I])) << What << " " << X[I];
      ASSERT_EQ(EDI[I], wantConversion<int32_t>(Y[I])) << What << " " << Y[I];
      ASSERT_EQ(ESL[I], wantConversion<int64_t>(Y[I])) << What << " " << Y[I];
      ASSERT_EQ(EC8[I], static_cast<int8_t>(wantConversion<int32_t>(X[I])))
          << What << " " << X[I];
    }
    expectSame(ECI, PCI, What + " ci cpu");
    expectSame(ECL, PCL, What + " cl cpu");
    expectSame(EDI, PDI, What + " di cpu");
    expectSame(ESL, PSL, What + " sl cpu");
    expectSame(EC8, PC8, What + " c8 cpu");
    PK_IF_CUDA(forEachSchedule(N, [&](const std::string &Sch) {
                 Dev<float> DX(X);
                 Dev<double> DY(Y);
                 Dev<int32_t> DCI(N), DDI(N), DC8(N);
                 Dev<int64_t> DCL(N), DSL(N);
                 pk::cuda::q_float_to_int({DX.get(), {N}}, {DY.get(), {N}},
                                          {DCI.get(), {N}}, {DCL.get(), {N}},
                                          {DDI.get(), {N}}, {DSL.get(), {N}},
                                          {DC8.get(), {N}});
                 expectSame(ECI, DCI.host(), What + " ci " + Sch);
                 expectSame(ECL, DCL.host(), What + " cl " + Sch);
                 expectSame(EDI, DDI.host(), What + " di " + Sch);
                 expectSame(ESL, DSL.host(), What + " sl " + Sch);
                 expectSame(EC8, DC8.host(), What + " c8 " + Sch);
               });)
  }
}

} // namespace

/// Operands at and near the limits (every sum, difference and product of
/// two of them overflows or lands next to a limit), then random values of
/// every magnitude.
template <class T>
void wrapData(int64_t N, std::vector<T> &A, std::vector<T> &B, unsigned Seed) {
  const T Min = std::numeric_limits<T>::min(),
          Max = std::numeric_limits<T>::max();
  const T SpecialA[] = {Max, Min, Min, Max, Min + 1, Max, Min, T(-1)};
  const T SpecialB[] = {T(1), T(-1), Min, Max, T(-2), T(2), T(-1), Min};
  std::mt19937_64 G(Seed);
  A.resize(N);
  B.resize(N);
  for (int64_t I = 0; I < N; ++I) {
    if (I % 16 < 8) {
      A[I] = SpecialA[I % 16];
      B[I] = SpecialB[I % 16];
    } else {
      A[I] = static_cast<T>(G() >> (G() % 64));
      B[I] = static_cast<T>(G() >> (G() % 64));
    }
  }
}

/// The language's wrapped results, computed in 128 bits (where nothing
/// overflows) and reduced modulo 2^bits: written independently of
/// pk::scalar.
template <class T> T wrapTo(__int128 V) {
  return static_cast<T>(
      static_cast<std::make_unsigned_t<T>>(static_cast<unsigned __int128>(V)));
}

TEST(IntegerOverflow, AddSubMulNegAndAbsWrap) {
  for (int64_t N : Sizes) {
    std::vector<int32_t> A, B;
    std::vector<int64_t> C, D;
    wrapData(N, A, B, 31);
    wrapData(N, C, D, 32);
    std::vector<int32_t> ES(N), EP(N), EN(N), PS(N, 77), PP(N, 77), PN(N, 77);
    std::vector<int64_t> ES64(N), EP64(N), EN64(N), PS64(N, 77), PP64(N, 77),
        PN64(N, 77);
    eager::q_wrap(A, B, C, D, ES, EP, EN, ES64, EP64, EN64);
    q_wrap(A, B, C, D, PS, PP, PN, PS64, PP64, PN64);
    const std::string What = "q_wrap N=" + std::to_string(N);
    auto Abs = [](__int128 X) { return X < 0 ? -X : X; };
    for (int64_t I = 0; I < N; ++I) {
      const __int128 X = A[I], Y = B[I], Z = C[I], W = D[I];
      // a + b - (b - a): each step wraps; the result is 2a modulo 2^32.
      const int32_t Sum = wrapTo<int32_t>(wrapTo<int32_t>(X + Y) -
                                          __int128(wrapTo<int32_t>(Y - X)));
      const int64_t Sum64 = wrapTo<int64_t>(wrapTo<int64_t>(Z + W) -
                                            __int128(wrapTo<int64_t>(W - Z)));
      ASSERT_EQ(ES[I], Sum) << What << " eager " << A[I] << ", " << B[I];
      ASSERT_EQ(EP[I], wrapTo<int32_t>(X * Y))
          << What << " eager " << A[I] << " * " << B[I];
      ASSERT_EQ(EN[I], wrapTo<int32_t>(-__int128(wrapTo<int32_t>(Abs(X)))))
          << What << " eager -abs(" << A[I] << ")";
      ASSERT_EQ(ES64[I], Sum64) << What << " eager " << C[I] << ", " << D[I];
      ASSERT_EQ(EP64[I], wrapTo<int64_t>(Z * W))
          << What << " eager " << C[I] << " * " << D[I];
      ASSERT_EQ(EN64[I], wrapTo<int64_t>(-__int128(wrapTo<int64_t>(Abs(Z)))))
          << What << " eager -abs(" << C[I] << ")";
    }
    expectSame(ES, PS, What + " s cpu");
    expectSame(EP, PP, What + " p cpu");
    expectSame(EN, PN, What + " n cpu");
    expectSame(ES64, PS64, What + " s64 cpu");
    expectSame(EP64, PP64, What + " p64 cpu");
    expectSame(EN64, PN64, What + " n64 cpu");
    PK_IF_CUDA(forEachSchedule(N, [&](const std::string &Sch) {
                 Dev<int32_t> DA(A), DB(B), DS(N), DP(N), DN(N);
                 Dev<int64_t> DC(C), DD(D), DS64(N), DP64(N), DN64(N);
                 pk::cuda::q_wrap({DA.get(), {N}}, {DB.get(), {N}},
                                  {DC.get(), {N}}, {DD.get(), {N}},
                                  {DS.get(), {N}}, {DP.get(), {N}},
                                  {DN.get(), {N}}, {DS64.get(), {N}},
                                  {DP64.get(), {N}}, {DN64.get(), {N}});
                 expectSame(ES, DS.host(), What + " s " + Sch);
                 expectSame(EP, DP.host(), What + " p " + Sch);
                 expectSame(EN, DN.host(), What + " n " + Sch);
                 expectSame(ES64, DS64.host(), What + " s64 " + Sch);
                 expectSame(EP64, DP64.host(), What + " p64 " + Sch);
                 expectSame(EN64, DN64.host(), What + " n64 " + Sch);
               });)
  }
}

TEST(IntegerOverflow, SumsAndMatmulsWrap) {
  // Rows x columns: the lanes' tails (16 lanes, 64 for max/min), one
  // column, and rows long enough to overflow int32 sums many times.
  const std::pair<int64_t, int64_t> Shapes[] = {{1, 1},    {3, 17}, {5, 64},
                                                {2, 1001}, {7, 1},  {4, 4099}};
  for (auto [R, N] : Shapes) {
    const int64_t P = 3; // columns of the product
    std::vector<int64_t> C, D, Unused64;
    std::vector<int32_t> A, Unused32;
    wrapData(R * N, C, Unused64, 41);
    wrapData(P * N, D, Unused64, 42);
    wrapData(R * N, A, Unused32, 43);
    std::vector<int64_t> ERows(R), ECols(N), EAll(1), EProd(R * P);
    std::vector<int32_t> ERows32(R);
    eager::q_wrap_sum({C.data(), {R, N}}, {D.data(), {P, N}},
                      {A.data(), {R, N}}, ERows, ECols, {EAll.data(), {}},
                      ERows32, {EProd.data(), {R, P}});
    const std::string What =
        "q_wrap_sum " + std::to_string(R) + "x" + std::to_string(N);
    // The wrapped results from 128-bit sums (none of these overflow 128
    // bits: at most 4099 terms of 2^126).
    __int128 All = 0;
    for (int64_t I = 0; I < R; ++I) {
      __int128 Row = 0, Row32 = 0;
      for (int64_t J = 0; J < N; ++J) {
        Row += C[I * N + J];
        Row32 += A[I * N + J];
      }
      All += Row;
      ASSERT_EQ(ERows[I], wrapTo<int64_t>(Row)) << What << " eager row " << I;
      ASSERT_EQ(ERows32[I], wrapTo<int32_t>(Row32))
          << What << " eager int32 row " << I;
      for (int64_t K = 0; K < P; ++K) {
        __int128 Dot = 0; // each product wraps to int64, then the sum does
        for (int64_t J = 0; J < N; ++J)
          Dot += wrapTo<int64_t>(__int128(C[I * N + J]) * D[K * N + J]);
        ASSERT_EQ(EProd[I * P + K], wrapTo<int64_t>(Dot))
            << What << " eager product (" << I << ", " << K << ")";
      }
    }
    ASSERT_EQ(EAll[0], wrapTo<int64_t>(All)) << What << " eager all";
    for (int64_t J = 0; J < N; ++J) {
      __int128 Col = 0;
      for (int64_t I = 0; I < R; ++I)
        Col += C[I * N + J];
      ASSERT_EQ(ECols[J], wrapTo<int64_t>(Col)) << What << " eager col " << J;
    }
    std::vector<int64_t> Rows(R, 77), Cols(N, 77), All1(1, 77), Prod(R * P, 77);
    std::vector<int32_t> Rows32(R, 77);
    q_wrap_sum({C.data(), {R, N}}, {D.data(), {P, N}}, {A.data(), {R, N}}, Rows,
               Cols, {All1.data(), {}}, Rows32, {Prod.data(), {R, P}});
    expectSame(ERows, Rows, What + " rows cpu");
    expectSame(ECols, Cols, What + " cols cpu");
    expectSame(EAll, All1, What + " all cpu");
    expectSame(ERows32, Rows32, What + " rows32 cpu");
    expectSame(EProd, Prod, What + " prod cpu");
    PK_IF_CUDA(forEachSchedule(R * N, [&](const std::string &Sch) {
                 Dev<int64_t> DC(C), DD(D), DRows(R), DCols(N), DAll(1),
                     DProd(R * P);
                 Dev<int32_t> DA(A), DRows32(R);
                 pk::cuda::q_wrap_sum(
                     {DC.get(), {R, N}}, {DD.get(), {P, N}}, {DA.get(), {R, N}},
                     {DRows.get(), {R}}, {DCols.get(), {N}}, {DAll.get(), {}},
                     {DRows32.get(), {R}}, {DProd.get(), {R, P}});
                 expectSame(ERows, DRows.host(), What + " rows " + Sch);
                 expectSame(ECols, DCols.host(), What + " cols " + Sch);
                 expectSame(EAll, DAll.host(), What + " all " + Sch);
                 expectSame(ERows32, DRows32.host(), What + " rows32 " + Sch);
                 expectSame(EProd, DProd.host(), What + " prod " + Sch);
               });)
  }
}
