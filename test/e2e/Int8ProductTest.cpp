// pk::rt::int8_product (include/pk/int8_product.h) at every level, against
// a reference that computes each group's dot product in int64 (then wraps
// it to int32, as an int32 sum does), the term with the same lambda, and the
// sum over the groups in float in order: the runtime promises that
// arithmetic, so the results must be the same bits, not merely close. A
// level the CPU lacks is skipped, not passed.
//
// Shapes cover the levels' vector and block tails: group sizes around 16
// (AVX2's vector of int16) and 64 (AVX-512's of bytes), column counts around
// the 8- and 16-column blocks, no groups at all; values cover int8's ends
// (-128 with -128), a values that need int16 or int32 (the levels fall back),
// sums that wrap, weights laid out [G, N, gs] or strided along k, and 1 vs 2
// threads. The AMX level (Int8Amx below) runs where the CPU has AMX-INT8 and
// the term is described to the runtime (Int8TermScales): the same bits again,
// over shapes around its 16-row tiles and 32 x 32 blocks.
#include <pk/int8_product.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

using pk::rt::GemmIsa;
using pk::rt::Int8Isa;

/// An int8 product as linear_q8 writes it: a(g, m, kk) from A [M, G*gs],
/// b from W, term = float(dot) * ws[n, g] * xs[m, g].
struct Problem {
  int64_t G = 0, M = 0, N = 0, Gs = 0;
  std::vector<int32_t> A;
  std::vector<int8_t> W;
  int64_t GroupStride = 0, RowStride = 0, KStride = 1;
  std::vector<float> Ws, Xs;
  /// The term's factors: 0: ws then xs, 1: xs then ws, 2: xs only, 3: none.
  int Order = 0;
  /// Scales laid out group by group, ws [G, N] and xs [G, M], where
  /// llama2.c's are [N, G] and [M, G].
  bool ScalesByGroup = false;

  int32_t a(int64_t Gi, int64_t Mi, int64_t K) const {
    return A[Mi * G * Gs + Gi * Gs + K];
  }
  int8_t b(int64_t Gi, int64_t Ni, int64_t K) const {
    return W[Gi * GroupStride + Ni * RowStride + K * KStride];
  }
  float term(int64_t Gi, int64_t Mi, int64_t Ni, int32_t Dot) const {
    const float W = ScalesByGroup ? Ws[Gi * N + Ni] : Ws[Ni * G + Gi],
                X = ScalesByGroup ? Xs[Gi * M + Mi] : Xs[Mi * G + Gi];
    switch (Order) {
    case 1:
      return float(Dot) * X * W;
    case 2:
      return float(Dot) * X;
    case 3:
      return float(Dot);
    default:
      return float(Dot) * W * X;
    }
  }
  /// What term computes, for the runtime (as pkc writes it).
  pk::rt::Int8TermScales scales() const {
    const pk::rt::Int8TermFactor W{Ws.data(), ScalesByGroup ? N : 1,
                                   ScalesByGroup ? 1 : G, false},
        X{Xs.data(), ScalesByGroup ? M : 1, ScalesByGroup ? 1 : G,
          /*PerRow=*/true};
    switch (Order) {
    case 1:
      return {true, 2, {X, W}};
    case 2:
      return {true, 1, {X}};
    case 3:
      return {true, 0, {}};
    default:
      return {true, 2, {W, X}};
    }
  }
};

/// Layouts of the weights.
enum class Layout { RowMajor, GroupMajor, StridedK };

Problem makeProblem(int64_t G, int64_t M, int64_t N, int64_t Gs, int32_t ALimit,
                    Layout L, uint32_t Seed) {
  Problem P;
  P.G = G, P.M = M, P.N = N, P.Gs = Gs;
  std::mt19937 Rng(Seed);
  std::uniform_int_distribution<int32_t> AD(-ALimit, ALimit - 1);
  std::uniform_int_distribution<int> BD(-128, 127);
  std::uniform_real_distribution<float> SD(0.001f, 0.1f);
  P.A.resize(size_t(M * G * Gs));
  for (int32_t &V : P.A)
    V = AD(Rng);
  // int8's ends, where they exist: -128 * -128 and 127s.
  if (!P.A.empty()) {
    P.A[0] = -ALimit;
    P.A.back() = ALimit - 1;
  }
  const int64_t K = G * Gs, Stride = L == Layout::StridedK ? 2 : 1;
  P.W.resize(size_t(std::max<int64_t>(N * K * Stride, 1)));
  for (int8_t &V : P.W)
    V = int8_t(BD(Rng));
  if (N * K > 0)
    P.W[0] = -128;
  switch (L) {
  case Layout::RowMajor: // w [N, K] = [N, G, gs]
    P.GroupStride = Gs, P.RowStride = K, P.KStride = 1;
    break;
  case Layout::GroupMajor: // [G, N, gs]
    P.GroupStride = N * Gs, P.RowStride = Gs, P.KStride = 1;
    break;
  case Layout::StridedK: // every other byte of [N, 2K]
    P.GroupStride = 2 * Gs, P.RowStride = 2 * K, P.KStride = 2;
    break;
  }
  P.Ws.resize(size_t(N * G));
  P.Xs.resize(size_t(M * G));
  for (float &V : P.Ws)
    V = SD(Rng);
  for (float &V : P.Xs)
    V = SD(Rng);
  return P;
}

std::vector<float> reference(const Problem &P) {
  std::vector<float> Y(size_t(P.M * P.N));
  for (int64_t M = 0; M < P.M; ++M)
    for (int64_t N = 0; N < P.N; ++N) {
      float Sum = 0.0f;
      for (int64_t G = 0; G < P.G; ++G) {
        int64_t Dot = 0;
        for (int64_t K = 0; K < P.Gs; ++K)
          Dot += int64_t(P.a(G, M, K)) * P.b(G, N, K);
        Sum += P.term(G, M, N, int32_t(uint32_t(uint64_t(Dot))));
      }
      Y[size_t(M * P.N + N)] = Sum;
    }
  return Y;
}

std::vector<float> run(const Problem &P, bool Threads, bool Scaled = false) {
  std::vector<float> Y(size_t(P.M * P.N), -1.0f);
  pk::rt::int8_product(
      {P.G, P.M, P.N, P.Gs}, Threads,
      [&](int64_t G, int64_t M, int64_t Len, int32_t *A) {
        for (int64_t K = 0; K < Len; ++K)
          A[K] = P.a(G, M, K);
      },
      pk::rt::Int8Rows{P.W.data(), P.GroupStride, P.RowStride, P.KStride},
      [&](int64_t G, int64_t M, int64_t N0, int64_t Len, const int32_t *Dot,
          float *Term) {
        for (int64_t L = 0; L < Len; ++L)
          Term[L] = P.term(G, M, N0 + L, Dot[L]);
      },
      [&](int64_t M, int64_t N0, int64_t Len, const float *Sum) {
        for (int64_t L = 0; L < Len; ++L)
          Y[size_t(M * P.N + N0 + L)] = Sum[L];
      },
      Scaled ? P.scales() : pk::rt::Int8TermScales{});
  return Y;
}

/// Whether two float vectors hold the same bits (NaN-free here).
::testing::AssertionResult sameBits(const std::vector<float> &Got,
                                    const std::vector<float> &Want) {
  if (Got.size() != Want.size())
    return ::testing::AssertionFailure() << "sizes differ";
  for (size_t I = 0; I < Got.size(); ++I)
    if (std::memcmp(&Got[I], &Want[I], sizeof(float)) != 0)
      return ::testing::AssertionFailure()
             << "element " << I << ": " << Got[I] << " != " << Want[I];
  return ::testing::AssertionSuccess();
}

/// Pins the level for one test; restores the previous one after.
class Int8Level : public ::testing::TestWithParam<Int8Isa> {
protected:
  void SetUp() override {
    Saved = pk::rt::gemm_isa();
    const GemmIsa Want = GetParam() == Int8Isa::Avx512Vnni ? GemmIsa::Avx512
                         : GetParam() == Int8Isa::Avx2     ? GemmIsa::Avx2
                                                           : GemmIsa::Baseline;
    if (!pk::rt::set_gemm_isa(Want) || pk::rt::int8_isa() != GetParam())
      GTEST_SKIP() << "this CPU does not run "
                   << pk::rt::int8_isa_name(GetParam());
  }
  void TearDown() override { pk::rt::set_gemm_isa(Saved); }
  GemmIsa Saved = GemmIsa::Baseline;
};

TEST_P(Int8Level, SameBitsAsTheReference) {
  uint32_t Seed = 1;
  for (int64_t Gs : {1, 4, 15, 16, 17, 32, 63, 64, 65, 130})
    for (int64_t G : {0, 1, 3})
      for (int64_t M : {1, 2, 5})
        for (int64_t N : {1, 7, 8, 9, 16, 17, 33}) {
          const Problem P =
              makeProblem(G, M, N, Gs, 128, Layout::RowMajor, Seed++);
          EXPECT_TRUE(sameBits(run(P, false), reference(P)))
              << "G " << G << " M " << M << " N " << N << " gs " << Gs;
        }
}

TEST_P(Int8Level, WeightLayouts) {
  for (Layout L : {Layout::GroupMajor, Layout::StridedK})
    for (int64_t Gs : {16, 32, 33, 64})
      for (int64_t N : {9, 40}) {
        const Problem P = makeProblem(4, 3, N, Gs, 128, L, uint32_t(Gs + N));
        EXPECT_TRUE(sameBits(run(P, false), reference(P)))
            << "layout " << int(L) << " gs " << Gs << " N " << N;
      }
}

TEST_P(Int8Level, WideActivationsFallBack) {
  // a past int8 (the avx512vnni level runs avx2's loops), past int16 (the
  // portable ones), and sums past int32, which wrap.
  for (int32_t Limit : {129, 1000, 32768, 40000, 1 << 24})
    for (int64_t Gs : {17, 64, 1024}) {
      const Problem P =
          makeProblem(2, 2, 19, Gs, Limit, Layout::RowMajor, uint32_t(Gs));
      EXPECT_TRUE(sameBits(run(P, false), reference(P)))
          << "limit " << Limit << " gs " << Gs;
    }
}

// The term described to the runtime (Int8TermScales, as pkc passes it for
// runq's product): at the avx2 level, groups of a multiple of 16 compute the
// terms in registers (int8BlocksAvx2Scaled), and with every a in [-127, 127]
// and groups of a multiple of 32 multiply bytes (dots8Avx2Bytes); at the
// avx512vnni level groups of 32 (two a vector, an odd last one alone), 64
// and 128 do (int8BlocksVnniScaled); the other levels and shapes ignore it. The
// same bits in every case, for every order and count of the factors.
TEST_P(Int8Level, KnownTermsSameBits) {
  uint32_t Seed = 100;
  for (int32_t ALimit : {127, 128, 1000})
    for (int64_t Gs : {16, 32, 48, 64, 17})
      for (int64_t G : {1, 3, 9, 24})
        for (int64_t M : {1, 2, 5})
          for (int64_t N : {1, 7, 8, 9, 16, 17, 40})
            for (int Order = 0; Order < 4; ++Order) {
              if ((G + M + N + Order) % 3 != 0 && Gs != 32)
                continue; // a third of the grid off Q8_0's group size
              Problem P =
                  makeProblem(G, M, N, Gs, ALimit, Layout::RowMajor, Seed++);
              P.Order = Order;
              EXPECT_TRUE(sameBits(run(P, false, true), reference(P)))
                  << "a limit " << ALimit << " gs " << Gs << " G " << G << " M "
                  << M << " N " << N << " order " << Order;
            }
  for (Layout L : {Layout::GroupMajor, Layout::StridedK})
    for (int64_t Gs : {16, 32, 64}) {
      const Problem P = makeProblem(4, 3, 40, Gs, 127, L, uint32_t(Gs));
      EXPECT_TRUE(sameBits(run(P, false, true), reference(P)))
          << "layout " << int(L) << " gs " << Gs;
    }
  // Scales read in place ([N, G], [M, G]) and gathered ([G, N], [G, M]);
  // a in int8 at 1 and 8 rows (b read row by row on AVX2: up to 8 rows with
  // groups of 32, one with longer groups) and at 9 (the groups outermost);
  // past a whole 8 groups and 16 columns, with a last 8 groups of 1 and 6.
  for (bool ByGroup : {false, true})
    for (int64_t M : {1, 8, 9})
      for (int64_t Gs : {32, 64})
        for (int Order = 0; Order < 4; Order += 3) {
          const int64_t G = Order == 0 ? 9 : 14;
          Problem P = makeProblem(G, M, 41, Gs, 127, Layout::RowMajor, Seed++);
          P.ScalesByGroup = ByGroup;
          P.Order = Order;
          EXPECT_TRUE(sameBits(run(P, false, true), reference(P)))
              << "by group " << ByGroup << " G " << G << " M " << M << " gs "
              << Gs << " order " << Order;
        }
  // Around the VNNI loop's sixteen columns and vector of 64 bytes: 16, 17,
  // 33 and 5 groups of one and two vectors, a down to -128 (VNNI's int8
  // range), at one and two rows of a.
  for (int64_t G : {16, 17, 33, 5})
    for (int64_t Gs : {64, 128})
      for (int64_t M : {1, 2}) {
        Problem P = makeProblem(G, M, 23, Gs, 128, Layout::RowMajor, Seed++);
        P.Order = int(G % 4);
        EXPECT_TRUE(sameBits(run(P, false, true), reference(P)))
            << "G " << G << " gs " << Gs << " M " << M;
      }
}

TEST_P(Int8Level, ThreadCountDoesNotChangeBits) {
#ifdef _OPENMP
  const int Saved = omp_get_max_threads();
  omp_set_num_threads(2);
  const Problem P = makeProblem(8, 3, 1000, 64, 128, Layout::RowMajor, 7);
  EXPECT_TRUE(sameBits(run(P, true), reference(P)));
  EXPECT_TRUE(sameBits(run(P, true), run(P, false)));
  EXPECT_TRUE(sameBits(run(P, true, true), reference(P)));
  // a in int8, one row: the decode path's columns split too.
  const Problem One = makeProblem(8, 1, 1000, 32, 127, Layout::RowMajor, 8);
  EXPECT_TRUE(sameBits(run(One, true, true), reference(One)));
  omp_set_num_threads(Saved);
#else
  GTEST_SKIP() << "built without OpenMP";
#endif
}

INSTANTIATE_TEST_SUITE_P(Levels, Int8Level,
                         ::testing::Values(Int8Isa::Portable, Int8Isa::Avx2,
                                           Int8Isa::Avx512Vnni),
                         [](const auto &Info) {
                           return std::string(
                               pk::rt::int8_isa_name(Info.param));
                         });

/// The reference is strict enough to see a wrong dot product: one weight
/// off by one changes the bits.
TEST(Int8Product, OneWrongWeightIsSeen) {
  Problem P = makeProblem(3, 2, 17, 64, 128, Layout::RowMajor, 3);
  const std::vector<float> Want = reference(P);
  P.W[5] = int8_t(P.W[5] == 127 ? 126 : P.W[5] + 1);
  EXPECT_FALSE(sameBits(run(P, false), Want));
  EXPECT_FALSE(sameBits(run(P, false, true), Want));
}

/// The AMX level: on for one test where the CPU has AMX-INT8 (skipped
/// elsewhere), at the avx512vnni level it needs; restores both after.
class Int8Amx : public ::testing::Test {
protected:
  void SetUp() override {
    Saved = pk::rt::gemm_isa();
    if (!pk::rt::amx_int8_supported() ||
        !pk::rt::set_gemm_isa(GemmIsa::Avx512) ||
        pk::rt::int8_isa() != Int8Isa::Avx512Vnni)
      GTEST_SKIP() << "this CPU (or kernel) does not run AMX-INT8 tiles";
    ASSERT_TRUE(pk::rt::set_gemm_amx(true));
  }
  void TearDown() override {
    pk::rt::set_gemm_isa(Saved);
    const char *Env = std::getenv("PK_GEMM_AMX");
    pk::rt::set_gemm_amx(!(Env && std::strcmp(Env, "0") == 0));
  }
  /// Runs P with its term described, checks the bits against the
  /// reference, and returns how many products ran on AMX.
  int64_t check(const Problem &P, bool Threads = false) {
    const int64_t Before = pk::rt::int8_amx_products();
    EXPECT_TRUE(sameBits(run(P, Threads, /*Scaled=*/true), reference(P)))
        << "G " << P.G << " M " << P.M << " N " << P.N << " gs " << P.Gs
        << " order " << P.Order;
    return pk::rt::int8_amx_products() - Before;
  }
  GemmIsa Saved = GemmIsa::Baseline;
};

TEST_F(Int8Amx, SameBitsAsTheReference) {
  // Rows around the 16-row tiles and 32-row blocks, columns around the
  // 32-column steps (the last one copied into zero-padded scratch), group
  // sizes whose step of k is 64 (64, 128, 256) or less (4, 12, 20, 32, 96).
  uint32_t Seed = 100;
  int64_t Runs = 0, OnAmx = 0;
  for (int64_t Gs : {4, 12, 20, 32, 64, 96, 128, 256})
    for (int64_t M : {16, 17, 31, 32, 33, 47, 64, 100})
      for (int64_t N : {1, 17, 31, 32, 33, 100}) {
        const int64_t G = Gs > 64 ? 2 : 3;
        OnAmx += check(makeProblem(G, M, N, Gs, 128, Layout::RowMajor, Seed++));
        ++Runs;
      }
  EXPECT_EQ(OnAmx, Runs);
}

TEST_F(Int8Amx, TermsAndLayouts) {
  // Every order of the factors (and none), weights laid out [G, N, gs].
  for (int Order = 0; Order < 4; ++Order)
    for (Layout L : {Layout::RowMajor, Layout::GroupMajor}) {
      Problem P = makeProblem(3, 40, 70, 64, 128, L, uint32_t(Order + 10));
      P.Order = Order;
      EXPECT_EQ(check(P), 1) << "order " << Order << " layout " << int(L);
    }
}

TEST_F(Int8Amx, OtherProductsStayOffTiles) {
  // Under 16 rows, weights strided along k, a group size no multiple of 4,
  // activations past int8, or a term not described: the other levels run,
  // with the same bits.
  EXPECT_EQ(check(makeProblem(3, 15, 40, 64, 128, Layout::RowMajor, 1)), 0);
  EXPECT_EQ(check(makeProblem(3, 20, 40, 64, 128, Layout::StridedK, 2)), 0);
  EXPECT_EQ(check(makeProblem(3, 20, 40, 33, 128, Layout::RowMajor, 3)), 0);
  EXPECT_EQ(check(makeProblem(3, 20, 40, 64, 129, Layout::RowMajor, 4)), 0);
  const Problem P = makeProblem(3, 20, 40, 64, 128, Layout::RowMajor, 5);
  const int64_t Before = pk::rt::int8_amx_products();
  EXPECT_TRUE(sameBits(run(P, false, /*Scaled=*/false), reference(P)));
  EXPECT_EQ(pk::rt::int8_amx_products(), Before);
  // And with AMX turned off, a described term runs the VNNI dots.
  ASSERT_TRUE(pk::rt::set_gemm_amx(false));
  EXPECT_EQ(check(P), 0);
}

TEST_F(Int8Amx, ThreadCountDoesNotChangeBits) {
#ifdef _OPENMP
  const int Saved = omp_get_max_threads();
  omp_set_num_threads(2);
  const Problem P = makeProblem(8, 50, 1000, 64, 128, Layout::RowMajor, 7);
  EXPECT_EQ(check(P, /*Threads=*/true), 1);
  EXPECT_TRUE(sameBits(run(P, true, true), run(P, false, true)));
  omp_set_num_threads(Saved);
#else
  GTEST_SKIP() << "built without OpenMP";
#endif
}

/// The AMX level sees one wrong weight too.
TEST_F(Int8Amx, OneWrongWeightIsSeen) {
  Problem P = makeProblem(3, 20, 33, 64, 128, Layout::RowMajor, 3);
  const std::vector<float> Want = reference(P);
  P.W[size_t(32 * P.G * P.Gs + 5)] ^= 1; // a row of the last step of 32
  const int64_t Before = pk::rt::int8_amx_products();
  EXPECT_FALSE(sameBits(run(P, false, true), Want));
  EXPECT_EQ(pk::rt::int8_amx_products(), Before + 1);
}

} // namespace
