//===- ViewsTest.cpp - Compiled views against eager
//------------------------===//
//
// The kernels of kernels/views.cpp (permute_dims of refs and of computed
// values, feeding elementwise, reduction and matmul groups) compiled by pkc
// against the same source run eagerly, on shapes with 0, 1, primes and
// lengths past the vector widths. The data are multiples of 1/8 in [-1, 1]
// (never -0),
// so every sum and product here is exact in float in any order and the
// comparison is bit for bit; exp alone is compared within a relative 1e-6
// (pk::vm's exp against libm's, a few ULPs).
//
//===----------------------------------------------------------------------===//

#include "ExactData.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace eager {
#include "kernels/views.cpp"
}

void split_heads(pk::In<float, 3> x, pk::Out<float, 3> y);
void perm4(pk::In<float, 4> x, pk::In<float, 2> b, pk::Out<float, 4> y);
void perm_sum(pk::In<float, 3> x, pk::Out<float, 2> s, pk::Out<float, 2> m);
void head_scores(pk::In<float, 3> q, pk::In<float, 3> k, pk::Out<float, 3> s);
void merge_heads(pk::In<float, 3> o, pk::Out<float, 3> y);
void extents(pk::In<float, 2> x, pk::Out<float, 2> centred,
             pk::Out<float, 2> first_half, pk::Out<int64_t, 1> sizes);

namespace {

using namespace exact_data;

const int64_t Extents[] = {0, 1, 3, 17, 65};

TEST(CompiledViews, PermuteDimsOfRefsIsExact) {
  for (int64_t T : Extents)
    for (int64_t H : {1, 2, 5})
      for (int64_t D : {1, 7, 33}) {
        auto X = grid(T * H * D, 1);
        std::vector<float> E(T * H * D), O = poisoned(T * H * D);
        eager::split_heads({X.data(), {T, H, D}}, {E.data(), {H, T, D}});
        split_heads({X.data(), {T, H, D}}, {O.data(), {H, T, D}});
        expectSame(E, O, "split_heads " + dims({T, H, D}));
      }
  for (int64_t A : {0, 1, 3})
    for (int64_t B : {1, 2})
      for (int64_t C : {1, 5, 17})
        for (int64_t D : {1, 4, 9}) {
          auto X = grid(A * B * C * D, 2), Bias = grid(C * A, 3);
          const int64_t N = A * B * C * D;
          std::vector<float> E(N), O = poisoned(N);
          // y = permute(x, {3, 1, 0, 2}): [D, B, A, C]; + permute(b): [A, C]
          eager::perm4({X.data(), {A, B, C, D}}, {Bias.data(), {C, A}},
                       {E.data(), {D, B, A, C}});
          perm4({X.data(), {A, B, C, D}}, {Bias.data(), {C, A}},
                {O.data(), {D, B, A, C}});
          expectSame(E, O, "perm4 " + dims({A, B, C, D}));
        }
}

TEST(CompiledViews, ReductionsOfAndIntoPermutedValues) {
  for (int64_t A : Extents)
    for (int64_t B : {1, 3, 17})
      for (int64_t C : {1, 5, 65}) {
        auto X = grid(A * B * C, 4);
        // s = sum(permute(x, {2, 0, 1}), -1): [C, A]; m = max(x, 0)^T: [C, B].
        std::vector<float> ES(C * A), EM(C * B), S = poisoned(C * A),
                                                 M = poisoned(C * B);
        if (A == 0) { // max over an empty axis is an error, eager and compiled
          EXPECT_THROW(perm_sum({X.data(), {A, B, C}}, {S.data(), {C, A}},
                                {M.data(), {C, B}}),
                       pk::ShapeError);
          continue;
        }
        eager::perm_sum({X.data(), {A, B, C}}, {ES.data(), {C, A}},
                        {EM.data(), {C, B}});
        perm_sum({X.data(), {A, B, C}}, {S.data(), {C, A}}, {M.data(), {C, B}});
        expectSame(ES, S, "perm_sum s " + dims({A, B, C}));
        expectSame(EM, M, "perm_sum m " + dims({A, B, C}));
      }
}

TEST(CompiledViews, MatmulOfPermutedOperandsIsExact) {
  for (int64_t T : Extents)
    for (int64_t H : {1, 3})
      for (int64_t D : {1, 8, 17}) {
        auto Q = grid(T * H * D, 5), K = grid(T * H * D, 6);
        std::vector<float> E(H * T * T), O = poisoned(H * T * T);
        eager::head_scores({Q.data(), {T, H, D}}, {K.data(), {T, H, D}},
                           {E.data(), {H, T, T}});
        head_scores({Q.data(), {T, H, D}}, {K.data(), {T, H, D}},
                    {O.data(), {H, T, T}});
        expectSame(E, O, "head_scores " + dims({T, H, D}));
      }
}

TEST(CompiledViews, PermutedElementwiseResult) {
  for (int64_t H : {1, 4})
    for (int64_t T : Extents)
      for (int64_t D : {1, 16, 31}) {
        auto X = grid(H * T * D, 7);
        std::vector<float> E(H * T * D), O = poisoned(H * T * D);
        eager::merge_heads({X.data(), {H, T, D}}, {E.data(), {T, H, D}});
        merge_heads({X.data(), {H, T, D}}, {O.data(), {T, H, D}});
        expectSame(E, O, "merge_heads " + dims({H, T, D}), 1e-6);
      }
}

TEST(CompiledViews, RefExtentsAreRunTimeValues) {
  for (int64_t T : Extents)
    for (int64_t D : {1, 2, 7, 64, 65}) {
      auto X = grid(T * D, 4);
      std::vector<float> EC(T * D), EH(T * D), OC = poisoned(T * D),
                                               OH = poisoned(T * D);
      std::vector<int64_t> ES(3), OS(3, -1);
      eager::extents({X.data(), {T, D}}, {EC.data(), {T, D}},
                     {EH.data(), {T, D}}, {ES.data(), {3}});
      extents({X.data(), {T, D}}, {OC.data(), {T, D}}, {OH.data(), {T, D}},
              {OS.data(), {3}});
      const std::string What = "extents " + dims({T, D});
      expectSame(EC, OC, What + " centred");
      expectSame(EH, OH, What + " first_half");
      EXPECT_EQ(OS, std::vector<int64_t>(3, T * 1000 + D)) << What;
      // The first half of each row kept, the rest zero (eager agrees).
      for (int64_t I = 0; I < T * D; ++I)
        ASSERT_EQ(OH[I], I % D < D / 2 ? X[I] : 0.0f) << What << " " << I;
    }
}

TEST(CompiledViews, WrongShapesRaiseBeforeAnyWrite) {
  std::vector<float> X(2 * 3 * 4, 1.0f), Y = poisoned(24);
  EXPECT_THROW(split_heads({X.data(), {2, 3, 4}}, {Y.data(), {2, 3, 4}}),
               pk::ShapeError);
  for (float V : Y)
    EXPECT_TRUE(std::isnan(V));
}

} // namespace
