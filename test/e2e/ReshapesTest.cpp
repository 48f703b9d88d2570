//===- ReshapesTest.cpp - Compiled reshape, slice and concat against eager ===//
//
// The kernels of kernels/reshapes.cpp compiled by pkc (aliases of refs,
// temporaries for computed values, windows for slices and concat's parts)
// against the same source run eagerly, over shapes with 0, 1, primes and
// lengths past the vector widths. Data are multiples of 1/8 (ExactData.h),
// so sums and products are exact in any order: bit for bit. Sizes that do
// not fit raise pk::ShapeError before any write.
//
//===----------------------------------------------------------------------===//

#include "ExactData.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace eager {
#include "kernels/reshapes.cpp"
}

void split_last(pk::In<float, 2> x, pk::Out<float, 3> y);
void head_sums(pk::In<float, 2> x, pk::Out<float, 2> s, int64_t heads);
void pair_mix(pk::In<float, 2> x, pk::Out<float, 2> y);
void merge_project(pk::In<float, 3> o, pk::In<float, 2> w, pk::Out<float, 2> y);
void stack_rows(pk::In<float, 2> a, pk::In<float, 2> b, pk::Out<float, 2> y);
void product_in_place(pk::In<float, 2> x, pk::In<float, 2> w,
                      pk::Out<float, 2> y);
void flatten(pk::In<float, 3> x, pk::Out<float> y);
void window_of_sum(pk::In<float, 2> x, pk::Out<float, 2> y, int64_t n);
void last_logits(pk::In<float, 2> x, pk::In<float> g, pk::In<float, 2> w,
                 pk::Out<float> logits, float eps);
void rope_projection(pk::In<float, 2> x, pk::In<float, 2> w,
                     pk::In<float, 2> rope_cos, pk::In<float, 2> rope_sin,
                     pk::Out<float, 2> q, int64_t pos, int64_t heads);
void grouped_scores(pk::In<float, 4> q, pk::In<float, 4> k,
                    pk::Out<float, 4> s);
void batch_broadcast(pk::In<float, 4> a, pk::In<float, 3> b,
                     pk::Out<float, 4> y);
void cached_attention(pk::In<float, 2> q, pk::In<float, 3> keys,
                      pk::In<float, 3> values, pk::Out<float, 2> o,
                      int64_t pos);

namespace {

using namespace exact_data;

TEST(CompiledReshapes, ReshapeOfARefIsAnAlias) {
  for (int64_t T : {1, 3, 17, 65})
    for (int64_t D : {1, 4, 33}) {
      auto X = grid(T * 2 * D, 1);
      std::vector<float> E(T * 2 * D), O = poisoned(T * 2 * D);
      eager::split_last({X.data(), {T, 2 * D}}, {E.data(), {T, 2, D}});
      split_last({X.data(), {T, 2 * D}}, {O.data(), {T, 2, D}});
      expectSame(E, O, "split_last " + dims({T, D}));
      EXPECT_TRUE(sameBits(O, X)) << "a reshape keeps the row-major order";
    }
  for (int64_t T : {1, 5, 17})
    for (int64_t H : {1, 2, 3})
      for (int64_t Hs : {1, 8, 33}) {
        auto X = grid(T * H * Hs, 2);
        std::vector<float> E(T * H), O = poisoned(T * H);
        eager::head_sums({X.data(), {T, H * Hs}}, {E.data(), {T, H}}, H);
        head_sums({X.data(), {T, H * Hs}}, {O.data(), {T, H}}, H);
        expectSame(E, O, "head_sums " + dims({T, H, Hs}));
      }
  for (int64_t A : {1, 2, 7})
    for (int64_t B : {1, 3})
      for (int64_t C : {1, 5, 16}) {
        auto X = grid(A * B * C, 3);
        std::vector<float> E(A * B * C), O = poisoned(A * B * C);
        eager::flatten({X.data(), {A, B, C}}, {E.data(), {A * B * C}});
        flatten({X.data(), {A, B, C}}, {O.data(), {A * B * C}});
        expectSame(E, O, "flatten " + dims({A, B, C}));
      }
}

TEST(CompiledReshapes, SlicesAndConcatOfComputedValues) {
  for (int64_t T : {1, 2, 17, 65})
    for (int64_t D : {2, 6, 34, 130}) {
      auto X = grid(T * D, 4);
      std::vector<float> E(T * D), O = poisoned(T * D);
      eager::pair_mix({X.data(), {T, D}}, {E.data(), {T, D}});
      pair_mix({X.data(), {T, D}}, {O.data(), {T, D}});
      expectSame(E, O, "pair_mix " + dims({T, D}));
    }
  for (int64_t M : {0, 1, 5, 17})
    for (int64_t N : {0, 1, 9})
      for (int64_t D : {1, 7, 33}) {
        auto A = grid(M * D, 5), B = grid(N * D, 6);
        std::vector<float> E((M + N) * D), O = poisoned((M + N) * D);
        eager::stack_rows({A.data(), {M, D}}, {B.data(), {N, D}},
                          {E.data(), {M + N, D}});
        stack_rows({A.data(), {M, D}}, {B.data(), {N, D}},
                   {O.data(), {M + N, D}});
        expectSame(E, O, "stack_rows " + dims({M, N, D}));
      }
}

/// The bytes the calling thread's workspace arena holds after `Call` runs
/// on a thread of its own (which starts with an empty arena).
template <typename CallT> size_t arenaAfter(CallT Call) {
  size_t Bytes = 0;
  std::thread([&] {
    Call();
    Bytes = pk::rt::Workspace::arena_capacity();
  }).join();
  return Bytes;
}

TEST(CompiledReshapes, AValueStoredWholeIsComputedInItsOutput) {
  // concat's buffer is y itself when y has the value's extents: no
  // workspace. When the value's one row broadcasts into y's four, it has a
  // buffer of its own and is copied (PlanBuffers.cpp): both as eager.
  for (int64_t D : {1, 7, 33}) {
    auto A = grid(D, 5), B = grid(3 * D, 6);
    std::vector<float> E(4 * D), O = poisoned(4 * D);
    eager::stack_rows({A.data(), {1, D}}, {B.data(), {3, D}},
                      {E.data(), {4, D}});
    EXPECT_EQ(arenaAfter([&] {
                stack_rows({A.data(), {1, D}}, {B.data(), {3, D}},
                           {O.data(), {4, D}});
              }),
              0u);
    expectSame(E, O, "stack_rows in place " + dims({1, 3, D}));
    std::vector<float> EB(4 * D), OB = poisoned(4 * D);
    eager::stack_rows({A.data(), {1, D}}, {B.data(), {0, D}},
                      {EB.data(), {4, D}});
    EXPECT_GE(arenaAfter([&] {
                stack_rows({A.data(), {1, D}}, {B.data(), {0, D}},
                           {OB.data(), {4, D}});
              }),
              static_cast<size_t>(D * 4));
    expectSame(EB, OB, "stack_rows broadcast " + dims({1, 0, D}));
  }
  // The product read with y's own extents is always computed in y, also
  // when they are the product's transposed ([N, T] for [T, N]): y holds the
  // product's elements in its order, as eager's reshape.
  for (auto [T, K, N] :
       {std::array<int64_t, 3>{1, 1, 1}, {3, 5, 7}, {17, 33, 65}, {0, 4, 3}}) {
    auto X = grid(T * K, 7), W = grid(K * N, 8);
    for (auto [R, C] : {std::pair{T, N}, std::pair{N, T}}) {
      std::vector<float> E(T * N), O = poisoned(T * N);
      eager::product_in_place({X.data(), {T, K}}, {W.data(), {K, N}},
                              {E.data(), {R, C}});
      // (The product's packing takes its own bytes from the arena: the
      // missing temporary is checked in lit, frontend/reshapes.test.)
      product_in_place({X.data(), {T, K}}, {W.data(), {K, N}},
                       {O.data(), {R, C}});
      expectSame(E, O, "product_in_place " + dims({T, K, N, R, C}));
    }
  }
  // A y of another size fails the reshape's check before any write.
  auto X = grid(6, 9), W = grid(6, 10);
  std::vector<float> O = poisoned(8);
  EXPECT_THROW(product_in_place({X.data(), {2, 3}}, {W.data(), {3, 2}},
                                {O.data(), {2, 4}}),
               pk::ShapeError);
  for (float V : O)
    ASSERT_TRUE(std::isnan(V));
}

TEST(CompiledReshapes, ReshapeOfAPermutedValueFeedsAMatmul) {
  for (int64_t H : {1, 2, 4})
    for (int64_t T : {1, 3, 17})
      for (int64_t D : {1, 8, 16})
        for (int64_t N : {1, 5, 33}) {
          auto Ov = grid(H * T * D, 7), W = grid(N * H * D, 8);
          std::vector<float> E(T * N), O = poisoned(T * N);
          eager::merge_project({Ov.data(), {H, T, D}}, {W.data(), {N, H * D}},
                               {E.data(), {T, N}});
          merge_project({Ov.data(), {H, T, D}}, {W.data(), {N, H * D}},
                        {O.data(), {T, N}});
          expectSame(E, O, "merge_project " + dims({H, T, D, N}));
        }
}

TEST(CompiledReshapes, AModelHeadOverTheLastRow) {
  // The RMSNorm's mean and rsqrt are not exact: relative 1e-5 (a few ulps
  // of the float sum over D and of rsqrt, times a dot product over D).
  for (int64_t T : {1, 2, 9})
    for (int64_t D : {1, 8, 33})
      for (int64_t V : {1, 17, 130}) {
        auto X = grid(T * D, 12), G = grid(D, 13), W = grid(V * D, 14);
        std::vector<float> E(V), O = poisoned(V);
        eager::last_logits({X.data(), {T, D}}, {G.data(), {D}},
                           {W.data(), {V, D}}, {E.data(), {V}}, 1e-5f);
        last_logits({X.data(), {T, D}}, {G.data(), {D}}, {W.data(), {V, D}},
                    {O.data(), {V}}, 1e-5f);
        for (int64_t I = 0; I < V; ++I)
          ASSERT_NEAR(E[I], O[I], 1e-5 * (1 + std::fabs(E[I])))
              << "last_logits " << dims({T, D, V}) << " " << I;
      }
}

TEST(CompiledReshapes, RotaryEmbeddingOfAProjection) {
  // samples/llama's rope over a matmul's result: extents of the computed
  // value, reshape, slices, the rows pos..pos+T-1 of the cos and sin tables
  // (llama2.c's angles, as rope_tables fills them), concat. Both sides read
  // the same tables; the projections are exact (grid data, D = 8 terms), so
  // the rotation's roundings are all: re c - im s rounds each product and
  // the difference (or fuses one product, compiled), within u (|re c| +
  // |im s|) + u |r| <= 16 u of the exact value for |re|, |im| < 4, each
  // side: 2e-6 apart.
  for (int64_t T : {1, 3, 17})
    for (int64_t Heads : {1, 2, 4})
      for (int64_t Hs : {2, 8, 16})
        for (int64_t Pos : {0, 5, 90}) {
          const int64_t D = 8, N = Heads * Hs, L = Pos + T + 2;
          auto X = grid(T * D, 15), W = grid(N * D, 16);
          std::vector<float> Cos(L * Hs / 2), Sin(L * Hs / 2);
          for (int64_t P = 0; P < L; ++P)
            for (int64_t I = 0; I < Hs / 2; ++I) {
              const float Angle =
                  float(P) *
                  (1.0f / std::pow(10000.0f, 2.0f * float(I) / float(Hs)));
              Cos[P * Hs / 2 + I] = std::cos(Angle);
              Sin[P * Hs / 2 + I] = std::sin(Angle);
            }
          const pk::In<float, 2> CosT(Cos.data(), {L, Hs / 2}),
              SinT(Sin.data(), {L, Hs / 2});
          std::vector<float> E(T * N), O = poisoned(T * N);
          eager::rope_projection({X.data(), {T, D}}, {W.data(), {N, D}}, CosT,
                                 SinT, {E.data(), {T, N}}, Pos, Heads);
          rope_projection({X.data(), {T, D}}, {W.data(), {N, D}}, CosT, SinT,
                          {O.data(), {T, N}}, Pos, Heads);
          for (int64_t I = 0; I < T * N; ++I)
            ASSERT_NEAR(E[I], O[I], 2e-6)
                << "rope_projection " << dims({T, Heads, Hs, Pos}) << " " << I;
        }
}

TEST(CompiledMatmulRank4, BroadcastBatchAxes) {
  // Data are multiples of 1/8 and the sums short: exact in any order.
  for (int64_t H : {1, 3})
    for (int64_t G : {1, 4})
      for (int64_t KG : {int64_t(1), G})
        for (int64_t T : {1, 5})
          for (int64_t S : {1, 7, 33})
            for (int64_t D : {1, 17}) {
              auto Q = grid(H * G * T * D, 40), K = grid(H * KG * S * D, 41);
              std::vector<float> E(H * G * T * S), O = poisoned(H * G * T * S);
              eager::grouped_scores({Q.data(), {H, G, T, D}},
                                    {K.data(), {H, KG, S, D}},
                                    {E.data(), {H, G, T, S}});
              grouped_scores({Q.data(), {H, G, T, D}},
                             {K.data(), {H, KG, S, D}},
                             {O.data(), {H, G, T, S}});
              expectSame(E, O, "grouped_scores " + dims({H, G, KG, T, S, D}));
            }
  for (int64_t B1 : {1, 2})
    for (int64_t B2 : {1, 3})
      for (int64_t M : {1, 6})
        for (int64_t N : {1, 9}) {
          const int64_t K = 5;
          auto A = grid(B1 * B2 * M * K, 42), B = grid(B2 * K * N, 43);
          std::vector<float> E(B1 * B2 * M * N), O = poisoned(B1 * B2 * M * N);
          eager::batch_broadcast({A.data(), {B1, B2, M, K}},
                                 {B.data(), {B2, K, N}},
                                 {E.data(), {B1, B2, M, N}});
          batch_broadcast({A.data(), {B1, B2, M, K}}, {B.data(), {B2, K, N}},
                          {O.data(), {B1, B2, M, N}});
          expectSame(E, O, "batch_broadcast " + dims({B1, B2, M, N}));
        }
  // Batch extents that do not broadcast (3 keys' heads against 4 query
  // heads) raise before any write.
  auto Q = grid(2 * 4 * 3 * 8, 44), K = grid(2 * 3 * 5 * 8, 45);
  std::vector<float> S = poisoned(2 * 4 * 3 * 5);
  EXPECT_THROW(eager::grouped_scores({Q.data(), {2, 4, 3, 8}},
                                     {K.data(), {2, 3, 5, 8}},
                                     {S.data(), {2, 4, 3, 5}}),
               pk::ShapeError);
  try {
    grouped_scores({Q.data(), {2, 4, 3, 8}}, {K.data(), {2, 3, 5, 8}},
                   {S.data(), {2, 4, 3, 5}});
    ADD_FAILURE() << "no ShapeError";
  } catch (const pk::ShapeError &E) {
    EXPECT_NE(std::string(E.what()).find("grouped_scores"), std::string::npos)
        << E.what();
  }
  EXPECT_TRUE(sameBits(S, poisoned(2 * 4 * 3 * 5)));
}

TEST(CompiledMatmulRank4, GroupedQueryAttentionOverACachePrefix) {
  // Softmax's exp and division: values of magnitude <= 4 within 1e-5.
  for (int64_t KvHeads : {1, 2})
    for (int64_t Group : {1, 3})
      for (int64_t Hs : {2, 8})
        for (int64_t T : {1, 4})
          for (int64_t Pos : {0, 5}) {
            const int64_t L = Pos + T + 3, Dim = KvHeads * Group * Hs;
            auto Q = grid(T * Dim, 46), K = grid(KvHeads * L * Hs, 47),
                 V = grid(KvHeads * L * Hs, 48);
            std::vector<float> E(T * Dim), O = poisoned(T * Dim);
            eager::cached_attention(
                {Q.data(), {T, Dim}}, {K.data(), {KvHeads, L, Hs}},
                {V.data(), {KvHeads, L, Hs}}, {E.data(), {T, Dim}}, Pos);
            cached_attention({Q.data(), {T, Dim}}, {K.data(), {KvHeads, L, Hs}},
                             {V.data(), {KvHeads, L, Hs}}, {O.data(), {T, Dim}},
                             Pos);
            for (int64_t I = 0; I < T * Dim; ++I)
              ASSERT_NEAR(E[I], O[I], 1e-5)
                  << "cached_attention " << dims({KvHeads, Group, Hs, T, Pos})
                  << " " << I;
          }
}

TEST(CompiledReshapes, SizesThatDoNotFitRaiseBeforeAnyWrite) {
  auto X = grid(3 * 5, 9);
  // 5 columns do not split into 2 equal halves.
  std::vector<float> Y = poisoned(3 * 2 * 2);
  EXPECT_THROW(eager::split_last({X.data(), {3, 5}}, {Y.data(), {3, 2, 2}}),
               pk::ShapeError);
  try {
    split_last({X.data(), {3, 5}}, {Y.data(), {3, 2, 2}});
    ADD_FAILURE() << "no ShapeError";
  } catch (const pk::ShapeError &E) {
    EXPECT_NE(std::string(E.what()).find("split_last: reshape: cannot reshape"),
              std::string::npos)
        << E.what();
  }
  EXPECT_TRUE(sameBits(Y, poisoned(12)));
  // heads = 0 (the -1 would divide by zero) and heads = 2 of 5 columns.
  for (int64_t H : {0, 2}) {
    std::vector<float> S = poisoned(3 * 2);
    EXPECT_THROW(head_sums({X.data(), {3, 5}}, {S.data(), {3, H}}, H),
                 pk::ShapeError);
    EXPECT_TRUE(sameBits(S, poisoned(6)));
  }
  // concat parts whose other extents differ.
  auto A = grid(2 * 3, 10), B = grid(2 * 4, 11);
  std::vector<float> C = poisoned(4 * 3);
  EXPECT_THROW(
      stack_rows({A.data(), {2, 3}}, {B.data(), {2, 4}}, {C.data(), {4, 3}}),
      pk::ShapeError);
  EXPECT_TRUE(sameBits(C, poisoned(12)));
}

TEST(CompiledReshapes, SliceBoundsAreCheckedEvenWhereTheValueIsUnused) {
  auto X = grid(2 * 7, 12);
  // n = 2: [2, 4) is stored, the unused [4, 6) fits 7 columns.
  std::vector<float> Y = poisoned(2 * 2), E(2 * 2);
  eager::window_of_sum({X.data(), {2, 7}}, {E.data(), {2, 2}}, 2);
  window_of_sum({X.data(), {2, 7}}, {Y.data(), {2, 2}}, 2);
  EXPECT_TRUE(sameBits(Y, E));
  // n = 3: the stored [3, 6) fits, the unused [6, 9) does not: eager
  // raises, and so does the compiled kernel, before writing y.
  Y = poisoned(2 * 3);
  EXPECT_THROW(eager::window_of_sum({X.data(), {2, 7}}, {E.data(), {2, 3}}, 3),
               pk::ShapeError);
  try {
    window_of_sum({X.data(), {2, 7}}, {Y.data(), {2, 3}}, 3);
    ADD_FAILURE() << "no ShapeError";
  } catch (const pk::ShapeError &Err) {
    EXPECT_NE(std::string(Err.what())
                  .find("window_of_sum: slice: the bounds are outside axis -1 "
                        "of twice[2, 7] ([6, 9): it needs 0 <= begin <= end "
                        "<= 7)"),
              std::string::npos)
        << Err.what();
  }
  EXPECT_TRUE(sameBits(Y, poisoned(6)));
}

} // namespace
