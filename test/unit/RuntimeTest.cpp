//===- RuntimeTest.cpp - Helpers of <pk/runtime.h> that kernels call -----===//
//
// pk::rt::combine_lanes must combine a row reduction's lanes in the order
// the generated loops always used (lane l with lane l + w, w = N/2 ... 1):
// the results of sums, which are not associative in floating point, depend
// on it, and the differential tests' tolerances assume one fixed tree.
//
//===----------------------------------------------------------------------===//

#include <pk/runtime.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

/// The tree as the loops over the lane array computed it.
template <class T, class Op>
T loopTree(std::vector<T> Lanes, const Op &Combine) {
  for (size_t W = Lanes.size() / 2; W > 0; W /= 2)
    for (size_t L = 0; L < W; ++L)
      Lanes[L] = Combine(Lanes[L], Lanes[L + W]);
  return Lanes[0];
}

/// A combiner that records the shape of the tree.
std::string join(const std::string &A, const std::string &B) {
  return "(" + A + " " + B + ")";
}

template <int N> void expectSameTree() {
  std::vector<std::string> Lanes;
  for (int L = 0; L < N; ++L)
    Lanes.push_back(std::to_string(L));
  std::vector<std::string> Copy = Lanes;
  EXPECT_EQ(pk::rt::combine_lanes<N>(Copy.data(), join), loopTree(Lanes, join));
}

TEST(Runtime, CombineLanesIsTheLoopTree16) { expectSameTree<16>(); }
TEST(Runtime, CombineLanesIsTheLoopTree64) { expectSameTree<64>(); }

template <int N> void expectSameFloatSum(unsigned Seed) {
  std::mt19937 Rng(Seed);
  // Magnitudes over many binades, both signs: the rounding depends on order.
  std::uniform_real_distribution<float> Exp(-20.0f, 20.0f);
  std::vector<float> Lanes(N);
  for (float &V : Lanes)
    V = std::ldexp(Rng() % 2 ? 1.0f : -1.0f, int(Exp(Rng))) * 1.37f;
  std::vector<float> Copy = Lanes;
  const float Got = pk::rt::combine_lanes<N>(Copy.data(), pk::rt::sum_op{});
  const float Want = loopTree(Lanes, pk::rt::sum_op{});
  EXPECT_EQ(std::memcmp(&Got, &Want, sizeof Got), 0)
      << "seed " << Seed << ": " << Got << " vs " << Want;
}

TEST(Runtime, CombineLanesSumsInTheLoopTreesOrder) {
  for (unsigned Seed = 0; Seed < 200; ++Seed) {
    expectSameFloatSum<16>(Seed);
    expectSameFloatSum<64>(Seed);
  }
}

// max/min of signed zeros and NaNs depend on the order too (NumPy's
// maximum keeps its first operand when they compare equal or it is NaN).
TEST(Runtime, CombineLanesMaxMinKeepTheLoopTreesZerosAndNaNs) {
  std::mt19937 Rng(7);
  const float Values[] = {0.0f,  -0.0f,          1.0f,
                          -1.0f, std::nanf("1"), -std::nanf("2")};
  for (int Trial = 0; Trial < 500; ++Trial) {
    std::vector<float> Lanes(64);
    for (float &V : Lanes)
      V = Values[Rng() % (Trial % 2 ? 6 : 4)];
    for (bool Max : {true, false}) {
      std::vector<float> Copy = Lanes;
      const float Got =
          Max ? pk::rt::combine_lanes<64>(Copy.data(), pk::rt::max_op{})
              : pk::rt::combine_lanes<64>(Copy.data(), pk::rt::min_op{});
      const float Want = Max ? loopTree(Lanes, pk::rt::max_op{})
                             : loopTree(Lanes, pk::rt::min_op{});
      EXPECT_EQ(std::memcmp(&Got, &Want, sizeof Got), 0)
          << "trial " << Trial << (Max ? " max: " : " min: ") << Got << " vs "
          << Want;
    }
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Streaming stores (<pk/stream.h>)
//===----------------------------------------------------------------------===//

namespace {

/// Streams rows of every length up to 3 chunks, at every element offset
/// within a cache line, the way generated loops do (chunks from
/// stream_chunk), and checks every element and the guard bytes either side.
template <class T> void expectStreamedRowsExact() {
  const int64_t PerLine = 64 / int64_t(sizeof(T));
  const int64_t MaxLen = 3 * pk::rt::kStreamChunk<T> + PerLine + 1;
  std::vector<T> Row(static_cast<size_t>(MaxLen));
  for (int64_t I = 0; I < MaxLen; ++I)
    Row[I] = static_cast<T>(I % 251 + 1);
  // 64-byte aligned storage with room for the guards.
  std::vector<T> Memory(static_cast<size_t>(MaxLen + 4 * PerLine));
  auto Base = reinterpret_cast<uintptr_t>(Memory.data());
  T *Aligned = Memory.data() + ((64 - Base % 64) % 64) / sizeof(T) + PerLine;
  for (int64_t Offset = 0; Offset < PerLine; ++Offset) {
    for (int64_t Len = 0; Len <= MaxLen; Len += Len < 2 * PerLine ? 1 : 7) {
      std::fill(Memory.begin(), Memory.end(), static_cast<T>(0));
      T *Dst = Aligned + Offset;
      alignas(64) T Buffer[pk::rt::kStreamChunk<T>];
      int64_t Chunks = 0;
      for (int64_t C = 0, N = 0; C < Len; C += N, ++Chunks) {
        N = pk::rt::stream_chunk(Dst + C, Len - C);
        ASSERT_GE(N, 1);
        ASSERT_LE(N, pk::rt::kStreamChunk<T>);
        // Every chunk but the last ends at a line boundary.
        if (C + N < Len)
          ASSERT_EQ(reinterpret_cast<uintptr_t>(Dst + C + N) % 64, 0u);
        std::copy(Row.begin() + C, Row.begin() + C + N, Buffer);
        pk::rt::stream_store(Dst + C, Buffer, N);
      }
      pk::rt::stream_fence();
      ASSERT_LE(Chunks, Len / (pk::rt::kStreamChunk<T> - PerLine) + 2);
      for (T *P = Memory.data(); P < Memory.data() + Memory.size(); ++P) {
        int64_t I = P - Dst;
        T Want = I >= 0 && I < Len ? Row[I] : static_cast<T>(0);
        ASSERT_EQ(*P, Want)
            << "offset " << Offset << ", length " << Len << ", element " << I;
      }
    }
  }
}

} // namespace

TEST(Stream, RowsOfEveryLengthAndAlignmentFloat) {
  expectStreamedRowsExact<float>();
}
TEST(Stream, RowsOfEveryLengthAndAlignmentDouble) {
  expectStreamedRowsExact<double>();
}
TEST(Stream, RowsOfEveryLengthAndAlignment16Bit) {
  expectStreamedRowsExact<uint16_t>();
}
TEST(Stream, RowsOfEveryLengthAndAlignmentBytes) {
  expectStreamedRowsExact<uint8_t>();
}

TEST(Stream, ThresholdDecidesAndCanBeSet) {
  const int64_t Saved = pk::rt::stream_threshold();
  pk::rt::set_stream_threshold(1000);
  if (PK_HAS_STREAM_STORES) {
    EXPECT_EQ(pk::rt::stream_threshold(), 1000);
    EXPECT_TRUE(pk::rt::stream_stores(1000));
    EXPECT_FALSE(pk::rt::stream_stores(999));
    pk::rt::set_stream_threshold(0);
    EXPECT_FALSE(pk::rt::stream_stores(0)) << "nothing to stream";
    EXPECT_TRUE(pk::rt::stream_stores(1));
    pk::rt::set_stream_threshold(-1);
    EXPECT_EQ(pk::rt::stream_threshold(), pk::rt::kNeverStream);
  }
  if (!PK_HAS_STREAM_STORES) {
    pk::rt::set_stream_threshold(0);
    EXPECT_FALSE(pk::rt::stream_stores(int64_t(1) << 40));
  }
  pk::rt::set_stream_threshold(Saved);
}

TEST(Stream, ThresholdFromTheEnvironment) {
  if (!PK_HAS_STREAM_STORES)
    GTEST_SKIP() << "no streaming stores on this target";
  const char *Saved = std::getenv("PK_STREAM_THRESHOLD");
  std::string Old = Saved ? Saved : "";
  setenv("PK_STREAM_THRESHOLD", "12345", 1);
  EXPECT_EQ(pk::rt::detail::default_stream_threshold(), 12345);
  setenv("PK_STREAM_THRESHOLD", "never", 1);
  EXPECT_EQ(pk::rt::detail::default_stream_threshold(), pk::rt::kNeverStream);
  // Anything else is reported and ignored: the cache decides.
  unsetenv("PK_STREAM_THRESHOLD");
  const int64_t FromCache = pk::rt::detail::default_stream_threshold();
  setenv("PK_STREAM_THRESHOLD", "12 MiB", 1);
  testing::internal::CaptureStderr();
  EXPECT_EQ(pk::rt::detail::default_stream_threshold(), FromCache);
  EXPECT_NE(testing::internal::GetCapturedStderr().find(
                "ignoring PK_STREAM_THRESHOLD=12 MiB"),
            std::string::npos);
  if (Saved)
    setenv("PK_STREAM_THRESHOLD", Old.c_str(), 1);
  else
    unsetenv("PK_STREAM_THRESHOLD");
}

// pk::rt::transpose_block (<pk/transpose.h>), which the generated attention
// calls on each block of keys: every element lands where the element-wise
// loop puts it, bit for bit (NaN payloads and signed zeros included), over
// the 16 x 16 squares of the AVX-512 path and the edges around them, with
// rows a stride apart (0: one row repeated), and nothing outside the block
// in Dst is written.
template <class T>
void expectTransposed(int64_t Rows, int64_t Cols, int64_t LdS, int64_t LdD) {
  std::mt19937 Rng(static_cast<unsigned>(Rows * 131 + Cols * 7 + LdS));
  std::uniform_int_distribution<uint64_t> Bits;
  const int64_t SrcRows = LdS == 0 ? 1 : Rows;
  std::vector<T> Src(static_cast<size_t>(std::max<int64_t>(
      1, (SrcRows - 1) * std::max<int64_t>(LdS, Cols) + Cols)));
  for (T &X : Src) {
    const uint64_t B = Bits(Rng);
    std::memcpy(&X, &B, sizeof(T)); // any bits: NaNs with payloads too
  }
  const T Poison = std::numeric_limits<T>::quiet_NaN();
  std::vector<T> Got(static_cast<size_t>(std::max<int64_t>(Cols, 1) * LdD),
                     Poison),
      Want = Got;
  for (int64_t R = 0; R < Rows; ++R)
    for (int64_t C = 0; C < Cols; ++C)
      Want[C * LdD + R] = Src[R * LdS + C];
  pk::rt::transpose_block(Src.data(), LdS, Rows, Cols, Got.data(), LdD);
  ASSERT_EQ(0, std::memcmp(Got.data(), Want.data(), Got.size() * sizeof(T)))
      << Rows << " x " << Cols << ", LdS " << LdS << ", LdD " << LdD;
}

TEST(Transpose, EveryElementWhereTheLoopPutsIt) {
  for (int64_t Rows : {0, 1, 3, 15, 16, 17, 31, 32, 48, 63, 64})
    for (int64_t Cols : {0, 1, 7, 16, 17, 32, 64, 65, 80, 128}) {
      expectTransposed<float>(Rows, Cols, Cols, 64);
      expectTransposed<float>(Rows, Cols, Cols + 5, 70);
      expectTransposed<float>(Rows, Cols, 0, 64);
      expectTransposed<double>(Rows, Cols, Cols, 64);
    }
}

// pk::rt::attention_block_scores and attention_block_values (<pk/attention.h>)
// against the chains of multiply-adds they promise, element by element and
// bit for bit: each score over d in order from zero, each output element
// over the keys in order, skipping a key of weight 0 (whose row of v holds
// inf and NaN here: read, it would make the row NaN). Fused and Plain.
template <class VM> void expectAttentionBlocks() {
  constexpr int64_t W = pk::rt::attention_block_keys;
  std::mt19937 Gen(7);
  std::uniform_real_distribution<float> U(-1, 1);
  for (int64_t Rows : {1, 2, 3, 4, 5, 7, 8, 32})
    for (int64_t D : {1, 16, 17, 64}) {
      std::vector<float> Q(Rows * D), Kt(D * W), S(Rows * W, NAN);
      for (float &X : Q)
        X = U(Gen);
      for (float &X : Kt)
        X = U(Gen);
      ASSERT_TRUE(pk::rt::attention_block_scores<VM>(Q.data(), Rows, D,
                                                     Kt.data(), S.data()));
      for (int64_t R = 0; R < Rows; ++R)
        for (int64_t L = 0; L < W; ++L) {
          float Want = 0;
          for (int64_t Dd = 0; Dd < D; ++Dd)
            Want = VM{}.madd(Q[R * D + Dd], Kt[Dd * W + L], Want);
          ASSERT_EQ(std::memcmp(&Want, &S[R * W + L], sizeof(float)), 0)
              << "score row " << R << " key " << L << " of " << Rows << " x "
              << D << ": " << Want << " vs " << S[R * W + L];
        }
    }
  for (int64_t Rows : {1, 3, 4, 6})
    for (int64_t Keys : {0, 1, 13, 64})
      for (int64_t J : {1, 15, 16, 17, 63, 64, 65, 130}) {
        const int64_t LdV = J + 3;
        std::vector<float> E(Rows * W), V(Keys * LdV), Acc(Rows * J);
        for (float &X : E)
          X = U(Gen) < -0.5f ? 0.0f : U(Gen);
        for (float &X : V)
          X = U(Gen);
        for (float &X : Acc)
          X = U(Gen);
        // Keys that every row weighs 0 hold inf and NaN.
        for (int64_t S = 0; S < Keys; S += 5) {
          for (int64_t R = 0; R < Rows; ++R)
            E[R * W + S] = 0;
          for (int64_t Jj = 0; Jj < J; ++Jj)
            V[S * LdV + Jj] = Jj % 2 ? NAN : INFINITY;
        }
        std::vector<float> Want = Acc;
        for (int64_t R = 0; R < Rows; ++R)
          for (int64_t S = 0; S < Keys; ++S)
            if (E[R * W + S] != 0)
              for (int64_t Jj = 0; Jj < J; ++Jj)
                Want[R * J + Jj] =
                    VM{}.madd(E[R * W + S], V[S * LdV + Jj], Want[R * J + Jj]);
        ASSERT_TRUE(pk::rt::attention_block_values<VM>(
            E.data(), Rows, Keys, V.data(), LdV, J, Acc.data()));
        for (int64_t I = 0; I < Rows * J; ++I)
          ASSERT_EQ(std::memcmp(&Want[I], &Acc[I], sizeof(float)), 0)
              << "output " << I / J << ", " << I % J << " of " << Rows
              << " rows, " << Keys << " keys, j " << J << ": " << Want[I]
              << " vs " << Acc[I];
      }
}

TEST(AttentionBlocks, TheChainsOfMultiplyAddsTheyPromise) {
  if (!pk::rt::attention_blocks())
    GTEST_SKIP() << "no AVX-512 on this CPU (or PK_ATTENTION_BLOCKS=0)";
  expectAttentionBlocks<pk::vm::Plain>();
  expectAttentionBlocks<pk::vm::Fused>();
}

TEST(AttentionBlocks, NoPathForDoublesOrWhenTurnedOff) {
  double Q = 1, Kt[64] = {}, S[64];
  EXPECT_FALSE(pk::rt::attention_block_scores<pk::vm::Plain>(&Q, 1, 1, Kt, S));
  float Qf = 1, Ktf[64] = {}, Sf[64];
  pk::rt::set_attention_blocks(false);
  EXPECT_FALSE(
      pk::rt::attention_block_scores<pk::vm::Plain>(&Qf, 1, 1, Ktf, Sf));
  pk::rt::set_attention_blocks(true);
  EXPECT_EQ(pk::rt::attention_block_scores<pk::vm::Plain>(&Qf, 1, 1, Ktf, Sf),
            pk::rt::attention_blocks_available());
}
