//===- AttentionMaskedTest.cpp - The v rows of masked keys ----------------===//
//
// pkc's fused attention (docs/design.md, "Attention") never reads the v row
// of a key whose score is -inf while the row's running max is still -inf (a
// masked prefix, or keys past the causal bound), as FlashAttention kernels
// do. Eager code, like NumPy, multiplies that row by its weight 0, so inf or
// NaN there makes the whole output row NaN. This is a documented difference,
// found by the fuzzer (it was the expected-to-fail regression
// attention_masked_key_inf); this test states both sides of it: the
// compiled kernel gives softmax over the visible keys times their v rows
// (within the derived bound of MatmulBounds.h against a double reference),
// whatever the masked row holds, and eager gives NaN.
//
//===----------------------------------------------------------------------===//

#include "MatmulBounds.h"
#include "common/sample.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace eager {
#include "kernels/attention_masked.cpp"
}

void attention_first_key_masked(pk::In<float, 2> q, pk::In<float, 2> k,
                                pk::In<float, 2> v, pk::Out<float, 2> o);

namespace {

TEST(AttentionMaskedKey, CompiledNeverReadsTheMaskedRowOfV) {
  const float Inf = std::numeric_limits<float>::infinity();
  for (int64_t T : {1, 7, 130})
    for (int64_t S : {2, 17, 130})
      for (float Planted : {Inf, -Inf, std::nanf("")}) {
        const int64_t D = 64, J = 33;
        auto Q = sample::random(T * D, 1, -1, 1);
        auto K = sample::random(S * D, 2, -1, 1);
        auto V = sample::random(S * J, 3, -1, 1);
        for (int64_t X = 0; X < J; ++X)
          V[X] = Planted; // key 0's row
        std::vector<float> Bias(T * S, 0.0f);
        for (int64_t Row = 0; Row < T; ++Row)
          Bias[Row * S] = -Inf;
        attention_bound::Head<float> H{
            Q.data(), K.data(), V.data(), Bias.data(), T, S, D, J, 1.0, false};
        const std::vector<double> Ref = attention_bound::reference(H);
        const std::vector<double> Tol = attention_bound::rowBounds(H);
        const std::string What = "T=" + std::to_string(T) +
                                 " S=" + std::to_string(S) +
                                 " v[0] = " + std::to_string(Planted);

        std::vector<float> O(T * J, std::nanf(""));
        attention_first_key_masked({Q.data(), {T, D}}, {K.data(), {S, D}},
                                   {V.data(), {S, J}}, {O.data(), {T, J}});
        for (int64_t Row = 0; Row < T; ++Row)
          for (int64_t X = 0; X < J; ++X)
            ASSERT_LE(std::fabs(double(O[Row * J + X]) - Ref[Row * J + X]),
                      Tol[Row])
                << What << " compiled o[" << Row << ", " << X << "]";

        // Eager multiplies the planted row by 0: NaN in every element.
        std::vector<float> E(T * J, 0.0f);
        eager::attention_first_key_masked(
            {Q.data(), {T, D}}, {K.data(), {S, D}}, {V.data(), {S, J}},
            {E.data(), {T, J}});
        for (float X : E)
          ASSERT_TRUE(std::isnan(X)) << What << " eager";

        // With a finite row there, eager agrees with the compiled kernel.
        for (int64_t X = 0; X < J; ++X)
          V[X] = 0.5f;
        eager::attention_first_key_masked(
            {Q.data(), {T, D}}, {K.data(), {S, D}}, {V.data(), {S, J}},
            {E.data(), {T, J}});
        for (int64_t Row = 0; Row < T; ++Row)
          for (int64_t X = 0; X < J; ++X)
            ASSERT_LE(std::fabs(double(E[Row * J + X]) - Ref[Row * J + X]),
                      Tol[Row])
                << What << " eager with a finite row, o[" << Row << ", " << X
                << "]";
      }
}

} // namespace
