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
// threads.
#include <pk/int8_product.h>

#include <gtest/gtest.h>

#include <cstdint>
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

  int32_t a(int64_t Gi, int64_t Mi, int64_t K) const {
    return A[Mi * G * Gs + Gi * Gs + K];
  }
  int8_t b(int64_t Gi, int64_t Ni, int64_t K) const {
    return W[Gi * GroupStride + Ni * RowStride + K * KStride];
  }
  float term(int64_t Gi, int64_t Mi, int64_t Ni, int32_t Dot) const {
    return float(Dot) * Ws[Ni * G + Gi] * Xs[Mi * G + Gi];
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

std::vector<float> run(const Problem &P, bool Threads) {
  std::vector<float> Y(size_t(P.M * P.N), -1.0f);
  pk::rt::int8_product(
      {P.G, P.M, P.N, P.Gs}, Threads,
      [&](int64_t G, int64_t M, int64_t K) { return P.a(G, M, K); },
      pk::rt::Int8Rows{P.W.data(), P.GroupStride, P.RowStride, P.KStride},
      [&](int64_t G, int64_t M, int64_t N0, int64_t Len, const int32_t *Dot,
          float *Term) {
        for (int64_t L = 0; L < Len; ++L)
          Term[L] = P.term(G, M, N0 + L, Dot[L]);
      },
      [&](int64_t M, int64_t N0, int64_t Len, const float *Sum) {
        for (int64_t L = 0; L < Len; ++L)
          Y[size_t(M * P.N + N0 + L)] = Sum[L];
      });
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

TEST_P(Int8Level, ThreadCountDoesNotChangeBits) {
#ifdef _OPENMP
  const int Saved = omp_get_max_threads();
  omp_set_num_threads(2);
  const Problem P = makeProblem(8, 3, 1000, 64, 128, Layout::RowMajor, 7);
  EXPECT_TRUE(sameBits(run(P, true), reference(P)));
  EXPECT_TRUE(sameBits(run(P, true), run(P, false)));
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
}

} // namespace
