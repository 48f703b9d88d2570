//===- TakeTest.cpp - Compiled take against eager -------------------------===//
//
// The kernels of kernels/take.cpp compiled by pkc against the same source
// run eagerly: tables and index refs of extents 0, 1, primes and lengths
// past the vector widths, indices in every position of the table (the
// first, the last, repeated). A gather moves values without arithmetic, so
// eager and compiled agree bit for bit; the softmax and the product over
// gathered rows compute as the other reductions do (within 1e-6 relative).
// An index outside [0, extent) raises pk::ShapeError with eager's message
// after the kernel's name, before any write.
//
//===----------------------------------------------------------------------===//

#include "ExactData.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace eager {
#include "kernels/take.cpp"
}

void gather_rows(pk::In<float, 2> table, pk::In<int32_t> ids,
                 pk::Out<float, 2> x);
void gather_columns(pk::In<float, 2> m, pk::In<int64_t, 2> idx,
                    pk::Out<float, 3> y);
void gather_one(pk::In<float, 2> table, pk::Out<float> y, int64_t row);
void gather_middle(pk::In<float, 3> t, pk::In<int32_t> ids,
                   pk::Out<float, 3> y);
void gathered_softmax(pk::In<float, 2> table, pk::In<int32_t> ids,
                      pk::Out<float, 2> y);
void gather_bf16(pk::In<pk::bfloat16, 2> table, pk::In<int32_t> ids,
                 pk::Out<float, 2> x);
void embed_project(pk::In<float, 2> table, pk::In<int32_t> ids,
                   pk::In<float, 2> w, pk::Out<float, 2> y);

namespace {

using namespace exact_data;

/// N indices into [0, Extent): the last, the first, then a stride that
/// visits the others out of order (repeats once N > Extent).
template <class I> std::vector<I> indices(int64_t N, int64_t Extent) {
  std::vector<I> Ix;
  for (int64_t K = 0; K < N; ++K)
    Ix.push_back(static_cast<I>(K == 0   ? Extent - 1
                                : K == 1 ? 0
                                         : (K * 7 + 3) % Extent));
  return Ix;
}

TEST(CompiledTake, RowsColumnsAndScalars) {
  for (int64_t V : {1, 5, 67})
    for (int64_t D : {1, 8, 33})
      for (int64_t T : {0, 1, 3, 17}) {
        auto Table = grid(V * D, 1);
        auto Ids = indices<int32_t>(T, V);
        std::vector<float> E(T * D), O = poisoned(T * D);
        eager::gather_rows({Table.data(), {V, D}}, {Ids.data(), {T}},
                           {E.data(), {T, D}});
        gather_rows({Table.data(), {V, D}}, {Ids.data(), {T}},
                    {O.data(), {T, D}});
        expectSame(E, O, "gather_rows " + dims({V, D, T}));
        for (int64_t Row : {int64_t(0), V - 1}) {
          std::vector<float> E1(D), O1 = poisoned(D);
          eager::gather_one({Table.data(), {V, D}}, {E1.data(), {D}}, Row);
          gather_one({Table.data(), {V, D}}, {O1.data(), {D}}, Row);
          expectSame(E1, O1, "gather_one " + dims({V, D, Row}));
        }
      }
  for (int64_t R : {1, 4})
    for (int64_t C : {1, 9})
      for (int64_t I : {1, 3})
        for (int64_t J : {0, 2, 17}) {
          auto M = grid(R * C, 2);
          auto Idx = indices<int64_t>(I * J, C);
          std::vector<float> E(R * I * J), O = poisoned(R * I * J);
          eager::gather_columns({M.data(), {R, C}}, {Idx.data(), {I, J}},
                                {E.data(), {R, I, J}});
          gather_columns({M.data(), {R, C}}, {Idx.data(), {I, J}},
                         {O.data(), {R, I, J}});
          expectSame(E, O, "gather_columns " + dims({R, C, I, J}));
        }
  for (int64_t A : {1, 3})
    for (int64_t B : {2, 7})
      for (int64_t C : {1, 33}) {
        auto T = grid(A * B * C, 3);
        auto Ids = indices<int32_t>(5, B);
        std::vector<float> E(A * 5 * C), O = poisoned(A * 5 * C);
        eager::gather_middle({T.data(), {A, B, C}}, {Ids.data(), {5}},
                             {E.data(), {A, 5, C}});
        gather_middle({T.data(), {A, B, C}}, {Ids.data(), {5}},
                      {O.data(), {A, 5, C}});
        expectSame(E, O, "gather_middle " + dims({A, B, C}));
      }
}

TEST(CompiledTake, InReductionsProductsAndSixteenBits) {
  for (int64_t V : {2, 31})
    for (int64_t D : {1, 16, 67})
      for (int64_t T : {1, 6}) {
        auto Table = grid(V * D, 4);
        auto Ids = indices<int32_t>(T, V);
        std::vector<float> E(T * D), O = poisoned(T * D);
        eager::gathered_softmax({Table.data(), {V, D}}, {Ids.data(), {T}},
                                {E.data(), {T, D}});
        gathered_softmax({Table.data(), {V, D}}, {Ids.data(), {T}},
                         {O.data(), {T, D}});
        expectSame(E, O, "gathered_softmax " + dims({V, D, T}), 1e-6);
        const int64_t N = 5;
        auto W = grid(N * D, 5);
        std::vector<float> EP(T * N), OP = poisoned(T * N);
        eager::embed_project({Table.data(), {V, D}}, {Ids.data(), {T}},
                             {W.data(), {N, D}}, {EP.data(), {T, N}});
        embed_project({Table.data(), {V, D}}, {Ids.data(), {T}},
                      {W.data(), {N, D}}, {OP.data(), {T, N}});
        expectSame(EP, OP, "embed_project " + dims({V, D, T}));
        std::vector<pk::bfloat16> Half;
        for (float X : Table)
          Half.push_back(pk::bfloat16(X));
        std::vector<float> EB(T * D), OB = poisoned(T * D);
        eager::gather_bf16({Half.data(), {V, D}}, {Ids.data(), {T}},
                           {EB.data(), {T, D}});
        gather_bf16({Half.data(), {V, D}}, {Ids.data(), {T}},
                    {OB.data(), {T, D}});
        expectSame(EB, OB, "gather_bf16 " + dims({V, D, T}));
      }
}

TEST(CompiledTake, IndicesOutsideTheTableRaiseBeforeAnyWrite) {
  const int64_t V = 5, D = 3;
  auto Table = grid(V * D, 6);
  for (int32_t Bad : {-1, 5, 1000}) {
    std::vector<int32_t> Ids = {0, 4, Bad, 1};
    std::string EagerMsg;
    std::vector<float> E(4 * D);
    try {
      eager::gather_rows({Table.data(), {V, D}, "table"},
                         {Ids.data(), {4}, "ids"}, {E.data(), {4, D}});
      ADD_FAILURE() << "eager: no ShapeError for " << Bad;
    } catch (const pk::ShapeError &Err) {
      EagerMsg = Err.what();
    }
    std::vector<float> O = poisoned(4 * D);
    try {
      gather_rows({Table.data(), {V, D}}, {Ids.data(), {4}},
                  {O.data(), {4, D}});
      ADD_FAILURE() << "compiled: no ShapeError for " << Bad;
    } catch (const pk::ShapeError &Err) {
      const std::string Msg = Err.what();
      EXPECT_EQ(Msg, "gather_rows: take: index " + std::to_string(Bad) +
                         " (element 2 of ids) is outside [0, 5) of axis 0 of "
                         "table[5, 3]");
      // Eager's message, after the kernel's name.
      EXPECT_EQ(Msg, "gather_rows: " + EagerMsg);
    }
    EXPECT_TRUE(sameBits(O, poisoned(4 * D)));
  }
  // A scalar index and a 2-D one.
  std::vector<float> Y = poisoned(D);
  EXPECT_THROW(gather_one({Table.data(), {V, D}}, {Y.data(), {D}}, V),
               pk::ShapeError);
  EXPECT_THROW(gather_one({Table.data(), {V, D}}, {Y.data(), {D}}, -1),
               pk::ShapeError);
  EXPECT_TRUE(sameBits(Y, poisoned(D)));
  std::vector<int64_t> Idx = {0, 1, 2, 3};
  std::vector<float> Z = poisoned(V * 2 * 2);
  try {
    gather_columns({Table.data(), {V, D}}, {Idx.data(), {2, 2}},
                   {Z.data(), {V, 2, 2}});
    ADD_FAILURE() << "no ShapeError";
  } catch (const pk::ShapeError &Err) {
    EXPECT_EQ(std::string(Err.what()),
              "gather_columns: take: index 3 (element 3 of idx) is outside "
              "[0, 3) of axis 1 of m[5, 3]");
  }
  EXPECT_TRUE(sameBits(Z, poisoned(V * 2 * 2)));
}

} // namespace
