// The tiled CUDA matmul kernels of test/e2e/kernels/matmul_cases.cpp on the shim,
// against the compiled CPU kernels (themselves tested against eager in
// test/e2e/MatmulTest.cpp). Every tile variant of the launcher runs: the
// shim's SM count is set so that the launcher picks 128 x 128, 64 x 64 or
// 32 x 32 tiles. Shapes cover edges of every tile and K step (1, 3, 17, 65,
// 127, 129, 300; K = 0), batch broadcasting, transposed operands (the other
// staging order), epilogues and prologues, float64, and int32 (which runs
// as a row reduction, not as a gemm).
//
// Tolerance: |cpu - cuda| <= 1e-5 + 8e-6 K (inputs in [-1, 1]): both sum K
// float products, in different orders (each within ~K 2^-24 of the exact
// sum); float64 1e-13 + 1e-15 K; int32 exact. Every CUDA result is also
// compared with eager, within MatmulTest.cpp's eager tolerance
// (../e2e/MatmulBounds.h: 1e-5 + 4e-6 K for float, 1.9e-14 + 7.5e-15 K for
// double, int32 bit for bit). Attention: the bound per query row derived in
// MatmulBounds.h, CUDA against the CPU kernel, eager and a double reference.
#include "../e2e/MatmulBounds.h"
#include "common/sample.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <cuda_runtime.h>
#include <pk_shim/shim.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "matmul_cases.pk.h"

namespace eager {
#include "../e2e/kernels/matmul_cases.cpp"
}

void mm_nn(pk::In<float, 2> a, pk::In<float, 2> b, pk::Out<float, 2> c);
void mm_nt(pk::In<float, 2> a, pk::In<float, 2> bt, pk::Out<float, 2> c);
void mm_tn(pk::In<float, 2> at, pk::In<float, 2> b, pk::Out<float, 2> c);
void mm_epilogue(pk::In<float, 2> a, pk::In<float, 2> b, pk::In<float, 2> r,
                 pk::In<float, 1> bias, pk::Out<float, 2> c, float scale);
void mm_prologue(pk::In<float, 2> a, pk::In<float, 2> b, pk::In<float, 1> g,
                 pk::Out<float, 2> c);
void mm_accumulate(pk::InOut<float, 2> c, pk::In<float, 2> a,
                   pk::In<float, 2> b);
void bmm(pk::In<float, 3> a, pk::In<float, 3> b, pk::Out<float, 3> c);
void bmm_shared_a(pk::In<float, 2> a, pk::In<float, 3> b, pk::Out<float, 3> c);
void mm_f64(pk::In<double, 2> a, pk::In<double, 2> b, pk::Out<double, 2> c);
void mm_i32(pk::In<int32_t, 2> a, pk::In<int32_t, 2> b, pk::Out<int32_t, 2> c);
void attention_causal_heads(pk::In<float, 3> q, pk::In<float, 3> k,
                            pk::In<float, 3> v, pk::Out<float, 3> o,
                            float scale);
void attention_masked(pk::In<float, 2> q, pk::In<float, 2> k,
                      pk::In<float, 2> v, pk::In<float, 2> bias,
                      pk::Out<float, 2> o);

namespace {

void check(cudaError_t E, const char *What) {
  if (E != cudaSuccess)
    throw std::runtime_error(std::string(What) + ": " + cudaGetErrorString(E));
}

/// A device copy of a host vector (exactly its size: ASan sees the end).
template <class T> class Dev {
public:
  explicit Dev(const std::vector<T> &H) : N(H.size()) {
    if (N) {
      check(cudaMalloc(&P, N * sizeof(T)), "cudaMalloc");
      check(cudaMemcpy(P, H.data(), N * sizeof(T), cudaMemcpyHostToDevice),
            "cudaMemcpy");
    }
  }
  ~Dev() { cudaFree(P); }
  Dev(const Dev &) = delete;
  Dev &operator=(const Dev &) = delete;
  T *get() const { return P; }
  std::vector<T> host() const {
    check(cudaDeviceSynchronize(), "the kernel");
    std::vector<T> H(N);
    if (N)
      check(cudaMemcpy(H.data(), P, N * sizeof(T), cudaMemcpyDeviceToHost),
            "cudaMemcpy");
    return H;
  }

private:
  T *P = nullptr;
  size_t N;
};

template <class T>
void expectClose(const std::vector<T> &E, const std::vector<T> &C, int64_t K,
                 const std::string &What) {
  ASSERT_EQ(E.size(), C.size()) << What;
  double Tol = std::is_integral_v<T>      ? 0
               : std::is_same_v<T, float> ? 1e-5 + 8e-6 * double(K)
                                          : 1e-13 + 1e-15 * double(K);
  for (size_t I = 0; I < E.size(); ++I)
    if (!(std::fabs(double(E[I]) - double(C[I])) <= Tol)) {
      ADD_FAILURE() << What << ": element " << I << " of " << E.size()
                    << ": cpu " << double(E[I]) << ", cuda " << double(C[I])
                    << " (tolerance " << Tol << ")";
      return;
    }
}

/// CUDA against eager: MatmulTest.cpp's tolerance, bit for bit where it is
/// 0 (int32).
template <class T>
void expectNearEager(const std::vector<T> &E, const std::vector<T> &C,
                     int64_t K, const std::string &What) {
  ASSERT_EQ(E.size(), C.size()) << What;
  const double Tol = matmul_bounds::tolerance<T>(K);
  for (size_t I = 0; I < E.size(); ++I)
    if (Tol == 0 ? std::memcmp(&E[I], &C[I], sizeof(T)) != 0
                 : !(std::fabs(double(E[I]) - double(C[I])) <= Tol)) {
      ADD_FAILURE() << What << ": element " << I << " of " << E.size()
                    << ": eager " << double(E[I]) << ", cuda " << double(C[I])
                    << " (tolerance " << Tol << ")";
      return;
    }
}

/// Attention outputs [T, J] of one head: CUDA within the bound per row of
/// MatmulBounds.h of the CPU kernel, of eager and of the double reference.
void expectAttention(const attention_bound::Head<float> &H, const float *Cpu,
                     const float *Eager, const float *Cuda,
                     const std::string &What) {
  using namespace attention_bound;
  const std::vector<double> Tol = rowBounds(H), Ref = reference(H);
  for (int64_t R = 0; R < H.T; ++R) {
    const double Errors[] = {rowError(Cpu, Cuda, R, H.J),
                             rowError(Eager, Cuda, R, H.J),
                             rowError(Ref, Cuda, R, H.J)};
    const char *Names[] = {"the cpu kernel", "eager", "the reference"};
    for (int X = 0; X < 3; ++X)
      if (!(Errors[X] <= Tol[R])) {
        ADD_FAILURE() << What << " row " << R << ": cuda and " << Names[X]
                      << " differ by " << Errors[X] << " (tolerance "
                      << Tol[R] << ")";
        return;
      }
  }
}

std::vector<float> rnd(int64_t N, unsigned Seed) {
  return sample::random(N, Seed, -1, 1);
}

struct Shape {
  int64_t M, N, K;
};

#ifdef PK_SHIM_MATMUL_SMALL
const Shape Shapes[] = {{1, 1, 1}, {3, 17, 0}, {17, 65, 9}, {33, 5, 17}};
#else
const Shape Shapes[] = {{1, 1, 1},      {3, 17, 0},     {17, 65, 9},
                        {129, 127, 17}, {65, 129, 300}, {127, 1, 65},
                        {1, 129, 127}};
#endif

/// The launcher's tile choices: SM counts that make it take 128 x 128, then
/// 64 x 64, then 32 x 32 tiles for an M x N x batch product.
std::vector<std::pair<int, std::string>> tileChoices(int64_t M, int64_t N,
                                                     int64_t Batch = 1) {
  auto Tiles = [&](int64_t T) {
    return Batch * ((M + T - 1) / T) * ((N + T - 1) / T);
  };
  return {{1, "128x128"},
          {int(Tiles(128) + 1), "64x64"},
          {int(Tiles(64) + 1), "32x32"}};
}

class CudaMatmul : public ::testing::Test {
protected:
  void SetUp() override {
    int N = 0;
    if (cudaGetDeviceCount(&N) != cudaSuccess || N == 0)
      GTEST_SKIP() << "no CUDA device";
  }
  void TearDown() override {
    pk::shim::set_sm_count(0);
    pk::shim::set_schedule(pk::shim::Schedule::Forward);
    pk::shim::reset();
  }
};

/// Body(tag) once per tile choice, under the forward and a random schedule.
template <class F>
void forEachLaunch(int64_t M, int64_t N, int64_t Batch, const F &Body) {
  for (auto [SMs, Tile] : tileChoices(M, N, Batch))
    for (int Seed : {0, 1}) {
      pk::shim::set_sm_count(SMs);
      if (Seed)
        pk::shim::set_schedule(pk::shim::Schedule::Random, Seed);
      else
        pk::shim::set_schedule(pk::shim::Schedule::Forward);
      Body(Tile + (Seed ? " random" : " forward"));
    }
}

std::string dims(const Shape &S) {
  return "M=" + std::to_string(S.M) + " N=" + std::to_string(S.N) +
         " K=" + std::to_string(S.K);
}

TEST_F(CudaMatmul, Layouts) {
  for (const Shape &S : Shapes) {
    auto [M, N, K] = S;
    auto A = rnd(M * K, 1), B = rnd(K * N, 2);
    std::vector<float> AT(K * M), BT(N * K);
    for (int64_t I = 0; I < M; ++I)
      for (int64_t J = 0; J < K; ++J)
        AT[J * M + I] = A[I * K + J];
    for (int64_t I = 0; I < K; ++I)
      for (int64_t J = 0; J < N; ++J)
        BT[J * K + I] = B[I * N + J];
    std::vector<float> E(M * N), EE(M * N);
    mm_nn({A.data(), {M, K}}, {B.data(), {K, N}}, {E.data(), {M, N}});
    eager::mm_nn({A.data(), {M, K}}, {B.data(), {K, N}}, {EE.data(), {M, N}});
    forEachLaunch(M, N, 1, [&](const std::string &Tag) {
      Dev<float> DA(A), DB(B), DAT(AT), DBT(BT);
      Dev<float> C1(std::vector<float>(M * N, NAN)),
          C2(std::vector<float>(M * N, NAN)),
          C3(std::vector<float>(M * N, NAN));
      pk::cuda::mm_nn({DA.get(), {M, K}}, {DB.get(), {K, N}},
                      {C1.get(), {M, N}});
      pk::cuda::mm_nt({DA.get(), {M, K}}, {DBT.get(), {N, K}},
                      {C2.get(), {M, N}});
      pk::cuda::mm_tn({DAT.get(), {K, M}}, {DB.get(), {K, N}},
                      {C3.get(), {M, N}});
      const std::string W = dims(S) + " " + Tag;
      const std::vector<float> G1 = C1.host(), G2 = C2.host(), G3 = C3.host();
      expectClose(E, G1, K, "mm_nn " + W);
      expectClose(E, G2, K, "mm_nt " + W);
      expectClose(E, G3, K, "mm_tn " + W);
      expectNearEager(EE, G1, K, "mm_nn " + W);
      expectNearEager(EE, G2, K, "mm_nt " + W);
      expectNearEager(EE, G3, K, "mm_tn " + W);
    });
  }
}

TEST_F(CudaMatmul, EpiloguesProloguesAndAccumulate) {
  for (const Shape &S : Shapes) {
    auto [M, N, K] = S;
    auto A = rnd(M * K, 3), B = rnd(K * N, 4), R = rnd(M * N, 5),
         Bias = rnd(N, 6), G = rnd(K, 7);
    std::vector<float> E1(M * N), E2(M * N), E3 = R;
    mm_epilogue({A.data(), {M, K}}, {B.data(), {K, N}}, {R.data(), {M, N}},
                {Bias.data(), {N}}, {E1.data(), {M, N}}, 0.75f);
    mm_prologue({A.data(), {M, K}}, {B.data(), {K, N}}, {G.data(), {K}},
                {E2.data(), {M, N}});
    mm_accumulate({E3.data(), {M, N}}, {A.data(), {M, K}}, {B.data(), {K, N}});
    std::vector<float> EE1(M * N), EE2(M * N), EE3 = R;
    eager::mm_epilogue({A.data(), {M, K}}, {B.data(), {K, N}},
                       {R.data(), {M, N}}, {Bias.data(), {N}},
                       {EE1.data(), {M, N}}, 0.75f);
    eager::mm_prologue({A.data(), {M, K}}, {B.data(), {K, N}}, {G.data(), {K}},
                       {EE2.data(), {M, N}});
    eager::mm_accumulate({EE3.data(), {M, N}}, {A.data(), {M, K}},
                         {B.data(), {K, N}});
    forEachLaunch(M, N, 1, [&](const std::string &Tag) {
      Dev<float> DA(A), DB(B), DR(R), DBias(Bias), DG(G), C3(R);
      Dev<float> C1(std::vector<float>(M * N, NAN)),
          C2(std::vector<float>(M * N, NAN));
      pk::cuda::mm_epilogue({DA.get(), {M, K}}, {DB.get(), {K, N}},
                            {DR.get(), {M, N}}, {DBias.get(), {N}},
                            {C1.get(), {M, N}}, 0.75f);
      pk::cuda::mm_prologue({DA.get(), {M, K}}, {DB.get(), {K, N}},
                            {DG.get(), {K}}, {C2.get(), {M, N}});
      pk::cuda::mm_accumulate({C3.get(), {M, N}}, {DA.get(), {M, K}},
                              {DB.get(), {K, N}});
      const std::string W = dims(S) + " " + Tag;
      const std::vector<float> G1 = C1.host(), G2 = C2.host(), G3 = C3.host();
      expectClose(E1, G1, K, "mm_epilogue " + W);
      expectClose(E2, G2, K, "mm_prologue " + W);
      expectClose(E3, G3, K, "mm_accumulate " + W);
      expectNearEager(EE1, G1, K, "mm_epilogue " + W);
      expectNearEager(EE2, G2, K, "mm_prologue " + W);
      expectNearEager(EE3, G3, K, "mm_accumulate " + W);
    });
  }
}

TEST_F(CudaMatmul, BatchedWithBroadcasting) {
  for (const Shape &S : {Shape{17, 33, 9}, Shape{65, 3, 20}}) {
    auto [M, N, K] = S;
    const int64_t Bt = 3;
    auto A = rnd(Bt * M * K, 8), B = rnd(Bt * K * N, 9), B1 = rnd(K * N, 10),
         A2 = rnd(M * K, 11);
    std::vector<float> E1(Bt * M * N), E2(Bt * M * N), E3(Bt * M * N);
    bmm({A.data(), {Bt, M, K}}, {B.data(), {Bt, K, N}},
        {E1.data(), {Bt, M, N}});
    bmm({A.data(), {Bt, M, K}}, {B1.data(), {1, K, N}},
        {E2.data(), {Bt, M, N}});
    bmm_shared_a({A2.data(), {M, K}}, {B.data(), {Bt, K, N}},
                 {E3.data(), {Bt, M, N}});
    std::vector<float> EE1(Bt * M * N), EE2(Bt * M * N), EE3(Bt * M * N);
    eager::bmm({A.data(), {Bt, M, K}}, {B.data(), {Bt, K, N}},
               {EE1.data(), {Bt, M, N}});
    eager::bmm({A.data(), {Bt, M, K}}, {B1.data(), {1, K, N}},
               {EE2.data(), {Bt, M, N}});
    eager::bmm_shared_a({A2.data(), {M, K}}, {B.data(), {Bt, K, N}},
                        {EE3.data(), {Bt, M, N}});
    forEachLaunch(M, N, Bt, [&](const std::string &Tag) {
      Dev<float> DA(A), DB(B), DB1(B1), DA2(A2);
      Dev<float> C1(std::vector<float>(Bt * M * N, NAN)),
          C2(std::vector<float>(Bt * M * N, NAN)),
          C3(std::vector<float>(Bt * M * N, NAN));
      pk::cuda::bmm({DA.get(), {Bt, M, K}}, {DB.get(), {Bt, K, N}},
                    {C1.get(), {Bt, M, N}});
      pk::cuda::bmm({DA.get(), {Bt, M, K}}, {DB1.get(), {1, K, N}},
                    {C2.get(), {Bt, M, N}});
      pk::cuda::bmm_shared_a({DA2.get(), {M, K}}, {DB.get(), {Bt, K, N}},
                             {C3.get(), {Bt, M, N}});
      const std::string W = dims(S) + " " + Tag;
      const std::vector<float> G1 = C1.host(), G2 = C2.host(), G3 = C3.host();
      expectClose(E1, G1, K, "bmm " + W);
      expectClose(E2, G2, K, "bmm (b broadcast) " + W);
      expectClose(E3, G3, K, "bmm_shared_a " + W);
      expectNearEager(EE1, G1, K, "bmm " + W);
      expectNearEager(EE2, G2, K, "bmm (b broadcast) " + W);
      expectNearEager(EE3, G3, K, "bmm_shared_a " + W);
    });
  }
}

TEST_F(CudaMatmul, Float64AndInt32) {
  for (const Shape &S : Shapes) {
    auto [M, N, K] = S;
    std::vector<double> A(M * K), B(K * N), E(M * N);
    std::vector<int32_t> IA(M * K), IB(K * N), IE(M * N);
    for (int64_t I = 0; I < M * K; ++I) {
      A[I] = std::sin(double(I));
      IA[I] = int32_t(I % 7) - 3;
    }
    for (int64_t I = 0; I < K * N; ++I) {
      B[I] = std::cos(double(I) * 0.3);
      IB[I] = int32_t(I % 5) - 2;
    }
    mm_f64({A.data(), {M, K}}, {B.data(), {K, N}}, {E.data(), {M, N}});
    mm_i32({IA.data(), {M, K}}, {IB.data(), {K, N}}, {IE.data(), {M, N}});
    std::vector<double> EE(M * N);
    std::vector<int32_t> IEE(M * N);
    eager::mm_f64({A.data(), {M, K}}, {B.data(), {K, N}}, {EE.data(), {M, N}});
    eager::mm_i32({IA.data(), {M, K}}, {IB.data(), {K, N}},
                  {IEE.data(), {M, N}});
    forEachLaunch(M, N, 1, [&](const std::string &Tag) {
      Dev<double> DA(A), DB(B), C(std::vector<double>(M * N, NAN));
      Dev<int32_t> DIA(IA), DIB(IB), IC(std::vector<int32_t>(M * N, -7));
      pk::cuda::mm_f64({DA.get(), {M, K}}, {DB.get(), {K, N}},
                       {C.get(), {M, N}});
      pk::cuda::mm_i32({DIA.get(), {M, K}}, {DIB.get(), {K, N}},
                       {IC.get(), {M, N}});
      const std::string W = dims(S) + " " + Tag;
      const std::vector<double> G = C.host();
      const std::vector<int32_t> IG = IC.host();
      expectClose(E, G, K, "mm_f64 " + W);
      expectClose(IE, IG, K, "mm_i32 " + W);
      expectNearEager(EE, G, K, "mm_f64 " + W);
      expectNearEager(IEE, IG, K, "mm_i32 " + W);
    });
  }
}

// Attention: a warp per query row; J past 32 x kCols (256) runs in chunks.
// The bound per row of MatmulBounds.h against the CPU kernel, eager and the
// double reference.
TEST_F(CudaMatmul, Attention) {
#ifdef PK_SHIM_MATMUL_SMALL
  const int64_t Ts[] = {1, 9}, Ds[] = {1, 33}, Js[] = {1, 33};
#else
  const int64_t Ts[] = {1, 9, 40}, Ds[] = {1, 8, 33}, Js[] = {1, 31, 70, 300};
#endif
  for (int64_t T : Ts)
    for (int64_t D : Ds)
      for (int64_t J : Js) {
        const int64_t H = 2, S2 = T + 3;
        auto Q = rnd(H * T * D, 41), K = rnd(H * T * D, 42),
             V = rnd(H * T * J, 43), K2 = rnd(S2 * D, 44),
             V2 = rnd(S2 * J, 45), Bias = rnd(T * S2, 46);
        for (int64_t I = 1; I < T * S2; I += 4)
          Bias[I] = -INFINITY;
        std::vector<float> E1(H * T * J), E2(T * J);
        attention_causal_heads({Q.data(), {H, T, D}}, {K.data(), {H, T, D}},
                               {V.data(), {H, T, J}}, {E1.data(), {H, T, J}},
                               0.125f);
        attention_masked({Q.data(), {T, D}}, {K2.data(), {S2, D}},
                         {V2.data(), {S2, J}}, {Bias.data(), {T, S2}},
                         {E2.data(), {T, J}});
        std::vector<float> EE1(H * T * J), EE2(T * J);
        eager::attention_causal_heads(
            {Q.data(), {H, T, D}}, {K.data(), {H, T, D}}, {V.data(), {H, T, J}},
            {EE1.data(), {H, T, J}}, 0.125f);
        eager::attention_masked({Q.data(), {T, D}}, {K2.data(), {S2, D}},
                                {V2.data(), {S2, J}}, {Bias.data(), {T, S2}},
                                {EE2.data(), {T, J}});
        std::string W = "T=" + std::to_string(T) + " d=" + std::to_string(D) +
                        " j=" + std::to_string(J);
        for (int Seed : {0, 1}) {
          pk::shim::set_schedule(Seed ? pk::shim::Schedule::Random
                                      : pk::shim::Schedule::Forward,
                                 Seed);
          Dev<float> DQ(Q), DK(K), DV(V), DK2(K2), DV2(V2), DB(Bias);
          Dev<float> O1(std::vector<float>(H * T * J, NAN)),
              O2(std::vector<float>(T * J, NAN));
          pk::cuda::attention_causal_heads(
              {DQ.get(), {H, T, D}}, {DK.get(), {H, T, D}},
              {DV.get(), {H, T, J}}, {O1.get(), {H, T, J}}, 0.125f);
          pk::cuda::attention_masked({DQ.get(), {T, D}}, {DK2.get(), {S2, D}},
                                     {DV2.get(), {S2, J}},
                                     {DB.get(), {T, S2}}, {O2.get(), {T, J}});
          const std::vector<float> G1 = O1.host(), G2 = O2.host();
          for (int64_t Hd = 0; Hd < H; ++Hd)
            expectAttention({Q.data() + Hd * T * D, K.data() + Hd * T * D,
                             V.data() + Hd * T * J, nullptr, T, T, D, J, 0.125,
                             true},
                            E1.data() + Hd * T * J, EE1.data() + Hd * T * J,
                            G1.data() + Hd * T * J,
                            "attention_causal_heads " + W + " head " +
                                std::to_string(Hd));
          expectAttention({Q.data(), K2.data(), V2.data(), Bias.data(), T, S2, D,
                           J, 0.5, false},
                          E2.data(), EE2.data(), G2.data(),
                          "attention_masked " + W);
        }
      }
}

TEST_F(CudaMatmul, ShapeErrorBeforeAnyLaunch) {
  std::vector<float> A(6, 1), B(12, 1);
  Dev<float> DA(A), DB(B), C(std::vector<float>(8, 7.0f));
  const uint64_t Before = pk::shim::stats().Launches;
  EXPECT_THROW(pk::cuda::mm_nn({DA.get(), {2, 3}}, {DB.get(), {4, 3}},
                               {C.get(), {2, 4}}),
               pk::ShapeError);
  EXPECT_EQ(pk::shim::stats().Launches, Before);
  for (float V : C.host())
    EXPECT_EQ(V, 7.0f);
}

} // namespace
