// The generated CUDA of the window kernels (test/e2e/kernels/windows.cpp:
// ref.slice reads and writes with run-time bounds, a KV cache written and
// read back in one kernel) on the shim, against eager. The CPU side is
// test/e2e's WindowsTest. Inputs are multiples of 1/8 (ExactData.h), so
// every result but the attention's is compared bit for bit.
#include "ExactData.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cuda_runtime.h>
#include <pk_shim/shim.h>

#include "ShimDevice.h"

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "arg_reductions.pk.h"
#include "reshapes.pk.h"
#include "take.pk.h"
#include "windows.pk.h"

namespace eager {
#include "kernels/windows.cpp"
} // namespace eager

namespace {

using shimdev::Dev;
using namespace exact_data;

TEST(WindowsShim, ReadsOfWindows) {
  for (int64_t N : {1, 3, 17})
    for (int64_t C : {1, 5, 33})
      for (auto [Lo, Hi] : {std::pair<int64_t, int64_t>{0, C}, {C - 1, C}}) {
        const int64_t W = Hi - Lo;
        auto X = grid(N * C, 1), B = grid(W, 2);
        std::vector<float> E(N * W);
        eager::column_window({X.data(), {N, C}}, {B.data(), {W}},
                             {E.data(), {N, W}}, Lo, Hi);
        Dev<float> DX(X), DB(B), DY(N * W, std::nanf(""));
        pk::cuda::column_window({DX.get(), {N, C}}, {DB.get(), {W}},
                                {DY.get(), {N, W}}, Lo, Hi);
        expectSame(E, DY.host(), "column_window " + dims({N, C, Lo, Hi}));

        std::vector<float> EL(C);
        eager::last_row({X.data(), {N, C}}, {EL.data(), {1, C}});
        Dev<float> DL(C, std::nanf(""));
        pk::cuda::last_row({DX.get(), {N, C}}, {DL.get(), {1, C}});
        expectSame(EL, DL.host(), "last_row " + dims({N, C}));
      }
  for (int64_t T : {1, 17})
    for (int64_t S : {9, 40})
      for (int64_t Nk : {int64_t(1), S / 2, S}) {
        const int64_t D = 8;
        auto Q = grid(T * D, 3), K = grid(S * D, 4);
        std::vector<float> E(T * Nk);
        eager::prefix_scores({Q.data(), {T, D}}, {K.data(), {S, D}},
                             {E.data(), {T, Nk}}, Nk);
        Dev<float> DQ(Q), DK(K), DS(T * Nk, std::nanf(""));
        pk::cuda::prefix_scores({DQ.get(), {T, D}}, {DK.get(), {S, D}},
                                {DS.get(), {T, Nk}}, Nk);
        expectSame(E, DS.host(), "prefix_scores " + dims({T, S, Nk}));
      }
}

TEST(WindowsShim, WritesAndReadsAfterThem) {
  for (int64_t R : {4, 9})
    for (int64_t C : {6, 33})
      for (int64_t Nn : {1, 3}) {
        auto E = grid(R * C, 5);
        Dev<float> DX(E);
        eager::bump_block({E.data(), {R, C}}, R - Nn, 1, Nn);
        pk::cuda::bump_block({DX.get(), {R, C}}, R - Nn, 1, Nn);
        expectSame(E, DX.host(), "bump_block " + dims({R, C, Nn}));
      }
  {
    // A window of a window outside its parent: the launcher names the
    // parent as the kernel spells it, and launches nothing.
    auto X = grid(4 * 4, 5);
    Dev<float> DX(X);
    try {
      pk::cuda::bump_block({DX.get(), {4, 4}}, 1, 2, 3);
      ADD_FAILURE() << "no ShapeError";
    } catch (const pk::ShapeError &E) {
      EXPECT_NE(std::string(E.what()).find(
                    "bump_block: slice: the window [2, 5) of axis 1 of "
                    "x.slice(0, 1, 4)[3, 4] is outside it"),
                std::string::npos)
          << E.what();
    }
    expectSame(X, DX.host(), "bump_block out of bounds");
  }
  for (int64_t S : {8, 33})
    for (int64_t Pos : {int64_t(0), S / 2})
      for (int64_t T : {1, 3}) {
        const int64_t H = 3, D = 5;
        auto C = grid(H * S * D, 6), K = grid(H * T * D, 7);
        Dev<float> DC(C), DK(K), DT(H * D, std::nanf(""));
        std::vector<float> E(H * D);
        eager::append_sum({C.data(), {H, S, D}}, {K.data(), {H, T, D}},
                          {E.data(), {H, D}}, Pos);
        pk::cuda::append_sum({DC.get(), {H, S, D}}, {DK.get(), {H, T, D}},
                             {DT.get(), {H, D}}, Pos);
        const std::string What = "append_sum " + dims({S, Pos, T});
        expectSame(C, DC.host(), What + " cache");
        expectSame(E, DT.host(), What + " total");
      }
  // Bounds past the end raise on the host before any launch.
  auto C = grid(2 * 4 * 3, 8), K = grid(2 * 2 * 3, 9);
  Dev<float> DC(C), DK(K), DT(2 * 3, std::nanf(""));
  EXPECT_THROW(pk::cuda::append_sum({DC.get(), {2, 4, 3}},
                                    {DK.get(), {2, 2, 3}}, {DT.get(), {2, 3}},
                                    3),
               pk::ShapeError);
  expectSame(C, DC.host(), "append_sum past the end: cache untouched");
}

TEST(WindowsShim, StoresThatReadWhatTheyOverwrite) {
  for (int64_t R : {2, 17, 64})
    for (int64_t C : {1, 33}) {
      auto E = grid(R * C, 20);
      Dev<float> DX(E);
      eager::shift_rows({E.data(), {R, C}}, R - 1);
      pk::cuda::shift_rows({DX.get(), {R, C}}, R - 1);
      expectSame(E, DX.host(), "shift_rows " + dims({R, C}));

      auto H = grid(R * C, 21), X = grid(R * C, 22);
      Dev<float> DH(H), DXs(X);
      eager::add_first_row({H.data(), {R, C}}, {X.data(), {R, C}});
      pk::cuda::add_first_row({DH.get(), {R, C}}, {DXs.get(), {R, C}});
      expectSame(H, DH.host(), "add_first_row " + dims({R, C}));
    }
  for (int64_t N : {1, 9, 300}) {
    auto H = grid(N, 23), X = grid(N, 24), Y = grid(1, 25);
    Dev<float> DH(H), DX(X), DY(Y);
    eager::update_after_stores({H.data(), {N}}, {X.data(), {N}},
                               {Y.data(), {1}});
    pk::cuda::update_after_stores({DH.get(), {N}}, {DX.get(), {N}},
                                  {DY.get(), {1}});
    expectSame(H, DH.host(), "update_after_stores " + dims({N}));
  }
}

TEST(WindowsShim, AttentionOverAKvCache) {
  const int64_t S = 24, D = 16;
  auto EK = grid(S * D, 10), EV = grid(S * D, 11);
  Dev<float> DK(EK), DV(EV);
  int64_t Pos = 0;
  for (int64_t T : {5, 1, 1, 9}) {
    auto Q = grid(T * D, 12 + Pos), K = grid(T * D, 13 + Pos),
         V = grid(T * D, 14 + Pos);
    std::vector<float> E(T * D);
    eager::cached_attention({Q.data(), {T, D}}, {K.data(), {T, D}},
                            {V.data(), {T, D}}, {EK.data(), {S, D}},
                            {EV.data(), {S, D}}, {E.data(), {T, D}}, Pos);
    Dev<float> DQ(Q), DNK(K), DNV(V), DO(T * D, std::nanf(""));
    pk::cuda::cached_attention({DQ.get(), {T, D}}, {DNK.get(), {T, D}},
                               {DNV.get(), {T, D}}, {DK.get(), {S, D}},
                               {DV.get(), {S, D}}, {DO.get(), {T, D}}, Pos);
    const std::string What = "cached_attention " + dims({Pos, T});
    expectSame(EK, DK.host(), What + " keys");
    expectSame(EV, DV.host(), What + " values");
    std::vector<float> O = DO.host();
    for (int64_t I = 0; I < T * D; ++I)
      ASSERT_NEAR(E[I], O[I], 1e-5) << What << " element " << I;
    Pos += T;
  }
}

} // namespace

// reshape, slice of computed values and concat (test/e2e/kernels/reshapes.cpp)
// on the shim: aliases, temporaries and windows of temporaries in CUDA.
namespace reshapes {
#include "kernels/reshapes.cpp"
} // namespace reshapes

namespace {

TEST(ReshapesShim, AliasesTemporariesAndConcat) {
  for (int64_t T : {1, 17})
    for (int64_t D : {2, 34}) {
      auto X = grid(T * D, 30);
      std::vector<float> E(T * D), ES(T * D);
      reshapes::pair_mix({X.data(), {T, D}}, {E.data(), {T, D}});
      reshapes::split_last({X.data(), {T, D}}, {ES.data(), {T, 2, D / 2}});
      Dev<float> DX(X), DY(T * D, std::nanf("")), DS(T * D, std::nanf(""));
      pk::cuda::pair_mix({DX.get(), {T, D}}, {DY.get(), {T, D}});
      pk::cuda::split_last({DX.get(), {T, D}}, {DS.get(), {T, 2, D / 2}});
      expectSame(E, DY.host(), "pair_mix " + dims({T, D}));
      expectSame(ES, DS.host(), "split_last " + dims({T, D}));
    }
  for (int64_t M : {1, 5})
    for (int64_t N : {0, 9}) {
      const int64_t D = 7;
      auto A = grid(M * D, 31), B = grid(N * D, 32);
      std::vector<float> E((M + N) * D);
      reshapes::stack_rows({A.data(), {M, D}}, {B.data(), {N, D}},
                           {E.data(), {M + N, D}});
      Dev<float> DA(A), DB(B), DY((M + N) * D, std::nanf(""));
      pk::cuda::stack_rows({DA.get(), {M, D}}, {DB.get(), {N, D}},
                           {DY.get(), {M + N, D}});
      expectSame(E, DY.host(), "stack_rows " + dims({M, N}));
    }
  // concat's buffer is y itself when y has the value's extents (no
  // workspace); a row broadcast into y's four needs one, and the copy.
  for (int64_t N : {3, 0}) {
    const int64_t D = 7;
    auto A = grid(D, 37), B = grid(N * D, 38);
    std::vector<float> E(4 * D);
    reshapes::stack_rows({A.data(), {1, D}}, {B.data(), {N, D}},
                         {E.data(), {4, D}});
    Dev<float> DA(A), DB(B), DY(4 * D, std::nanf(""));
    pk::In<float, 2> RA(DA.get(), {1, D}), RB(DB.get(), {N, D});
    pk::Out<float, 2> RY(DY.get(), {4, D});
    const int64_t Bytes = pk::cuda::stack_rows_workspace_bytes(RA, RB, RY);
    EXPECT_EQ(Bytes, N == 3 ? 0 : 64) << "stack_rows " << dims({1, N, D});
    pk::cuda::stack_rows(RA, RB, RY);
    expectSame(E, DY.host(), "stack_rows into " + dims({1, N, D}));
  }
  for (auto [T, K, N] : {std::array<int64_t, 3>{1, 1, 1}, {17, 33, 65}}) {
    auto X = grid(T * K, 39), W = grid(K * N, 40);
    std::vector<float> E(T * N);
    reshapes::product_in_place({X.data(), {T, K}}, {W.data(), {K, N}},
                               {E.data(), {N, T}});
    Dev<float> DX(X), DW(W), DY(T * N, std::nanf(""));
    pk::In<float, 2> RX(DX.get(), {T, K}), RW(DW.get(), {K, N});
    pk::Out<float, 2> RY(DY.get(), {N, T});
    EXPECT_EQ(pk::cuda::product_in_place_workspace_bytes(RX, RW, RY), 0);
    pk::cuda::product_in_place(RX, RW, RY);
    expectSame(E, DY.host(), "product_in_place " + dims({T, K, N}));
  }
  for (int64_t H : {1, 4})
    for (int64_t T : {3, 17}) {
      const int64_t D = 8, N = 5;
      auto O = grid(H * T * D, 33), W = grid(N * H * D, 34);
      std::vector<float> E(T * N);
      reshapes::merge_project({O.data(), {H, T, D}}, {W.data(), {N, H * D}},
                              {E.data(), {T, N}});
      Dev<float> DO(O), DW(W), DY(T * N, std::nanf(""));
      pk::cuda::merge_project({DO.get(), {H, T, D}}, {DW.get(), {N, H * D}},
                              {DY.get(), {T, N}});
      expectSame(E, DY.host(), "merge_project " + dims({H, T}));
    }
}

TEST(ReshapesShim, MatmulOfRank4AndGroupedAttention) {
  for (int64_t KG : {1, 4})
    for (int64_t S : {1, 33}) {
      const int64_t H = 2, G = 4, T = 3, D = 9;
      auto Q = grid(H * G * T * D, 35), K = grid(H * KG * S * D, 36);
      std::vector<float> E(H * G * T * S);
      reshapes::grouped_scores({Q.data(), {H, G, T, D}},
                               {K.data(), {H, KG, S, D}},
                               {E.data(), {H, G, T, S}});
      Dev<float> DQ(Q), DK(K), DS(H * G * T * S, std::nanf(""));
      pk::cuda::grouped_scores({DQ.get(), {H, G, T, D}},
                               {DK.get(), {H, KG, S, D}},
                               {DS.get(), {H, G, T, S}});
      expectSame(E, DS.host(), "grouped_scores " + dims({KG, S}));
    }
  for (int64_t T : {1, 4})
    for (int64_t Pos : {0, 6}) {
      const int64_t KvHeads = 2, Group = 3, Hs = 8, L = Pos + T + 2;
      const int64_t Dim = KvHeads * Group * Hs;
      auto Q = grid(T * Dim, 37), K = grid(KvHeads * L * Hs, 38),
           V = grid(KvHeads * L * Hs, 39);
      std::vector<float> E(T * Dim);
      reshapes::cached_attention(
          {Q.data(), {T, Dim}}, {K.data(), {KvHeads, L, Hs}},
          {V.data(), {KvHeads, L, Hs}}, {E.data(), {T, Dim}}, Pos);
      Dev<float> DQ(Q), DK(K), DV(V), DO(T * Dim, std::nanf(""));
      pk::cuda::cached_attention(
          {DQ.get(), {T, Dim}}, {DK.get(), {KvHeads, L, Hs}},
          {DV.get(), {KvHeads, L, Hs}}, {DO.get(), {T, Dim}}, Pos);
      const std::vector<float> Got = DO.host();
      for (int64_t I = 0; I < T * Dim; ++I)
        ASSERT_NEAR(E[I], Got[I], 1e-5)
            << "cached_attention " << dims({T, Pos}) << " " << I;
    }
}

} // namespace

namespace gathers {
#include "kernels/take.cpp"
} // namespace gathers

namespace {

TEST(TakeShim, GathersAndTheirChecks) {
  for (int64_t V : {1, 67})
    for (int64_t T : {0, 3, 17}) {
      const int64_t D = 33;
      auto Table = grid(V * D, 50);
      std::vector<int32_t> Ids;
      for (int64_t K = 0; K < T; ++K)
        Ids.push_back(static_cast<int32_t>((K * 7 + 3) % V));
      std::vector<float> E(T * D), ES(T * D);
      gathers::gather_rows({Table.data(), {V, D}}, {Ids.data(), {T}},
                           {E.data(), {T, D}});
      gathers::gathered_softmax({Table.data(), {V, D}}, {Ids.data(), {T}},
                                {ES.data(), {T, D}});
      Dev<float> DT(Table), DX(T * D, std::nanf("")), DS(T * D, std::nanf(""));
      Dev<int32_t> DI(Ids);
      pk::cuda::gather_rows({DT.get(), {V, D}}, {DI.get(), {T}},
                            {DX.get(), {T, D}});
      pk::cuda::gathered_softmax({DT.get(), {V, D}}, {DI.get(), {T}},
                                 {DS.get(), {T, D}});
      expectSame(E, DX.host(), "gather_rows " + dims({V, T}));
      expectSame(ES, DS.host(), "gathered_softmax " + dims({V, T}), 1e-6);
    }
  // An index outside the table: the launcher reads the indices back and
  // raises before any launch.
  const int64_t V = 5, D = 3;
  auto Table = grid(V * D, 51);
  std::vector<int32_t> Ids = {0, 4, 5};
  Dev<float> DT(Table), DX(3 * D, std::nanf(""));
  Dev<int32_t> DI(Ids);
  try {
    pk::cuda::gather_rows({DT.get(), {V, D}}, {DI.get(), {3}},
                          {DX.get(), {3, D}});
    ADD_FAILURE() << "no ShapeError";
  } catch (const pk::ShapeError &E) {
    EXPECT_EQ(std::string(E.what()),
              "gather_rows: take: index 5 (element 2 of ids) is outside [0, "
              "5) of axis 0 of table[5, 3]");
  }
  EXPECT_TRUE(sameBits(DX.host(), poisoned(3 * D)));
  std::vector<float> Y(D);
  gathers::gather_one({Table.data(), {V, D}}, {Y.data(), {D}}, 4);
  Dev<float> DY(D, std::nanf(""));
  pk::cuda::gather_one({DT.get(), {V, D}}, {DY.get(), {D}}, 4);
  expectSame(Y, DY.host(), "gather_one");
  EXPECT_THROW(pk::cuda::gather_one({DT.get(), {V, D}}, {DY.get(), {D}}, -1),
               pk::ShapeError);
}

} // namespace

namespace args {
#include "kernels/arg_reductions.cpp"
} // namespace args

namespace {

// argmax/argmin's two phases in the CUDA kernels: row groups of every width
// (a warp, 256 and 1024 threads per row: the rows past 16384), the column
// kernel, and a rank-3 middle axis; ties, NaNs and infinities as in
// test/e2e's ArgReductionsTest.
TEST(ArgReductionsShim, RowsColumnsAndMiddleAxis) {
  for (int64_t R : {1, 3})
    for (int64_t C : {1, 33, 1000, 16385}) {
      auto X = withExtremes(R, C, static_cast<unsigned>(R + C));
      auto W = grid(C, 7);
      const std::string At = dims({R, C});
      std::vector<int64_t> E(R), EC(C), EH(R), EL(R);
      std::vector<float> EP(R * C);
      args::argmax_rows({X.data(), {R, C}}, {E.data(), {R}});
      args::argmin_columns({X.data(), {R, C}}, {EC.data(), {1, C}});
      args::arg_extremes_scaled({X.data(), {R, C}}, {W.data(), {C}},
                                {EH.data(), {R}}, {EL.data(), {R}});
      Dev<float> DX(X), DW(W), DP(R * C, std::nanf(""));
      Dev<int64_t> DI(R, -7), DC(C, -7), DH(R, -7), DL(R, -7), DS(R, -7);
      pk::cuda::argmax_rows({DX.get(), {R, C}}, {DI.get(), {R}});
      pk::cuda::argmin_columns({DX.get(), {R, C}}, {DC.get(), {1, C}});
      pk::cuda::arg_extremes_scaled({DX.get(), {R, C}}, {DW.get(), {C}},
                                    {DH.get(), {R}}, {DL.get(), {R}});
      pk::cuda::argmax_and_softmax({DX.get(), {R, C}}, {DS.get(), {R}},
                                   {DP.get(), {R, C}});
      expectPositions(E, DI.host(), "argmax_rows " + At);
      expectPositions(EC, DC.host(), "argmin_columns " + At);
      expectPositions(EH, DH.host(), "arg_extremes_scaled hi " + At);
      expectPositions(EL, DL.host(), "arg_extremes_scaled lo " + At);
      expectPositions(E, DS.host(), "argmax_and_softmax " + At);
    }
  for (int64_t B : {1, 5, 66}) {
    const int64_t A = 2, C = 17;
    auto X = withExtremes(A * B, C, 3);
    std::vector<int64_t> E(A * C);
    args::argmax_middle({X.data(), {A, B, C}}, {E.data(), {A, C}});
    Dev<float> DX(X);
    Dev<int64_t> DI(A * C, -7);
    pk::cuda::argmax_middle({DX.get(), {A, B, C}}, {DI.get(), {A, C}});
    expectPositions(E, DI.host(), "argmax_middle " + dims({A, B, C}));
  }
  // Integers (INT32_MIN, the identity, as a value), a bool's first true.
  const int64_t R = 4, C = 70;
  std::vector<int32_t> X(R * C);
  for (int64_t K = 0; K < R * C; ++K)
    X[K] = static_cast<int32_t>((K * 37 + 11) % 23) - 11;
  X[3] = INT32_MIN;
  std::vector<int64_t> E(R), EA(R);
  args::argmax_int({X.data(), {R, C}}, {E.data(), {R}}, {EA.data(), {R}}, 9);
  Dev<int32_t> DX(X);
  Dev<int64_t> DI(R, -7), DA(R, -7);
  pk::cuda::argmax_int({DX.get(), {R, C}}, {DI.get(), {R}}, {DA.get(), {R}}, 9);
  expectPositions(E, DI.host(), "argmax_int");
  expectPositions(EA, DA.host(), "argmax_int first_above");
  // An empty axis: the launcher raises before any launch.
  Dev<float> DE(0, 0.0f);
  EXPECT_THROW(pk::cuda::argmax_rows({DE.get(), {R, 0}}, {DI.get(), {R}}),
               pk::ShapeError);
  expectPositions(E, DI.host(), "argmax_rows after the empty axis");
}

} // namespace
