//===- ViewSamplesTest.cpp - The [views] samples, compiled against eager
//---===//
//
// samples/embedding, samples/rope and samples/kv_cache_attention over edge
// shapes (0, 1, primes, lengths past the vector widths; positions 0 and
// past a cache's start): the gather bit for bit, the rotations within 1e-5
// (cos and sin of angles up to ~100 rad, pk::vm against libm), the
// attention within MatmulBounds.h's derived bound, and the
// caches' windows bit for bit.
//
//===----------------------------------------------------------------------===//

#include "AttentionCheck.h"
#include "ExactData.h"
#include "oracle_dump.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace eager {
#include "embedding/embedding.cpp"
#include "greedy_head/greedy_head.cpp"
#include "kv_cache_attention/kv_cache_attention.cpp"
#include "rope/rope.cpp"
} // namespace eager

void embedding(pk::In<float, 2> table, pk::In<int32_t> ids,
               pk::Out<float, 2> x);
void greedy_head(pk::In<float, 2> x, pk::In<float> norm_w,
                 pk::In<float, 2> embedding, pk::Out<int64_t> next, float eps);
void rope_half(pk::In<float, 3> x, pk::Out<float, 3> y, int64_t pos,
               float theta);
void rope_interleaved(pk::In<float, 2> x, pk::Out<float, 2> y, int64_t pos,
                      int64_t heads, float theta);
void kv_cache_attention(pk::In<float, 4> q, pk::In<float, 3> k,
                        pk::In<float, 3> v, pk::InOut<float, 3> key_cache,
                        pk::InOut<float, 3> value_cache, pk::Out<float, 4> o,
                        int64_t pos);

namespace {

using namespace exact_data;

TEST(ViewSamples, Embedding) {
  for (int64_t V : {1, 7, 1000})
    for (int64_t D : {1, 17, 64})
      for (int64_t T : {0, 1, 5, 33}) {
        auto Table = grid(V * D, 1);
        std::vector<int32_t> Ids;
        for (int64_t I = 0; I < T; ++I)
          Ids.push_back(static_cast<int32_t>((I * 7919 + 13) % V));
        std::vector<float> E(T * D), O = poisoned(T * D);
        eager::embedding({Table.data(), {V, D}}, {Ids.data(), {T}},
                         {E.data(), {T, D}});
        embedding({Table.data(), {V, D}}, {Ids.data(), {T}},
                  {O.data(), {T, D}});
        expectSame(E, O, "embedding " + dims({V, D, T}));
        pk_test::OracleDump Dump("embedding", "embedding " + dims({V, D, T}));
        Dump.in("table", Table, {V, D}).in("ids", Ids, {T}).out("x", {T, D});
        Dump.eagerAndCpu("x", E, O);
      }
}

TEST(ViewSamples, RopeBothForms) {
  for (int64_t T : {1, 3, 17})
    for (int64_t H : {1, 3})
      for (int64_t Hs : {2, 8, 34})
        for (int64_t Pos : {0, 90}) {
          auto X = grid(T * H * Hs, 2);
          std::vector<float> E(T * H * Hs), O = poisoned(T * H * Hs);
          eager::rope_half({X.data(), {T, H, Hs}}, {E.data(), {T, H, Hs}}, Pos,
                           10000.0f);
          rope_half({X.data(), {T, H, Hs}}, {O.data(), {T, H, Hs}}, Pos,
                    10000.0f);
          for (size_t I = 0; I < E.size(); ++I)
            ASSERT_NEAR(E[I], O[I], 1e-5)
                << "rope_half " << dims({T, H, Hs, Pos}) << " " << I;
          {
            pk_test::OracleDump Dump("rope_half",
                                     "rope_half " + dims({T, H, Hs, Pos}));
            Dump.in("x", X, {T, H, Hs}).scalar("pos", double(Pos));
            Dump.scalar("theta", 10000.0f).out("y", {T, H, Hs});
            Dump.eagerAndCpu("y", E, O);
          }
          std::vector<float> EI(T * H * Hs), OI = poisoned(T * H * Hs);
          eager::rope_interleaved({X.data(), {T, H * Hs}},
                                  {EI.data(), {T, H * Hs}}, Pos, H, 10000.0f);
          rope_interleaved({X.data(), {T, H * Hs}}, {OI.data(), {T, H * Hs}},
                           Pos, H, 10000.0f);
          for (size_t I = 0; I < EI.size(); ++I)
            ASSERT_NEAR(EI[I], OI[I], 1e-5)
                << "rope_interleaved " << dims({T, H, Hs, Pos}) << " " << I;
          pk_test::OracleDump Dump("rope_interleaved",
                                   "rope_interleaved " + dims({T, H, Hs, Pos}));
          Dump.in("x", X, {T, H * Hs}).scalar("pos", double(Pos));
          Dump.scalar("heads", double(H)).scalar("theta", 10000.0f);
          Dump.out("y", {T, H * Hs});
          Dump.eagerAndCpu("y", EI, OI);
        }
}

TEST(ViewSamples, KvCacheAttention) {
  for (int64_t Hkv : {1, 2})
    for (int64_t G : {1, 3})
      for (int64_t T : {1, 4})
        for (int64_t Hs : {1, 16, 33})
          for (int64_t Pos : {0, 7}) {
            const int64_t L = Pos + T + 5;
            auto Q = grid(Hkv * G * T * Hs, 3), K = grid(Hkv * T * Hs, 4),
                 V = grid(Hkv * T * Hs, 5), Cache = grid(Hkv * L * Hs, 6);
            std::vector<float> EK = Cache, EV = Cache, CK = Cache, CV = Cache;
            std::vector<float> E(Hkv * G * T * Hs),
                O = poisoned(Hkv * G * T * Hs);
            eager::kv_cache_attention(
                {Q.data(), {Hkv, G, T, Hs}}, {K.data(), {Hkv, T, Hs}},
                {V.data(), {Hkv, T, Hs}}, {EK.data(), {Hkv, L, Hs}},
                {EV.data(), {Hkv, L, Hs}}, {E.data(), {Hkv, G, T, Hs}}, Pos);
            kv_cache_attention(
                {Q.data(), {Hkv, G, T, Hs}}, {K.data(), {Hkv, T, Hs}},
                {V.data(), {Hkv, T, Hs}}, {CK.data(), {Hkv, L, Hs}},
                {CV.data(), {Hkv, L, Hs}}, {O.data(), {Hkv, G, T, Hs}}, Pos);
            const std::string What = dims({Hkv, G, T, Hs, Pos});
            // Each query head against its double reference over the cache
            // prefix eager wrote, within the derived bound (MatmulBounds.h),
            // which rejects the output without a row's last visible key.
            const double Scale = double(1.0f / std::sqrt(float(Hs)));
            for (int64_t H = 0; H < Hkv; ++H)
              for (int64_t Gr = 0; Gr < G; ++Gr) {
                const int64_t At = (H * G + Gr) * T * Hs;
                expectAttention<float>({Q.data() + At, EK.data() + H * L * Hs,
                                        EV.data() + H * L * Hs, nullptr, T,
                                        Pos + T, Hs, Hs, Scale, true, Pos},
                                       E.data() + At, O.data() + At,
                                       "o " + What + " head " +
                                           std::to_string(H) + "/" +
                                           std::to_string(Gr));
              }
            expectSame(EK, CK, "key_cache " + What);
            expectSame(EV, CV, "value_cache " + What);
            pk_test::OracleDump Dump("kv_cache_attention",
                                     "kv_cache_attention " + What);
            Dump.in("q", Q, {Hkv, G, T, Hs}).in("k", K, {Hkv, T, Hs});
            Dump.in("v", V, {Hkv, T, Hs}).in("key_cache", Cache, {Hkv, L, Hs});
            Dump.in("value_cache", Cache, {Hkv, L, Hs});
            Dump.scalar("pos", double(Pos)).out("o", {Hkv, G, T, Hs});
            Dump.out("key_cache", {Hkv, L, Hs})
                .out("value_cache", {Hkv, L, Hs});
            Dump.eagerAndCpu("o", E, O);
            Dump.eagerAndCpu("key_cache", EK, CK);
            Dump.eagerAndCpu("value_cache", EV, CV);
          }
}

TEST(ViewSamples, GreedyHead) {
  // The logits come from a float matmul in either order, so eager and
  // compiled may pick different tokens only where the two logits tie within
  // the matmul's error (sample.h's matmul_atol); ties in the data itself
  // (grid values) must resolve to the same, first, position.
  const float Eps = 1e-5f;
  for (int64_t B : {0, 1, 3, 17})
    for (int64_t Dim : {1, 8, 33})
      for (int64_t Vocab : {1, 7, 300, 1000}) {
        auto X = grid(B * Dim, 1), W = grid(Dim, 2), Emb = grid(Vocab * Dim, 3);
        std::vector<int64_t> E(B), O(B, -7);
        auto Run = [&](auto Kernel, std::vector<int64_t> &Next) {
          Kernel({X.data(), {B, Dim}}, {W.data(), {Dim}},
                 {Emb.data(), {Vocab, Dim}}, {Next.data(), {B}}, Eps);
        };
        Run(eager::greedy_head, E);
        Run(greedy_head, O);
        pk_test::OracleDump Dump("greedy_head",
                                 "greedy_head " + dims({B, Dim, Vocab}));
        Dump.in("x", X, {B, Dim}).in("norm_w", W, {Dim});
        Dump.in("embedding", Emb, {Vocab, Dim}).scalar("eps", Eps);
        Dump.out("next", {B});
        Dump.eagerAndCpu("next", E, O);
        for (int64_t R = 0; R < B; ++R) {
          if (E[R] == O[R])
            continue;
          double SS = 0;
          for (int64_t K = 0; K < Dim; ++K)
            SS += double(X[R * Dim + K]) * X[R * Dim + K];
          const double Inv = 1 / std::sqrt(SS / Dim + Eps);
          auto Logit = [&](int64_t V) {
            double Dot = 0;
            for (int64_t K = 0; K < Dim; ++K)
              Dot += X[R * Dim + K] * Inv * W[K] * Emb[V * Dim + K];
            return Dot;
          };
          ASSERT_GE(O[R], 0) << dims({B, Dim, Vocab});
          ASSERT_LT(O[R], Vocab) << dims({B, Dim, Vocab});
          EXPECT_LE(std::fabs(Logit(E[R]) - Logit(O[R])), 1e-5 * Dim)
              << "greedy_head " << dims({B, Dim, Vocab}) << " row " << R
              << ": eager " << E[R] << ", compiled " << O[R];
        }
      }
  // No vocabulary: argmax of an empty axis, before any write.
  auto X = grid(2 * 4, 1), W = grid(4, 2);
  std::vector<int64_t> O(2, -7);
  EXPECT_THROW(greedy_head({X.data(), {2, 4}}, {W.data(), {4}},
                           {nullptr, {0, 4}}, {O.data(), {2}}, Eps),
               pk::ShapeError);
  EXPECT_EQ(O, std::vector<int64_t>(2, -7));
}

} // namespace
