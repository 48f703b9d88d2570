//===- kernels_rows.cpp - The reduction samples and their peers -----------===//
//
// Row kernels (a reduction over the last axis, then the row again):
// rmsnorm, softmax, layernorm (out + mean + rstd), logsumexp and add_rmsnorm
// at pkbench::row_shapes() ([1, 4096], [128, 4096], [2048, 4096],
// [4096, 768]); the other reductions, column_mean (axis 0) and sum_all (to a
// scalar), at [2048, 4096] and [4096, 768]. See bench.h for what a kernel
// struct is.
//
// The peers:
//  * hand: what a performance engineer writes in plain C++ with OpenMP (no
//    intrinsics): rows in parallel (`omp parallel for`) from T * D >=
//    pkbench::kParallelMinWork elements on and serial below (pk's policy),
//    each row in as few passes as the formula allows, every pass an
//    `omp simd` loop (with `reduction(...)` for the statistics). The
//    transcendentals in the loops are pk::vm's (<pk/vmath.h>), the same
//    library pk's generated code calls: libm's expf/logf do not vectorise
//    without -ffast-math, and a hand-written kernel would use some vector
//    exp. The per-row scalars use 1 / std::sqrt and std::log.
//  * eigen: Eigen 3 array expressions on each row (Map of a row-major array,
//    .row(r)), the form that keeps a row in L1 between its passes;
//    column_mean is X.colwise().mean() and sum_all is .sum(). Eigen's .exp()
//    is its own vectorised exp. Single-threaded, as Eigen's coefficient-wise
//    code is.
//  * eager: the kernel source run by <pk/pk.h>, at shapes up to
//    pkbench::kEagerMaxElems (the harness decides).
//
//===----------------------------------------------------------------------===//
#include "bench.h"

#include <pk/pk.h>
#include <pk/vmath.h>

#include <cmath>

// The eager reference: the kernel sources run by <pk/pk.h>.
namespace eager {
#include "add_rmsnorm/add_rmsnorm.cpp"
#include "column_mean/column_mean.cpp"
#include "layernorm/layernorm.cpp"
#include "logsumexp/logsumexp.cpp"
#include "rmsnorm/rmsnorm.cpp"
#include "softmax/softmax.cpp"
#include "sum_all/sum_all.cpp"
} // namespace eager

// The compiled kernels (pk_add_kernels links their .pk.cpp).
#include "common/compiled.h"

namespace {

using pkbench::Buffer;
using pkbench::Shape;
constexpr int64_t F = sizeof(float);
constexpr float Eps = 1e-5f;

/// The hand-written peers' row loop: BODY(r) for r in [0, T), rows in
/// parallel from pkbench::kParallelMinWork elements on, serial below.
template <class Body> void for_rows(int64_t T, int64_t D, Body &&B) {
  if (T * D >= pkbench::kParallelMinWork) {
#pragma omp parallel for
    for (int64_t r = 0; r < T; ++r)
      B(r);
  } else {
    for (int64_t r = 0; r < T; ++r)
      B(r);
  }
}

#if PK_BENCH_EIGEN
using RowMap = Eigen::Map<Eigen::Array<float, 1, Eigen::Dynamic>>;
using ConstRowMap = Eigen::Map<const Eigen::Array<float, 1, Eigen::Dynamic>>;
#endif

// y = x / sqrt(mean(x^2) + eps) * w
struct Rmsnorm {
  int64_t T, D;
  Buffer x, w, y;
  explicit Rmsnorm(const Shape &S)
      : T(S[0]), D(S[1]), x(pkbench::random(T * D, 101)),
        w(pkbench::random(D, 102)), y(pkbench::random(T * D, 103)) {}
  int64_t min_bytes() const { return (2 * T * D + D) * F; }
  std::vector<const Buffer *> outputs() const { return {&y}; }

  void pk() { ::rmsnorm({x.data(), {T, D}}, {w.data(), {D}}, {y.data(), {T, D}}, Eps); }
  void eager() {
    eager::rmsnorm({x.data(), {T, D}}, {w.data(), {D}}, {y.data(), {T, D}}, Eps);
  }
  void hand() {
    const float *__restrict px = x.data(), *__restrict pw = w.data();
    float *__restrict py = y.data();
    const int64_t d = D;
    for_rows(T, D, [=](int64_t r) {
      const float *__restrict xr = px + r * d;
      float *__restrict yr = py + r * d;
      float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
      for (int64_t j = 0; j < d; ++j)
        ss += xr[j] * xr[j];
      const float rs = 1.0f / std::sqrt(ss / static_cast<float>(d) + Eps);
#pragma omp simd
      for (int64_t j = 0; j < d; ++j)
        yr[j] = xr[j] * rs * pw[j];
    });
  }
#if PK_BENCH_EIGEN
  void eigen() {
    auto X = pkbench::mat(x, T, D);
    auto Y = pkbench::mat(y, T, D);
    ConstRowMap W(w.data(), D);
    for (int64_t r = 0; r < T; ++r) {
      auto Xr = X.row(r);
      const float rs = 1.0f / std::sqrt(Xr.square().mean() + Eps);
      Y.row(r) = Xr * rs * W;
    }
  }
#endif
};

// y = exp(x - max) / sum(exp(x - max)), per row.
struct Softmax {
  int64_t T, D;
  Buffer x, y;
  explicit Softmax(const Shape &S)
      : T(S[0]), D(S[1]), x(pkbench::random(T * D, 111, -8.0f, 8.0f)),
        y(pkbench::random(T * D, 112)) {}
  int64_t min_bytes() const { return 2 * T * D * F; }
  std::vector<const Buffer *> outputs() const { return {&y}; }

  void pk() { ::softmax({x.data(), {T, D}}, {y.data(), {T, D}}); }
  void eager() { eager::softmax({x.data(), {T, D}}, {y.data(), {T, D}}); }
  // The good hand-written softmax: max; exp written into y while summing
  // (one exp per element); scale y.
  void hand() {
    const float *__restrict px = x.data();
    float *__restrict py = y.data();
    const int64_t d = D;
    for_rows(T, D, [=](int64_t r) {
      const float *__restrict xr = px + r * d;
      float *__restrict yr = py + r * d;
      float m = -INFINITY;
#pragma omp simd reduction(max : m)
      for (int64_t j = 0; j < d; ++j)
        m = xr[j] > m ? xr[j] : m;
      float s = 0.0f;
#pragma omp simd reduction(+ : s)
      for (int64_t j = 0; j < d; ++j) {
        const float e = pk::vm::exp(xr[j] - m);
        yr[j] = e;
        s += e;
      }
      const float inv = 1.0f / s;
#pragma omp simd
      for (int64_t j = 0; j < d; ++j)
        yr[j] *= inv;
    });
  }
#if PK_BENCH_EIGEN
  void eigen() {
    auto X = pkbench::mat(x, T, D);
    auto Y = pkbench::mat(y, T, D);
    for (int64_t r = 0; r < T; ++r) {
      auto Xr = X.row(r);
      auto Yr = Y.row(r);
      Yr = (Xr - Xr.maxCoeff()).exp();
      Yr *= 1.0f / Yr.sum();
    }
  }
#endif
};

// out = (x - mean) * rstd * w + b, mean_out = mean, rstd_out = rstd, with
// rstd = 1 / sqrt(mean((x - mean)^2) + eps), per row.
struct Layernorm {
  int64_t T, D;
  Buffer x, w, b, out, mu, rstd;
  explicit Layernorm(const Shape &S)
      : T(S[0]), D(S[1]), x(pkbench::random(T * D, 121, -2.0f, 3.0f)),
        w(pkbench::random(D, 122)), b(pkbench::random(D, 123)),
        out(pkbench::random(T * D, 124)), mu(pkbench::random(T, 125)),
        rstd(pkbench::random(T, 126)) {}
  int64_t min_bytes() const { return (2 * T * D + 2 * D + 2 * T) * F; }
  std::vector<const Buffer *> outputs() const { return {&out, &mu, &rstd}; }

  void pk() {
    ::layernorm({x.data(), {T, D}}, {w.data(), {D}}, {b.data(), {D}},
                {out.data(), {T, D}}, {mu.data(), {T}}, {rstd.data(), {T}}, Eps);
  }
  void eager() {
    eager::layernorm({x.data(), {T, D}}, {w.data(), {D}}, {b.data(), {D}},
                     {out.data(), {T, D}}, {mu.data(), {T}}, {rstd.data(), {T}}, Eps);
  }
  // Mean, variance of x - mean (the two-pass formula, as the kernel), output.
  void hand() {
    const float *__restrict px = x.data(), *__restrict pw = w.data(),
                            *__restrict pb = b.data();
    float *__restrict po = out.data(), *__restrict pm = mu.data(),
                      *__restrict pr = rstd.data();
    const int64_t d = D;
    for_rows(T, D, [=](int64_t r) {
      const float *__restrict xr = px + r * d;
      float *__restrict orow = po + r * d;
      float s = 0.0f;
#pragma omp simd reduction(+ : s)
      for (int64_t j = 0; j < d; ++j)
        s += xr[j];
      const float m = s / static_cast<float>(d);
      float v = 0.0f;
#pragma omp simd reduction(+ : v)
      for (int64_t j = 0; j < d; ++j) {
        const float c = xr[j] - m;
        v += c * c;
      }
      const float rs = 1.0f / std::sqrt(v / static_cast<float>(d) + Eps);
#pragma omp simd
      for (int64_t j = 0; j < d; ++j)
        orow[j] = (xr[j] - m) * rs * pw[j] + pb[j];
      pm[r] = m;
      pr[r] = rs;
    });
  }
#if PK_BENCH_EIGEN
  void eigen() {
    auto X = pkbench::mat(x, T, D);
    auto O = pkbench::mat(out, T, D);
    ConstRowMap W(w.data(), D), B(b.data(), D);
    for (int64_t r = 0; r < T; ++r) {
      auto Xr = X.row(r);
      const float m = Xr.mean();
      const float rs = 1.0f / std::sqrt((Xr - m).square().mean() + Eps);
      O.row(r) = (Xr - m) * rs * W + B;
      mu[r] = m;
      rstd[r] = rs;
    }
  }
#endif
};

// out = log(sum(exp(x - max))) + max, per row.
struct Logsumexp {
  int64_t T, D;
  Buffer x, out;
  explicit Logsumexp(const Shape &S)
      : T(S[0]), D(S[1]), x(pkbench::random(T * D, 131, -8.0f, 8.0f)),
        out(pkbench::random(T, 132)) {}
  int64_t min_bytes() const { return (T * D + T) * F; }
  std::vector<const Buffer *> outputs() const { return {&out}; }

  void pk() { ::logsumexp({x.data(), {T, D}}, {out.data(), {T}}); }
  void eager() { eager::logsumexp({x.data(), {T, D}}, {out.data(), {T}}); }
  void hand() {
    const float *__restrict px = x.data();
    float *__restrict po = out.data();
    const int64_t d = D;
    for_rows(T, D, [=](int64_t r) {
      const float *__restrict xr = px + r * d;
      float m = -INFINITY;
#pragma omp simd reduction(max : m)
      for (int64_t j = 0; j < d; ++j)
        m = xr[j] > m ? xr[j] : m;
      float s = 0.0f;
#pragma omp simd reduction(+ : s)
      for (int64_t j = 0; j < d; ++j)
        s += pk::vm::exp(xr[j] - m);
      po[r] = std::log(s) + m;
    });
  }
#if PK_BENCH_EIGEN
  void eigen() {
    auto X = pkbench::mat(x, T, D);
    for (int64_t r = 0; r < T; ++r) {
      auto Xr = X.row(r);
      const float m = Xr.maxCoeff();
      out[r] = std::log((Xr - m).exp().sum()) + m;
    }
  }
#endif
};

// h = h + x (in place), y = h / sqrt(mean(h^2) + eps) * w. h grows by x every
// call: about 1e6 after a million calls, far from overflow (h^2 * D < 1e17).
struct AddRmsnorm {
  int64_t T, D;
  Buffer h, x, w, y;
  explicit AddRmsnorm(const Shape &S)
      : T(S[0]), D(S[1]), h(pkbench::random(T * D, 141)),
        x(pkbench::random(T * D, 142)), w(pkbench::random(D, 143)),
        y(pkbench::random(T * D, 144)) {}
  // h read + written, x read, y written, w read.
  int64_t min_bytes() const { return (4 * T * D + D) * F; }
  std::vector<const Buffer *> outputs() const { return {&h, &y}; }

  void pk() {
    ::add_rmsnorm({h.data(), {T, D}}, {x.data(), {T, D}}, {w.data(), {D}},
                  {y.data(), {T, D}}, Eps);
  }
  void eager() {
    eager::add_rmsnorm({h.data(), {T, D}}, {x.data(), {T, D}}, {w.data(), {D}},
                       {y.data(), {T, D}}, Eps);
  }
  // h updated while summing its squares, then y from the updated h.
  void hand() {
    float *__restrict ph = h.data(), *__restrict py = y.data();
    const float *__restrict px = x.data(), *__restrict pw = w.data();
    const int64_t d = D;
    for_rows(T, D, [=](int64_t r) {
      float *__restrict hr = ph + r * d;
      const float *__restrict xr = px + r * d;
      float *__restrict yr = py + r * d;
      float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
      for (int64_t j = 0; j < d; ++j) {
        const float v = hr[j] + xr[j];
        hr[j] = v;
        ss += v * v;
      }
      const float rs = 1.0f / std::sqrt(ss / static_cast<float>(d) + Eps);
#pragma omp simd
      for (int64_t j = 0; j < d; ++j)
        yr[j] = hr[j] * rs * pw[j];
    });
  }
#if PK_BENCH_EIGEN
  void eigen() {
    auto H = pkbench::mat(h, T, D);
    auto X = pkbench::mat(x, T, D);
    auto Y = pkbench::mat(y, T, D);
    ConstRowMap W(w.data(), D);
    for (int64_t r = 0; r < T; ++r) {
      auto Hr = H.row(r);
      Hr += X.row(r);
      const float rs = 1.0f / std::sqrt(Hr.square().mean() + Eps);
      Y.row(r) = Hr * rs * W;
    }
  }
#endif
};

// m[D] = mean(x[T, D], axis 0)
struct ColumnMean {
  int64_t T, D;
  Buffer x, m;
  explicit ColumnMean(const Shape &S)
      : T(S[0]), D(S[1]), x(pkbench::random(T * D, 151)),
        m(pkbench::random(D, 152)) {}
  int64_t min_bytes() const { return (T * D + D) * F; }
  std::vector<const Buffer *> outputs() const { return {&m}; }

  void pk() { ::column_mean({x.data(), {T, D}}, {m.data(), {D}}); }
  void eager() { eager::column_mean({x.data(), {T, D}}, {m.data(), {D}}); }
  // Rows split between the threads, each summing its rows into a private
  // row of D column sums (an OpenMP array-section reduction), contiguous
  // simd loops over the columns; then one scaling pass.
  void hand() {
    const float *__restrict px = x.data();
    float *__restrict pm = m.data();
    const int64_t t = T, d = D;
    for (int64_t j = 0; j < d; ++j)
      pm[j] = 0.0f;
    if (t * d >= pkbench::kParallelMinWork) {
#pragma omp parallel for reduction(+ : pm[:d])
      for (int64_t r = 0; r < t; ++r) {
#pragma omp simd
        for (int64_t j = 0; j < d; ++j)
          pm[j] += px[r * d + j];
      }
    } else {
      for (int64_t r = 0; r < t; ++r) {
#pragma omp simd
        for (int64_t j = 0; j < d; ++j)
          pm[j] += px[r * d + j];
      }
    }
    const float inv = 1.0f / static_cast<float>(t);
#pragma omp simd
    for (int64_t j = 0; j < d; ++j)
      pm[j] *= inv;
  }
#if PK_BENCH_EIGEN
  void eigen() {
    Eigen::Map<Eigen::Array<float, 1, Eigen::Dynamic>>(m.data(), D) =
        pkbench::mat(x, T, D).colwise().mean();
  }
#endif
};

// total = sum(x), x in [0, 1) as in the sample (a sum far from 0, so that
// the relative check is meaningful).
struct SumAll {
  int64_t T, D;
  Buffer x, total;
  explicit SumAll(const Shape &S)
      : T(S[0]), D(S[1]), x(pkbench::random(T * D, 161, 0.0f, 1.0f)),
        total(pkbench::random(1, 162)) {}
  int64_t min_bytes() const { return (T * D + 1) * F; }
  std::vector<const Buffer *> outputs() const { return {&total}; }

  void pk() { ::sum_all({x.data(), {T, D}}, {total.data(), {}}); }
  void eager() { eager::sum_all({x.data(), {T, D}}, {total.data(), {}}); }
  void hand() {
    const float *__restrict px = x.data();
    const int64_t n = T * D;
    float s = 0.0f;
    if (n >= pkbench::kParallelMinWork) {
#pragma omp parallel for simd reduction(+ : s)
      for (int64_t i = 0; i < n; ++i)
        s += px[i];
    } else {
#pragma omp simd reduction(+ : s)
      for (int64_t i = 0; i < n; ++i)
        s += px[i];
    }
    total[0] = s;
  }
#if PK_BENCH_EIGEN
  void eigen() { total[0] = pkbench::vec(x).sum(); }
#endif
};

const std::vector<Shape> ReductionShapes = {{{2048, 4096}}, {{4096, 768}}};

const bool Registered =
    pkbench::register_kernel<Rmsnorm>("rmsnorm", pkbench::row_shapes()) &&
    pkbench::register_kernel<Softmax>("softmax", pkbench::row_shapes()) &&
    pkbench::register_kernel<Layernorm>("layernorm", pkbench::row_shapes()) &&
    pkbench::register_kernel<Logsumexp>("logsumexp", pkbench::row_shapes()) &&
    pkbench::register_kernel<AddRmsnorm>("add_rmsnorm", pkbench::row_shapes()) &&
    pkbench::register_kernel<ColumnMean>("column_mean", ReductionShapes) &&
    pkbench::register_kernel<SumAll>("sum_all", ReductionShapes);

} // namespace
