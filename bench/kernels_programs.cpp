//===- kernels_programs.cpp - Whole-program kernels: MLP blocks -----------===//
//
// samples/mlp (linear, GELU, linear, GPT-2's block), samples/swiglu_mlp
// (Llama's gate, up and down) and samples/rmsnorm_linear (RMSNorm feeding a
// projection, as a Llama block starts) as one pk kernel each, where pkc
// decides the groups and keeps the hidden activations (for rmsnorm_linear
// only the per-row statistic) in buffers it allocates (from the thread's
// arena: nothing per call), against:
//   separate  the same products as separate pk kernels (bench/programs/
//             mlp_parts.cpp), with buffers allocated once by the caller:
//             what materialising costs (issue [program]: within 1.05x;
//             rmsnorm_linear: RMSNorm then the projection, >= 1.0x);
//   openblas  cblas_sgemm for every product, the bias, GELU or SiLU as an
//             OpenMP loop over the buffer.
// Shapes: T x D x F, T tokens in {1, 32, 128, 512}, D -> F -> D with GPT-2
// small's widths (768, 3072) and TinyLlama's (2048, 5632). Weights are
// nn.Linear's layout ([out, in]) and its initialisation scale.
//
//===----------------------------------------------------------------------===//
#include "bench.h"

#include <pk/ref.h>

#include <cmath>

void mlp(pk::In<float, 2> x, pk::In<float, 2> w1, pk::In<float, 1> b1,
         pk::In<float, 2> w2, pk::In<float, 1> b2, pk::Out<float, 2> y);
void swiglu_mlp(pk::In<float, 2> x, pk::In<float, 2> w_gate,
                pk::In<float, 2> w_up, pk::In<float, 2> w_down,
                pk::Out<float, 2> y);
void part_linear_gelu(pk::In<float, 2> x, pk::In<float, 2> w,
                      pk::In<float, 1> b, pk::Out<float, 2> y);
void part_linear_bias(pk::In<float, 2> x, pk::In<float, 2> w,
                      pk::In<float, 1> b, pk::Out<float, 2> y);
void part_linear(pk::In<float, 2> x, pk::In<float, 2> w, pk::Out<float, 2> y);
void part_gate(pk::In<float, 2> x, pk::In<float, 2> w, pk::In<float, 2> u,
               pk::Out<float, 2> y);
void rmsnorm_linear(pk::In<float, 2> x, pk::In<float, 1> g, pk::In<float, 2> w,
                    pk::Out<float, 2> y, float eps);
void part_rmsnorm(pk::In<float, 2> x, pk::In<float, 1> g, pk::Out<float, 2> y,
                  float eps);

namespace {

using pkbench::Buffer;
using pkbench::Shape;
constexpr int64_t Fl = sizeof(float);

std::vector<Shape> mlp_shapes() {
  std::vector<Shape> S;
  for (auto [D, F] : {std::pair<int64_t, int64_t>{768, 3072}, {2048, 5632}})
    for (int64_t T : {1, 32, 128, 512})
      S.push_back({{T, D, F}});
  return S;
}

float gelu(float X) {
  const float K = 0.7978845608f;
  return 0.5f * X * (1.0f + std::tanh(K * (X + 0.044715f * X * X * X)));
}

#if PK_BENCH_OPENBLAS
/// y = x wᵀ (+ y when Accumulate): x [M, K], w [N, K].
void sgemm_nt(const float *X, const float *W, float *Y, int64_t M, int64_t N,
              int64_t K) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, X, K, W,
              K, 0.0f, Y, N);
}
#endif

// y = gelu(x w1ᵀ + b1) w2ᵀ + b2
struct Mlp {
  int64_t T, D, F;
  Buffer x, w1, b1, w2, b2, y, h;
  explicit Mlp(const Shape &S)
      : T(S[0]), D(S[1]), F(S[2]), x(pkbench::random(T * D, 301)),
        w1(pkbench::random(F * D, 302, -1 / std::sqrt(float(S[1])),
                           1 / std::sqrt(float(S[1])))),
        b1(pkbench::random(F, 303, -0.1f, 0.1f)),
        w2(pkbench::random(D * F, 304, -1 / std::sqrt(float(S[2])),
                           1 / std::sqrt(float(S[2])))),
        b2(pkbench::random(D, 305, -0.1f, 0.1f)), y(pkbench::filled(T * D, 0)),
        h(pkbench::filled(T * F, 0)) {}
  static bool eager_at(const Shape &) { return false; }
  int64_t min_bytes() const { return (T * D * 2 + 2 * D * F + F + D) * Fl; }
  double flops() const { return 4.0 * T * D * F; }
  std::vector<const Buffer *> outputs() const { return {&y}; }

  void pk() {
    ::mlp({x.data(), {T, D}}, {w1.data(), {F, D}}, {b1.data(), {F}},
          {w2.data(), {D, F}}, {b2.data(), {D}}, {y.data(), {T, D}});
  }
  void hand() { // "separate": two pk kernels and the caller's buffer h
    part_linear_gelu({x.data(), {T, D}}, {w1.data(), {F, D}}, {b1.data(), {F}},
                     {h.data(), {T, F}});
    part_linear_bias({h.data(), {T, F}}, {w2.data(), {D, F}}, {b2.data(), {D}},
                     {y.data(), {T, D}});
  }
#if PK_BENCH_OPENBLAS
  void openblas() {
    sgemm_nt(x.data(), w1.data(), h.data(), T, F, D);
    float *H = h.data();
    const float *B1 = b1.data();
    const int64_t TF = T * F, Fc = F;
#pragma omp parallel for simd if (TF >= pkbench::kParallelMinWork)
    for (int64_t I = 0; I < TF; ++I)
      H[I] = gelu(H[I] + B1[I % Fc]);
    sgemm_nt(h.data(), w2.data(), y.data(), T, D, F);
    float *Y = y.data();
    const float *B2 = b2.data();
    const int64_t TD = T * D, Dc = D;
#pragma omp parallel for simd if (TD >= pkbench::kParallelMinWork)
    for (int64_t I = 0; I < TD; ++I)
      Y[I] += B2[I % Dc];
  }
#endif
};

// y = (silu(x wgᵀ) * (x wuᵀ)) wdᵀ
struct SwigluMlp {
  int64_t T, D, F;
  Buffer x, wg, wu, wd, y, u, a;
  explicit SwigluMlp(const Shape &S)
      : T(S[0]), D(S[1]), F(S[2]), x(pkbench::random(T * D, 311)),
        wg(pkbench::random(F * D, 312, -1 / std::sqrt(float(S[1])),
                           1 / std::sqrt(float(S[1])))),
        wu(pkbench::random(F * D, 313, -1 / std::sqrt(float(S[1])),
                           1 / std::sqrt(float(S[1])))),
        wd(pkbench::random(D * F, 314, -1 / std::sqrt(float(S[2])),
                           1 / std::sqrt(float(S[2])))),
        y(pkbench::filled(T * D, 0)), u(pkbench::filled(T * F, 0)),
        a(pkbench::filled(T * F, 0)) {}
  static bool eager_at(const Shape &) { return false; }
  int64_t min_bytes() const { return (T * D * 2 + 3 * D * F) * Fl; }
  double flops() const { return 6.0 * T * D * F; }
  std::vector<const Buffer *> outputs() const { return {&y}; }

  void pk() {
    ::swiglu_mlp({x.data(), {T, D}}, {wg.data(), {F, D}}, {wu.data(), {F, D}},
                 {wd.data(), {D, F}}, {y.data(), {T, D}});
  }
  void hand() { // "separate": three pk kernels and the caller's buffers
    part_linear({x.data(), {T, D}}, {wu.data(), {F, D}}, {u.data(), {T, F}});
    part_gate({x.data(), {T, D}}, {wg.data(), {F, D}}, {u.data(), {T, F}},
              {a.data(), {T, F}});
    part_linear({a.data(), {T, F}}, {wd.data(), {D, F}}, {y.data(), {T, D}});
  }
#if PK_BENCH_OPENBLAS
  void openblas() {
    sgemm_nt(x.data(), wg.data(), a.data(), T, F, D);
    sgemm_nt(x.data(), wu.data(), u.data(), T, F, D);
    float *A = a.data();
    const float *U = u.data();
    const int64_t TF = T * F;
#pragma omp parallel for simd if (TF >= pkbench::kParallelMinWork)
    for (int64_t I = 0; I < TF; ++I)
      A[I] = A[I] / (1.0f + std::exp(-A[I])) * U[I];
    sgemm_nt(a.data(), wd.data(), y.data(), T, D, F);
  }
#endif
};

// y = (x / rms(x) * g) wᵀ: x [T, D], w [F, D] (the up projection's widths)
struct RmsnormLinear {
  static constexpr float Eps = 1e-5f;
  int64_t T, D, F;
  Buffer x, g, w, y, xn;
  explicit RmsnormLinear(const Shape &S)
      : T(S[0]), D(S[1]), F(S[2]), x(pkbench::random(T * D, 321)),
        g(pkbench::random(D, 322, 0.5f, 1.5f)),
        w(pkbench::random(F * D, 323, -1 / std::sqrt(float(S[1])),
                          1 / std::sqrt(float(S[1])))),
        y(pkbench::filled(T * F, 0)), xn(pkbench::filled(T * D, 0)) {}
  static bool eager_at(const Shape &) { return false; }
  int64_t min_bytes() const { return (T * D + D + F * D + T * F) * Fl; }
  double flops() const { return 2.0 * T * D * F; }
  std::vector<const Buffer *> outputs() const { return {&y}; }

  void pk() {
    ::rmsnorm_linear({x.data(), {T, D}}, {g.data(), {D}}, {w.data(), {F, D}},
                     {y.data(), {T, F}}, Eps);
  }
  void hand() { // "separate": RMSNorm into the caller's xn, then the product
    part_rmsnorm({x.data(), {T, D}}, {g.data(), {D}}, {xn.data(), {T, D}}, Eps);
    part_linear({xn.data(), {T, D}}, {w.data(), {F, D}}, {y.data(), {T, F}});
  }
};

const bool MlpRegistered = pkbench::register_kernel<Mlp>("mlp", mlp_shapes());
const bool RmsnormLinearRegistered =
    pkbench::register_kernel<RmsnormLinear>("rmsnorm_linear", mlp_shapes());
const bool SwigluRegistered =
    pkbench::register_kernel<SwigluMlp>("swiglu_mlp", mlp_shapes());

} // namespace
