//===- kernels_elementwise.cpp - The elementwise samples and their peers --===//
//
// fma, axpby, gelu, relu_where, adam_step (N in {1M, 16M}) and broadcast_bias
// ([T, D] in {[128, 4096], [2048, 4096], [4096, 768]}); see bench.h for what
// a kernel struct is. Each peer computes the kernel's formula in the order
// the kernel writes it.
//
//===----------------------------------------------------------------------===//
#include "bench.h"

#include <pk/pk.h>

#include <cmath>

// The eager reference: the kernel sources run by <pk/pk.h>.
namespace eager {
#include "adam_step/adam_step.cpp"
#include "axpby/axpby.cpp"
#include "broadcast_bias/broadcast_bias.cpp"
#include "fma/fma.cpp"
#include "gelu/gelu.cpp"
#include "relu_where/relu_where.cpp"
} // namespace eager

// The compiled kernels (pk_add_kernels links their .pk.cpp).
#include "common/compiled.h"

namespace {

using pkbench::Buffer;
using pkbench::Shape;
constexpr int64_t F = sizeof(float);

// o = a * b + c
struct Fma {
  int64_t N;
  Buffer a, b, c, o;
  explicit Fma(const Shape &S)
      : N(S.numel()), a(pkbench::random(N, 1)), b(pkbench::random(N, 2)),
        c(pkbench::random(N, 3)), o(pkbench::random(N, 4)) {}
  int64_t min_bytes() const { return 4 * N * F; }
  std::vector<const Buffer *> outputs() const { return {&o}; }

  void pk() { ::fma({a.data(), {N}}, {b.data(), {N}}, {c.data(), {N}}, {o.data(), {N}}); }
  void eager() {
    eager::fma({a.data(), {N}}, {b.data(), {N}}, {c.data(), {N}}, {o.data(), {N}});
  }
  void hand() {
    const float *__restrict pa = a.data(), *__restrict pb = b.data(),
                            *__restrict pc = c.data();
    float *__restrict po = o.data();
    PK_BENCH_FOR(i, N, po[i] = pa[i] * pb[i] + pc[i]);
  }
#if PK_BENCH_EIGEN
  void eigen() { pkbench::vec(o) = pkbench::vec(a) * pkbench::vec(b) + pkbench::vec(c); }
#endif
};

// y = alpha * x + beta * y, in place (|beta| < 1: y converges to x).
struct Axpby {
  static constexpr float Alpha = 0.5f, Beta = 0.5f;
  int64_t N;
  Buffer x, y;
  explicit Axpby(const Shape &S)
      : N(S.numel()), x(pkbench::random(N, 5)), y(pkbench::random(N, 6)) {}
  int64_t min_bytes() const { return 3 * N * F; } // x read, y read + written
  std::vector<const Buffer *> outputs() const { return {&y}; }

  void pk() { ::axpby(Alpha, {x.data(), {N}}, Beta, {y.data(), {N}}); }
  void eager() { eager::axpby(Alpha, {x.data(), {N}}, Beta, {y.data(), {N}}); }
  void hand() {
    const float *__restrict px = x.data();
    float *__restrict py = y.data();
    PK_BENCH_FOR(i, N, py[i] = Alpha * px[i] + Beta * py[i]);
  }
#if PK_BENCH_EIGEN
  void eigen() {
    auto Y = pkbench::vec(y);
    Y = Alpha * pkbench::vec(x) + Beta * Y;
  }
#endif
};

// y = 0.5 x (1 + tanh(k (x + 0.044715 x^3))). pk, eager and hand call libm's
// tanhf; Eigen uses its own vectorised tanh.
struct Gelu {
  static constexpr float K = 0.7978845608f;
  int64_t N;
  Buffer x, y;
  explicit Gelu(const Shape &S)
      : N(S.numel()), x(pkbench::random(N, 7, -6.0f, 6.0f)),
        y(pkbench::random(N, 8)) {}
  int64_t min_bytes() const { return 2 * N * F; }
  std::vector<const Buffer *> outputs() const { return {&y}; }

  void pk() { ::gelu({x.data(), {N}}, {y.data(), {N}}); }
  void eager() { eager::gelu({x.data(), {N}}, {y.data(), {N}}); }
  void hand() {
    const float *__restrict px = x.data();
    float *__restrict py = y.data();
    PK_BENCH_FOR(i, N, const float v = px[i];
                 py[i] = 0.5f * v * (1.0f + std::tanh(K * (v + 0.044715f * v * v * v))));
  }
#if PK_BENCH_EIGEN
  void eigen() {
    auto X = pkbench::vec(x);
    pkbench::vec(y) = 0.5f * X * (1.0f + (K * (X + 0.044715f * X * X * X)).tanh());
  }
#endif
};

// y = where(x > 0, x, 0)
struct ReluWhere {
  int64_t N;
  Buffer x, y;
  explicit ReluWhere(const Shape &S)
      : N(S.numel()), x(pkbench::random(N, 9)), y(pkbench::random(N, 10)) {}
  int64_t min_bytes() const { return 2 * N * F; }
  std::vector<const Buffer *> outputs() const { return {&y}; }

  void pk() { ::relu_where({x.data(), {N}}, {y.data(), {N}}); }
  void eager() { eager::relu_where({x.data(), {N}}, {y.data(), {N}}); }
  void hand() {
    const float *__restrict px = x.data();
    float *__restrict py = y.data();
    PK_BENCH_FOR(i, N, py[i] = px[i] > 0.0f ? px[i] : 0.0f);
  }
#if PK_BENCH_EIGEN
  void eigen() {
    auto X = pkbench::vec(x);
    pkbench::vec(y) = (X > 0.0f).select(X, 0.0f);
  }
#endif
};

// One Adam step, p, m, v updated in place. With the bias corrections fixed
// (step 10) the moments converge to g and g^2 and p moves by about
// lr * sqrt(bias2) / bias1 = 1.5e-4 per call: finite for any run length.
// |g| >= 1e-3 keeps v away from denormals.
struct AdamStep {
  static constexpr float Lr = 1e-3f, B1 = 0.9f, B2 = 0.999f, Eps = 1e-8f;
  static constexpr float Bias1 = 0.65132156f; // 1 - 0.9^10
  static constexpr float Bias2 = 0.00995512f; // 1 - 0.999^10
  int64_t N;
  Buffer p, m, v, g;
  explicit AdamStep(const Shape &S)
      : N(S.numel()), p(pkbench::random(N, 11)),
        m(pkbench::random(N, 12, -0.1f, 0.1f)),
        v(pkbench::random(N, 13, 0.0f, 0.1f)), g(pkbench::random(N, 14)) {
    for (int64_t I = 0; I < N; ++I)
      if (std::fabs(g[I]) < 1e-3f)
        g[I] = 1e-3f;
  }
  int64_t min_bytes() const { return 7 * N * F; } // p m v read + written, g read
  std::vector<const Buffer *> outputs() const { return {&p, &m, &v}; }

  void pk() {
    ::adam_step({p.data(), {N}}, {m.data(), {N}}, {v.data(), {N}},
                {g.data(), {N}}, Lr, B1, B2, Eps, Bias1, Bias2);
  }
  void eager() {
    eager::adam_step({p.data(), {N}}, {m.data(), {N}}, {v.data(), {N}},
                     {g.data(), {N}}, Lr, B1, B2, Eps, Bias1, Bias2);
  }
  void hand() {
    float *__restrict pp = p.data(), *__restrict pm = m.data(),
                      *__restrict pv = v.data();
    const float *__restrict pg = g.data();
    PK_BENCH_FOR(i, N, const float gi = pg[i];
                 const float mi = B1 * pm[i] + (1.0f - B1) * gi;
                 const float vi = B2 * pv[i] + (1.0f - B2) * gi * gi;
                 pm[i] = mi; pv[i] = vi;
                 pp[i] = pp[i] - Lr * (mi / Bias1) / (std::sqrt(vi / Bias2) + Eps));
  }
#if PK_BENCH_EIGEN
  // What an Eigen user writes: one statement (one pass) per updated array.
  void eigen() {
    auto P = pkbench::vec(p), M = pkbench::vec(m), V = pkbench::vec(v);
    auto G = pkbench::vec(g);
    M = B1 * M + (1.0f - B1) * G;
    V = B2 * V + (1.0f - B2) * G * G;
    P = P - Lr * (M / Bias1) / ((V / Bias2).sqrt() + Eps);
  }
#endif
};

// y[T, D] = x[T, D] + b[D]
struct BroadcastBias {
  int64_t T, D;
  Buffer x, b, y;
  explicit BroadcastBias(const Shape &S)
      : T(S[0]), D(S[1]), x(pkbench::random(T * D, 15)),
        b(pkbench::random(D, 16)), y(pkbench::random(T * D, 17)) {}
  int64_t min_bytes() const { return (2 * T * D + D) * F; }
  std::vector<const Buffer *> outputs() const { return {&y}; }

  void pk() { ::broadcast_bias({x.data(), {T, D}}, {b.data(), {D}}, {y.data(), {T, D}}); }
  void eager() {
    eager::broadcast_bias({x.data(), {T, D}}, {b.data(), {D}}, {y.data(), {T, D}});
  }
  void hand() {
    const float *__restrict px = x.data(), *__restrict pb = b.data();
    float *__restrict py = y.data();
    const int64_t t = T, d = D;
    if (t * d >= pkbench::kParallelMinWork) {
#pragma omp parallel for
      for (int64_t r = 0; r < t; ++r) {
#pragma omp simd
        for (int64_t j = 0; j < d; ++j)
          py[r * d + j] = px[r * d + j] + pb[j];
      }
    } else {
      for (int64_t r = 0; r < t; ++r) {
#pragma omp simd
        for (int64_t j = 0; j < d; ++j)
          py[r * d + j] = px[r * d + j] + pb[j];
      }
    }
  }
#if PK_BENCH_EIGEN
  void eigen() {
    Eigen::Map<const Eigen::Array<float, 1, Eigen::Dynamic>> B(b.data(), D);
    pkbench::mat(y, T, D) = pkbench::mat(x, T, D).rowwise() + B;
  }
#endif
};

const std::vector<Shape> BiasShapes = {{{128, 4096}}, {{2048, 4096}}, {{4096, 768}}};

const bool Registered =
    pkbench::register_kernel<Fma>("fma", pkbench::elementwise_shapes()) &&
    pkbench::register_kernel<Axpby>("axpby", pkbench::elementwise_shapes()) &&
    pkbench::register_kernel<Gelu>("gelu", pkbench::elementwise_shapes()) &&
    pkbench::register_kernel<ReluWhere>("relu_where", pkbench::elementwise_shapes()) &&
    pkbench::register_kernel<AdamStep>("adam_step", pkbench::elementwise_shapes()) &&
    pkbench::register_kernel<BroadcastBias>("broadcast_bias", BiasShapes);

} // namespace
