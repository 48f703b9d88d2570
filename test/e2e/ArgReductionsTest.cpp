//===- ArgReductionsTest.cpp - Compiled argmax/argmin against eager -------===//
//
// The kernels of kernels/arg_reductions.cpp compiled by pkc against the same
// source run eagerly. The data has ties (multiples of 1/8 in [-1, 1]: the
// first of equal extremes wins), NaNs (the first NaN wins for both, as in
// NumPy) at the first, a middle and the last position, infinities, and
// extents 1, primes and lengths around the vector widths and the threads'
// threshold. Positions are integers: eager and compiled agree exactly. An
// empty axis raises pk::ShapeError before any write.
//
//===----------------------------------------------------------------------===//

#include "ExactData.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace eager {
#include "kernels/arg_reductions.cpp"
}

void argmax_rows(pk::In<float, 2> x, pk::Out<int64_t, 1> i);
void argmin_columns(pk::In<float, 2> x, pk::Out<int64_t, 2> i);
void argmax_middle(pk::In<float, 3> x, pk::Out<int64_t, 2> i);
void arg_extremes_scaled(pk::In<float, 2> x, pk::In<float> w,
                         pk::Out<int64_t, 1> hi, pk::Out<int64_t, 1> lo);
void argmax_int(pk::In<int32_t, 2> x, pk::Out<int64_t, 1> i,
                pk::Out<int64_t, 1> first_above, int32_t t);
void argmax_bf16(pk::In<pk::bfloat16, 2> x, pk::Out<int64_t, 1> i);
void argmax_and_softmax(pk::In<float, 2> x, pk::Out<int64_t, 1> i,
                        pk::Out<float, 2> p);

namespace {

using namespace exact_data;

constexpr int64_t Unwritten = -7;

TEST(CompiledArgReductions, RowsColumnsAndMiddleAxis) {
  for (int64_t R : {1, 3, 17, 70})
    for (int64_t C : {1, 2, 7, 16, 63, 64, 65, 129, 1000}) {
      auto X = withExtremes(R, C, static_cast<unsigned>(R * 131 + C));
      const std::string At = dims({R, C});
      std::vector<int64_t> E(R), O(R, Unwritten);
      eager::argmax_rows({X.data(), {R, C}}, {E.data(), {R}});
      argmax_rows({X.data(), {R, C}}, {O.data(), {R}});
      expectPositions(E, O, "argmax_rows " + At);

      std::vector<int64_t> EC(C), OC(C, Unwritten);
      eager::argmin_columns({X.data(), {R, C}}, {EC.data(), {1, C}});
      argmin_columns({X.data(), {R, C}}, {OC.data(), {1, C}});
      expectPositions(EC, OC, "argmin_columns " + At);

      auto W = grid(C, 3);
      std::vector<int64_t> EH(R), EL(R), OH(R, Unwritten), OL(R, Unwritten);
      eager::arg_extremes_scaled({X.data(), {R, C}}, {W.data(), {C}},
                                 {EH.data(), {R}}, {EL.data(), {R}});
      arg_extremes_scaled({X.data(), {R, C}}, {W.data(), {C}}, {OH.data(), {R}},
                          {OL.data(), {R}});
      expectPositions(EH, OH, "arg_extremes_scaled hi " + At);
      expectPositions(EL, OL, "arg_extremes_scaled lo " + At);

      std::vector<float> EP(R * C), OP = poisoned(R * C);
      std::fill(E.begin(), E.end(), 0);
      std::fill(O.begin(), O.end(), Unwritten);
      eager::argmax_and_softmax({X.data(), {R, C}}, {E.data(), {R}},
                                {EP.data(), {R, C}});
      argmax_and_softmax({X.data(), {R, C}}, {O.data(), {R}},
                         {OP.data(), {R, C}});
      expectPositions(E, O, "argmax_and_softmax " + At);
    }
  for (int64_t A : {1, 4})
    for (int64_t B : {1, 5, 66})
      for (int64_t C : {1, 3, 17}) {
        auto X = withExtremes(A * B, C, 9);
        std::vector<int64_t> E(A * C), O(A * C, Unwritten);
        eager::argmax_middle({X.data(), {A, B, C}}, {E.data(), {A, C}});
        argmax_middle({X.data(), {A, B, C}}, {O.data(), {A, C}});
        expectPositions(E, O, "argmax_middle " + dims({A, B, C}));
      }
}

TEST(CompiledArgReductions, IntegersBoolsAndBfloat16) {
  for (int64_t R : {1, 6})
    for (int64_t C : {1, 9, 64, 300}) {
      std::vector<int32_t> X(R * C);
      for (int64_t K = 0; K < R * C; ++K)
        X[K] = static_cast<int32_t>((K * 37 + 11) % 23) - 11;
      if (R * C > 3)
        X[3] = INT32_MIN; // the accumulator's identity as a value
      const std::string At = dims({R, C});
      for (int32_t T : {-100, 0, 9, 100}) { // 100: no element is above
        std::vector<int64_t> E(R), EA(R), O(R, Unwritten), OA(R, Unwritten);
        eager::argmax_int({X.data(), {R, C}}, {E.data(), {R}}, {EA.data(), {R}},
                          T);
        argmax_int({X.data(), {R, C}}, {O.data(), {R}}, {OA.data(), {R}}, T);
        expectPositions(E, O, "argmax_int " + At);
        expectPositions(
            EA, OA, "argmax_int first_above " + std::to_string(T) + " " + At);
      }
      auto F = withExtremes(R, C, 5);
      std::vector<pk::bfloat16> B(F.begin(), F.end());
      std::vector<int64_t> E(R), O(R, Unwritten);
      eager::argmax_bf16({B.data(), {R, C}}, {E.data(), {R}});
      argmax_bf16({B.data(), {R, C}}, {O.data(), {R}});
      expectPositions(E, O, "argmax_bf16 " + At);
    }
}

TEST(CompiledArgReductions, EmptyAxisRaisesBeforeAnyWrite) {
  std::vector<float> X;
  std::vector<int64_t> O(3, Unwritten);
  try {
    argmax_rows({X.data(), {3, 0}}, {O.data(), {3}});
    ADD_FAILURE() << "no ShapeError";
  } catch (const pk::ShapeError &E) {
    EXPECT_EQ(std::string(E.what()),
              "argmax_rows: argmax of an empty axis (-1) of x[3, 0]");
  }
  EXPECT_EQ(O, std::vector<int64_t>(3, Unwritten));
  // Eager raises too (its own wording).
  EXPECT_THROW(eager::argmax_rows({X.data(), {3, 0}}, {O.data(), {3}}),
               pk::ShapeError);
  // No rows: nothing to do, and no error (the axis is not empty).
  std::vector<float> Y(0);
  argmax_rows({Y.data(), {0, 5}}, {O.data(), {0}});
  std::vector<int64_t> O4(4, Unwritten);
  EXPECT_THROW(argmin_columns({X.data(), {0, 4}}, {O4.data(), {1, 4}}),
               pk::ShapeError);
  EXPECT_EQ(O4, std::vector<int64_t>(4, Unwritten));
}

} // namespace
