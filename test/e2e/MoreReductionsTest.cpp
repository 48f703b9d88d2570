// Differential tests of test/e2e/kernels/more_reductions.cpp: eager vs
// compiled over shapes with extents 1, primes and sizes past the threading
// threshold. Tolerance: |eager - compiled| <= 2e-5 + 1e-4·|eager| (float sums
// in float vs double: the absolute error of a sum of n values of magnitude
// up to 2 is about n·2·eps = 7e-6 for n = 60, and cancellation can make the
// result itself small). That estimate covers the rows of 60; the column
// sums run over up to 2000 rows (40x50x60), where the worst case
// (n - 1) u sum|x| is ~0.2, far above the tolerance: it is EMPIRICAL there.
// Measured (PK_DIFF_REPORT=1): at most 4.7% of it used (accumulate_rows,
// column sums and row_sums_everywhere at 40x50x60, 3-5%; the others below
// 0.2%). Integer and bool results, and the exact float ones (Rtol 0), are
// compared bit for bit (-0.0 is not 0.0).
#include "common/sample.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace eager {
#include "kernels/more_reductions.cpp"
}

void middle_axis(pk::In<float, 3> x, pk::Out<float, 3> o);
void scaled_and_column_sums(pk::In<float, 2> x, pk::Out<float, 2> o,
                            pk::Out<float, 1> r);
void column_normalise(pk::In<float, 2> x, pk::Out<float, 2> o);
void whole_normalise(pk::In<float, 2> x, pk::Out<float, 2> o);
void int_reductions(pk::In<int32_t, 2> x, pk::Out<int32_t, 1> o,
                    pk::Out<bool, 1> all_positive);
void two_full(pk::In<float, 1> x, pk::Out<float, 0> o);
void row_sums_everywhere(pk::In<float, 2> x, pk::Out<float, 2> o);
void accumulate_rows(pk::InOut<float, 1> r, pk::In<float, 2> x);
void column_mins_of_two_heights(pk::In<float, 2> a, pk::In<float, 2> b,
                                pk::Out<float, 1> o);
void rank0_reductions(pk::In<float, 0> x, pk::In<int32_t, 0> k,
                      pk::Out<float, 0> s, pk::Out<float, 0> m,
                      pk::Out<int64_t, 0> ks);
void softmax_rank3(pk::In<float, 3> x, pk::Out<float, 3> y);
void broadcast_row_two_heights(pk::In<float, 2> t_row, pk::In<float, 2> x,
                               pk::Out<float, 2> y, pk::Out<float, 2> z);

namespace {

/// Within 2e-5 + Rtol |eager|, or bit for bit (-0.0 is not 0.0) when Rtol
/// is 0. PK_DIFF_REPORT=1 prints the largest fraction of the tolerance used.
template <class T>
void expectClose(const std::vector<T> &E, const std::vector<T> &C,
                 const std::string &What, double Rtol = 1e-4) {
  static const bool Report = std::getenv("PK_DIFF_REPORT") != nullptr;
  ASSERT_EQ(E.size(), C.size());
  double Used = 0;
  for (size_t I = 0; I < E.size(); ++I) {
    const double Diff = std::fabs(double(E[I]) - double(C[I])),
                 Tol = 2e-5 + Rtol * std::fabs(double(E[I]));
    if (Rtol == 0 ? std::memcmp(&E[I], &C[I], sizeof(T)) != 0
                  : !(Diff <= Tol)) {
      ADD_FAILURE() << What << " element " << I << ": eager " << double(E[I])
                    << " compiled " << double(C[I]);
      return;
    }
    if (Rtol > 0)
      Used = std::max(Used, Diff / Tol);
  }
  if (Report && Rtol > 0)
    std::printf("PK_DIFF_REPORT %s: %.4f of the tolerance\n", What.c_str(),
                Used);
}

const int64_t Shapes[][3] = {
    {2, 3, 4}, {1, 1, 1}, {5, 1, 7}, {3, 17, 65}, {40, 50, 60}};

TEST(MoreReductions, ColumnReductionsOverDifferentHeights) {
  // a has 1 row (or 5), b has 67: each minimum runs over its own rows.
  for (int64_t HA : {1, 5, 67}) {
    const int64_t HB = 67, W = 61;
    auto A = sample::random(HA * W, 11), B = sample::random(HB * W, 12);
    std::vector<float> E(W), P(W, -1.0f);
    eager::column_mins_of_two_heights({A.data(), {HA, W}}, {B.data(), {HB, W}},
                                      {E.data(), {W}});
    column_mins_of_two_heights({A.data(), {HA, W}}, {B.data(), {HB, W}},
                               {P.data(), {W}});
    expectClose(E, P, "column_mins_of_two_heights " + std::to_string(HA), 0);
  }
}

TEST(MoreReductions, OneRowBufferedAcrossLoopsOfTwoHeights) {
  // t has one row; x's, y's and z's heights differ (3 and 5 read rows of t
  // the loop over 3 never stored before the fix; 1 and 4: a loop of one
  // row stores it; x and z of 0 rows under a y of 1 or more: the storing
  // loop runs no row, fuzz regression mismatch_10018_k24). t's data
  // differs from case to case, so a buffer left from an earlier case
  // does not hold the right values by chance.
  struct Heights {
    int64_t X, Y, Z;
  };
  int Case = 0;
  for (Heights H :
       {Heights{3, 5, 3}, Heights{3, 1, 3}, Heights{1, 4, 1}, Heights{7, 7, 2},
        Heights{2, 9, 4}, Heights{0, 0, 0}, Heights{0, 4, 0}, Heights{0, 1, 0},
        Heights{0, 3, 2}, Heights{2, 3, 0}}) {
    const int64_t W = 37;
    auto T = sample::random(W, 13 + 100 * ++Case),
         X = sample::random(H.X * W, 14);
    std::vector<float> EY(H.Y * W), EZ(H.Z * W), PY(H.Y * W, -1.0f),
        PZ(H.Z * W, -1.0f);
    eager::broadcast_row_two_heights({T.data(), {1, W}}, {X.data(), {H.X, W}},
                                     {EY.data(), {H.Y, W}},
                                     {EZ.data(), {H.Z, W}});
    broadcast_row_two_heights({T.data(), {1, W}}, {X.data(), {H.X, W}},
                              {PY.data(), {H.Y, W}}, {PZ.data(), {H.Z, W}});
    const std::string At = std::to_string(H.X) + "/" + std::to_string(H.Y) +
                           "/" + std::to_string(H.Z);
    expectClose(EY, PY, "broadcast_row_two_heights y " + At);
    expectClose(EZ, PZ, "broadcast_row_two_heights z " + At);
  }
}

TEST(MoreReductions, ReductionsOfARankZeroValue) {
  float X = -2.5f, S = 0, M = 0, ES = 0, EM = 0;
  int32_t K = 7;
  int64_t KS = 0, EKS = 0;
  eager::rank0_reductions({&X, {}}, {&K, {}}, {&ES, {}}, {&EM, {}}, {&EKS, {}});
  rank0_reductions({&X, {}}, {&K, {}}, {&S, {}}, {&M, {}}, {&KS, {}});
  EXPECT_EQ(ES, -5.0f);
  EXPECT_EQ(S, ES);
  EXPECT_EQ(M, EM);
  EXPECT_EQ(KS, EKS);
  EXPECT_EQ(KS, 7);
}

TEST(MoreReductions, SoftmaxOverTheLastAxisOfRank3) {
  // Two row axes (threads over both, collapsed), 0 and 1 extents, and
  // 40x50x60 (120000 elements) past the threading threshold. Tolerance as
  // the softmax sample's: float sums in float against double.
  const int64_t More[][3] = {{0, 3, 4}, {3, 0, 5}};
  std::vector<std::array<int64_t, 3>> All;
  for (auto &S : Shapes)
    All.push_back({S[0], S[1], S[2]});
  for (auto &S : More)
    All.push_back({S[0], S[1], S[2]});
  unsigned Seed = 50;
  for (auto [A, B, C] : All) {
    auto X = sample::random(A * B * C, Seed++, -20, 20);
    std::vector<float> E(A * B * C), P(A * B * C);
    eager::softmax_rank3({X.data(), {A, B, C}}, {E.data(), {A, B, C}});
    softmax_rank3({X.data(), {A, B, C}}, {P.data(), {A, B, C}});
    expectClose(E, P,
                "softmax_rank3 " + std::to_string(A) + "x" + std::to_string(B) +
                    "x" + std::to_string(C));
  }
  // The max of an empty last axis is an error in both (NumPy's ValueError).
  std::vector<float> None, Y;
  EXPECT_THROW(
      eager::softmax_rank3({None.data(), {4, 5, 0}}, {Y.data(), {4, 5, 0}}),
      pk::ShapeError);
  EXPECT_THROW(softmax_rank3({None.data(), {4, 5, 0}}, {Y.data(), {4, 5, 0}}),
               pk::ShapeError);
}

TEST(MoreReductions, AgreeWithEager) {
  unsigned Seed = 1;
  for (auto &S : Shapes) {
    int64_t A = S[0], B = S[1], C = S[2], T = A * B, D = C;
    std::string Tag =
        std::to_string(A) + "x" + std::to_string(B) + "x" + std::to_string(C);
    auto X = sample::random(A * B * C, Seed++);
    std::vector<float> E(A * B * C), P(A * B * C);
    eager::middle_axis({X.data(), {A, B, C}}, {E.data(), {A, B, C}});
    middle_axis({X.data(), {A, B, C}}, {P.data(), {A, B, C}});
    expectClose(E, P, "middle_axis " + Tag, 0);

    std::vector<float> E2(T * D), P2(T * D), ER(D), PR(D);
    eager::scaled_and_column_sums({X.data(), {T, D}}, {E2.data(), {T, D}}, ER);
    scaled_and_column_sums({X.data(), {T, D}}, {P2.data(), {T, D}}, PR);
    expectClose(E2, P2, "scaled " + Tag, 0);
    expectClose(ER, PR, "column sums " + Tag);

    auto Pos = sample::random(T * D, Seed++, 0.5f, 2.0f);
    eager::column_normalise({Pos.data(), {T, D}}, {E2.data(), {T, D}});
    column_normalise({Pos.data(), {T, D}}, {P2.data(), {T, D}});
    expectClose(E2, P2, "column_normalise " + Tag);
    eager::whole_normalise({Pos.data(), {T, D}}, {E2.data(), {T, D}});
    whole_normalise({Pos.data(), {T, D}}, {P2.data(), {T, D}});
    expectClose(E2, P2, "whole_normalise " + Tag);
    eager::row_sums_everywhere({X.data(), {T, D}}, {E2.data(), {T, D}});
    row_sums_everywhere({X.data(), {T, D}}, {P2.data(), {T, D}});
    expectClose(E2, P2, "row_sums_everywhere " + Tag);

    std::vector<int32_t> XI(T * D);
    for (size_t I = 0; I < XI.size(); ++I)
      XI[I] = static_cast<int32_t>(X[I] * 100);
    std::vector<int32_t> EI(T), PI(T);
    std::unique_ptr<bool[]> EB(new bool[T]), PB(new bool[T]);
    eager::int_reductions({XI.data(), {T, D}}, EI, {EB.get(), {T}});
    int_reductions({XI.data(), {T, D}}, PI, {PB.get(), {T}});
    expectClose(EI, PI, "int max " + Tag, 0);
    for (int64_t I = 0; I < T; ++I)
      EXPECT_EQ(EB[I], PB[I]) << "bool min " << Tag << " row " << I;

    std::vector<float> E0(1), P0(1);
    eager::two_full(X, {E0.data(), {}});
    two_full(X, {P0.data(), {}});
    expectClose(E0, P0, "two_full " + Tag);

    auto R0 = sample::random(T, Seed++);
    auto RE = R0, RP = R0;
    eager::accumulate_rows(RE, {X.data(), {T, D}});
    accumulate_rows(RP, {X.data(), {T, D}});
    expectClose(RE, RP, "accumulate_rows " + Tag);
  }
}

} // namespace
