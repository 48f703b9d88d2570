//===- kernels_decode.cpp - Products of a few rows: a decode step ---------===//
//
// `linear` (bench/decode/linear.cpp, y = x wᵀ with w [N, K] as nn.Linear's)
// at M = 1, 4, 8 rows, the tokens of a decode step, and the weight shapes of
// GPT-2 and Llama layers (K x N: 768 x 2048, 2048 x 2048, 2048 x 5632,
// 5632 x 2048, 4096 x 11008). Such a product reads every weight once and
// does M multiply-adds with it: it is bound by the memory bandwidth, so its
// figure is GB/s of weights, next to a loop that only reads the same bytes
// (`weights_read`, at the same shapes and thread counts, in the same run).
//
// The weights rotate: every call multiplies by the next of several distinct
// [N, K] matrices, slices of one pool of at least 4x the last-level cache
// (<pk/cpuinfo.h>; at least 2 matrices), shared by all shapes, so no figure
// comes from a cache holding the weights since the previous call.
//
// Peers: openblas (cblas_sgemm, CblasTrans on w, as a BLAS user writes
// nn.Linear) and naive (one `omp simd reduction` dot product per output,
// columns in parallel).
//
// `linear_decode_bf16` is the same product with bfloat16 weights
// (`linear_bf16`: half the bytes, widened to float as they are read), its
// weights rotating through a bfloat16 pool of the same size in bytes; its
// figure beside linear_decode's is what narrow weights buy a decode step.
// Peer: naive (the same dot product, converting each weight).
//
// `linear_prefill` is linear_decode's float product at a short prompt's
// rows (M = 48, 64, 128; GFLOP/s), its weights rotating the same way, so
// that each call reads its weight from memory as a prefill's layers do.
// Peers: naive, OpenBLAS.
//
// `linear_prefill_bf16` is the bfloat16-weight product at prefill rows (M =
// 16 and 32, where the float kernels run the GEMV, and 64, 128, 512:
// compute-bound, GFLOP/s) with float activations (the float kernels, the
// weights widened as they are read or packed); `linear_prefill_bf16_amx`
// rounds the activations to bfloat16 in the kernel (`linear_bf16_rounded`,
// as samples/llama's bf16 layer does), a product of bfloat16 values that
// pk::rt::gemm runs on AMX tiles from 16 rows where the CPU has AMX-BF16
// (<pk/gemm_amx.h>), and `linear_prefill_bf16_amx_off` is that kernel with
// AMX turned off (pk::rt::set_gemm_amx(false)): the float kernels on the
// same values. Their ratios are what AMX buys a prefill. No peer: the
// rounded activations make every float peer's result differ by ~1e-2
// (bench/peers/bf16_linear.py times PyTorch's bfloat16 product apart).
//
// `linear_decode_q8` has int8 weights with one float scale per group of 32
// along K (llama2.c's Q8_0; `linear_q8`, `repeat` of the scales): a quarter
// of the bytes, plus the scales. Its weights and scales rotate through pools
// of the same total size. Peer: naive (per group, the int8 dot product in
// float times the group's scale). pk reads the int8 values in place (the
// GEMV kernels with pk::rt::GroupScaledB).
//
// `int8_product_decode` is llama2.c runq's product: the activations are
// quantised to Q8_0 as well (groups of 64 along K, llama2.c's export
// default), each group's dot product is exact in int32, and the terms
// float(dot) * w_scale * x_scale are summed over the groups. pk's column is
// pk::rt::int8_product (<pk/int8_product.h>) called directly, with the
// quantisation before it and the term described (Int8TermScales) as pkc
// describes linear_q8's (samples/llama/common.h). Peer: naive
// (runq.c's quantize and matmul: per output, per group, an int32 dot
// product, columns in parallel).
//
// `runq_prefill` is runq's product compiled by pkc (`runq_linear` in
// decode/linear.cpp, as samples/llama's int8 layer writes it) at prefill
// rows: pk::rt::int8_product runs the dots on AMX-INT8 tiles from 16 rows
// where the CPU has them; `runq_prefill_amx_off` is the same kernel with AMX
// turned off (the VNNI dots, 16 columns a block, one row at a time). Same
// bits; their ratio is what AMX buys an int8 prefill. No peer (runq.c's
// scalar loops take seconds a call at these shapes).
//
//===----------------------------------------------------------------------===//
#include "bench.h"

#include <pk/cpuinfo.h>
#include <pk/gemm_amx.h>
#include <pk/half.h>
#include <pk/int8_product.h>
#include <pk/ref.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

void linear(pk::In<float, 2> x, pk::In<float, 2> w, pk::Out<float, 2> y);
void linear_bf16(pk::In<float, 2> x, pk::In<pk::bfloat16, 2> w,
                 pk::Out<float, 2> y);
void linear_q8(pk::In<float, 2> x, pk::In<int8_t, 2> w, pk::In<float, 2> scale,
               pk::Out<float, 2> y);
void linear_bf16_rounded(pk::In<float, 2> x, pk::In<pk::bfloat16, 2> w,
                         pk::Out<float, 2> y);
void runq_linear(pk::In<float, 2> x, pk::In<int8_t, 2> w,
                 pk::In<float, 2> scale, pk::Out<float, 2> y);

namespace {

using pkbench::Buffer;
using pkbench::Shape;
constexpr int64_t F = sizeof(float);

/// M x N x K: M rows (tokens) times K x N weights.
std::vector<Shape> decode_shapes() {
  std::vector<Shape> S;
  const int64_t KN[][2] = {
      {768, 2048}, {2048, 2048}, {2048, 5632}, {5632, 2048}, {4096, 11008}};
  for (const auto &W : KN)
    for (int64_t M : {1, 4, 8})
      S.push_back({{M, W[1], W[0]}});
  return S;
}

/// The bytes of each weight pool: 4x the last-level cache Linux lists (256
/// MiB when none), and at least two of the largest weights at float (with a
/// 32 MiB L3, 4 x 11008 x 4096 floats were more than the pool, and the
/// rotation read past its end).
int64_t poolBytes() {
  int64_t Largest = 0;
  for (const Shape &S : decode_shapes())
    Largest = std::max(Largest, S[1] * S[2] * F);
  const int64_t Llc = pk::rt::cache_sizes().LastLevel;
  return std::max(4 * (Llc > 0 ? Llc : int64_t(64) << 20), 2 * Largest);
}

/// The weight pool, uniform in [-1, 1), allocated on first use and kept.
const Buffer &pool() {
  static const Buffer P = pkbench::random(poolBytes() / F, 241);
  return P;
}

/// The bfloat16 weight pool: as many bytes as pool(), uniform in [-1, 1).
const std::vector<pk::bfloat16> &pool_bf16() {
  static const std::vector<pk::bfloat16> P = [] {
    const Buffer R = pkbench::random(poolBytes() / 2, 244);
    std::vector<pk::bfloat16> V(R.size());
    for (int64_t I = 0; I < R.size(); ++I)
      V[I] = pk::bfloat16(R[I]);
    return V;
  }();
  return P;
}

/// Which matrices of the pool a shape rotates through.
struct Rotation {
  int64_t Size = 0, Count = 0, Next = 0;
  explicit Rotation(int64_t Elems)
      : Size(Elems), Count(std::max<int64_t>(2, pool().size() / Elems)) {}
  const float *next() {
    const float *W = pool().data() + Next * Size;
    Next = (Next + 1) % Count;
    return W;
  }
};

/// The naive peer: one `omp simd reduction` dot product per output, columns
/// in parallel; W is float or pk::bfloat16 (converted per weight).
template <class W>
void naive_linear(const float *__restrict px, const W *__restrict w,
                  float *__restrict py, int64_t m, int64_t n, int64_t k) {
#pragma omp parallel for
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
      for (int64_t l = 0; l < k; ++l)
        acc += px[i * k + l] * static_cast<float>(w[j * k + l]);
      py[i * n + j] = acc;
    }
}

// y = x wᵀ: x [M, K], w [N, K] (the next matrix of the pool) -> y [M, N]
struct LinearDecode {
  int64_t M, N, K;
  Buffer x, y;
  Rotation Weights;
  explicit LinearDecode(const Shape &S)
      : M(S[0]), N(S[1]), K(S[2]), x(pkbench::random(M * K, 242)),
        y(pkbench::random(M * N, 243)), Weights(N * K) {}
  static bool eager_at(const Shape &) { return false; }
  int64_t min_bytes() const { return (N * K + M * K + M * N) * F; }
  std::vector<const Buffer *> outputs() const { return {&y}; }

  void pk() {
    ::linear({x.data(), {M, K}}, {Weights.next(), {N, K}}, {y.data(), {M, N}});
  }
  void naive() { naive_linear(x.data(), Weights.next(), y.data(), M, N, K); }
#if PK_BENCH_OPENBLAS
  void openblas() {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f,
                x.data(), K, Weights.next(), K, 0.0f, y.data(), N);
  }
#endif
};

/// M x N x K of linear_prefill: a short prompt's rows (48, 64: w's rows
/// read in place, pk::rt::gemm's gemmWeightRows) and 128 (the packed path).
std::vector<Shape> linear_prefill_shapes() {
  std::vector<Shape> S;
  const int64_t KN[][2] = {
      {768, 2048}, {2048, 2048}, {2048, 5632}, {5632, 2048}};
  for (const auto &W : KN)
    for (int64_t M : {48, 64, 128})
      S.push_back({{M, W[1], W[0]}});
  return S;
}

// linear_decode's product at prefill rows: compute-bound, GFLOP/s.
struct LinearPrefill : LinearDecode {
  using LinearDecode::LinearDecode;
  double flops() const { return 2.0 * double(M) * double(N) * double(K); }
};

/// Rotation through the bfloat16 pool.
struct Bf16Rotation {
  int64_t Size = 0, Count = 0, Next = 0;
  explicit Bf16Rotation(int64_t Elems)
      : Size(Elems), Count(std::max<int64_t>(
                         2, static_cast<int64_t>(pool_bf16().size()) / Elems)) {
  }
  const pk::bfloat16 *next() {
    const pk::bfloat16 *W = pool_bf16().data() + Next * Size;
    Next = (Next + 1) % Count;
    return W;
  }
};

// y = x wᵀ with bfloat16 weights: the same product, half the bytes of w.
struct LinearDecodeBf16 {
  int64_t M, N, K;
  Buffer x, y;
  Bf16Rotation Weights;
  explicit LinearDecodeBf16(const Shape &S)
      : M(S[0]), N(S[1]), K(S[2]), x(pkbench::random(M * K, 242)),
        y(pkbench::random(M * N, 243)), Weights(N * K) {}
  static bool eager_at(const Shape &) { return false; }
  int64_t min_bytes() const { return N * K * 2 + (M * K + M * N) * F; }
  std::vector<const Buffer *> outputs() const { return {&y}; }

  void pk() {
    ::linear_bf16({x.data(), {M, K}}, {Weights.next(), {N, K}},
                  {y.data(), {M, N}});
  }
  void naive() { naive_linear(x.data(), Weights.next(), y.data(), M, N, K); }
};

/// M x N x K at prefill rows.
std::vector<Shape> prefill_shapes() {
  std::vector<Shape> S;
  const int64_t KN[][2] = {
      {768, 2048}, {2048, 2048}, {2048, 5632}, {5632, 2048}};
  for (const auto &W : KN)
    for (int64_t M : {16, 32, 64, 128, 512})
      S.push_back({{M, W[1], W[0]}});
  return S;
}

/// How linear_prefill_bf16* multiply: float activations, activations
/// rounded to bfloat16 (AMX where the CPU has it), or rounded with AMX off.
enum class Bf16Product { FloatActivations, Amx, AmxOff };

// y = x wᵀ with bfloat16 weights at prefill rows, the weights rotating like
// linear_decode_bf16's.
template <Bf16Product How> struct LinearPrefillBf16 {
  int64_t M, N, K;
  Buffer x, y;
  Bf16Rotation Weights;
  explicit LinearPrefillBf16(const Shape &S)
      : M(S[0]), N(S[1]), K(S[2]), x(pkbench::random(M * K, 246)),
        y(pkbench::random(M * N, 247)), Weights(N * K) {}
  static bool eager_at(const Shape &) { return false; }
  int64_t min_bytes() const { return N * K * 2 + (M * K + M * N) * F; }
  double flops() const { return 2.0 * double(M) * double(N) * double(K); }
  std::vector<const Buffer *> outputs() const { return {&y}; }

  void pk() {
    if constexpr (How == Bf16Product::FloatActivations) {
      ::linear_bf16({x.data(), {M, K}}, {Weights.next(), {N, K}},
                    {y.data(), {M, N}});
    } else {
      const bool Was = pk::rt::gemm_amx();
      if (How == Bf16Product::AmxOff)
        pk::rt::set_gemm_amx(false);
      ::linear_bf16_rounded({x.data(), {M, K}}, {Weights.next(), {N, K}},
                            {y.data(), {M, N}});
      pk::rt::set_gemm_amx(Was);
    }
  }
};

/// Q8_0's group size along K (llama2.c's export default is 64; 32 is
/// llama.cpp's Q8_0 and divides every K here).
constexpr int64_t kQ8Group = 32;

/// The int8 weight pool (uniform in [-127, 127]) and its scales (one per
/// group, in (0, 2^-6]): as many weight bytes as pool() has.
const std::vector<int8_t> &pool_q8() {
  static const std::vector<int8_t> P = [] {
    const Buffer R = pkbench::random(poolBytes(), 245);
    std::vector<int8_t> V(R.size());
    for (int64_t I = 0; I < R.size(); ++I)
      V[I] = static_cast<int8_t>(R[I] * 127.0f);
    return V;
  }();
  return P;
}
const Buffer &pool_q8_scales() {
  static const Buffer P = [] {
    Buffer S = pkbench::random(poolBytes() / kQ8Group, 246);
    for (int64_t I = 0; I < S.size(); ++I)
      S[I] = (std::abs(S[I]) + 0.01f) / 64.0f;
    return S;
  }();
  return P;
}

/// Q8_0 weights [N, K] with scales [N, G] taken in turn from the int8 pools
/// (at least two matrices).
struct Q8Rotation {
  int64_t N, K, G, Count, Next = 0;
  Q8Rotation(int64_t N, int64_t K, int64_t G)
      : N(N), K(K), G(G),
        Count(std::max<int64_t>(2, static_cast<int64_t>(pool_q8().size()) /
                                       (N * K))) {}
  std::pair<const int8_t *, const float *> next() {
    const int8_t *W = pool_q8().data() + Next * N * K;
    const float *S = pool_q8_scales().data() + Next * N * G;
    Next = (Next + 1) % Count;
    return {W, S};
  }
};

// y = x wᵀ with Q8_0 weights: w [N, K] int8, scale [N, K / 32].
struct LinearDecodeQ8 {
  int64_t M, N, K, G;
  Buffer x, y;
  Q8Rotation Weights;
  explicit LinearDecodeQ8(const Shape &S)
      : M(S[0]), N(S[1]), K(S[2]), G(K / kQ8Group),
        x(pkbench::random(M * K, 242)), y(pkbench::random(M * N, 243)),
        Weights(N, K, G) {}
  static bool eager_at(const Shape &) { return false; }
  int64_t min_bytes() const { return N * K + (N * G + M * K + M * N) * F; }
  std::vector<const Buffer *> outputs() const { return {&y}; }
  std::pair<const int8_t *, const float *> next() { return Weights.next(); }

  void pk() {
    auto [W, S] = next();
    ::linear_q8({x.data(), {M, K}}, {W, {N, K}}, {S, {N, G}},
                {y.data(), {M, N}});
  }
  void naive() {
    auto [W, S] = next();
    const float *__restrict px = x.data();
    float *__restrict py = y.data();
#pragma omp parallel for
    for (int64_t j = 0; j < N; ++j)
      for (int64_t i = 0; i < M; ++i) {
        float acc = 0.0f;
        for (int64_t g = 0; g < G; ++g) {
          float part = 0.0f;
#pragma omp simd reduction(+ : part)
          for (int64_t l = 0; l < kQ8Group; ++l)
            part += px[i * K + g * kQ8Group + l] *
                    static_cast<float>(W[j * K + g * kQ8Group + l]);
          acc += part * S[j * G + g];
        }
        py[i * N + j] = acc;
      }
  }
};

/// runq's group size (llama2.c's export default).
constexpr int64_t kRunqGroup = 64;

/// x [M, K] quantised as runq's quantize() does, per group of kRunqGroup:
/// scale max|x| / 127, values round(x / scale) (0 for a group of zeros).
void quantize_runq(const float *x, int64_t M, int64_t K, int8_t *q,
                   float *scale) {
  const int64_t G = K / kRunqGroup;
  for (int64_t g = 0; g < M * G; ++g) {
    const float *xg = x + g * kRunqGroup;
    float wmax = 0.0f;
    for (int64_t l = 0; l < kRunqGroup; ++l)
      wmax = std::max(wmax, std::abs(xg[l]));
    const float s = wmax / 127.0f;
    scale[g] = s;
    for (int64_t l = 0; l < kRunqGroup; ++l)
      q[g * kRunqGroup + l] =
          s > 0.0f ? static_cast<int8_t>(std::round(xg[l] / s)) : 0;
  }
}

// y = x wᵀ as runq computes it: x and w [N, K] both Q8_0 (groups of 64).
struct Int8ProductDecode {
  int64_t M, N, K, G;
  Buffer x, y;
  std::vector<int8_t> xq;
  std::vector<float> xs;
  Q8Rotation Weights;
  explicit Int8ProductDecode(const Shape &S)
      : M(S[0]), N(S[1]), K(S[2]), G(K / kRunqGroup),
        x(pkbench::random(M * K, 247)), y(pkbench::random(M * N, 248)),
        xq(M * K), xs(M * G), Weights(N, K, G) {}
  static bool eager_at(const Shape &) { return false; }
  int64_t min_bytes() const { return N * K + (N * G + M * K + M * N) * F; }
  std::vector<const Buffer *> outputs() const { return {&y}; }
  std::pair<const int8_t *, const float *> next() { return Weights.next(); }

  void pk() {
    auto [W, S] = next();
    quantize_runq(x.data(), M, K, xq.data(), xs.data());
    float *py = y.data();
    pk::rt::int8_product(
        {G, M, N, kRunqGroup}, true,
        [&](int64_t g, int64_t i, int64_t len, int32_t *a) {
          for (int64_t l = 0; l < len; ++l)
            a[l] = xq[i * K + g * kRunqGroup + l];
        },
        pk::rt::Int8Rows{W, kRunqGroup, K, 1},
        [&](int64_t g, int64_t i, int64_t j0, int64_t len, const int32_t *dot,
            float *term) {
          for (int64_t l = 0; l < len; ++l)
            term[l] = static_cast<float>(dot[l]) * S[(j0 + l) * G + g] *
                      xs[i * G + g];
        },
        [&](int64_t i, int64_t j0, int64_t len, const float *sum) {
          std::memcpy(py + i * N + j0, sum, len * sizeof(float));
        },
        // What the term computes, as pkc passes it for linear_q8.
        pk::rt::Int8TermScales{
            true, 2, {{S, 1, G, false}, {xs.data(), 1, G, /*PerRow=*/true}}});
  }
  void naive() {
    auto [W, S] = next();
    quantize_runq(x.data(), M, K, xq.data(), xs.data());
    float *__restrict py = y.data();
#pragma omp parallel for
    for (int64_t j = 0; j < N; ++j)
      for (int64_t i = 0; i < M; ++i) {
        float val = 0.0f;
        for (int64_t g = 0; g < G; ++g) {
          int32_t ival = 0;
          for (int64_t l = 0; l < kRunqGroup; ++l)
            ival += static_cast<int32_t>(xq[i * K + g * kRunqGroup + l]) *
                    static_cast<int32_t>(W[j * K + g * kRunqGroup + l]);
          val += static_cast<float>(ival) * S[j * G + g] * xs[i * G + g];
        }
        py[i * N + j] = val;
      }
  }
};

// The read bandwidth at the same shape: the sum of the N x K weights of the
// next matrix, threads over contiguous ranges, vectorised with 64 partial
// sums per thread (16 vectors at SSE2: one accumulator would make the loop
// bound by the add's latency, not by memory).
struct WeightsRead {
  int64_t N, K;
  Buffer sum;
  Rotation Weights;
  explicit WeightsRead(const Shape &S)
      : N(S[1]), K(S[2]), sum(pkbench::filled(1, 0.0f)), Weights(N * K) {}
  static bool eager_at(const Shape &) { return false; }
  int64_t min_bytes() const { return N * K * F; }
  std::vector<const Buffer *> outputs() const { return {}; }

  void pk() {
    const float *__restrict w = Weights.next();
    constexpr int64_t Lanes = 64;
    const int64_t Chunks = N * K / Lanes; // N * K is a multiple of 64 here
    float s = 0.0f;
#pragma omp parallel reduction(+ : s)
    {
      float Acc[Lanes] = {};
#pragma omp for
      for (int64_t c = 0; c < Chunks; ++c)
#pragma omp simd
        for (int64_t l = 0; l < Lanes; ++l)
          Acc[l] += w[c * Lanes + l];
      for (int64_t l = 0; l < Lanes; ++l)
        s += Acc[l];
    }
    sum[0] = s;
  }
};

// runq's product at prefill rows (groups of 64), compiled by pkc; AMX on
// (where the CPU has it) or off.
template <bool AmxOff> struct RunqPrefill {
  int64_t M, N, K, G;
  Buffer x, y;
  Q8Rotation Weights;
  explicit RunqPrefill(const Shape &S)
      : M(S[0]), N(S[1]), K(S[2]), G(K / kRunqGroup),
        x(pkbench::random(M * K, 249)), y(pkbench::random(M * N, 250)),
        Weights(N, K, G) {}
  static bool eager_at(const Shape &) { return false; }
  int64_t min_bytes() const { return N * K + (N * G + M * K + M * N) * F; }
  double flops() const { return 2.0 * double(M) * double(N) * double(K); }
  std::vector<const Buffer *> outputs() const { return {&y}; }

  void pk() {
    auto [W, S] = Weights.next();
    const bool Was = pk::rt::gemm_amx();
    if (AmxOff)
      pk::rt::set_gemm_amx(false);
    ::runq_linear({x.data(), {M, K}}, {W, {N, K}}, {S, {N, G}},
                  {y.data(), {M, N}});
    pk::rt::set_gemm_amx(Was);
  }
};

const bool LinearDecodeRegistered =
    pkbench::register_kernel<LinearDecode>("linear_decode", decode_shapes());
const bool LinearPrefillRegistered = pkbench::register_kernel<LinearPrefill>(
    "linear_prefill", linear_prefill_shapes());
const bool LinearDecodeQ8Registered = pkbench::register_kernel<LinearDecodeQ8>(
    "linear_decode_q8", decode_shapes());
const bool Int8ProductDecodeRegistered =
    pkbench::register_kernel<Int8ProductDecode>("int8_product_decode",
                                                decode_shapes());
const bool LinearDecodeBf16Registered =
    pkbench::register_kernel<LinearDecodeBf16>("linear_decode_bf16",
                                               decode_shapes());
const bool LinearPrefillBf16Registered =
    pkbench::register_kernel<LinearPrefillBf16<Bf16Product::FloatActivations>>(
        "linear_prefill_bf16", prefill_shapes());
const bool LinearPrefillBf16AmxRegistered =
    pkbench::register_kernel<LinearPrefillBf16<Bf16Product::Amx>>(
        "linear_prefill_bf16_amx", prefill_shapes());
const bool LinearPrefillBf16AmxOffRegistered =
    pkbench::register_kernel<LinearPrefillBf16<Bf16Product::AmxOff>>(
        "linear_prefill_bf16_amx_off", prefill_shapes());
const bool RunqPrefillRegistered = pkbench::register_kernel<RunqPrefill<false>>(
    "runq_prefill", prefill_shapes());
const bool RunqPrefillAmxOffRegistered =
    pkbench::register_kernel<RunqPrefill<true>>("runq_prefill_amx_off",
                                                prefill_shapes());
const bool WeightsReadRegistered =
    pkbench::register_kernel<WeightsRead>("weights_read", decode_shapes());

} // namespace
