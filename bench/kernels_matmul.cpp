//===- kernels_matmul.cpp - The matrix-product samples and their peers ----===//
//
// matmul (kernel sgemm), linear_bias_gelu and batched_matmul (with
// batched_matmul_shared, one [K, N] matrix for every batch entry) against
// the GEMMs people call instead. Shapes are M x N x K (B x M x N x K for the
// batched kernels), row-major float32, inputs uniform in [-1, 1). Every
// struct has flops() (2 * M * N * K per call, times B), so its benchmarks
// report a "flops" counter (flop/s); bench/table.py prints them in a table
// of their own, in GFLOP/s. See bench.h for what a kernel struct is.
//
// The peers:
//  * naive: the textbook loop nest with OpenMP: rows of the output in
//    parallel (`omp parallel for` over i), then i-k-j order, the inner loop
//    over j an `omp simd` loop on contiguous rows of b and c (c[i, :] +=
//    a[i, k] * b[k, :]). linear_bias_gelu's w is [N, K], so its naive loop
//    is i-j-k, one dot product x[i, :] . w[j, :] per output (`omp simd
//    reduction(+)`), with the bias and the GELU applied right there.
//  * eigen: Eigen 3's GEMM, `C.noalias() = A * B` on row-major
//    Eigen::Map<Matrix> (linear_bias_gelu: `X * W.transpose()`). Compiled
//    with -fopenmp, Eigen parallelises its GEMM over omp_get_max_threads()
//    threads, so it runs at every thread count like pk (EigenThreaded).
//  * openblas: cblas_sgemm (CblasRowMajor; linear_bias_gelu: b transposed,
//    CblasTrans on w). OpenBLAS has its own thread pool; the harness calls
//    openblas_set_num_threads with the benchmark's thread count, the same as
//    omp_set_num_threads (bench.h). batched_matmul calls it once per batch
//    entry (OpenBLAS 0.3.21 has no batched GEMM); batched_matmul_shared is
//    one sgemm of [B * M, K] x [K, N], as a BLAS user writes it.
//  * linear_bias_gelu's eigen and openblas are the GEMM, then a separate
//    epilogue pass over y (y = gelu(y + b)): rows in parallel from
//    pkbench::kParallelMinWork elements on, an `omp simd` loop per row, with
//    pk::vm::tanh (<pk/vmath.h>), the tanh pk's generated code calls (libm's
//    tanhf does not vectorise: the epilogue would then cost more than the
//    GEMM at these shapes).
//  * eager: the kernel source run by <pk/pk.h> (serial, double
//    accumulation), where B * M * N * K <= 2^27 (eager_at).
//
//===----------------------------------------------------------------------===//
#include "bench.h"

#include <pk/pk.h>
#include <pk/vmath.h>

#include <cmath>

// The eager reference: the kernel sources run by <pk/pk.h>.
namespace eager {
#include "batched_matmul/batched_matmul.cpp"
#include "linear_bias_gelu/linear_bias_gelu.cpp"
#include "matmul/matmul.cpp"
} // namespace eager

// The compiled kernels (pk_add_kernels links their .pk.cpp).
#include "common/compiled.h"

namespace {

using pkbench::Buffer;
using pkbench::Shape;
constexpr int64_t F = sizeof(float);

#if PK_BENCH_EIGEN
using RowMajorMatrixXf =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatMap = Eigen::Map<RowMajorMatrixXf>;
using ConstMatMap = Eigen::Map<const RowMajorMatrixXf>;
#endif

/// M x N x K, the matmul shapes: square, then a BERT-base-sized layer
/// (2048 tokens, 768 features) and its MLP's first projection (768 -> 3072).
std::vector<Shape> matmul_shapes() {
  return {{{128, 128, 128}},
          {{512, 512, 512}},
          {{1024, 1024, 1024}},
          {{2048, 768, 768}},
          {{2048, 3072, 768}}};
}

/// Eager (serial, double accumulation) only up to 2^27 multiply-adds.
bool small_product(const Shape &S) { return S.numel() <= (int64_t(1) << 27); }

/// The naive peers' c[i, :] = a[i, :] b for rows [0, M) of one product:
/// i-k-j, rows in parallel, the j loop vectorised.
void naive_gemm(const float *__restrict a, const float *__restrict b,
                float *__restrict c, int64_t M, int64_t N, int64_t K) {
#pragma omp parallel for
  for (int64_t i = 0; i < M; ++i) {
    float *__restrict ci = c + i * N;
#pragma omp simd
    for (int64_t j = 0; j < N; ++j)
      ci[j] = 0.0f;
    for (int64_t k = 0; k < K; ++k) {
      const float aik = a[i * K + k];
      const float *__restrict bk = b + k * N;
#pragma omp simd
      for (int64_t j = 0; j < N; ++j)
        ci[j] += aik * bk[j];
    }
  }
}

/// gelu_tanh of samples/gelu, with pk::vm::tanh.
inline float gelu_vm(float v) {
  const float k = 0.7978845608f; // sqrt(2 / pi)
  return 0.5f * v * (1.0f + pk::vm::tanh(k * (v + 0.044715f * v * v * v)));
}

/// The epilogue pass of the GEMM peers: y = gelu(y + b) over [M, N].
void bias_gelu_epilogue(float *__restrict y, const float *__restrict b,
                        int64_t M, int64_t N) {
  auto Row = [&](int64_t i) {
    float *__restrict yi = y + i * N;
#pragma omp simd
    for (int64_t j = 0; j < N; ++j)
      yi[j] = gelu_vm(yi[j] + b[j]);
  };
  if (M * N >= pkbench::kParallelMinWork) {
#pragma omp parallel for
    for (int64_t i = 0; i < M; ++i)
      Row(i);
  } else {
    for (int64_t i = 0; i < M; ++i)
      Row(i);
  }
}

// c = a b: [M, K] x [K, N] -> [M, N]
struct Sgemm {
  static constexpr bool EigenThreaded = true;
  static bool eager_at(const Shape &S) { return small_product(S); }
  int64_t M, N, K;
  Buffer a, b, c;
  explicit Sgemm(const Shape &S)
      : M(S[0]), N(S[1]), K(S[2]), a(pkbench::random(M * K, 201)),
        b(pkbench::random(K * N, 202)), c(pkbench::random(M * N, 203)) {}
  int64_t min_bytes() const { return (M * K + K * N + M * N) * F; }
  double flops() const { return 2.0 * M * N * K; }
  std::vector<const Buffer *> outputs() const { return {&c}; }

  void pk() {
    ::sgemm({a.data(), {M, K}}, {b.data(), {K, N}}, {c.data(), {M, N}});
  }
  void eager() {
    eager::sgemm({a.data(), {M, K}}, {b.data(), {K, N}}, {c.data(), {M, N}});
  }
  void naive() { naive_gemm(a.data(), b.data(), c.data(), M, N, K); }
#if PK_BENCH_EIGEN
  void eigen() {
    MatMap C(c.data(), M, N);
    C.noalias() = ConstMatMap(a.data(), M, K) * ConstMatMap(b.data(), K, N);
  }
#endif
#if PK_BENCH_OPENBLAS
  void openblas() {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f,
                a.data(), K, b.data(), N, 0.0f, c.data(), N);
  }
#endif
};

// y = gelu_tanh(x w^T + b): x [M, K], w [N, K], b [N] -> y [M, N]
struct LinearBiasGelu {
  static constexpr bool EigenThreaded = true;
  static bool eager_at(const Shape &S) { return small_product(S); }
  int64_t M, N, K;
  Buffer x, w, b, y;
  explicit LinearBiasGelu(const Shape &S)
      : M(S[0]), N(S[1]), K(S[2]), x(pkbench::random(M * K, 211)),
        w(pkbench::random(N * K, 212)), b(pkbench::random(N, 213)),
        y(pkbench::random(M * N, 214)) {}
  int64_t min_bytes() const { return (M * K + N * K + N + M * N) * F; }
  double flops() const { return 2.0 * M * N * K; }
  std::vector<const Buffer *> outputs() const { return {&y}; }

  void pk() {
    ::linear_bias_gelu({x.data(), {M, K}}, {w.data(), {N, K}}, {b.data(), {N}},
                       {y.data(), {M, N}});
  }
  void eager() {
    eager::linear_bias_gelu({x.data(), {M, K}}, {w.data(), {N, K}},
                            {b.data(), {N}}, {y.data(), {M, N}});
  }
  void naive() {
    const float *__restrict px = x.data(), *__restrict pw = w.data(),
                            *__restrict pb = b.data();
    float *__restrict py = y.data();
    const int64_t m = M, n = N, kk = K;
#pragma omp parallel for
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
        for (int64_t k = 0; k < kk; ++k)
          acc += px[i * kk + k] * pw[j * kk + k];
        py[i * n + j] = gelu_vm(acc + pb[j]);
      }
  }
#if PK_BENCH_EIGEN
  void eigen() {
    MatMap Y(y.data(), M, N);
    Y.noalias() =
        ConstMatMap(x.data(), M, K) * ConstMatMap(w.data(), N, K).transpose();
    bias_gelu_epilogue(y.data(), b.data(), M, N);
  }
#endif
#if PK_BENCH_OPENBLAS
  void openblas() {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f,
                x.data(), K, w.data(), K, 0.0f, y.data(), N);
    bias_gelu_epilogue(y.data(), b.data(), M, N);
  }
#endif
};

/// B x M x N x K of the batched kernels: small, a batch of 256^3 products
/// and attention-score-sized ones (4 sequences x 12 heads, 512 tokens, head
/// dimension 64).
std::vector<Shape> batched_shapes() {
  return {{{8, 128, 128, 128}}, {{8, 256, 256, 256}}, {{48, 512, 512, 64}}};
}

/// B x M x N x K of batched_matmul_shared: small, and 4 sequences of 512
/// tokens through one 768 x 768 weight.
std::vector<Shape> shared_shapes() {
  return {{{8, 128, 128, 128}}, {{4, 512, 768, 768}}};
}

// c[i] = a[i] b[i]: [B, M, K] x [B, K, N] -> [B, M, N]
struct BatchedMatmul {
  static constexpr bool EigenThreaded = true;
  static bool eager_at(const Shape &S) { return small_product(S); }
  int64_t Bn, M, N, K;
  Buffer a, b, c;
  explicit BatchedMatmul(const Shape &S)
      : Bn(S[0]), M(S[1]), N(S[2]), K(S[3]),
        a(pkbench::random(Bn * M * K, 221)),
        b(pkbench::random(Bn * K * N, 222)),
        c(pkbench::random(Bn * M * N, 223)) {}
  int64_t min_bytes() const { return Bn * (M * K + K * N + M * N) * F; }
  double flops() const { return 2.0 * Bn * M * N * K; }
  std::vector<const Buffer *> outputs() const { return {&c}; }

  void pk() {
    ::batched_matmul({a.data(), {Bn, M, K}}, {b.data(), {Bn, K, N}},
                     {c.data(), {Bn, M, N}});
  }
  void eager() {
    eager::batched_matmul({a.data(), {Bn, M, K}}, {b.data(), {Bn, K, N}},
                          {c.data(), {Bn, M, N}});
  }
  // Batch entries one after the other, each product's rows in parallel.
  void naive() {
    for (int64_t i = 0; i < Bn; ++i)
      naive_gemm(a.data() + i * M * K, b.data() + i * K * N,
                 c.data() + i * M * N, M, N, K);
  }
#if PK_BENCH_EIGEN
  void eigen() {
    for (int64_t i = 0; i < Bn; ++i) {
      MatMap C(c.data() + i * M * N, M, N);
      C.noalias() = ConstMatMap(a.data() + i * M * K, M, K) *
                    ConstMatMap(b.data() + i * K * N, K, N);
    }
  }
#endif
#if PK_BENCH_OPENBLAS
  void openblas() {
    for (int64_t i = 0; i < Bn; ++i)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f,
                  a.data() + i * M * K, K, b.data() + i * K * N, N, 0.0f,
                  c.data() + i * M * N, N);
  }
#endif
};

// c[i] = a[i] w: [B, M, K] x [K, N] -> [B, M, N] (w shared by the batch)
struct BatchedMatmulShared {
  static constexpr bool EigenThreaded = true;
  static bool eager_at(const Shape &S) { return small_product(S); }
  int64_t Bn, M, N, K;
  Buffer a, w, c;
  explicit BatchedMatmulShared(const Shape &S)
      : Bn(S[0]), M(S[1]), N(S[2]), K(S[3]),
        a(pkbench::random(Bn * M * K, 231)), w(pkbench::random(K * N, 232)),
        c(pkbench::random(Bn * M * N, 233)) {}
  int64_t min_bytes() const { return (Bn * M * K + K * N + Bn * M * N) * F; }
  double flops() const { return 2.0 * Bn * M * N * K; }
  std::vector<const Buffer *> outputs() const { return {&c}; }

  void pk() {
    ::batched_matmul_shared({a.data(), {Bn, M, K}}, {w.data(), {K, N}},
                            {c.data(), {Bn, M, N}});
  }
  void eager() {
    eager::batched_matmul_shared({a.data(), {Bn, M, K}}, {w.data(), {K, N}},
                                 {c.data(), {Bn, M, N}});
  }
  // The batch is B * M rows of one product with w.
  void naive() { naive_gemm(a.data(), w.data(), c.data(), Bn * M, N, K); }
#if PK_BENCH_EIGEN
  void eigen() {
    MatMap C(c.data(), Bn * M, N);
    C.noalias() =
        ConstMatMap(a.data(), Bn * M, K) * ConstMatMap(w.data(), K, N);
  }
#endif
#if PK_BENCH_OPENBLAS
  void openblas() {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Bn * M, N, K, 1.0f,
                a.data(), K, w.data(), N, 0.0f, c.data(), N);
  }
#endif
};

const bool SgemmRegistered =
    pkbench::register_kernel<Sgemm>("matmul", matmul_shapes());
const bool LinearBiasGeluRegistered = pkbench::register_kernel<LinearBiasGelu>(
    "linear_bias_gelu", matmul_shapes());
const bool BatchedRegistered =
    pkbench::register_kernel<BatchedMatmul>("batched_matmul", batched_shapes());
const bool SharedRegistered = pkbench::register_kernel<BatchedMatmulShared>(
    "batched_matmul_shared", shared_shapes());

} // namespace
