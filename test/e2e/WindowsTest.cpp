//===- WindowsTest.cpp - Compiled ref windows against eager ---------------===//
//
// The kernels of kernels/windows.cpp, `ref.slice(axis, begin, end)` with
// bounds from scalars and extents, compiled by pkc against the same source
// run eagerly: reads (contiguous and strided), a window of a window updated
// in place, a window broadcast at run time, windows into a reduction and a
// matmul, and a KV cache written and then read by an attention in the same
// kernel. Bounds outside the parent raise pk::ShapeError before any write,
// compiled as eagerly. Data are multiples of 1/8 (ExactData.h): everything
// but the attention is compared bit for bit.
//
//===----------------------------------------------------------------------===//

#include "ExactData.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace eager {
#include "kernels/windows.cpp"
}

void last_row(pk::In<float, 2> x, pk::Out<float, 2> y);
void column_window(pk::In<float, 2> x, pk::In<float> b, pk::Out<float, 2> y,
                   int64_t lo, int64_t hi);
void bump_block(pk::InOut<float, 2> x, int64_t r0, int64_t c0, int64_t n);
void append_sum(pk::InOut<float, 3> cache, pk::In<float, 3> k,
                pk::Out<float, 2> total, int64_t pos);
void prefix_scores(pk::In<float, 2> q, pk::In<float, 2> keys,
                   pk::Out<float, 2> s, int64_t n);
void slices_of_reads(pk::In<float, 2> x, pk::Out<float, 2> rest,
                     pk::Out<float, 2> last2);
void cached_attention(pk::In<float, 2> q, pk::In<float, 2> k,
                      pk::In<float, 2> v, pk::InOut<float, 2> kc,
                      pk::InOut<float, 2> vc, pk::Out<float, 2> o, int64_t pos);
void extents_of_reads(pk::In<float, 2> x, pk::Out<float, 2> back,
                      pk::Out<float, 2> rest);
void shift_rows(pk::InOut<float, 2> x, int64_t n);
void add_first_row(pk::InOut<float, 2> h, pk::In<float, 2> x);
void update_after_stores(pk::InOut<float, 1> h, pk::In<float, 1> x,
                         pk::In<float, 1> y);

namespace {

using namespace exact_data;

TEST(CompiledWindows, LastRowIsAContiguousWindow) {
  for (int64_t T : {1, 2, 3, 17, 65})
    for (int64_t D : {1, 7, 33, 64}) {
      auto X = grid(T * D, 1);
      std::vector<float> E(D), O = poisoned(D);
      eager::last_row({X.data(), {T, D}}, {E.data(), {1, D}});
      last_row({X.data(), {T, D}}, {O.data(), {1, D}});
      expectSame(E, O, "last_row " + dims({T, D}));
      for (int64_t J = 0; J < D; ++J)
        ASSERT_EQ(O[J], 2 * X[(T - 1) * D + J]);
    }
  // No rows: the window [-1, 0) has a negative bound, eagerly and compiled.
  std::vector<float> X(4), O = poisoned(4);
  EXPECT_THROW(eager::last_row({X.data(), {0, 4}}, {O.data(), {1, 4}}),
               pk::ShapeError);
  EXPECT_THROW(last_row({X.data(), {0, 4}}, {O.data(), {1, 4}}),
               pk::ShapeError);
  EXPECT_TRUE(sameBits(O, poisoned(4)));
}

TEST(CompiledWindows, StridedColumnWindowsBroadcast) {
  for (int64_t N : {0, 1, 3, 17})
    for (int64_t C : {1, 5, 33})
      for (auto [Lo, Hi] : {std::pair<int64_t, int64_t>{0, C},
                            {0, 1},
                            {C - 1, C},
                            {C / 2, C},
                            {C / 3, C / 3}}) {
        const int64_t W = Hi - Lo;
        auto X = grid(N * C, 2);
        // b as long as the window, and of length 1 (broadcast).
        for (int64_t BLen : {W, int64_t(1)}) {
          auto B = grid(BLen, 3);
          std::vector<float> E(N * W), O = poisoned(N * W);
          eager::column_window({X.data(), {N, C}}, {B.data(), {BLen}},
                               {E.data(), {N, W}}, Lo, Hi);
          column_window({X.data(), {N, C}}, {B.data(), {BLen}},
                        {O.data(), {N, W}}, Lo, Hi);
          expectSame(E, O, "column_window " + dims({N, C, Lo, Hi, BLen}));
        }
      }
  // A window of extent 1 (known only at run time) broadcast against b.
  for (int64_t N : {1, 4}) {
    const int64_t C = 6, M = 5;
    auto X = grid(N * C, 4), B = grid(M, 5);
    std::vector<float> E(N * M), O = poisoned(N * M);
    eager::column_window({X.data(), {N, C}}, {B.data(), {M}},
                         {E.data(), {N, M}}, 2, 3);
    column_window({X.data(), {N, C}}, {B.data(), {M}}, {O.data(), {N, M}}, 2,
                  3);
    expectSame(E, O, "column_window broadcast " + dims({N}));
  }
}

TEST(CompiledWindows, BoundsOutsideTheRefRaiseBeforeAnyWrite) {
  const int64_t N = 3, C = 5;
  auto X = grid(N * C, 6), B = grid(1, 7);
  for (auto [Lo, Hi] :
       {std::pair<int64_t, int64_t>{-1, 2}, {2, 1}, {0, 6}, {6, 6}, {-3, -1}}) {
    const int64_t W = Hi - Lo < 0 ? 0 : Hi - Lo;
    std::vector<float> O = poisoned(N * W);
    EXPECT_THROW(eager::column_window({X.data(), {N, C}}, {B.data(), {1}},
                                      {O.data(), {N, W}}, Lo, Hi),
                 pk::ShapeError);
    try {
      column_window({X.data(), {N, C}}, {B.data(), {1}}, {O.data(), {N, W}}, Lo,
                    Hi);
      ADD_FAILURE() << "no ShapeError for [" << Lo << ", " << Hi << ")";
    } catch (const pk::ShapeError &E) {
      EXPECT_NE(std::string(E.what()).find("column_window: slice: the window"),
                std::string::npos)
          << E.what();
    }
    EXPECT_TRUE(sameBits(O, poisoned(N * W)));
  }
  // A window of a window is checked against its parent window.
  std::vector<float> M = grid(4 * 4, 8), Before = M;
  try {
    bump_block({M.data(), {4, 4}}, 1, 2, 3);
    ADD_FAILURE() << "no ShapeError";
  } catch (const pk::ShapeError &E) {
    // The parent window as the kernel spells it, with its bounds' values.
    EXPECT_NE(std::string(E.what()).find(
                  "bump_block: slice: the window [2, 5) of axis 1 of "
                  "x.slice(0, 1, 4)[3, 4] is outside it"),
              std::string::npos)
        << E.what();
  }
  EXPECT_THROW(bump_block({M.data(), {4, 4}}, 2, 0, 3), pk::ShapeError);
  EXPECT_THROW(bump_block({M.data(), {4, 4}}, 0, 0, -1), pk::ShapeError);
  EXPECT_TRUE(sameBits(M, Before));
}

TEST(CompiledWindows, WindowOfAWindowUpdatedInPlace) {
  for (int64_t R : {1, 4, 9})
    for (int64_t C : {1, 6, 33})
      for (int64_t Nn : {0, 1, 3})
        for (int64_t R0 : {int64_t(0), R - Nn})
          for (int64_t C0 : {int64_t(0), C - Nn, (C - Nn) / 2}) {
            if (R0 < 0 || C0 < 0 || Nn > R || Nn > C)
              continue;
            auto E = grid(R * C, 9), O = E;
            eager::bump_block({E.data(), {R, C}}, R0, C0, Nn);
            bump_block({O.data(), {R, C}}, R0, C0, Nn);
            expectSame(E, O, "bump_block " + dims({R, C, Nn, R0, C0}));
          }
}

TEST(CompiledWindows, StoresThatReadWhatTheyOverwrite) {
  // A window shifted onto itself: every row but the first is the old row
  // above it (checked against the data, not only eager).
  for (int64_t R : {1, 2, 3, 17, 64})
    for (int64_t C : {1, 7, 33})
      for (int64_t Nn : {int64_t(0), int64_t(1), R - 1}) {
        if (Nn < 0 || Nn + 1 > R)
          continue;
        auto E = grid(R * C, 14), O = E;
        const auto Old = E;
        eager::shift_rows({E.data(), {R, C}}, Nn);
        shift_rows({O.data(), {R, C}}, Nn);
        const std::string What = "shift_rows " + dims({R, C, Nn});
        expectSame(E, O, What);
        for (int64_t I = 1; I <= Nn; ++I)
          for (int64_t J = 0; J < C; ++J)
            ASSERT_EQ(O[I * C + J], Old[(I - 1) * C + J]) << What;
      }
  // Every row plus the old first row (which the loop overwrites first).
  for (int64_t R : {1, 2, 5, 33})
    for (int64_t C : {1, 8, 19}) {
      auto E = grid(R * C, 15), O = E;
      const auto Old = E;
      auto X = grid(R * C, 16);
      eager::add_first_row({E.data(), {R, C}}, {X.data(), {R, C}});
      add_first_row({O.data(), {R, C}}, {X.data(), {R, C}});
      expectSame(E, O, "add_first_row " + dims({R, C}));
      for (int64_t I = 0; I < R; ++I)
        for (int64_t J = 0; J < C; ++J)
          ASSERT_EQ(O[I * C + J], X[I * C + J] + Old[J]);
    }
  // Two whole stores, then a window update of the second's result.
  for (int64_t N : {1, 2, 9, 64}) {
    auto E = grid(N, 17), O = E;
    const auto Old = E;
    auto X = grid(N, 18), Y = grid(1, 19);
    eager::update_after_stores({E.data(), {N}}, {X.data(), {N}},
                               {Y.data(), {1}});
    update_after_stores({O.data(), {N}}, {X.data(), {N}}, {Y.data(), {1}});
    expectSame(E, O, "update_after_stores " + dims({N}));
    ASSERT_EQ(O[0], Old[0] * 2 - X[0] + Y[0]);
  }
}

TEST(CompiledWindows, ReadAfterWriteSeesTheWrite) {
  for (int64_t H : {1, 3})
    for (int64_t S : {1, 8, 33})
      for (int64_t D : {1, 5, 16})
        for (int64_t Pos : {int64_t(0), S / 2, S - 1, S})
          for (int64_t T : {0, 1, 3}) {
            if (Pos + T > S)
              continue;
            auto EC = grid(H * S * D, 10), OC = EC;
            auto K = grid(H * T * D, 11);
            std::vector<float> E(H * D), O = poisoned(H * D);
            eager::append_sum({EC.data(), {H, S, D}}, {K.data(), {H, T, D}},
                              {E.data(), {H, D}}, Pos);
            append_sum({OC.data(), {H, S, D}}, {K.data(), {H, T, D}},
                       {O.data(), {H, D}}, Pos);
            const std::string What = "append_sum " + dims({H, S, D, Pos, T});
            expectSame(EC, OC, What + " cache");
            expectSame(E, O, What + " total");
          }
  // Past the cache's end: nothing written.
  auto C = grid(2 * 4 * 3, 12), Before = C, K = grid(2 * 2 * 3, 13);
  std::vector<float> O = poisoned(2 * 3);
  EXPECT_THROW(append_sum({C.data(), {2, 4, 3}}, {K.data(), {2, 2, 3}},
                          {O.data(), {2, 3}}, 3),
               pk::ShapeError);
  EXPECT_TRUE(sameBits(C, Before));
  EXPECT_TRUE(sameBits(O, poisoned(2 * 3)));
}

TEST(CompiledWindows, MatmulReadsAWindowInPlace) {
  for (int64_t T : {0, 1, 3, 17, 65})
    for (int64_t D : {1, 8, 17})
      for (int64_t S : {1, 9, 40})
        for (int64_t Nk : {int64_t(0), int64_t(1), S / 2, S}) {
          auto Q = grid(T * D, 14), Keys = grid(S * D, 15);
          std::vector<float> E(T * Nk), O = poisoned(T * Nk);
          eager::prefix_scores({Q.data(), {T, D}}, {Keys.data(), {S, D}},
                               {E.data(), {T, Nk}}, Nk);
          prefix_scores({Q.data(), {T, D}}, {Keys.data(), {S, D}},
                        {O.data(), {T, Nk}}, Nk);
          expectSame(E, O, "prefix_scores " + dims({T, D, S, Nk}));
        }
}

TEST(CompiledWindows, SlicesOfRefReadsCountNegativeConstantsFromTheEnd) {
  for (int64_t T : {1, 2, 3, 17, 65})
    for (int64_t D : {2, 3, 33}) {
      auto X = grid(T * D, 21);
      std::vector<float> ER((T - 1) * D), EL(T * 2), OR = poisoned((T - 1) * D),
                                                     OL = poisoned(T * 2);
      eager::slices_of_reads({X.data(), {T, D}}, {ER.data(), {T - 1, D}},
                             {EL.data(), {T, 2}});
      slices_of_reads({X.data(), {T, D}}, {OR.data(), {T - 1, D}},
                      {OL.data(), {T, 2}});
      expectSame(ER, OR, "slices_of_reads rest " + dims({T, D}));
      expectSame(EL, OL, "slices_of_reads last2 " + dims({T, D}));
    }
  // One column: [-2, 1) is outside it, eagerly and compiled.
  std::vector<float> X(3), R = poisoned(2 * 1), L = poisoned(3 * 2);
  EXPECT_THROW(eager::slices_of_reads({X.data(), {3, 1}}, {R.data(), {2, 1}},
                                      {L.data(), {3, 2}}),
               pk::ShapeError);
  // Eager code raised after writing `rest`; compiled code raises first.
  R = poisoned(2);
  EXPECT_THROW(slices_of_reads({X.data(), {3, 1}}, {R.data(), {2, 1}},
                               {L.data(), {3, 2}}),
               pk::ShapeError);
  EXPECT_TRUE(sameBits(R, poisoned(2)));
}

TEST(CompiledWindows, ExtentsOfReadsHeldByLocalsAndHelpers) {
  for (int64_t T : {1, 2, 3, 17})
    for (int64_t D : {1, 2, 33}) {
      const int64_t H = T - T / 2;
      auto X = grid(T * D, 22);
      std::vector<float> EB(H * D), ER(T * (D - 1)), OB = poisoned(H * D),
                                                     OR = poisoned(T * (D - 1));
      eager::extents_of_reads({X.data(), {T, D}}, {EB.data(), {H, D}},
                              {ER.data(), {T, D - 1}});
      extents_of_reads({X.data(), {T, D}}, {OB.data(), {H, D}},
                       {OR.data(), {T, D - 1}});
      const std::string What = "extents_of_reads " + dims({T, D});
      expectSame(EB, OB, What + " back");
      expectSame(ER, OR, What + " rest");
      for (int64_t I = 0; I < H; ++I)
        ASSERT_EQ(OB[I * D], X[(T / 2 + I) * D]) << What;
      for (int64_t I = 0; I < T && D > 1; ++I)
        ASSERT_EQ(OR[I * (D - 1)], X[I * D + 1]) << What;
    }
}

TEST(CompiledWindows, AttentionOverAKvCacheWrittenInTheSameKernel) {
  // A prompt, then decode steps, as a model runs: after every call the
  // caches agree bit for bit and the outputs within the attention bound
  // (exp and a float sum over at most S keys of weights in [0, 1] times
  // values in [-1, 1]: 1e-5 absolute is ~80 ulps of 1 per key at S = 40).
  for (int64_t D : {8, 16, 33}) {
    const int64_t S = 40;
    auto EK = grid(S * D, 16), EV = grid(S * D, 17);
    auto OK = EK, OV = EV;
    int64_t Pos = 0;
    for (int64_t T : {7, 1, 1, 13, 1, 16, 1}) { // 40 in all
      auto Q = grid(T * D, 18 + Pos), K = grid(T * D, 19 + Pos),
           V = grid(T * D, 20 + Pos);
      std::vector<float> E(T * D), O = poisoned(T * D);
      eager::cached_attention({Q.data(), {T, D}}, {K.data(), {T, D}},
                              {V.data(), {T, D}}, {EK.data(), {S, D}},
                              {EV.data(), {S, D}}, {E.data(), {T, D}}, Pos);
      cached_attention({Q.data(), {T, D}}, {K.data(), {T, D}},
                       {V.data(), {T, D}}, {OK.data(), {S, D}},
                       {OV.data(), {S, D}}, {O.data(), {T, D}}, Pos);
      const std::string What = "cached_attention " + dims({D, Pos, T});
      expectSame(EK, OK, What + " keys");
      expectSame(EV, OV, What + " values");
      for (int64_t I = 0; I < T * D; ++I)
        ASSERT_NEAR(E[I], O[I], 1e-5) << What << " element " << I;
      Pos += T;
    }
    // The cache is full: one more token does not fit.
    std::vector<float> Q(D), O = poisoned(D), Before = OK;
    EXPECT_THROW(cached_attention({Q.data(), {1, D}}, {Q.data(), {1, D}},
                                  {Q.data(), {1, D}}, {OK.data(), {S, D}},
                                  {OV.data(), {S, D}}, {O.data(), {1, D}}, Pos),
                 pk::ShapeError);
    EXPECT_TRUE(sameBits(OK, Before));
  }
}

} // namespace
