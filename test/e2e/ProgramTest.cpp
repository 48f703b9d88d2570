// Whole programs: kernels whose values pkc keeps in pk-managed buffers
// between fused groups (test/e2e/kernels/programs.cpp and the samples mlp,
// swiglu_mlp, rmsnorm_linear, attention_probs, layernorm_backward), eager vs
// compiled over shapes with 0, 1, primes and the tails of the gemm tiles.
//
// Exact data: where a kernel is only products and sums, the inputs are
// multiples of 1/8 in [-1, 1], so every product is a multiple of 1/64 (or
// 1/512 for a product of a product) and every partial sum of at most 129 of
// them (or 129 * 129) needs fewer than 24 bits: float sums are exact in any
// order, and compiled must equal eager bit for bit. Elsewhere the tolerance
// is derived next to the test.
#include "common/sample.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <tuple>

namespace eager {
#include "kernels/programs.cpp"
}

void chain(pk::In<float, 2> a, pk::In<float, 2> b, pk::In<float, 2> c,
           pk::Out<float, 2> o);
void chain_keep_hidden(pk::In<float, 2> a, pk::In<float, 2> w1,
                       pk::In<float, 2> w2, pk::Out<float, 2> h,
                       pk::Out<float, 2> o);
void softmax_of_scores(pk::In<float, 2> q, pk::In<float, 2> k,
                       pk::Out<float, 2> p);
void column_sums_of_product(pk::In<float, 2> a, pk::In<float, 2> b,
                            pk::Out<float, 1> o);
void transposed_product(pk::In<float, 2> a, pk::In<float, 2> b,
                        pk::Out<float, 2> o);
void product_plus_batch(pk::In<float, 2> a, pk::In<float, 2> b,
                        pk::In<float, 3> z, pk::Out<float, 3> o);
void product_plus_column_mean(pk::In<float, 2> a, pk::In<float, 2> b,
                              pk::In<float, 2> c, pk::Out<float, 2> o);
void centered_column_sums(pk::In<float, 2> x, pk::Out<float, 1> o);
void row_sums_broadcast(pk::In<float, 2> x, pk::Out<float, 2> o);
void cycle(pk::InOut<float, 2> c, pk::InOut<float, 2> b, pk::In<float, 2> a);
void three_layers(pk::In<float, 2> x, pk::In<float, 2> w1, pk::In<float, 2> w2,
                  pk::In<float, 2> w3, pk::Out<float, 2> y);
void llama_layer(pk::In<float, 2> x, pk::In<float, 1> g1, pk::In<float, 2> wq,
                 pk::In<float, 2> wk, pk::In<float, 2> wv, pk::In<float, 2> wo,
                 pk::In<float, 1> g2, pk::In<float, 2> wg, pk::In<float, 2> wu,
                 pk::In<float, 2> wd, pk::Out<float, 2> y, float scale);
void centered_costly_linear(pk::In<float, 2> x, pk::In<float, 2> w,
                            pk::Out<float, 2> y);
void centered_exp_linear(pk::In<float, 2> x, pk::In<float, 2> w,
                         pk::Out<float, 2> y);
void product_then_stats(pk::In<float, 2> x, pk::In<float, 2> w,
                        pk::Out<float, 2> y, pk::Out<float, 1> mean_out,
                        pk::Out<float, 1> max_out);

// Every allocation through operator new (the workspace arenas and the gemm
// panels use it) is counted while Counting is set.
namespace {
std::atomic<bool> Counting{false};
std::atomic<long> Allocations{0};
} // namespace
void *operator new(std::size_t N) {
  if (Counting)
    ++Allocations;
  if (void *P = std::malloc(N ? N : 1))
    return P;
  throw std::bad_alloc();
}
void *operator new(std::size_t N, std::align_val_t A) {
  if (Counting)
    ++Allocations;
  size_t Al = static_cast<size_t>(A);
  if (void *P = std::aligned_alloc(Al, (N + Al - 1) / Al * Al))
    return P;
  throw std::bad_alloc();
}
void operator delete(void *P) noexcept { std::free(P); }
void operator delete(void *P, std::size_t) noexcept { std::free(P); }
void operator delete(void *P, std::align_val_t) noexcept { std::free(P); }
void operator delete(void *P, std::size_t, std::align_val_t) noexcept {
  std::free(P);
}

namespace {

const int64_t Shapes[] = {0, 1, 3, 17, 65, 129};

/// Multiples of 1/8 in [-1, 1] (see the top of the file).
std::vector<float> grid(int64_t N, unsigned Seed) {
  std::vector<float> V = sample::random(N, Seed, -1, 1);
  for (float &X : V)
    X = std::round(X * 8) / 8;
  return V;
}

std::vector<float> poisoned(int64_t N) {
  return std::vector<float>(N, std::nanf(""));
}

/// Bit for bit (so -0.0 and 0.0 differ, NaN only matches NaN).
void expectSame(const std::vector<float> &E, const std::vector<float> &C,
                const std::string &What) {
  ASSERT_EQ(E.size(), C.size()) << What;
  for (size_t I = 0; I < E.size(); ++I)
    if (std::memcmp(&E[I], &C[I], sizeof(float)) != 0) {
      ADD_FAILURE() << What << " element " << I << " of " << E.size()
                    << ": eager " << E[I] << " compiled " << C[I];
      return;
    }
}

void expectClose(const std::vector<float> &E, const std::vector<float> &C,
                 double Rtol, double Atol, const std::string &What) {
  ASSERT_EQ(E.size(), C.size()) << What;
  for (size_t I = 0; I < E.size(); ++I)
    if (!(std::fabs(double(E[I]) - double(C[I])) <=
          Atol + Rtol * std::fabs(double(E[I])))) {
      ADD_FAILURE() << What << " element " << I << " of " << E.size()
                    << ": eager " << E[I] << " compiled " << C[I] << " (rtol "
                    << Rtol << ", atol " << Atol << ")";
      return;
    }
}

std::string dims(std::initializer_list<int64_t> D) {
  std::string S;
  for (int64_t X : D)
    S += (S.empty() ? "" : "x") + std::to_string(X);
  return S;
}

TEST(Program, MatmulOfAMatmulIsExact) {
  for (int64_t M : Shapes)
    for (int64_t K : {0, 1, 17, 129})
      for (int64_t J : {1, 3, 65})
        for (int64_t N : {0, 1, 17, 129}) {
          auto A = grid(M * K, 1), B = grid(K * J, 2), C = grid(J * N, 3);
          std::vector<float> E(M * N), O = poisoned(M * N);
          eager::chain({A.data(), {M, K}}, {B.data(), {K, J}},
                       {C.data(), {J, N}}, {E.data(), {M, N}});
          chain({A.data(), {M, K}}, {B.data(), {K, J}}, {C.data(), {J, N}},
                {O.data(), {M, N}});
          expectSame(E, O, "chain " + dims({M, K, J, N}));
        }
}

TEST(Program, TheHiddenActivationIsStoredToo) {
  for (int64_t M : Shapes)
    for (int64_t F : {1, 17, 129}) {
      const int64_t D = 65;
      auto A = grid(M * D, 4), W1 = grid(F * D, 5), W2 = grid(D * F, 6);
      std::vector<float> EH(M * F), EO(M * D), H = poisoned(M * F),
                                               O = poisoned(M * D);
      eager::chain_keep_hidden({A.data(), {M, D}}, {W1.data(), {F, D}},
                               {W2.data(), {D, F}}, {EH.data(), {M, F}},
                               {EO.data(), {M, D}});
      chain_keep_hidden({A.data(), {M, D}}, {W1.data(), {F, D}},
                        {W2.data(), {D, F}}, {H.data(), {M, F}},
                        {O.data(), {M, D}});
      expectSame(EH, H, "h " + dims({M, F}));
      expectSame(EO, O, "o " + dims({M, F}));
    }
}

// act_buf's home is h (docs/design.md, "An output ref as a temporary's
// home"): with h of act's extents the first product writes act once, into
// h, and the second reads it there; h broadcasting act's one row (or
// column) keeps the two apart, each written by a nest of its own.
TEST(Program, TheHiddenActivationBroadcastIntoItsRefIsKeptApart) {
  const int64_t D = 17, F = 9;
  for (auto [M, HM, HF, OM] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t>{1, 3, F, 2},
        {1, 1, F, 4},
        {4, 4, F, 4},
        {0, 0, F, 0}}) {
    auto A = grid(M * D, 14), W1 = grid(F * D, 15), W2 = grid(D * F, 16);
    std::vector<float> EH(HM * HF), EO(OM * D), H = poisoned(HM * HF),
                                                O = poisoned(OM * D);
    eager::chain_keep_hidden({A.data(), {M, D}}, {W1.data(), {F, D}},
                             {W2.data(), {D, F}}, {EH.data(), {HM, HF}},
                             {EO.data(), {OM, D}});
    chain_keep_hidden({A.data(), {M, D}}, {W1.data(), {F, D}},
                      {W2.data(), {D, F}}, {H.data(), {HM, HF}},
                      {O.data(), {OM, D}});
    expectSame(EH, H, "h " + dims({M, HM, HF}));
    expectSame(EO, O, "o " + dims({M, OM}));
  }
}

TEST(Program, ProductsSeenThroughOtherFormsAreExact) {
  for (int64_t M : Shapes)
    for (int64_t K : {0, 1, 17})
      for (int64_t N : {1, 3, 65, 129}) {
        auto A = grid(M * K, 7), B = grid(K * N, 8);
        std::string D = dims({M, K, N});
        {
          std::vector<float> E(N), O = poisoned(N);
          eager::column_sums_of_product({A.data(), {M, K}}, {B.data(), {K, N}},
                                        E);
          column_sums_of_product({A.data(), {M, K}}, {B.data(), {K, N}}, O);
          expectSame(E, O, "column_sums_of_product " + D);
        }
        {
          std::vector<float> E(N * M), O = poisoned(N * M);
          eager::transposed_product({A.data(), {M, K}}, {B.data(), {K, N}},
                                    {E.data(), {N, M}});
          transposed_product({A.data(), {M, K}}, {B.data(), {K, N}},
                             {O.data(), {N, M}});
          expectSame(E, O, "transposed_product " + D);
        }
        {
          const int64_t Bt = 3;
          auto Z = grid(Bt * M * N, 9);
          std::vector<float> E(Bt * M * N), O = poisoned(Bt * M * N);
          eager::product_plus_batch({A.data(), {M, K}}, {B.data(), {K, N}},
                                    {Z.data(), {Bt, M, N}},
                                    {E.data(), {Bt, M, N}});
          product_plus_batch({A.data(), {M, K}}, {B.data(), {K, N}},
                             {Z.data(), {Bt, M, N}}, {O.data(), {Bt, M, N}});
          expectSame(E, O, "product_plus_batch " + D);
        }
      }
}

TEST(Program, ReductionsOfOtherFormsAgree) {
  for (int64_t M : Shapes)
    for (int64_t N : {1, 3, 17, 129}) {
      std::string D = dims({M, N});
      auto X = grid(M * N, 10);
      {
        std::vector<float> E(M * 5), O = poisoned(M * 5);
        // [M] row sums broadcast into [5, M]: exact.
        eager::row_sums_broadcast({X.data(), {M, N}}, {E.data(), {5, M}});
        row_sums_broadcast({X.data(), {M, N}}, {O.data(), {5, M}});
        expectSame(E, O, "row_sums_broadcast " + D);
      }
      {
        // Row means (one rounding of an exact sum, eager in double) are
        // off by <= 2^-24 relative (<= 6e-8 absolute, |mean| <= 1); the
        // column sums of M of the centred values then differ by <= M *
        // 6e-8 plus their own float rounding (<= M * 2^-24 * 2).
        std::vector<float> E(N), O = poisoned(N);
        eager::centered_column_sums({X.data(), {M, N}}, E);
        centered_column_sums({X.data(), {M, N}}, O);
        expectClose(E, O, 0, 2e-7 * double(M) + 1e-7,
                    "centered_column_sums " + D);
      }
      {
        // The column mean of c ([K, N], K = 17) rounds once (<= 6e-8);
        // the product is exact.
        const int64_t K = 17;
        auto A = grid(M * K, 11), B = grid(K * N, 12), C = grid(K * N, 13);
        std::vector<float> E(M * N), O = poisoned(M * N);
        eager::product_plus_column_mean({A.data(), {M, K}}, {B.data(), {K, N}},
                                        {C.data(), {K, N}}, {E.data(), {M, N}});
        product_plus_column_mean({A.data(), {M, K}}, {B.data(), {K, N}},
                                 {C.data(), {K, N}}, {O.data(), {M, N}});
        expectClose(E, O, 1e-7, 1e-7, "product_plus_column_mean " + D);
      }
    }
}

// The two sides of the cost model: centered_costly_linear keeps its operand
// (tanh(c) * exp(c)) in a buffer, centered_exp_linear the row means, its
// prologue computing exp(c) (test/lit/matmul/materialized.test).
// Tolerance: x in [-1, 1], so c in [-2, 2] and |a| <= e^2 < 7.4; pk::vm's
// exp and tanh are within 4 ulp of libm (docs/vmath.md), so a(c) is off by
// <= 8 ulp of 7.4 (3.8e-6) plus |a'| <= 15 times the mean's rounding
// (6e-8): 5e-6 per element, K of them in a sum with |w| <= 1, and the sum's
// own rounding, <= K * 2^-24 * sum |a w| <= 4.5e-7 K^2.
TEST(Program, ChainsAboveARowStatisticFeedAProduct) {
  for (int64_t M : Shapes)
    for (int64_t K : {1, 17, 65})
      for (int64_t N : {1, 33, 129}) {
        auto X = grid(M * K, 17), W = grid(N * K, 18);
        const double Atol = 5e-6 * double(K) + 4.5e-7 * double(K * K);
        for (auto [Name, Eager, Compiled] :
             {std::tuple{"centered_costly_linear",
                         &eager::centered_costly_linear,
                         &centered_costly_linear},
              std::tuple{"centered_exp_linear", &eager::centered_exp_linear,
                         &centered_exp_linear}}) {
          std::vector<float> E(M * N), O = poisoned(M * N);
          Eager({X.data(), {M, K}}, {W.data(), {N, K}}, {E.data(), {M, N}});
          Compiled({X.data(), {M, K}}, {W.data(), {N, K}}, {O.data(), {M, N}});
          expectClose(E, O, 0, Atol, std::string(Name) + " " + dims({M, K, N}));
        }
      }
}

TEST(Program, StoredSoftmaxOfScores) {
  for (int64_t T : Shapes)
    for (int64_t S : {1, 3, 17, 129}) {
      const int64_t D = 17;
      auto Q = grid(T * D, 14), K = grid(S * D, 15);
      std::vector<float> E(T * S), O = poisoned(T * S);
      eager::softmax_of_scores({Q.data(), {T, D}}, {K.data(), {S, D}},
                               {E.data(), {T, S}});
      softmax_of_scores({Q.data(), {T, D}}, {K.data(), {S, D}},
                        {O.data(), {T, S}});
      // Scores are exact; exp differs by a few ulp (pk::vm::exp against
      // libm's) and the sum of S of them rounds in float: relative error
      // <= 4 ulp + S * 2^-24 on each probability (<= 1).
      expectClose(E, O, 0, 5e-7 + 6e-8 * double(S),
                  "softmax_of_scores " + dims({T, S}));
    }
}

TEST(Program, ACycleBetweenInOutRefsIsBrokenByACopy) {
  for (int64_t M : {0, 1, 17, 65})
    for (int64_t K : {1, 17}) {
      // c [M, K] = a [M, M'] b [M', K] with M' = M (so b + c_old has one
      // shape): b's update needs c's old contents after c is overwritten.
      auto A = grid(M * M, 16), B0 = grid(M * K, 17), C0 = grid(M * K, 18);
      auto EB = B0, EC = C0, CB = B0, CC = C0;
      eager::cycle({EC.data(), {M, K}}, {EB.data(), {M, K}},
                   {A.data(), {M, M}});
      cycle({CC.data(), {M, K}}, {CB.data(), {M, K}}, {A.data(), {M, M}});
      expectSame(EC, CC, "cycle c " + dims({M, K}));
      expectSame(EB, CB, "cycle b " + dims({M, K}));
    }
}

TEST(Program, ThreeLayers) {
  for (int64_t M : Shapes)
    for (int64_t H : {1, 17, 65}) {
      const int64_t D = 17;
      auto X = grid(M * D, 19), W1 = grid(D * H, 20), W2 = grid(H * H, 21),
           W3 = grid(H * D, 22);
      for (float &W : W2)
        W /= 8; // keeps tanh off its flat tails
      std::vector<float> E(M * D), O = poisoned(M * D);
      eager::three_layers({X.data(), {M, D}}, {W1.data(), {D, H}},
                          {W2.data(), {H, H}}, {W3.data(), {H, D}},
                          {E.data(), {M, D}});
      three_layers({X.data(), {M, D}}, {W1.data(), {D, H}}, {W2.data(), {H, H}},
                   {W3.data(), {H, D}}, {O.data(), {M, D}});
      // tanh (pk::vm against libm) differs by a few ulp: <= 5e-7 on
      // |h1| <= 1; h2's argument sums H of those times |w2| <= 1/8, h2
      // moves by <= H * 5e-7 / 8 + 5e-7, y by H times that (|w3| <= 1).
      double Errh2 = double(H) * 5e-7 / 8 + 5e-7;
      expectClose(E, O, 0, double(H) * Errh2 + 1e-6,
                  "three_layers " + dims({M, H}));
    }
}

// A whole layer (attention fused, nine buffers): eager vs compiled. The
// weights are multiples of 1/128 in [-1/16, 1/16]; after the norm
// ||h||_2 <= sqrt(D) (|g1| <= 1), so ||h||_1 <= D and |q|, |k|, |v| <= D/16
// <= 2.1 for D <= 33, and the scores |s| <= D * 2.1^2 / sqrt(D) < 26. Each
// stage adds a
// relative error of a few ulp per term (float sums in another order, pk::vm
// against libm): about 33 * 6e-8 = 2e-6 of the magnitudes it sums, which
// the softmax turns into <= 26 * 2e-6 = 5e-5 of its probabilities, and the
// projections, norm and MLP (sums of <= 40 terms of <= 1/16 of the value)
// pass on at most a few times over: 2e-3 absolute on outputs of magnitude
// about 1 is ten times that, and far below any wrong mask, residual or
// buffer (errors of 0.01 to 1).
TEST(Program, LlamaLayer) {
  for (int64_t T : {1, 2, 17, 65})
    for (auto [D, F] : {std::pair<int64_t, int64_t>{16, 40}, {33, 17}}) {
      auto W = [](int64_t N, unsigned Seed) {
        std::vector<float> V = grid(N, Seed);
        for (float &X : V)
          X /= 16;
        return V;
      };
      auto X = grid(T * D, 70), G1 = grid(D, 71), G2 = grid(D, 72);
      auto Wq = W(D * D, 73), Wk = W(D * D, 74), Wv = W(D * D, 75),
           Wo = W(D * D, 76), Wg = W(F * D, 77), Wu = W(F * D, 78),
           Wd = W(D * F, 79);
      const float Scale = 1.0f / std::sqrt(float(D));
      std::vector<float> E(T * D), O = poisoned(T * D);
      auto Call = [&](auto Kernel, std::vector<float> &Y) {
        Kernel({X.data(), {T, D}}, {G1.data(), {D}}, {Wq.data(), {D, D}},
               {Wk.data(), {D, D}}, {Wv.data(), {D, D}}, {Wo.data(), {D, D}},
               {G2.data(), {D}}, {Wg.data(), {F, D}}, {Wu.data(), {F, D}},
               {Wd.data(), {D, F}}, {Y.data(), {T, D}}, Scale);
      };
      Call(eager::llama_layer, E);
      Call(llama_layer, O);
      expectClose(E, O, 0, 2e-3, "llama_layer " + dims({T, D, F}));
    }
  // No query row: the max over an empty row of scores is a ShapeError in
  // both, and the compiled one raises it before writing.
  std::vector<float> X, G(8, 1), Wd(64, 0), Y;
  auto Zero = [&](auto Kernel) {
    Kernel({X.data(), {0, 8}}, {G.data(), {8}}, {Wd.data(), {8, 8}},
           {Wd.data(), {8, 8}}, {Wd.data(), {8, 8}}, {Wd.data(), {8, 8}},
           {G.data(), {8}}, {Wd.data(), {8, 8}}, {Wd.data(), {8, 8}},
           {Wd.data(), {8, 8}}, {Y.data(), {0, 8}}, 1.0f);
  };
  EXPECT_THROW(Zero(eager::llama_layer), pk::ShapeError);
  EXPECT_THROW(Zero(llama_layer), pk::ShapeError);
}

TEST(Program, ShapeErrorsComeBeforeAnyWrite) {
  auto A = grid(6, 23), B = grid(6, 24), C = grid(6, 25);
  std::vector<float> O(4, 7.0f);
  // b is [3, 2] but c's rows are 3: the second product's inner extents.
  EXPECT_THROW(chain({A.data(), {2, 3}}, {B.data(), {3, 2}}, {C.data(), {3, 2}},
                     {O.data(), {2, 2}}),
               pk::ShapeError);
  for (float V : O)
    EXPECT_EQ(V, 7.0f);
}

TEST(Program, AReductionGroupWhoseOutputsDifferRunsUnfused) {
  auto X = grid(4, 29), W = grid(4 * 5, 30);
  // Eager broadcasts x's one row into mean_out's three; the compiled
  // statistics group fuses its two outputs when their rows are equal and
  // otherwise runs one loop per output (the step's alternative).
  std::vector<float> Y(5, 7.0f), Mean(3, 7.0f), Max(1, 7.0f);
  std::vector<float> EagerY(5), EagerMean(3), EagerMax(1);
  product_then_stats({X.data(), {1, 4}}, {W.data(), {4, 5}},
                     {Y.data(), {1, 5}}, {Mean.data(), {3}}, {Max.data(), {1}});
  eager::product_then_stats({X.data(), {1, 4}}, {W.data(), {4, 5}},
                            {EagerY.data(), {1, 5}}, {EagerMean.data(), {3}},
                            {EagerMax.data(), {1}});
  EXPECT_EQ(Y, EagerY);
  EXPECT_EQ(Mean, EagerMean);
  EXPECT_EQ(Max, EagerMax);
  EXPECT_EQ(Mean[0], Mean[2]);
  // Equal rows run fused, with the same results.
  std::vector<float> Mean1(1);
  product_then_stats({X.data(), {1, 4}}, {W.data(), {4, 5}}, {Y.data(), {1, 5}},
                     {Mean1.data(), {1}}, {Max.data(), {1}});
  EXPECT_EQ(Mean1[0], EagerMean[0]);
  EXPECT_EQ(Max, EagerMax);
}

TEST(Program, AStepThatCannotRunFailsBeforeEarlierStepsWrite) {
  auto X = grid(8, 29), W = grid(4 * 5, 30);
  // x has two rows, mean_out three: NumPy cannot broadcast 2 into 3. The
  // statistics step's check is at entry, so the product (the step before
  // it) writes nothing.
  std::vector<float> Y(10, 7.0f), Mean(3, 7.0f), Max(2, 7.0f);
  try {
    product_then_stats({X.data(), {2, 4}}, {W.data(), {4, 5}},
                       {Y.data(), {2, 5}}, {Mean.data(), {3}},
                       {Max.data(), {2}});
    ADD_FAILURE() << "no pk::ShapeError";
  } catch (const pk::ShapeError &E) {
    EXPECT_NE(std::string(E.what()).find("product_then_stats"),
              std::string::npos)
        << E.what();
  }
  for (const std::vector<float> *V : {&Y, &Mean, &Max})
    for (float E : *V)
      EXPECT_EQ(E, 7.0f);
}

TEST(Program, RepeatedCallsAllocateNothing) {
  const int64_t M = 65, K = 129, J = 65, N = 129;
  auto A = grid(M * K, 26), B = grid(K * J, 27), C = grid(J * N, 28),
       Sq = grid(J * J, 29);
  std::vector<float> O(M * N);
  auto Call = [&] {
    chain({A.data(), {M, K}}, {B.data(), {K, J}}, {C.data(), {J, N}},
          {O.data(), {M, N}});
    // x [M, K], w1 [K, J], w2 [J, J], w3 [J, N]: three buffers' worth.
    three_layers({A.data(), {M, K}}, {B.data(), {K, J}}, {Sq.data(), {J, J}},
                 {C.data(), {J, N}}, {O.data(), {M, N}});
  };
  // The arenas reach their peak within two calls of each kernel.
  Call();
  Call();
  Allocations = 0;
  Counting = true;
  for (int I = 0; I < 10; ++I)
    Call();
  Counting = false;
  EXPECT_EQ(Allocations.load(), 0);
  // A kernel that needs no buffer still works beside the arena.
  EXPECT_GT(pk::rt::Workspace::arena_capacity(), 0u);
}

// A workspace that does not fit takes a block of its own; the arena's peak
// must count it, or each call moves only one more nesting level into the
// arena (a first call that overflowed three levels deep allocated 4, 3, 1,
// then 0 times). The peak is reached when the arena is next empty.
TEST(Workspace, NestedOverflowFitsFromTheSecondCall) {
  auto Nest = [] {
    pk::rt::Workspace Kernel(1 << 10);
    pk::rt::Workspace A(1 << 20);
    pk::rt::Workspace B(1 << 20);
    pk::rt::Workspace C(1 << 20);
    // The four blocks are distinct and writable.
    Kernel.data()[0] = A.data()[0] = B.data()[0] = C.data()[(1 << 20) - 1] = 1;
  };
  // A thread of its own, so that the arena starts empty.
  long Counts[3] = {};
  std::thread T([&] {
    for (long &Count : Counts) {
      Allocations = 0;
      Counting = true;
      Nest();
      Counting = false;
      Count = Allocations.load();
    }
  });
  T.join();
  EXPECT_EQ(Counts[0], 4);
  EXPECT_EQ(Counts[1], 1);
  EXPECT_EQ(Counts[2], 0);
}

TEST(Program, TwoThreadsCallOneKernelAtOnce) {
  const int64_t M = 65, K = 129, J = 17, N = 65;
  auto A1 = grid(M * K, 29), A2 = grid(M * K, 30), B = grid(K * J, 31),
       C = grid(J * N, 32);
  std::vector<float> E1(M * N), E2(M * N);
  eager::chain({A1.data(), {M, K}}, {B.data(), {K, J}}, {C.data(), {J, N}},
               {E1.data(), {M, N}});
  eager::chain({A2.data(), {M, K}}, {B.data(), {K, J}}, {C.data(), {J, N}},
               {E2.data(), {M, N}});
  std::vector<float> O1 = poisoned(M * N), O2 = poisoned(M * N);
  auto Run = [&](const std::vector<float> &A, std::vector<float> &O) {
    for (int I = 0; I < 20; ++I)
      chain({A.data(), {M, K}}, {B.data(), {K, J}}, {C.data(), {J, N}},
            {O.data(), {M, N}});
  };
  std::thread T1(Run, std::cref(A1), std::ref(O1));
  std::thread T2(Run, std::cref(A2), std::ref(O2));
  T1.join();
  T2.join();
  expectSame(E1, O1, "thread 1");
  expectSame(E2, O2, "thread 2");
}

} // namespace
