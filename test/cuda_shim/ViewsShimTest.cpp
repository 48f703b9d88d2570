// The generated CUDA of the views kernels (test/e2e/kernels/views.cpp:
// permute_dims into elementwise, reduction and matmul groups) on the shim,
// against eager. The CPU side is test/e2e's ViewsTest. Inputs are multiples
// of 1/8 in [-1, 1] without -0, so sums and products are exact in any order
// and the comparison is bit for bit; exp within a relative 1e-6.
#include "ExactData.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cuda_runtime.h>
#include <pk_shim/shim.h>

#include "ShimDevice.h"

#include <cmath>
#include <string>
#include <vector>

#include "views.pk.h"

namespace eager {
#include "kernels/views.cpp"
} // namespace eager

namespace {

using shimdev::Dev;
using namespace exact_data;

TEST(ViewsShim, PermuteDimsOfRefs) {
  for (int64_t T : {0, 1, 17, 65})
    for (int64_t H : {1, 3})
      for (int64_t D : {1, 33}) {
        auto X = grid(T * H * D, 1);
        std::vector<float> E(T * H * D);
        eager::split_heads({X.data(), {T, H, D}}, {E.data(), {H, T, D}});
        Dev<float> DX(X), DY(T * H * D, std::nanf(""));
        pk::cuda::split_heads({DX.get(), {T, H, D}}, {DY.get(), {H, T, D}});
        expectSame(E, DY.host(), "split_heads " + dims({T, H, D}));
      }
  for (int64_t A : {1, 3})
    for (int64_t C : {1, 17})
      for (int64_t D : {1, 9}) {
        const int64_t B = 2, N = A * B * C * D;
        auto X = grid(N, 2), Bias = grid(C * A, 3);
        std::vector<float> E(N);
        eager::perm4({X.data(), {A, B, C, D}}, {Bias.data(), {C, A}},
                     {E.data(), {D, B, A, C}});
        Dev<float> DX(X), DB(Bias), DY(N, std::nanf(""));
        pk::cuda::perm4({DX.get(), {A, B, C, D}}, {DB.get(), {C, A}},
                        {DY.get(), {D, B, A, C}});
        expectSame(E, DY.host(), "perm4 " + dims({A, B, C, D}));
      }
}

TEST(ViewsShim, ReductionsAndMatmul) {
  for (int64_t A : {1, 17})
    for (int64_t B : {1, 3})
      for (int64_t C : {1, 65}) {
        auto X = grid(A * B * C, 4);
        std::vector<float> ES(C * A), EM(C * B);
        eager::perm_sum({X.data(), {A, B, C}}, {ES.data(), {C, A}},
                        {EM.data(), {C, B}});
        Dev<float> DX(X), DS(C * A, std::nanf("")), DM(C * B, std::nanf(""));
        pk::cuda::perm_sum({DX.get(), {A, B, C}}, {DS.get(), {C, A}},
                           {DM.get(), {C, B}});
        expectSame(ES, DS.host(), "perm_sum s " + dims({A, B, C}));
        expectSame(EM, DM.host(), "perm_sum m " + dims({A, B, C}));
      }
  for (int64_t T : {0, 1, 17, 65})
    for (int64_t H : {1, 3}) {
      const int64_t D = 17;
      auto Q = grid(T * H * D, 5), K = grid(T * H * D, 6);
      std::vector<float> E(H * T * T);
      eager::head_scores({Q.data(), {T, H, D}}, {K.data(), {T, H, D}},
                         {E.data(), {H, T, T}});
      Dev<float> DQ(Q), DK(K), DS(H * T * T, std::nanf(""));
      pk::cuda::head_scores({DQ.get(), {T, H, D}}, {DK.get(), {T, H, D}},
                            {DS.get(), {H, T, T}});
      expectSame(E, DS.host(), "head_scores " + dims({T, H, D}));
    }
  for (int64_t T : {1, 17, 65}) {
    const int64_t H = 4, D = 31;
    auto X = grid(H * T * D, 7);
    std::vector<float> E(H * T * D);
    eager::merge_heads({X.data(), {H, T, D}}, {E.data(), {T, H, D}});
    Dev<float> DX(X), DY(H * T * D, std::nanf(""));
    pk::cuda::merge_heads({DX.get(), {H, T, D}}, {DY.get(), {T, H, D}});
    expectSame(E, DY.host(), "merge_heads " + dims({H, T, D}), 1e-6);
  }
}

TEST(ViewsShim, RefExtentsAreRunTimeValues) {
  for (int64_t T : {0, 1, 17, 65})
    for (int64_t D : {1, 7, 64, 65}) {
      auto X = grid(T * D, 4);
      std::vector<float> EC(T * D), EH(T * D);
      std::vector<int64_t> ES(3);
      eager::extents({X.data(), {T, D}}, {EC.data(), {T, D}},
                     {EH.data(), {T, D}}, {ES.data(), {3}});
      Dev<float> DX(X), DC(T * D, std::nanf("")), DH(T * D, std::nanf(""));
      Dev<int64_t> DS(3, -1);
      pk::cuda::extents({DX.get(), {T, D}}, {DC.get(), {T, D}},
                        {DH.get(), {T, D}}, {DS.get(), {3}});
      const std::string What = "extents " + dims({T, D});
      expectSame(EC, DC.host(), What + " centred");
      expectSame(EH, DH.host(), What + " first_half");
      EXPECT_EQ(DS.host(), ES) << What;
    }
}

} // namespace
