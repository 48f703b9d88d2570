// The generated CUDA of the C++ people write by habit, on the shim, against
// eager: compound assignment on refs and scalar math
// (test/e2e/kernels/habits.cpp), constant tables (kernels/tables.cpp) and
// kernel templates through their launcher specialisations
// `pk::cuda::t_scale<float>(...)` (kernels/kernel_templates.cpp). The CPU
// side of each is test/e2e's HabitsTest, TablesTest and KernelTemplatesTest.
// Shapes: 0, 1, primes, past a block (1001 elements, 129 columns).
//
// Tolerance: integers bit for bit; float arithmetic relative 1e-6 (the same
// operations in the same order: equal on the shim, and a GPU's fused
// multiply-adds stay within it); transcendentals (exp, sigmoid, rsqrt, tanh,
// log1p in CUDA's libdevice vs libm) relative 2e-6 in float, 1e-12 in double;
// softmax's row sum in another order, relative 1e-5.
#include "common/sample.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cuda_runtime.h>
#include <pk_shim/shim.h>

#include "ShimDevice.h"

#include <array>
#include <cmath>
#include <cstring>
#include <iterator>
#include <string>
#include <tuple>
#include <vector>

#include "habits.pk.h"
#include "kernel_templates.pk.h"
#include "tables.pk.h"

namespace eager {
#include "kernels/habits.cpp"
#include "kernels/kernel_templates.cpp"
#include "kernels/tables.cpp"
} // namespace eager

namespace {

using shimdev::Dev;

const std::pair<int64_t, int64_t> Shapes[] = {{0, 5},  {1, 1},    {3, 7},
                                              {7, 13}, {1, 1001}, {11, 129}};

template <class T>
void expectClose(const std::vector<T> &E, const std::vector<T> &C, double Rtol,
                 const std::string &What) {
  ASSERT_EQ(E.size(), C.size()) << What;
  for (size_t I = 0; I < E.size(); ++I) {
    const double A = double(E[I]), B = double(C[I]);
    const bool Ok = Rtol == 0
                        ? std::memcmp(&E[I], &C[I], sizeof(T)) == 0
                        : std::fabs(A - B) <= Rtol * (1e-30 + std::fabs(A));
    if (!Ok) {
      ADD_FAILURE() << What << ": element " << I << " of " << E.size()
                    << ": eager " << A << ", cuda " << B;
      return;
    }
  }
}

std::string tag(const char *K, int64_t R, int64_t C) {
  return std::string(K) + " " + std::to_string(R) + "x" + std::to_string(C);
}

TEST(HabitsShim, CompoundStoresOnRefs) {
  unsigned Seed = 1;
  for (auto [R, C] : Shapes) {
    const int64_t N = R * C;
    auto A0 = sample::random(N, Seed++), V = sample::random(C, Seed++),
         W = sample::random(N, Seed++);
    auto AE = A0;
    eager::accumulate({AE.data(), {R, C}}, V, {W.data(), {R, C}});
    Dev<float> DA(A0), DV(V), DW(W);
    pk::cuda::accumulate({DA.get(), {R, C}}, {DV.get(), {C}},
                         {DW.get(), {R, C}});
    expectClose(AE, DA.host(), 1e-6, tag("accumulate", R, C));

    auto X = sample::random(N, Seed++, 0, 2);
    std::vector<float> YE(N);
    eager::ratio({X.data(), {R, C}}, {YE.data(), {R, C}}, 1.5f);
    Dev<float> DX(X), DY(N, -7.0f);
    pk::cuda::ratio({DX.get(), {R, C}}, {DY.get(), {R, C}}, 1.5f);
    expectClose(YE, DY.host(), 1e-6, tag("ratio", R, C));

    std::vector<int32_t> K0(N), D(N);
    for (int64_t I = 0; I < N; ++I) {
      K0[I] = static_cast<int32_t>(A0[I] * 1000); // negatives too
      D[I] = static_cast<int32_t>(W[I] * 100);
    }
    auto KE = K0;
    eager::int_update({KE.data(), {N}}, {D.data(), {N}});
    Dev<int32_t> DK(K0), DD(D);
    pk::cuda::int_update({DK.get(), {N}}, {DD.get(), {N}});
    expectClose(KE, DK.host(), 0, tag("int_update", R, C));

    auto HX = sample::random(N, Seed++);
    auto H0 = sample::to16<pk::half>(sample::random(N, Seed++));
    auto HE = H0;
    eager::half_accumulate({HE.data(), {N}}, {HX.data(), {N}});
    Dev<pk::half> DH(H0);
    Dev<float> DHX(HX);
    pk::cuda::half_accumulate({DH.get(), {N}}, {DHX.get(), {N}});
    // One rounding to half of the same float sum: the same bits.
    expectClose(sample::to_floats(HE), sample::to_floats(DH.host()), 0,
                tag("half_accumulate", R, C));
  }
}

TEST(HabitsShim, MathOnUniformScalars) {
  unsigned Seed = 100;
  for (auto [R, C] : Shapes) {
    const int64_t N = R * C;
    auto X = sample::random(N, Seed++);
    Dev<float> DX(X);
    for (float Eps : {0.0f, 1e-5f, -0.75f, 3.0f}) {
      std::vector<float> YE(N);
      eager::scale_by_width({X.data(), {R, C}}, {YE.data(), {R, C}}, C, Eps);
      Dev<float> DY(N, -7.0f);
      pk::cuda::scale_by_width({DX.get(), {R, C}}, {DY.get(), {R, C}}, C, Eps);
      expectClose(YE, DY.host(), 2e-6, tag("scale_by_width", R, C));
    }
    std::vector<double> XD(X.begin(), X.end());
    Dev<double> DXD(XD);
    for (double T : {0.25, -1.5, 2.75}) {
      std::vector<double> YE(N);
      eager::scalar_types({XD.data(), {N}}, {YE.data(), {N}}, int32_t(C), T);
      Dev<double> DY(N, -7.0);
      pk::cuda::scalar_types({DXD.get(), {N}}, {DY.get(), {N}}, int32_t(C), T);
      // tanh of a float value, then widened: float's tolerance.
      expectClose(YE, DY.host(), 2e-6, tag("scalar_types", R, C));
    }
  }
}

TEST(HabitsShim, ConstantTables) {
  for (auto [R, C] : Shapes) {
    const int64_t N = R * C;
    auto X = sample::random(N, 3);
    Dev<float> DX(X);
    for (auto [Name, Eager, Cuda] :
         {std::tuple{"poly_float", &eager::poly_float, &pk::cuda::poly_float},
          std::tuple{"poly_std_array", &eager::poly_std_array,
                     &pk::cuda::poly_std_array}}) {
      std::vector<float> E(N);
      Eager(X, E);
      Dev<float> DY(N, -7.0f);
      Cuda({DX.get(), {N}}, {DY.get(), {N}}, nullptr);
      expectClose(E, DY.host(), 1e-6, tag(Name, R, C));
    }
    std::vector<double> XD(X.begin(), X.end()), ED(N);
    eager::poly_double(XD, ED);
    Dev<double> DXD(XD), DYD(N, -7.0);
    pk::cuda::poly_double({DXD.get(), {N}}, {DYD.get(), {N}});
    expectClose(ED, DYD.host(), 1e-12, tag("poly_double", R, C));

    std::vector<int32_t> A(N), B(N), Cc(N);
    for (int64_t I = 0; I < N; ++I) {
      A[I] = int32_t(I % 13) - 6;
      B[I] = int32_t(I % 7) * 3;
      Cc[I] = 100 - int32_t(I);
    }
    std::vector<int32_t> E0(N), E1(N);
    std::vector<float> E2(N);
    eager::mix_rows(A, B, Cc, E0, E1, E2);
    Dev<int32_t> DA(A), DB(B), DC(Cc), D0(N, -1), D1(N, -1);
    Dev<float> D2(N, -1.0f);
    pk::cuda::mix_rows({DA.get(), {N}}, {DB.get(), {N}}, {DC.get(), {N}},
                       {D0.get(), {N}}, {D1.get(), {N}}, {D2.get(), {N}});
    expectClose(E0, D0.host(), 0, tag("mix_rows o0", R, C));
    expectClose(E1, D1.host(), 0, tag("mix_rows o1", R, C));
    expectClose(E2, D2.host(), 1e-6, tag("mix_rows o2", R, C));
  }
}

template <class T> void templatesOf(double Rtol) {
  for (auto [R, C] : Shapes) {
    const int64_t N = R * C;
    auto XF = sample::random(N, 7);
    std::vector<T> X(XF.begin(), XF.end()), E(N);
    Dev<T> DX(X);
    eager::t_scale<T>(X, E, T(1.5));
    Dev<T> DS(N, T(-7));
    pk::cuda::t_scale<T>({DX.get(), {N}}, {DS.get(), {N}}, T(1.5));
    expectClose(E, DS.host(), 0, tag("t_scale", R, C));
    eager::t_poly<T>(X, E);
    Dev<T> DP(N, T(-7));
    pk::cuda::t_poly<T>({DX.get(), {N}}, {DP.get(), {N}});
    expectClose(E, DP.host(), Rtol, tag("t_poly", R, C));
  }
}

TEST(HabitsShim, KernelTemplatesFloat) { templatesOf<float>(1e-6); }
TEST(HabitsShim, KernelTemplatesDouble) { templatesOf<double>(1e-12); }

TEST(HabitsShim, KernelTemplateSoftmax) {
  for (auto [R, C] : Shapes) {
    auto X = sample::random(R * C, 9);
    std::vector<float> E(R * C);
    eager::t_softmax<float, 2>(pk::In<float, 2>(X.data(), {R, C}),
                               pk::Out<float, 2>(E.data(), {R, C}));
    Dev<float> DX(X), DY(R * C, -7.0f);
    pk::cuda::t_softmax<float, 2>({DX.get(), {R, C}}, {DY.get(), {R, C}});
    expectClose(E, DY.host(), 1e-5, tag("t_softmax<float, 2>", R, C));
  }
}

} // namespace
