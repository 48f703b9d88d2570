// Differential test of every sample kernel in three versions: eager (the
// reference, <pk/pk.h>), compiled for the CPU (pkc's .pk.cpp) and the CUDA
// that pkc emits (.pk.cu, run through pk::cuda::<name> on device memory).
// The CUDA runs on the CPU through the shim (test/cuda_shim, every schedule
// below), or on a GPU when this file is built as pk-cuda-device-tests
// (-DPK_CUDA_DEVICE_TESTS=ON; then PK_CUDA_SHIM is not defined).
//
// Shapes: 0 rows, 1, small primes, D = 1000 and 1001, rows that are not a
// multiple of 8 nor of the block size, D not a multiple of 4, 1x4097, and a
// few up to ~1M elements (PK_SHIM_SHAPES_FULL); the ASan+UBSan build runs
// small odd shapes (PK_SHIM_SHAPES_SMALL), the TSan build grids of at most 8
// blocks (PK_SHIM_SHAPES_TSAN). On the shim each shape runs in the forward
// schedule and two random ones.
//
// Tolerances. Every comparison is |eager - other| <= 2 B per element, where
// B bounds the error of one float evaluation of the kernel against the exact
// result (the eager reference and the other version are each within B, so
// they are within 2 B of each other; the reference sums in double, so its
// error is smaller). u = 2^-24 is float's unit roundoff; an ulp is at most
// 2u relative. B is computed per element from the data:
//
// * Correctly rounded operations (+ - * / sqrt, IEEE in CUDA's default
//   -prec-div/-prec-sqrt and on the CPU): u relative each. nvcc contracts
//   a*b + c into one fma (one rounding fewer, but the product is then exact
//   while the reference rounded it), so a bound names the magnitude of every
//   term: fma `3u (|ab| + |o|)`, axpby `4u (|ax| + |by| + |y'|)`, adam_step
//   likewise plus the propagation through sqrt and the division.
//   broadcast_bias and relu_where (one addition, a select) are exact: B = 0.
// * Math functions: CUDA's expf, tanhf, erff, rsqrtf are within 2 ulp, logf
//   1 ulp (CUDA C++ Programming Guide, "Mathematical Functions"); the CPU's
//   pk::vm functions within 3 ulp (docs/vmath.md); libm within 1 ulp. One
//   budget F = 4 ulp = 8u covers each call. On the shim the device functions
//   are libm's, but the bounds hold for a GPU too.
// * gelu: z = k (x + c x^3) has no cancellation (6u), tanh adds F and its
//   derivative times z is below 0.45, 0.5 x (1 + t) adds two roundings:
//   B = 8u |x| + 4u |y|.
// * Reductions are summed in a different order (lanes, warps, blocks, maybe
//   atomics): a float sum of n terms in any order is within (n - 1) u sum|t|
//   of the exact sum (Higham, Accuracy and Stability, ch. 4). From that:
//   sum_all `(n + 1) u sum|x|`; column_mean `(T + 1) u mean|x| + u |m|`;
//   rmsnorm `|y| ((n + 2) u / 2 + F + 3u)` (positive terms: relative error of
//   the mean of squares (n + 2) u, halved by rsqrt); softmax `|y| ((n + 2) u +
//   2 (F + u max|x - m|))` (the exp of a rounded difference, the sum, the
//   division); logsumexp `(n + 2) u + F + u max|x - m| + F |log s| + u |out|`;
//   layernorm propagates the mean's error (n + 1) u mean|x| through x - mu,
//   the variance ((n + 3) u relative plus 2 mean|d| dmu) and rsqrt to each
//   output.
//   Such worst-case bounds grow with n (12% of the sum at n = 10^6) and would
//   hide a dropped or doubled partial. So sum_all, column_mean, rmsnorm and
//   add_rmsnorm run a second time on multiples of 1/8 (eighths()), whose sums
//   are exact in any order: then B has no n term (sum_all: B = 0).
//
// Then the entry guards: wrong shapes raise pk::ShapeError from the CUDA
// launcher before any launch (the output buffer keeps its contents).
#include "common/sample.h"
#include "oracle_dump.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace eager {
#include "adam_step/adam_step.cpp"
#include "add_rmsnorm/add_rmsnorm.cpp"
#include "axpby/axpby.cpp"
#include "broadcast_bias/broadcast_bias.cpp"
#include "causal_softmax/causal_softmax.cpp"
#include "column_mean/column_mean.cpp"
#include "fma/fma.cpp"
#include "gelu/gelu.cpp"
#include "layernorm/layernorm.cpp"
#include "logsumexp/logsumexp.cpp"
#include "relu_where/relu_where.cpp"
#include "rmsnorm/rmsnorm.cpp"
#include "softmax/softmax.cpp"
#include "sum_all/sum_all.cpp"
} // namespace eager

// The compiled CPU kernels (pk_add_kernels links their .pk.cpp).
#include "common/compiled.h"

// The shim's <cuda_runtime.h>, or CUDA's in pk-cuda-device-tests.
#include <cuda_runtime.h>
#ifdef PK_CUDA_SHIM
#include <pk_shim/shim.h>
#endif

// The CUDA launchers pk::cuda::<name>(refs over device memory..., stream).
#include "adam_step.pk.h"
#include "add_rmsnorm.pk.h"
#include "axpby.pk.h"
#include "broadcast_bias.pk.h"
#include "causal_softmax.pk.h"
#include "column_mean.pk.h"
#include "fma.pk.h"
#include "gelu.pk.h"
#include "layernorm.pk.h"
#include "logsumexp.pk.h"
#include "relu_where.pk.h"
#include "rmsnorm.pk.h"
#include "softmax.pk.h"
#include "sum_all.pk.h"

#define PK_SHIM_SHAPES_FULL 1
#define PK_SHIM_SHAPES_SMALL 2
#define PK_SHIM_SHAPES_TSAN 3
#ifndef PK_SHIM_SHAPES
#define PK_SHIM_SHAPES PK_SHIM_SHAPES_FULL
#endif

namespace {

using Shape2 = std::pair<int64_t, int64_t>;

#if PK_SHIM_SHAPES == PK_SHIM_SHAPES_FULL
const int64_t Sizes[] = {0, 1, 3, 17, 1000, 1001, 4097, 65537, 1000003};
// D = 7001 and 20011: the block-per-row kernels without shared memory.
const Shape2 Shapes[] = {{0, 5},    {1, 1},     {1, 7},      {3, 17},
                         {17, 3},   {5, 1000},  {4, 1001},   {1, 4097},
                         {33, 129}, {67, 250},  {300, 257},  {256, 1024},
                         {2, 7001}, {1, 20011}, {1000, 1000}};
#elif PK_SHIM_SHAPES == PK_SHIM_SHAPES_SMALL
const int64_t Sizes[] = {0, 1, 3, 17, 1001};
const Shape2 Shapes[] = {{0, 5},    {1, 1},    {3, 17},   {17, 3},   {5, 33},
                         {7, 1001}, {37, 129}, {2, 7001}, {1, 20011}};
#elif PK_SHIM_SHAPES == PK_SHIM_SHAPES_TSAN
// At most 2048 elements or 8 rows: at most 8 blocks (1x7001: a block per
// row without shared memory; blocks of 1024 threads make TSan too slow).
const int64_t Sizes[] = {1, 17, 1001, 2048};
const Shape2 Shapes[] = {{1, 1}, {3, 17}, {5, 129}, {8, 250}, {1, 7001}};
#else
#error "PK_SHIM_SHAPES: PK_SHIM_SHAPES_FULL, _SMALL or _TSAN"
#endif

/// Whether a column or full reduction runs on [T, D]: under TSan only up to
/// 2048 elements (their kernels use 512-thread blocks over many columns or
/// partials, and TSan slows down with every fiber it knows).
bool reduction_shape(int64_t T, int64_t D) {
  return PK_SHIM_SHAPES != PK_SHIM_SHAPES_TSAN || T * D <= 2048;
}

constexpr double U = 0x1p-24;   // float's unit roundoff
constexpr double Fn = 8 * U;    // one math function call: 4 ulp
constexpr double Floor = 1e-37; // below float's normal range

//===----------------------------------------------------------------------===//
// Device memory and schedules.
//===----------------------------------------------------------------------===//

void check(cudaError_t E, const char *What) {
  if (E != cudaSuccess)
    throw std::runtime_error(std::string(What) + ": " + cudaGetErrorString(E));
}

/// A device copy of a host vector.
/// Elements every Dev starts after: 1 makes every device pointer only
/// 4-byte aligned, so the launchers take their scalar (not float4) paths.
int64_t g_offset = 0;

/// A device copy of a host vector, g_offset elements into its allocation.
class Dev {
public:
  explicit Dev(const std::vector<float> &H) : N(H.size()) {
    // Exactly the elements needed: AddressSanitizer sees the true end.
    if (N + size_t(g_offset) > 0)
      check(cudaMalloc(&Base, (N + size_t(g_offset)) * sizeof(float)),
            "cudaMalloc");
    P = Base ? Base + g_offset : nullptr;
    if (N)
      check(cudaMemcpy(P, H.data(), N * sizeof(float), cudaMemcpyHostToDevice),
            "cudaMemcpy");
  }
  explicit Dev(int64_t N) : Dev(std::vector<float>(size_t(N), -7.0f)) {}
  ~Dev() { cudaFree(Base); }
  Dev(const Dev &) = delete;
  Dev &operator=(const Dev &) = delete;
  float *get() const { return P; }
  std::vector<float> host() const {
    check(cudaDeviceSynchronize(), "the kernel");
    std::vector<float> H(N);
    if (N)
      check(cudaMemcpy(H.data(), P, N * sizeof(float), cudaMemcpyDeviceToHost),
            "cudaMemcpy");
    return H;
  }

private:
  float *Base = nullptr, *P = nullptr;
  size_t N;
};

/// Runs Body once per schedule: forward and two random orders on the shim,
/// once on a GPU; then once more (forward) with every buffer misaligned for
/// float4 (g_offset = 1). Body gets the run's name.
void for_each_schedule(const std::function<void(const std::string &)> &Body) {
#ifdef PK_CUDA_SHIM
  pk::shim::set_schedule(pk::shim::Schedule::Forward);
  Body("forward");
  for (uint64_t Seed : {1, 2}) {
    pk::shim::set_schedule(pk::shim::Schedule::Random, Seed);
    Body("random:" + std::to_string(Seed));
  }
  pk::shim::set_schedule(pk::shim::Schedule::Forward);
#else
  Body("gpu");
#endif
  g_offset = 1;
  try {
    Body("misaligned");
  } catch (...) {
    g_offset = 0;
    throw;
  }
  g_offset = 0;
}

uint64_t launches() {
#ifdef PK_CUDA_SHIM
  return pk::shim::stats().Launches;
#else
  return 0;
#endif
}

/// Skips without a GPU; clears a failed kernel's sticky error afterwards so
/// that one failure does not fail every later test.
class CudaSample : public ::testing::Test {
protected:
  void SetUp() override {
    int N = 0;
    if (cudaGetDeviceCount(&N) != cudaSuccess || N == 0)
      GTEST_SKIP() << "no CUDA device";
  }
  void TearDown() override {
#ifdef PK_CUDA_SHIM
    pk::shim::reset();
#else
    cudaGetLastError();
#endif
  }
};

//===----------------------------------------------------------------------===//
// Comparison.
//===----------------------------------------------------------------------===//

std::string shape_name(const char *K, int64_t T, int64_t D) {
  return std::string(K) + " " + std::to_string(T) + "x" + std::to_string(D);
}

/// |E - C| <= 2 B (elementwise); NaN only where the reference has NaN,
/// infinities equal.
void expect_within(const std::vector<float> &E, const std::vector<float> &C,
                   const std::vector<double> &B, const std::string &What) {
  ASSERT_EQ(E.size(), C.size()) << What;
  ASSERT_EQ(E.size(), B.size()) << What;
  double Worst = 0; // the largest difference / tolerance
  for (size_t I = 0; I < E.size(); ++I) {
    if ((std::isnan(E[I]) && std::isnan(C[I])) || E[I] == C[I])
      continue;
    const double Diff = std::fabs(double(E[I]) - double(C[I]));
    if (!(Diff <= 2 * B[I] + Floor)) {
      ADD_FAILURE() << What << ": element " << I << ": eager " << E[I]
                    << ", got " << C[I] << " (difference " << Diff
                    << ", tolerance " << 2 * B[I] << ")";
      return;
    }
    Worst = std::max(Worst, Diff / (2 * B[I] + Floor));
  }
  // PK_DIFF_REPORT=1: how much of each tolerance the results use.
  static const bool Report = std::getenv("PK_DIFF_REPORT") != nullptr;
  if (Report)
    std::printf("%-60s %.3g of the tolerance\n", What.c_str(), Worst);
}

//===----------------------------------------------------------------------===//
// Cases, and the NumPy oracle's dump.
//===----------------------------------------------------------------------===//

/// One kernel call on one shape. Each output has the eager result (the
/// reference) and the bound B against the exact result; every other version
/// (compiled CPU, CUDA in each schedule) is compared with eager within 2 B.
/// With PK_ORACLE_DUMP set, every version is also written for the NumPy
/// oracle (oracle_dump.h), which checks each against NumPy within B.
class KernelCase {
public:
  using Shape = pk_test::OracleDump::Shape;

  KernelCase(const std::string &Kernel, std::string What)
      : What(std::move(What)), Dump(Kernel, this->What) {}

  KernelCase &in(const std::string &Name, const std::vector<float> &V,
                 Shape S) {
    Dump.in(Name, V, S);
    return *this;
  }
  KernelCase &scalar(const std::string &Name, double V) {
    Dump.scalar(Name, V);
    return *this;
  }
  /// Output `Name`: eager's result `E` and its bound `B` against the exact
  /// result (empty: 0, the other versions must equal eager bit for bit).
  KernelCase &out(const std::string &Name, std::vector<float> E,
                  std::vector<double> B, Shape S) {
    if (B.empty())
      B.assign(E.size(), 0.0);
    Dump.out(Name, S, B).result(Name, "eager", E);
    Outputs.push_back({Name, std::move(E), std::move(B)});
    return *this;
  }
  /// Version `Version`'s result for output `Name`: within 2 B of eager.
  void check(const std::string &Name, const std::vector<float> &Got,
             const std::string &Version) {
    for (const Output &O : Outputs)
      if (O.Name == Name) {
        expect_within(O.Eager, Got, O.Bound, What + " " + Version + " " + Name);
        Dump.result(Name, Version, Got);
        return;
      }
    throw std::logic_error(What + ": no output " + Name);
  }

private:
  struct Output {
    std::string Name;
    std::vector<float> Eager;
    std::vector<double> Bound;
  };
  std::string What;
  pk_test::OracleDump Dump;
  std::vector<Output> Outputs;
};

//===----------------------------------------------------------------------===//
// Elementwise samples.
//===----------------------------------------------------------------------===//

using Fma = CudaSample;
TEST_F(Fma, AllSizes) {
  for (int64_t N : Sizes) {
    const auto A = sample::random(N, 1), Bv = sample::random(N, 2),
               Cv = sample::random(N, 3);
    std::vector<float> E(N), P(N);
    eager::fma(A, Bv, Cv, E);
    fma(A, Bv, Cv, P);
    std::vector<double> B(N);
    for (int64_t I = 0; I < N; ++I)
      B[I] = 3 * U * (std::fabs(double(A[I]) * Bv[I]) + std::fabs(E[I]));
    KernelCase K("fma", "fma N=" + std::to_string(N));
    K.in("a", A, {N}).in("b", Bv, {N}).in("c", Cv, {N}).out("o", E, B, {N});
    K.check("o", P, "cpu");
    for_each_schedule([&](const std::string &S) {
      Dev DA(A), DB(Bv), DC(Cv), DO(N);
      pk::cuda::fma({DA.get(), {N}}, {DB.get(), {N}}, {DC.get(), {N}},
                    {DO.get(), {N}});
      K.check("o", DO.host(), "cuda " + S);
    });
  }
}

using Axpby = CudaSample;
TEST_F(Axpby, AllSizes) {
  const float Alpha = 1.5f, Beta = -2.0f;
  for (int64_t N : Sizes) {
    const auto X = sample::random(N, 1), Y = sample::random(N, 2);
    auto E = Y, P = Y;
    eager::axpby(Alpha, X, Beta, E);
    axpby(Alpha, X, Beta, P);
    std::vector<double> B(N);
    for (int64_t I = 0; I < N; ++I)
      B[I] =
          4 * U *
          (std::fabs(Alpha * X[I]) + std::fabs(Beta * Y[I]) + std::fabs(E[I]));
    KernelCase K("axpby", "axpby N=" + std::to_string(N));
    K.scalar("alpha", Alpha).scalar("beta", Beta);
    K.in("x", X, {N}).in("y", Y, {N}).out("y", E, B, {N});
    K.check("y", P, "cpu");
    for_each_schedule([&](const std::string &S) {
      Dev DX(X), DY(Y);
      pk::cuda::axpby(Alpha, {DX.get(), {N}}, Beta, {DY.get(), {N}});
      K.check("y", DY.host(), "cuda " + S);
    });
  }
}

using Gelu = CudaSample;
TEST_F(Gelu, AllSizesAndSpecialValues) {
  auto Check = [](const std::vector<float> &X, const std::string &What) {
    const int64_t N = int64_t(X.size());
    std::vector<float> E(N), P(N);
    eager::gelu(X, E);
    gelu(X, P);
    std::vector<double> B(N);
    for (int64_t I = 0; I < N; ++I)
      B[I] = 8 * U * std::fabs(X[I]) + 4 * U * std::fabs(E[I]);
    KernelCase K("gelu", What);
    K.in("x", X, {N}).out("y", E, B, {N});
    K.check("y", P, "cpu");
    for_each_schedule([&](const std::string &S) {
      Dev DX(X), DY(N);
      pk::cuda::gelu({DX.get(), {N}}, {DY.get(), {N}});
      K.check("y", DY.host(), "cuda " + S);
    });
  };
  for (int64_t N : Sizes)
    Check(sample::random(N, 4, -8, 8), "gelu N=" + std::to_string(N));
  Check({0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-30f, -1e30f, 3.0f, -3.0f,
         10.0f, -10.0f},
        "gelu special values");
}

using ReluWhere = CudaSample;
TEST_F(ReluWhere, AllSizes) {
  for (int64_t N : Sizes) {
    const auto X = sample::random(N, 5);
    std::vector<float> E(N), P(N);
    eager::relu_where(X, E);
    relu_where(X, P);
    KernelCase K("relu_where", "relu_where N=" + std::to_string(N));
    K.in("x", X, {N}).out("y", E, {}, {N});
    K.check("y", P, "cpu");
    for_each_schedule([&](const std::string &S) {
      Dev DX(X), DY(N);
      pk::cuda::relu_where({DX.get(), {N}}, {DY.get(), {N}});
      K.check("y", DY.host(), "cuda " + S);
    });
  }
}

using AdamStep = CudaSample;
TEST_F(AdamStep, AllSizes) {
  const float Lr = 1e-3f, B1 = 0.9f, B2 = 0.999f, Eps = 1e-8f, Bias1 = 0.19f,
              Bias2 = 0.002f;
  for (int64_t N : Sizes) {
    const auto P0 = sample::random(N, 1),
               M0 = sample::random(N, 2, -0.1f, 0.1f),
               V0 = sample::random(N, 3, 0, 0.1f), G = sample::random(N, 4);
    auto PE = P0, ME = M0, VE = V0, PC = P0, MC = M0, VC = V0;
    eager::adam_step(PE, ME, VE, G, Lr, B1, B2, Eps, Bias1, Bias2);
    adam_step(PC, MC, VC, G, Lr, B1, B2, Eps, Bias1, Bias2);
    // m' = b1 m + (1 - b1) g; v' = b2 v + (1 - b2) g g;
    // p' = p - lr (m' / bias1) / (sqrt(v' / bias2) + eps).
    std::vector<double> BM(N), BV(N), BP(N);
    for (int64_t I = 0; I < N; ++I) {
      const double G2 = double(G[I]) * G[I];
      BM[I] = 4 * U *
              (std::fabs(B1 * M0[I]) + std::fabs((1 - B1) * G[I]) +
               std::fabs(ME[I]));
      BV[I] =
          5 * U * (std::fabs(B2 * V0[I]) + (1 - B2) * G2 + std::fabs(VE[I]));
      const double MHat = ME[I] / Bias1, VHat = VE[I] / Bias2;
      const double DMHat = BM[I] / Bias1 + U * std::fabs(MHat);
      const double DVHat = BV[I] / Bias2 + U * VHat;
      const double Den = std::sqrt(VHat) + Eps;
      const double DDen =
          (VHat > 0 ? DVHat / (2 * std::sqrt(VHat)) : std::sqrt(DVHat)) +
          2 * U * Den;
      const double Step = Lr * MHat / Den;
      const double DStep = Lr * (DMHat + std::fabs(MHat) * DDen / Den) / Den +
                           3 * U * std::fabs(Step);
      BP[I] = DStep + U * (std::fabs(P0[I]) + std::fabs(PE[I]));
    }
    KernelCase K("adam_step", "adam_step N=" + std::to_string(N));
    K.scalar("lr", Lr).scalar("beta1", B1).scalar("beta2", B2);
    K.scalar("eps", Eps).scalar("bias1", Bias1).scalar("bias2", Bias2);
    K.in("p", P0, {N}).in("m", M0, {N}).in("v", V0, {N}).in("g", G, {N});
    K.out("m", ME, BM, {N}).out("v", VE, BV, {N}).out("p", PE, BP, {N});
    K.check("m", MC, "cpu");
    K.check("v", VC, "cpu");
    K.check("p", PC, "cpu");
    for_each_schedule([&](const std::string &S) {
      Dev DP(P0), DM(M0), DV(V0), DG(G);
      pk::cuda::adam_step({DP.get(), {N}}, {DM.get(), {N}}, {DV.get(), {N}},
                          {DG.get(), {N}}, Lr, B1, B2, Eps, Bias1, Bias2);
      K.check("m", DM.host(), "cuda " + S);
      K.check("v", DV.host(), "cuda " + S);
      K.check("p", DP.host(), "cuda " + S);
    });
  }
}

using BroadcastBias = CudaSample;
TEST_F(BroadcastBias, ShapesAndRunTimeBroadcasts) {
  auto Check = [](int64_t XT, int64_t T, int64_t D, int64_t BD) {
    const auto X = sample::random(XT * D, 1), Bv = sample::random(BD, 2);
    std::vector<float> E(T * D), P(T * D);
    eager::broadcast_bias({X.data(), {XT, D}}, Bv, {E.data(), {T, D}});
    broadcast_bias({X.data(), {XT, D}}, Bv, {P.data(), {T, D}});
    const std::string What = shape_name("broadcast_bias", T, D) + " x[" +
                             std::to_string(XT) + "] b[" + std::to_string(BD) +
                             "]";
    KernelCase K("broadcast_bias", What);
    K.in("x", X, {XT, D}).in("b", Bv, {BD}).out("y", E, {}, {T, D});
    K.check("y", P, "cpu");
    for_each_schedule([&](const std::string &S) {
      Dev DX(X), DB(Bv), DY(T * D);
      pk::cuda::broadcast_bias({DX.get(), {XT, D}}, {DB.get(), {BD}},
                               {DY.get(), {T, D}});
      K.check("y", DY.host(), "cuda " + S);
    });
  };
  for (auto [T, D] : Shapes)
    Check(T, T, D, D);
  Check(9, 9, 19, 1);  // b of extent 1 stretches along D
  Check(1, 9, 19, 19); // x of one row stretches along T
}

//===----------------------------------------------------------------------===//
// Reductions.
//===----------------------------------------------------------------------===//

/// Per row of [T, D]: sum|x|, max|x - m| over the finite terms of a
/// softmax.
struct RowStats {
  double SumAbs = 0, MaxAbsShift = 0;
};
std::vector<RowStats> row_stats(const std::vector<float> &X, int64_t T,
                                int64_t D, bool Causal = false) {
  std::vector<RowStats> R(T);
  for (int64_t I = 0; I < T; ++I) {
    const int64_t Visible = Causal ? std::min(D, I + 1) : D;
    float M = -INFINITY;
    for (int64_t J = 0; J < Visible; ++J)
      if (std::isfinite(X[I * D + J]))
        M = std::max(M, X[I * D + J]);
    for (int64_t J = 0; J < D; ++J)
      R[I].SumAbs += std::fabs(X[I * D + J]);
    for (int64_t J = 0; J < Visible; ++J)
      if (std::isfinite(X[I * D + J]))
        R[I].MaxAbsShift =
            std::max(R[I].MaxAbsShift, std::fabs(double(X[I * D + J]) - M));
  }
  return R;
}

/// Multiples of 1/8 in [-1, 1]: every float sum of up to 2^21 of them (and
/// of up to 2^18 of their squares) is exact, in any order. With these inputs
/// a reduction has no ordering error at all, so a dropped or doubled term
/// shows, which the worst-case bound of a large sum would hide.
std::vector<float> eighths(int64_t N, unsigned Seed) {
  std::mt19937 Gen(Seed);
  std::uniform_int_distribution<int> K(-8, 8);
  std::vector<float> V(N);
  for (float &X : V)
    X = float(K(Gen)) / 8;
  return V;
}

/// rmsnorm's B for y = x rsqrt(mean(x^2) + eps) w, row length D; with
/// Exact inputs the sum of squares has no error, only the division, + eps,
/// rsqrt and the two products remain.
std::vector<double> rmsnorm_bound(const std::vector<float> &Y, int64_t T,
                                  int64_t D, bool Exact) {
  const double Rel = Exact ? Fn + 4 * U : (D + 2) * U / 2 + Fn + 3 * U;
  std::vector<double> B(T * D);
  for (int64_t I = 0; I < T * D; ++I)
    B[I] = std::fabs(Y[I]) * Rel;
  return B;
}

using Rmsnorm = CudaSample;
TEST_F(Rmsnorm, Shapes) {
  for (bool Exact : {false, true})
    for (auto [T, D] : Shapes) {
      const auto X = Exact ? eighths(T * D, 1) : sample::random(T * D, 1),
                 W = sample::random(D, 2);
      std::vector<float> E(T * D), C(T * D);
      eager::rmsnorm({X.data(), {T, D}}, W, {E.data(), {T, D}}, 1e-6f);
      rmsnorm({X.data(), {T, D}}, W, {C.data(), {T, D}}, 1e-6f);
      const auto B = rmsnorm_bound(E, T, D, Exact);
      const std::string What =
          shape_name("rmsnorm", T, D) + (Exact ? " exact" : "");
      KernelCase K("rmsnorm", What);
      K.scalar("eps", 1e-6f).in("x", X, {T, D}).in("w", W, {D});
      K.out("y", E, B, {T, D}).check("y", C, "cpu");
      for_each_schedule([&](const std::string &S) {
        Dev DX(X), DW(W), DY(T * D);
        pk::cuda::rmsnorm({DX.get(), {T, D}}, {DW.get(), {D}},
                          {DY.get(), {T, D}}, 1e-6f);
        K.check("y", DY.host(), "cuda " + S);
      });
    }
}

using AddRmsnorm = CudaSample;
TEST_F(AddRmsnorm, Shapes) {
  for (bool Exact : {false, true})
    for (auto [T, D] : Shapes) {
      // Exact: h + x is a multiple of 1/8 in [-2, 2]; sums of its squares
      // stay exact below 2^18 terms.
      const auto H0 = Exact ? eighths(T * D, 1) : sample::random(T * D, 1),
                 X = Exact ? eighths(T * D, 2) : sample::random(T * D, 2),
                 W = sample::random(D, 3);
      auto HE = H0, HC = H0;
      std::vector<float> E(T * D), C(T * D);
      eager::add_rmsnorm({HE.data(), {T, D}}, {X.data(), {T, D}}, W,
                         {E.data(), {T, D}}, 1e-6f);
      add_rmsnorm({HC.data(), {T, D}}, {X.data(), {T, D}}, W,
                  {C.data(), {T, D}}, 1e-6f);
      const auto B = rmsnorm_bound(E, T, D, Exact);
      const std::string What =
          shape_name("add_rmsnorm", T, D) + (Exact ? " exact" : "");
      KernelCase K("add_rmsnorm", What);
      K.scalar("eps", 1e-6f).in("h", H0, {T, D}).in("x", X, {T, D});
      K.in("w", W, {D}).out("h", HE, {}, {T, D}).out("y", E, B, {T, D});
      K.check("h", HC, "cpu");
      K.check("y", C, "cpu");
      for_each_schedule([&](const std::string &S) {
        Dev DH(H0), DX(X), DW(W), DY(T * D);
        pk::cuda::add_rmsnorm({DH.get(), {T, D}}, {DX.get(), {T, D}},
                              {DW.get(), {D}}, {DY.get(), {T, D}}, 1e-6f);
        K.check("h", DH.host(), "cuda " + S);
        K.check("y", DY.host(), "cuda " + S);
      });
    }
}

/// softmax's B for y = e / sum(e), e = exp(x - max): per row.
std::vector<double> softmax_bound(const std::vector<float> &X,
                                  const std::vector<float> &Y, int64_t T,
                                  int64_t D, bool Causal) {
  const auto R = row_stats(X, T, D, Causal);
  std::vector<double> B(T * D);
  for (int64_t I = 0; I < T; ++I) {
    const double Rel = (D + 2) * U + 2 * (Fn + U * R[I].MaxAbsShift);
    for (int64_t J = 0; J < D; ++J)
      B[I * D + J] = std::fabs(Y[I * D + J]) * Rel;
  }
  return B;
}

using Softmax = CudaSample;
TEST_F(Softmax, ShapesAndSpecialValues) {
  auto Check = [](const std::vector<float> &X, int64_t T, int64_t D,
                  const std::string &What) {
    std::vector<float> E(T * D), C(T * D);
    eager::softmax({X.data(), {T, D}}, {E.data(), {T, D}});
    softmax({X.data(), {T, D}}, {C.data(), {T, D}});
    const auto B = softmax_bound(X, E, T, D, false);
    KernelCase K("softmax", What);
    K.in("x", X, {T, D}).out("y", E, B, {T, D}).check("y", C, "cpu");
    for_each_schedule([&](const std::string &S) {
      Dev DX(X), DY(T * D);
      pk::cuda::softmax({DX.get(), {T, D}}, {DY.get(), {T, D}});
      K.check("y", DY.host(), "cuda " + S);
    });
  };
  for (auto [T, D] : Shapes)
    Check(sample::random(T * D, 5, -20, 20), T, D, shape_name("softmax", T, D));
  // A row with -inf, a row with NaN (NaN propagates to the row).
  Check({-INFINITY, 0.0f, 1.0f, NAN, 1.0f, 2.0f}, 2, 3,
        "softmax special values");
}

using CausalSoftmax = CudaSample;
TEST_F(CausalSoftmax, Shapes) {
  for (auto [T, D] : Shapes) {
    const auto X = sample::random(T * D, 9, -5, 5);
    std::vector<float> E(T * D), C(T * D);
    eager::causal_softmax({X.data(), {T, D}}, {E.data(), {T, D}});
    causal_softmax({X.data(), {T, D}}, {C.data(), {T, D}});
    const auto B = softmax_bound(X, E, T, D, true);
    KernelCase K("causal_softmax", shape_name("causal_softmax", T, D));
    K.in("scores", X, {T, D}).out("probs", E, B, {T, D});
    K.check("probs", C, "cpu");
    for_each_schedule([&](const std::string &S) {
      Dev DX(X), DY(T * D);
      pk::cuda::causal_softmax({DX.get(), {T, D}}, {DY.get(), {T, D}});
      K.check("probs", DY.host(), "cuda " + S);
    });
  }
}

using Logsumexp = CudaSample;
TEST_F(Logsumexp, Shapes) {
  for (auto [T, D] : Shapes) {
    const auto X = sample::random(T * D, 7, -30, 30);
    std::vector<float> E(T), C(T);
    eager::logsumexp({X.data(), {T, D}}, E);
    logsumexp({X.data(), {T, D}}, C);
    const auto R = row_stats(X, T, D);
    std::vector<double> B(T);
    for (int64_t I = 0; I < T; ++I) {
      float M = -INFINITY;
      for (int64_t J = 0; J < D; ++J)
        M = std::max(M, X[I * D + J]);
      const double LogS = double(E[I]) - M;
      B[I] = (D + 2) * U + Fn + U * R[I].MaxAbsShift + Fn * std::fabs(LogS) +
             U * std::fabs(E[I]);
    }
    KernelCase K("logsumexp", shape_name("logsumexp", T, D));
    K.in("x", X, {T, D}).out("out", E, B, {T}).check("out", C, "cpu");
    for_each_schedule([&](const std::string &S) {
      Dev DX(X), DO(T);
      pk::cuda::logsumexp({DX.get(), {T, D}}, {DO.get(), {T}});
      K.check("out", DO.host(), "cuda " + S);
    });
  }
}

using Layernorm = CudaSample;
TEST_F(Layernorm, Shapes) {
  const float Eps = 1e-5f;
  for (auto [T, D] : Shapes) {
    const auto X = sample::random(T * D, 1), W = sample::random(D, 2),
               Bv = sample::random(D, 3);
    std::vector<float> E(T * D), C(T * D), ME(T), MC(T), RE(T), RC(T);
    eager::layernorm({X.data(), {T, D}}, W, Bv, {E.data(), {T, D}}, ME, RE,
                     Eps);
    layernorm({X.data(), {T, D}}, W, Bv, {C.data(), {T, D}}, MC, RC, Eps);
    // dmu = (n + 1) u mean|x| + u |mu|; d = x - mu: dmu + u |d|;
    // dvar = 2 mean|d| dmu + (n + 3) u var; rstd: dvar / 2 (var + eps) + F.
    std::vector<double> BO(T * D), BM(T), BR(T);
    for (int64_t I = 0; I < T; ++I) {
      double SumAbs = 0, SumAbsD = 0, Var = 0;
      for (int64_t J = 0; J < D; ++J) {
        const double Dj = double(X[I * D + J]) - ME[I];
        SumAbs += std::fabs(X[I * D + J]);
        SumAbsD += std::fabs(Dj);
        Var += Dj * Dj;
      }
      Var /= double(D);
      const double DMu =
          (D + 1) * U * SumAbs / double(D) + U * std::fabs(ME[I]);
      const double DVar = 2 * (SumAbsD / double(D)) * DMu + (D + 3) * U * Var;
      const double Rstd = RE[I];
      const double RelRstd = DVar / (2 * (Var + Eps)) + Fn + U;
      BM[I] = DMu;
      BR[I] = RelRstd * Rstd;
      for (int64_t J = 0; J < D; ++J) {
        const double Dj = std::fabs(double(X[I * D + J]) - ME[I]);
        const double Wj = std::fabs(W[J]);
        BO[I * D + J] = Wj * Rstd * (DMu + U * Dj + Dj * RelRstd) +
                        2 * U * Dj * Rstd * Wj + U * std::fabs(E[I * D + J]);
      }
    }
    KernelCase K("layernorm", shape_name("layernorm", T, D));
    K.scalar("eps", Eps).in("x", X, {T, D}).in("w", W, {D}).in("b", Bv, {D});
    K.out("out", E, BO, {T, D}).out("mean_out", ME, BM, {T});
    K.out("rstd_out", RE, BR, {T});
    K.check("out", C, "cpu");
    K.check("mean_out", MC, "cpu");
    K.check("rstd_out", RC, "cpu");
    for_each_schedule([&](const std::string &S) {
      Dev DX(X), DW(W), DB(Bv), DO(T * D), DM(T), DR(T);
      pk::cuda::layernorm({DX.get(), {T, D}}, {DW.get(), {D}}, {DB.get(), {D}},
                          {DO.get(), {T, D}}, {DM.get(), {T}}, {DR.get(), {T}},
                          Eps);
      K.check("out", DO.host(), "cuda " + S);
      K.check("mean_out", DM.host(), "cuda " + S);
      K.check("rstd_out", DR.host(), "cuda " + S);
    });
  }
}

using ColumnMean = CudaSample;
TEST_F(ColumnMean, ShapesIncludingZeroRows) {
  for (bool Exact : {false, true})
    for (auto [T, D] : Shapes) {
      if (!reduction_shape(T, D))
        continue;
      const auto X = Exact ? eighths(T * D, 11) : sample::random(T * D, 11);
      std::vector<float> E(D), C(D);
      eager::column_mean({X.data(), {T, D}}, E);
      column_mean({X.data(), {T, D}}, C);
      // Exact: the column sum has no error; dividing by T (or multiplying
      // by a rounded 1/T) is within 2 roundings.
      std::vector<double> B(D);
      for (int64_t J = 0; J < D; ++J) {
        double SumAbs = 0;
        for (int64_t I = 0; I < T; ++I)
          SumAbs += std::fabs(X[I * D + J]);
        B[J] = Exact ? 2 * U * std::fabs(E[J])
               : T   ? (T + 1) * U * SumAbs / double(T) + U * std::fabs(E[J])
                     : 0;
      }
      const std::string What =
          shape_name("column_mean", T, D) + (Exact ? " exact" : "");
      KernelCase K("column_mean", What);
      K.in("x", X, {T, D}).out("m", E, B, {D}).check("m", C, "cpu");
      for_each_schedule([&](const std::string &S) {
        Dev DX(X), DM(D);
        pk::cuda::column_mean({DX.get(), {T, D}}, {DM.get(), {D}});
        K.check("m", DM.host(), "cuda " + S);
      });
    }
}

using SumAll = CudaSample;
TEST_F(SumAll, ShapesAndEmpty) {
  for (bool Exact : {false, true})
    for (auto [T, D] : Shapes) {
      if (!reduction_shape(T, D) || (!Exact && T * D > (1 << 18)))
        continue; // the worst-case bound of 10^6 terms tells little
      // Exact: every partial sum is a multiple of 1/8 below 2^21: no error.
      const auto X =
          Exact ? eighths(T * D, 13) : sample::random(T * D, 13, 0, 1);
      std::vector<float> E(1), C(1);
      eager::sum_all({X.data(), {T, D}}, {E.data(), {}});
      sum_all({X.data(), {T, D}}, {C.data(), {}});
      double SumAbs = 0;
      for (float V : X)
        SumAbs += std::fabs(V);
      const std::vector<double> B = {Exact ? 0 : (T * D + 1) * U * SumAbs};
      const std::string What =
          shape_name("sum_all", T, D) + (Exact ? " exact" : "");
      KernelCase K("sum_all", What);
      K.in("x", X, {T, D}).out("total", E, B, {}).check("total", C, "cpu");
      for_each_schedule([&](const std::string &S) {
        Dev DX(X), DT(1);
        pk::cuda::sum_all({DX.get(), {T, D}}, {DT.get(), {}});
        K.check("total", DT.host(), "cuda " + S);
      });
    }
}

//===----------------------------------------------------------------------===//
// Guards: wrong shapes raise pk::ShapeError before any launch.
//===----------------------------------------------------------------------===//

/// Runs Body, expects a ShapeError containing Needle, no launch, and Out's
/// contents unchanged.
void expect_refused(const std::function<void()> &Body,
                    const std::string &Needle, const Dev &Out) {
  const auto Before = Out.host();
  const uint64_t Launches = launches();
  try {
    Body();
    ADD_FAILURE() << "expected pk::ShapeError containing: " << Needle;
  } catch (const pk::ShapeError &E) {
    EXPECT_NE(std::string(E.what()).find(Needle), std::string::npos)
        << "message: " << E.what();
  }
  EXPECT_EQ(launches(), Launches) << Needle << ": a kernel was launched";
  const auto After = Out.host();
  EXPECT_TRUE(std::equal(Before.begin(), Before.end(), After.begin()))
      << Needle << ": the output was written";
}

using Guards = CudaSample;
TEST_F(Guards, WrongShapesThrowBeforeAnyLaunch) {
  Dev A(5), B3(3), C(5), O(5);
  expect_refused(
      [&] {
        pk::cuda::fma({A.get(), {5}}, {B3.get(), {3}}, {C.get(), {5}},
                      {O.get(), {5}});
      },
      "fma: cannot broadcast b[3]", O);
  Dev Y4(4);
  expect_refused(
      [&] {
        pk::cuda::gelu({A.get(), {5}}, {Y4.get(), {4}});
      },
      "gelu: cannot broadcast", Y4);
  expect_refused(
      [&] {
        pk::cuda::relu_where({A.get(), {5}}, {Y4.get(), {4}});
      },
      "relu_where: ", Y4);
  expect_refused(
      [&] {
        pk::cuda::axpby(1.0f, {A.get(), {5}}, 2.0f, {Y4.get(), {4}});
      },
      "axpby: ", Y4);
  Dev P(4), M(4), V(4);
  expect_refused(
      [&] {
        pk::cuda::adam_step({P.get(), {4}}, {M.get(), {4}}, {V.get(), {4}},
                            {A.get(), {5}}, 1, 1, 1, 1, 1, 1);
      },
      "adam_step: ", P);
  Dev X6(6), Bias4(4), Out6(6);
  expect_refused(
      [&] {
        pk::cuda::broadcast_bias({X6.get(), {2, 3}}, {Bias4.get(), {4}},
                                 {Out6.get(), {2, 3}});
      },
      "broadcast_bias: cannot broadcast b[4] against x[2, 3] (axis -1)", Out6);
  Dev X12(12), W5(5), Y12(12);
  expect_refused(
      [&] {
        pk::cuda::rmsnorm({X12.get(), {3, 4}}, {W5.get(), {5}},
                          {Y12.get(), {3, 4}}, 1e-6f);
      },
      "rmsnorm: cannot broadcast w[5]", Y12);
  expect_refused(
      [&] {
        pk::cuda::add_rmsnorm({Y12.get(), {3, 4}}, {X12.get(), {4, 3}},
                              {W5.get(), {4}}, {Out6.get(), {3, 4}}, 1e-6f);
      },
      "add_rmsnorm: ", Y12);
  Dev Y15(15);
  expect_refused(
      [&] {
        pk::cuda::softmax({X12.get(), {3, 4}}, {Y15.get(), {3, 5}});
      },
      "softmax: ", Y15);
  expect_refused(
      [&] {
        pk::cuda::causal_softmax({X12.get(), {3, 4}}, {Y15.get(), {5, 3}});
      },
      "causal_softmax: ", Y15);
  expect_refused(
      [&] {
        pk::cuda::logsumexp({X12.get(), {3, 4}}, {Y4.get(), {4}});
      },
      "logsumexp: ", Y4);
  expect_refused(
      [&] {
        pk::cuda::column_mean({X12.get(), {3, 4}}, {W5.get(), {5}});
      },
      "column_mean: ", W5);
  Dev Mean3(3), Rstd3(3);
  expect_refused(
      [&] {
        pk::cuda::layernorm({X12.get(), {3, 4}}, {W5.get(), {5}},
                            {Bias4.get(), {4}}, {Y12.get(), {3, 4}},
                            {Mean3.get(), {3}}, {Rstd3.get(), {3}}, 1e-5f);
      },
      "layernorm: ", Y12);
  // max over an empty axis: an error at entry, as in the eager code.
  Dev Empty(0);
  expect_refused(
      [&] {
        pk::cuda::softmax({Empty.get(), {3, 0}}, {Empty.get(), {3, 0}});
      },
      "softmax: ", Empty);
}

} // namespace
