// pk::rt::gemm at every instruction-set level (include/pk/gemm_kernels.h),
// against a float64 reference: one test per level, skipped (not passed) on a
// CPU that lacks the level. Each level runs M, N, K over micro-tile and
// vector tails, both B layouts (nn.Linear's w[N, K] and [K, N]), a batch
// with a broadcast operand, blockings small enough that a product crosses
// KC, MC and NC boundaries, NaN and infinity in the operands, and 1 vs 2
// threads (bit-identical: K is never split between threads).
//
// Tolerance (float): |c - ref| <= K * 2^-23 * sum_k |a_ik b_kj| + 1e-30,
// twice the worst case of a K-term dot product accumulated in float in any
// order, with or without fused multiply-adds (gamma_K = K u, u = 2^-24);
// double: the same with 2^-52. A wrong product (one term dropped, a term
// counted twice, a float product for a double one) exceeds it: the test
// `DroppedTermFails` checks that the bound rejects one dropped term.
#include <pk/gemm.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

using pk::rt::GemmBlocking;
using pk::rt::GemmIsa;
using pk::rt::GemmOptions;

/// A batched product's operands, row-major: A [BatchA, M, K] (BatchA 1 =
/// broadcast), B [BatchB, N, K] when TransB (w[N, K]) else [BatchB, K, N].
template <class T> struct Problem {
  int64_t Batch = 1, M = 0, N = 0, K = 0;
  bool BroadcastA = false, BroadcastB = false, TransB = true;
  std::vector<T> A, B;

  T a(int64_t Bi, int64_t I, int64_t Kk) const {
    return A[((BroadcastA ? 0 : Bi) * M + I) * K + Kk];
  }
  int64_t bBatch(int64_t Bi) const { return BroadcastB ? 0 : Bi; }
  T b(int64_t Bi, int64_t Kk, int64_t J) const {
    return TransB ? B[(bBatch(Bi) * N + J) * K + Kk]
                  : B[(bBatch(Bi) * K + Kk) * N + J];
  }
  /// A as pkc passes a ref read in place (packed by transposing it straight
  /// from memory).
  pk::rt::StridedA<T> stridedA() const {
    return {A.data(), BroadcastA ? 0 : M * K, K, 1};
  }
  /// B as pkc passes a ref read in place (the small-M path reads it so).
  pk::rt::StridedB<T> strided() const {
    const int64_t Batch = BroadcastB ? 0 : N * K;
    return TransB ? pk::rt::StridedB<T>{B.data(), Batch, 1, K}
                  : pk::rt::StridedB<T>{B.data(), Batch, N, 1};
  }
};

template <class T>
Problem<T> makeProblem(int64_t Batch, int64_t M, int64_t N, int64_t K,
                       bool TransB, bool BroadcastA, unsigned Seed,
                       bool BroadcastB = false) {
  Problem<T> P;
  P.Batch = Batch;
  P.M = M;
  P.N = N;
  P.K = K;
  P.TransB = TransB;
  P.BroadcastA = BroadcastA;
  P.BroadcastB = BroadcastB;
  std::mt19937 Rng(Seed);
  std::uniform_real_distribution<double> U(-1.0, 1.0);
  P.A.resize(size_t((BroadcastA ? 1 : Batch) * M * K));
  P.B.resize(size_t((BroadcastB ? 1 : Batch) * N * K));
  for (T &V : P.A)
    V = T(U(Rng));
  for (T &V : P.B)
    V = T(U(Rng));
  return P;
}

/// C = A B through pk::rt::gemm, the way pkc calls it: A and B lambdas
/// (operands with a prologue) or, when \p Strided, a StridedA and a StridedB
/// (refs read in place: M <= kGemvMaxRows runs the GEMV kernels); an
/// epilogue that stores each finished element once and counts the stores.
template <class T>
std::vector<T> run(const Problem<T> &P, GemmOptions Opt, int64_t *Stores,
                   bool Strided = false) {
  std::vector<T> C(size_t(P.Batch * P.M * P.N), std::numeric_limits<T>::max());
  Opt.AUnitK = true;
  Opt.BUnitK = P.TransB;
  int64_t Count = 0;
  auto A = [&](int64_t Bi, int64_t I, int64_t K) { return P.a(Bi, I, K); };
  auto E = [&](int64_t Bi, int64_t I, int64_t J0, int64_t Len, const T *Acc) {
    for (int64_t L = 0; L < Len; ++L)
      C[size_t((Bi * P.M + I) * P.N + J0 + L)] = Acc[L];
#pragma omp atomic
    Count += Len;
  };
  if (Strided)
    pk::rt::gemm<T>({P.Batch, P.M, P.N, P.K}, Opt, P.stridedA(), P.strided(),
                    E);
  else
    pk::rt::gemm<T>(
        {P.Batch, P.M, P.N, P.K}, Opt, A,
        [&](int64_t Bi, int64_t K, int64_t J) { return P.b(Bi, K, J); }, E);
  if (Stores)
    *Stores = Count;
  return C;
}

template <class T> constexpr double unitEps() {
  return std::numeric_limits<T>::epsilon(); // 2^-23 for float, 2^-52 double
}

/// Compares C with the float64 reference under the bound in the file
/// comment; returns the number of elements outside it (and reports the
/// first few).
template <class T>
int64_t countOutside(const Problem<T> &P, const std::vector<T> &C,
                     const std::string &What, bool Report = true,
                     int64_t DropK = -1) {
  int64_t Bad = 0;
  for (int64_t Bi = 0; Bi < P.Batch; ++Bi)
    for (int64_t I = 0; I < P.M; ++I)
      for (int64_t J = 0; J < P.N; ++J) {
        double Ref = 0, Abs = 0;
        for (int64_t K = 0; K < P.K; ++K) {
          const double T1 = double(P.a(Bi, I, K)) * double(P.b(Bi, K, J));
          if (K != DropK)
            Ref += T1;
          Abs += std::fabs(T1);
        }
        const double Bound = double(P.K) * unitEps<T>() * Abs + 1e-30;
        const double Got = C[size_t((Bi * P.M + I) * P.N + J)];
        if (!(std::fabs(Got - Ref) <= Bound)) {
          if (Report && Bad < 3)
            ADD_FAILURE() << What << ": c[" << Bi << ", " << I << ", " << J
                          << "] = " << Got << ", reference " << Ref
                          << ", bound " << Bound;
          ++Bad;
        }
      }
  return Bad;
}

std::string shapeName(int64_t Batch, int64_t M, int64_t N, int64_t K,
                      bool TransB) {
  return std::to_string(Batch) + "x" + std::to_string(M) + "x" +
         std::to_string(N) + "x" + std::to_string(K) +
         (TransB ? " w[N,K]" : " w[K,N]");
}

void nanAndInfinity(int64_t M, bool Strided);

class GemmLevel : public ::testing::TestWithParam<GemmIsa> {
protected:
  void SetUp() override {
    Saved = pk::rt::gemm_isa();
    if (!pk::rt::set_gemm_isa(GetParam()))
      GTEST_SKIP() << "this CPU does not run the "
                   << pk::rt::gemm_isa_name(GetParam()) << " level";
  }
  void TearDown() override { pk::rt::set_gemm_isa(Saved); }
  GemmIsa Saved = GemmIsa::Baseline;
};

// 40: rows of A that the w-rows-in-place path takes (gemmWeightRows, more
// than the GEMV's 32 and at most 64), a panel of A and a tail.
const int64_t Extents[] = {0, 1, 3, 7, 8, 9, 17, 40, 65, 127, 129};

/// Every (M, N, K) of Extents, both layouts, B as a lambda (packed) and as
/// a StridedB (read in place: the GEMV kernels up to kGemvMaxRows rows,
/// packed above).
template <class T> void allShapes(GemmIsa Level) {
  const std::string Name = pk::rt::gemm_isa_name(Level);
  unsigned Seed = 1;
  for (int64_t M : Extents)
    for (int64_t N : Extents)
      for (int64_t K : Extents)
        for (bool TransB : {true, false})
          for (bool Strided : {false, true}) {
            // Every extent against every other is 4000 products: the
            // largest only for some, so the suite stays quick.
            if (M * N * K > 65 * 129 * 129 && (M + N + K) % 3)
              continue;
            Problem<T> P = makeProblem<T>(1, M, N, K, TransB, false, Seed++);
            int64_t Stores = 0;
            std::vector<T> C = run(P, GemmOptions{}, &Stores, Strided);
            const std::string What = Name + " " +
                                     shapeName(1, M, N, K, TransB) +
                                     (Strided ? " strided B" : " lambda B");
            EXPECT_EQ(Stores, M * N) << What << ": each element stored once";
            if (countOutside(P, C, What))
              return;
          }
}

TEST_P(GemmLevel, FloatShapes) { allShapes<float>(GetParam()); }
TEST_P(GemmLevel, DoubleShapes) { allShapes<double>(GetParam()); }

TEST_P(GemmLevel, LargeAndBlockingBoundaries) {
  const std::string Name = pk::rt::gemm_isa_name(GetParam());
  const pk::rt::gemm_detail::Tile Tile =
      pk::rt::gemm_detail::microKernel<float>(GetParam()).Shape;
  // The cache-sized blocking, and one small enough that these products
  // cross several K blocks, C-tile rows and columns: extents one below, at
  // and one above each boundary.
  const GemmBlocking Cache = pk::rt::gemm_blocking(4, Tile.MR, Tile.NR);
  EXPECT_GE(Cache.KC, 64);
  EXPECT_EQ(Cache.MC % Tile.MR, 0);
  EXPECT_EQ(Cache.NC % Tile.NR, 0);
  const GemmBlocking Small = {2 * Tile.MR, 32, 2 * Tile.NR};
  unsigned Seed = 100;
  for (bool IsSmall : {true, false}) {
    const GemmBlocking &Blk = IsSmall ? Small : Cache;
    const int64_t Ms[] = {Blk.MC - 1, Blk.MC + 1, 2 * Blk.MC + Tile.MR + 1};
    const int64_t Ns[] = {Blk.NC - 1, Blk.NC + 1};
    const int64_t Ks[] = {Blk.KC - 1, Blk.KC, 2 * Blk.KC + 1};
    for (int64_t M : Ms)
      for (int64_t N : Ns)
        for (int64_t K : Ks) {
          if (M * N * K > (int64_t(1) << 26))
            continue; // the cache-sized blocking's largest: enough below
          for (bool TransB : {true, false})
            // In place (StridedA, StridedB) too with the small blocking:
            // B's kept block (more than one row tile), in both layouts.
            for (bool Strided : {false, true}) {
              if (Strided && !IsSmall)
                continue;
              Problem<float> P =
                  makeProblem<float>(1, M, N, K, TransB, false, Seed++);
              GemmOptions Opt;
              Opt.Blocking = Blk;
              std::vector<float> C = run(P, Opt, nullptr, Strided);
              if (countOutside(P, C,
                               Name + " blocking " + std::to_string(Blk.MC) +
                                   "/" + std::to_string(Blk.KC) + "/" +
                                   std::to_string(Blk.NC) + " " +
                                   shapeName(1, M, N, K, TransB) +
                                   (Strided ? " in place" : "")))
                return;
            }
        }
  }
  // 1000: several default K blocks; and the GEMV path over 8 column blocks.
  Problem<float> P = makeProblem<float>(1, 70, 1000, 1000, true, false, 7);
  EXPECT_EQ(countOutside(P, run(P, GemmOptions{}, nullptr),
                         Name + " " + shapeName(1, 70, 1000, 1000, true)),
            0);
  // w[N, K] read in place at prefill rows (gemmWeightRows): more rows than
  // the GEMV takes, two K blocks of the cache-sized depth, a column tail.
  Problem<float> R = makeProblem<float>(1, 40, 301, 4500, true, false, 9);
  EXPECT_EQ(
      countOutside(R, run(R, GemmOptions{}, nullptr, true),
                   Name + " strided " + shapeName(1, 40, 301, 4500, true)),
      0);
  for (bool TransB : {true, false}) {
    Problem<float> Q = makeProblem<float>(1, 6, 1000, 1000, TransB, false, 8);
    EXPECT_EQ(
        countOutside(Q, run(Q, GemmOptions{}, nullptr, true),
                     Name + " strided " + shapeName(1, 6, 1000, 1000, TransB)),
        0);
  }
}

TEST_P(GemmLevel, BatchedAndBroadcast) {
  const std::string Name = pk::rt::gemm_isa_name(GetParam());
  // The GEMV path (strided B), w's rows in place (strided w[N, K]) and the
  // packed path.
  for (int64_t M : {5, 33})
    for (bool BroadcastA : {false, true})
      for (bool BroadcastB : {false, true})
        for (bool TransB : {true, false})
          for (bool Strided : {false, true}) {
            Problem<float> P = makeProblem<float>(3, M, 65, 129, TransB,
                                                  BroadcastA, 11, BroadcastB);
            EXPECT_EQ(countOutside(P, run(P, GemmOptions{}, nullptr, Strided),
                                   Name + (BroadcastA ? " broadcast A" : "") +
                                       (BroadcastB ? " broadcast B" : "") +
                                       (Strided ? " strided " : " ") +
                                       shapeName(3, M, 65, 129, TransB)),
                      0);
          }
}

// bfloat16 weights read in place (StridedB<float, pk::bfloat16>, what pkc
// passes for an In<pk::bfloat16, 2> weight): the GEMV kernels widen them as
// they load them, the packed path while it packs. The reference multiplies
// the same (bfloat16-exact) values in double.
TEST_P(GemmLevel, Bfloat16Weights) {
  for (int64_t M : {1, 3, 7, 8, 9, 17, 32, 33, 65})
    for (int64_t N : {1, 7, 17, 65})
      for (int64_t K : {1, 7, 17, 65, 129})
        for (bool TransB : {true, false}) {
          Problem<float> P = makeProblem<float>(1, M, N, K, TransB, false, 11);
          std::vector<pk::bfloat16> W(P.B.size());
          for (size_t I = 0; I < W.size(); ++I) {
            W[I] = pk::bfloat16(P.B[I]);
            P.B[I] = float(W[I]);
          }
          const pk::rt::StridedB<float, pk::bfloat16> B =
              TransB ? pk::rt::StridedB<float, pk::bfloat16>{W.data(), 0, 1, K}
                     : pk::rt::StridedB<float, pk::bfloat16>{W.data(), 0, N, 1};
          std::vector<float> C(size_t(M * N), -7.0f);
          GemmOptions Opt;
          Opt.BUnitK = TransB;
          pk::rt::gemm<float>(
              {1, M, N, K}, Opt,
              [&](int64_t, int64_t I, int64_t Kk) { return P.a(0, I, Kk); }, B,
              [&](int64_t, int64_t I, int64_t J0, int64_t Len,
                  const float *Acc) {
                for (int64_t L = 0; L < Len; ++L)
                  C[size_t(I * N + J0 + L)] = Acc[L];
              });
          EXPECT_EQ(countOutside(P, C, "bf16 " + shapeName(1, M, N, K, TransB)),
                    0);
        }
}

// int8 weights with one float scale per group along k (GroupScaledB, what
// pkc passes for `cast<float>(w[_]) * repeat(scale[_], gs, -1)`): read in
// place by the GEMV kernels where the groups are whole vectors of the level
// (gs 16, 32, 64 on every level; 4 below AVX2), packed otherwise; two
// batches with their own weights and scales, and scales broadcast over the
// batch. Exact data (small integers, power-of-two scales), so every path and
// order of summation gives the double reference's value exactly.
TEST_P(GemmLevel, GroupScaledInt8Weights) {
  std::mt19937 G(13);
  std::uniform_int_distribution<int> Q(-127, 127), X(-8, 8), E(-8, 0);
  // {groups, group size, k short of the last group's end}: a short last
  // group leaves a tail of k after the last whole vector.
  const int64_t Groups[][3] = {{1, 4, 0},  {2, 16, 0},  {3, 32, 0}, {3, 32, 5},
                               {2, 64, 0}, {2, 64, 63}, {5, 7, 0}};
  for (int64_t M : {1, 3, 8, 9, 32, 33})
    for (int64_t N : {1, 7, 17, 130})
      for (const auto &Gg : Groups)
        for (int64_t ScaleBatch : {1, 0}) {
          const int64_t Ng = Gg[0], Gs = Gg[1], K = Ng * Gs - Gg[2], Batch = 2;
          std::vector<int8_t> W(size_t(Batch * N * K));
          std::vector<float> S(size_t(Batch * N * Ng)), A(size_t(M * K));
          for (auto &V : W)
            V = int8_t(Q(G));
          for (auto &V : S)
            V = std::ldexp(1.0f, E(G));
          for (auto &V : A)
            V = float(X(G));
          const pk::rt::GroupScaledB B{
              W.data(), N * K, 1, K, S.data(), ScaleBatch * N * Ng, Ng, 1, Gs};
          std::vector<float> C(size_t(Batch * M * N), -7.0f);
          GemmOptions Opt;
          Opt.BUnitK = true;
          pk::rt::gemm<float>(
              {Batch, M, N, K}, Opt,
              [&](int64_t, int64_t I, int64_t Kk) { return A[I * K + Kk]; }, B,
              [&](int64_t Bi, int64_t I, int64_t J0, int64_t Len,
                  const float *Acc) {
                for (int64_t L = 0; L < Len; ++L)
                  C[size_t((Bi * M + I) * N + J0 + L)] = Acc[L];
              });
          const std::string What =
              std::to_string(M) + "x" + std::to_string(N) + "x" +
              std::to_string(Ng) + "*" + std::to_string(Gs) + "-" +
              std::to_string(Gg[2]) +
              (ScaleBatch ? " batched scales" : " shared scales");
          for (int64_t Bi = 0; Bi < Batch; ++Bi)
            for (int64_t I = 0; I < M; ++I)
              for (int64_t J = 0; J < N; ++J) {
                double Want = 0;
                for (int64_t Kk = 0; Kk < K; ++Kk)
                  Want +=
                      double(A[I * K + Kk]) * W[size_t((Bi * N + J) * K + Kk)] *
                      S[size_t(Bi * ScaleBatch * N * Ng + J * Ng + Kk / Gs)];
                ASSERT_EQ(C[size_t((Bi * M + I) * N + J)], float(Want))
                    << What << " at " << Bi << "," << I << "," << J;
              }
        }
}

// gemm_dual: two products of the same A (SwiGLU's gate and up) in one pass.
// Each of its two results is bit-identical to pk::rt::gemm of that product
// alone (the same packed A, K blocks and micro-kernel), and within the
// reference bound; the epilogue sees each element once with both sums. Over
// the GEMV path (M <= kGemvMaxRows, B in place), the packed one (lambdas),
// B's kept block (many row tiles), a small blocking, both layouts, a
// broadcast B2 (stride 0 along n, as pkc passes an extent-1 weight) and
// int8 weights with group scales.
TEST_P(GemmLevel, DualProducts) {
  const std::string Name = pk::rt::gemm_isa_name(GetParam());
  const pk::rt::gemm_detail::Tile Tile =
      pk::rt::gemm_detail::microKernel<float>(GetParam()).Shape;
  const GemmBlocking Small = {2 * Tile.MR, 32, 2 * Tile.NR};
  unsigned Seed = 500;
  struct Case {
    int64_t Batch, M, N, K;
    bool Blocked;
  };
  const Case Cases[] = {
      {1, 1, 1, 1, false},      {1, 1, 130, 65, false},  {2, 7, 17, 129, false},
      {1, 32, 65, 9, false},    {1, 33, 129, 65, false}, {2, 65, 17, 127, true},
      {1, 600, 70, 200, false}, {1, 3, 0, 5, false},     {1, 5, 7, 0, false}};
  for (const Case &Cs : Cases)
    for (bool TransB : {true, false})
      for (bool Strided : {false, true})
        for (bool Threaded : {false, true}) {
          Problem<float> P = makeProblem<float>(Cs.Batch, Cs.M, Cs.N, Cs.K,
                                                TransB, false, Seed++);
          Problem<float> Q = makeProblem<float>(Cs.Batch, Cs.M, Cs.N, Cs.K,
                                                TransB, false, Seed++);
          Q.A = P.A; // the same left operand
          GemmOptions Opt;
          Opt.Threaded = Threaded;
          if (Cs.Blocked)
            Opt.Blocking = Small;
          const std::vector<float> C1 = run(P, Opt, nullptr, Strided);
          const std::vector<float> C2 = run(Q, Opt, nullptr, Strided);
          Opt.AUnitK = true;
          Opt.BUnitK = Opt.B2UnitK = TransB;
          const float Unset = std::numeric_limits<float>::max();
          std::vector<float> D1(C1.size(), Unset), D2(C2.size(), Unset);
          int64_t Count = 0;
          auto E = [&](int64_t Bi, int64_t I, int64_t J0, int64_t Len,
                       const float *Acc, const float *Acc2) {
            for (int64_t L = 0; L < Len; ++L) {
              const size_t At = size_t((Bi * Cs.M + I) * Cs.N + J0 + L);
              D1[At] = Acc[L];
              D2[At] = Acc2[L];
            }
#pragma omp atomic
            Count += Len;
          };
          const pk::rt::GemmShape S{Cs.Batch, Cs.M, Cs.N, Cs.K};
          if (Strided)
            pk::rt::gemm_dual<float>(S, Opt, P.stridedA(), P.strided(),
                                     Q.strided(), E);
          else
            pk::rt::gemm_dual<float>(
                S, Opt,
                [&](int64_t Bi, int64_t I, int64_t K) { return P.a(Bi, I, K); },
                [&](int64_t Bi, int64_t K, int64_t J) { return P.b(Bi, K, J); },
                [&](int64_t Bi, int64_t K, int64_t J) { return Q.b(Bi, K, J); },
                E);
          const std::string What =
              Name + " dual " + shapeName(Cs.Batch, Cs.M, Cs.N, Cs.K, TransB) +
              (Strided ? " in place" : " lambdas") +
              (Threaded ? " threaded" : "") +
              (Cs.Blocked ? " small blocking" : "");
          EXPECT_EQ(Count, Cs.Batch * Cs.M * Cs.N) << What;
          EXPECT_EQ(D1, C1) << What << ": first product";
          EXPECT_EQ(D2, C2) << What << ": second product";
          if (countOutside(P, D1, What) + countOutside(Q, D2, What))
            return;
        }
  // A broadcast second weight (one row, stride 0 along n) beside a full
  // one, in place: the GEMV path and the packed one.
  for (int64_t M : {3, 40}) {
    Problem<float> P = makeProblem<float>(1, M, 33, 65, true, false, 21);
    Problem<float> Q = makeProblem<float>(1, M, 1, 65, true, false, 22);
    Q.A = P.A;
    std::vector<float> D1(size_t(M * 33)), D2(size_t(M * 33));
    GemmOptions Opt;
    Opt.BUnitK = Opt.B2UnitK = true;
    pk::rt::gemm_dual<float>({1, M, 33, 65}, Opt, P.stridedA(), P.strided(),
                             pk::rt::StridedB<float>{Q.B.data(), 0, 1, 0},
                             [&](int64_t, int64_t I, int64_t J0, int64_t Len,
                                 const float *Acc, const float *Acc2) {
                               for (int64_t L = 0; L < Len; ++L) {
                                 D1[size_t(I * 33 + J0 + L)] = Acc[L];
                                 D2[size_t(I * 33 + J0 + L)] = Acc2[L];
                               }
                             });
    const std::vector<float> Row = run(Q, GemmOptions{}, nullptr, true);
    for (int64_t I = 0; I < M; ++I)
      for (int64_t J = 0; J < 33; ++J)
        ASSERT_EQ(D2[size_t(I * 33 + J)], Row[size_t(I)])
            << Name << " broadcast B2, M = " << M << " at " << I << "," << J;
    EXPECT_EQ(countOutside(P, D1, Name + " beside a broadcast B2"), 0);
  }
  // int8 weights with group scales, both read in place by the GEMV kernels
  // (and packed at M = 40): exact data, so the double reference is exact.
  std::mt19937 G(17);
  std::uniform_int_distribution<int> Qd(-127, 127), X(-8, 8), Ex(-8, 0);
  for (int64_t M : {1, 5, 40}) {
    const int64_t N = 70, Ng = 3, Gs = 32, K = Ng * Gs;
    std::vector<int8_t> W1(size_t(N * K)), W2(size_t(N * K));
    std::vector<float> S1(size_t(N * Ng)), S2(size_t(N * Ng)), A(size_t(M * K));
    for (auto *W : {&W1, &W2})
      for (auto &V : *W)
        V = int8_t(Qd(G));
    for (auto *Sc : {&S1, &S2})
      for (auto &V : *Sc)
        V = std::ldexp(1.0f, Ex(G));
    for (auto &V : A)
      V = float(X(G));
    GemmOptions Opt;
    Opt.BUnitK = Opt.B2UnitK = true;
    std::vector<float> D1(size_t(M * N), -7.0f), D2(size_t(M * N), -7.0f);
    pk::rt::gemm_dual<float>(
        {1, M, N, K}, Opt,
        [&](int64_t, int64_t I, int64_t Kk) { return A[size_t(I * K + Kk)]; },
        pk::rt::GroupScaledB{W1.data(), 0, 1, K, S1.data(), 0, Ng, 1, Gs},
        pk::rt::GroupScaledB{W2.data(), 0, 1, K, S2.data(), 0, Ng, 1, Gs},
        [&](int64_t, int64_t I, int64_t J0, int64_t Len, const float *Acc,
            const float *Acc2) {
          for (int64_t L = 0; L < Len; ++L) {
            D1[size_t(I * N + J0 + L)] = Acc[L];
            D2[size_t(I * N + J0 + L)] = Acc2[L];
          }
        });
    for (int64_t I = 0; I < M; ++I)
      for (int64_t J = 0; J < N; ++J) {
        double Want1 = 0, Want2 = 0;
        for (int64_t Kk = 0; Kk < K; ++Kk) {
          const double Av = A[size_t(I * K + Kk)];
          Want1 += Av * W1[size_t(J * K + Kk)] * S1[size_t(J * Ng + Kk / Gs)];
          Want2 += Av * W2[size_t(J * K + Kk)] * S2[size_t(J * Ng + Kk / Gs)];
        }
        ASSERT_EQ(D1[size_t(I * N + J)], float(Want1))
            << Name << " int8 M=" << M;
        ASSERT_EQ(D2[size_t(I * N + J)], float(Want2))
            << Name << " int8 M=" << M;
      }
  }
}

TEST_P(GemmLevel, NanAndInfinity) {
  for (int64_t M : {3, 33}) // the GEMV path and the packed one
    for (bool Strided : {false, true})
      nanAndInfinity(M, Strided);
}

TEST_P(GemmLevel, ThreadCountDoesNotChangeBits) {
#ifdef _OPENMP
  GemmOptions Opt;
  Opt.Threaded = true;
  const int Saved = omp_get_max_threads();
  // 600: several row tiles, so B's packed block is kept across them; 50:
  // w's rows read in place (gemmWeightRows), split between the threads.
  for (int64_t M : {4, 30, 50, 131, 600})
    for (bool Strided : {false, true}) {
      Problem<float> P = makeProblem<float>(2, M, 1000, 400, true, false, 3);
      omp_set_num_threads(1);
      std::vector<float> One = run(P, Opt, nullptr, Strided);
      omp_set_num_threads(2);
      std::vector<float> Two = run(P, Opt, nullptr, Strided);
      EXPECT_EQ(One, Two) << "M = " << M << (Strided ? ", strided B" : "");
    }
  // Few tiles, narrow columns: splitting the tiles between two threads must
  // end (33 x 16 x 1000 looped forever with a micro-tile narrower in rows
  // than in columns: test/fuzz/regressions/gemm_tile_split_hang).
  for (auto [M, N] : {std::pair<int64_t, int64_t>{33, 16}, {33, 32}, {40, 24}})
    for (int64_t K : {600, 1000}) {
      Problem<float> P = makeProblem<float>(1, M, N, K, false, false, 4);
      omp_set_num_threads(1);
      std::vector<float> One = run(P, Opt, nullptr);
      omp_set_num_threads(2);
      std::vector<float> Two = run(P, Opt, nullptr);
      EXPECT_EQ(One, Two) << M << " x " << N << " x " << K;
    }
  omp_set_num_threads(Saved);
#else
  GTEST_SKIP() << "built without OpenMP";
#endif
}

INSTANTIATE_TEST_SUITE_P(Levels, GemmLevel,
                         ::testing::ValuesIn(pk::rt::kAllGemmIsas),
                         [](const ::testing::TestParamInfo<GemmIsa> &I) {
                           return std::string(pk::rt::gemm_isa_name(I.param));
                         });

// NaN and infinity propagate as in the exact sum: a NaN in row 4 of A makes
// row 4 of C NaN, a +inf in column 11 of B (A > 0) makes column 11 +inf.
void nanAndInfinity(int64_t M, bool Strided) {
  Problem<float> P = makeProblem<float>(1, M, 17, 33, true, false, 5);
  for (float &V : P.A)
    V = std::fabs(V) + 0.5f; // A > 0: an infinite b gives an infinite sum
  const int64_t NanRow = M / 2;
  P.A[size_t(NanRow * P.K + 7)] = std::numeric_limits<float>::quiet_NaN();
  P.B[size_t(11 * P.K + 3)] = std::numeric_limits<float>::infinity();
  std::vector<float> C = run(P, GemmOptions{}, nullptr, Strided);
  const std::string What = std::string("M = ") + std::to_string(M) +
                           (Strided ? ", strided B" : ", lambda B");
  for (int64_t I = 0; I < P.M; ++I)
    for (int64_t J = 0; J < P.N; ++J) {
      const float V = C[size_t(I * P.N + J)];
      if (I == NanRow)
        EXPECT_TRUE(std::isnan(V))
            << What << ": row " << NanRow << " has a NaN in A: c[.., " << J
            << "] = " << V;
      else if (J == 11)
        EXPECT_EQ(V, std::numeric_limits<float>::infinity())
            << What << ": column 11 has +inf in B: c[" << I << ", 11]";
      else
        EXPECT_TRUE(std::isfinite(V))
            << What << ": c[" << I << ", " << J << "]";
    }
}

// The bound is not vacuous: a product with one term dropped fails it.
TEST(GemmBound, DroppedTermFails) {
  Problem<float> P = makeProblem<float>(1, 8, 8, 1000, true, false, 9);
  // Term 500 is 1 in every dot product: as large as any of the others.
  for (int64_t I = 0; I < P.M; ++I)
    P.A[size_t(I * P.K + 500)] = 1;
  for (int64_t J = 0; J < P.N; ++J)
    P.B[size_t(J * P.K + 500)] = 1;
  std::vector<float> C = run(P, GemmOptions{}, nullptr);
  EXPECT_EQ(countOutside(P, C, "exact", true), 0);
  EXPECT_EQ(countOutside(P, C, "one term dropped", false, /*DropK=*/500),
            P.M * P.N)
      << "the tolerance accepts a product missing one of 1000 terms";
}

// How a threaded product cuts its tiles (AVX-512's 12 x 32 micro-tile and
// the blocks of a 2 MiB L2 here; the function takes them as arguments).
struct Split {
  int64_t RowTiles, ColumnTiles;
};
Split splitOf(int64_t Batch, int64_t M, int64_t N, int64_t Threads,
              int64_t Products = 1, int64_t MC = 1356, int64_t NC = 768,
              int64_t MR = 12, int64_t NR = 32) {
  using pk::rt::gemm_detail::balancedBlock;
  MC = balancedBlock(M, MC, MR);
  NC = balancedBlock(N, NC, NR);
  pk::rt::gemm_detail::splitForThreads(Batch, M, N, Products, Threads, MR, NR,
                                       MC, NC);
  return {(M + MC - 1) / MC, (N + NC - 1) / NC};
}

TEST(GemmThreadSplit, TheSmallerOperandIsPackedAgain) {
  // A weight [2048, 5632] behind 128 rows: six column blocks, the weight
  // read once (two row tiles read it twice: 1.65x slower on two threads).
  Split S = splitOf(1, 128, 2048, 2);
  EXPECT_EQ(S.RowTiles, 1);
  EXPECT_EQ(S.ColumnTiles, 6);
  // Square: rows, as before (columns pack as much and ran 8% slower).
  S = splitOf(1, 512, 512, 2);
  EXPECT_EQ(S.RowTiles, 3);
  EXPECT_EQ(S.ColumnTiles, 2);
  // The columns first while a thread has none of its own.
  S = splitOf(1, 4096, 768, 2);
  EXPECT_EQ(S.RowTiles, 4);
  EXPECT_EQ(S.ColumnTiles, 1);
  S = splitOf(1, 512, 768, 2);
  EXPECT_EQ(S.ColumnTiles, 2);
  EXPECT_EQ(S.RowTiles, 3);
  // Two weights behind the same rows (gemm_dual) weigh B's side twice: at
  // 120 x 512, once its columns are two blocks, one weight splits the rows
  // (4 x 120 + 512 is more than 3/4 of 2 x 120 + 2 x 512), two the columns
  // (4 x 120 + 2 x 512 against 2 x 120 + 4 x 512).
  S = splitOf(1, 120, 512, 2, /*Products=*/1);
  EXPECT_EQ(S.RowTiles, 2);
  EXPECT_EQ(S.ColumnTiles, 2);
  S = splitOf(1, 120, 512, 2, /*Products=*/2);
  EXPECT_EQ(S.RowTiles, 1);
  EXPECT_EQ(S.ColumnTiles, 4);
  // One thread: the serial blocks.
  S = splitOf(1, 128, 2048, 1);
  EXPECT_EQ(S.RowTiles, 1);
  EXPECT_EQ(S.ColumnTiles, 3);
}

TEST(GemmThreadSplit, EndsWithTilesForEveryThread) {
  for (int64_t Threads : {2, 3, 4, 7, 16})
    for (int64_t M : {1, 12, 13, 33, 128, 1000})
      for (int64_t N : {1, 16, 32, 33, 700, 5632})
        for (int64_t Batch : {1, 3}) {
          const Split S = splitOf(Batch, M, N, Threads);
          const int64_t Tiles = Batch * S.RowTiles * S.ColumnTiles;
          const bool MicroTiles =
              (S.RowTiles >= (M + 11) / 12) && (S.ColumnTiles >= (N + 31) / 32);
          // Two per thread, or every tile one micro-tile; then a multiple of
          // the threads, or many, or nothing left to split.
          EXPECT_TRUE(Tiles >= 2 * Threads || MicroTiles)
              << Batch << "x" << M << "x" << N << " on " << Threads;
          EXPECT_TRUE(Tiles % Threads == 0 || Tiles >= 8 * Threads ||
                      MicroTiles)
              << Batch << "x" << M << "x" << N << " on " << Threads;
        }
}

TEST(GemmIsaSelection, NamesAndPinning) {
  EXPECT_TRUE(pk::rt::gemm_isa_supported(GemmIsa::Baseline));
  const GemmIsa Saved = pk::rt::gemm_isa();
  EXPECT_TRUE(pk::rt::gemm_isa_supported(Saved));
  for (GemmIsa L : pk::rt::kAllGemmIsas) {
    EXPECT_EQ(pk::rt::set_gemm_isa(L), pk::rt::gemm_isa_supported(L));
    if (pk::rt::gemm_isa_supported(L)) {
      EXPECT_EQ(pk::rt::gemm_isa(), L);
    }
  }
  pk::rt::set_gemm_isa(Saved);
  std::printf("pk::rt::gemm: %s (PK_GEMM_ISA pins it)\n",
              pk::rt::gemm_isa_name(pk::rt::gemm_isa()));
}

} // namespace
