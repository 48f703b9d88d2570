//===- kernels_views.cpp - Windows, gathers and views: a decode step's ----===//
//
// The [views] samples at the shapes of a Llama decode step:
//
//  * kv_cache_attention (samples/kv_cache_attention): one decode step (T = 1)
//    of 32 query heads over 4 kv heads (group 8), head size 64, at pos 128,
//    1024 and 4096: k and v written into the caches at pos, attention over
//    the prefix [0, pos + 1). Shape `pos x L`, L the cache's length: pos + 1
//    and 8 pos, so that the two rows of one pos show that a step reads only
//    the prefix it needs. min_bytes: the prefix of both caches read once, q
//    read and o written. Peer: hand, the loop a performance engineer writes
//    for GQA decode (one pass over the prefix per query head, scores in a
//    row buffer, a max, exp and sum pass, then the weighted sum of values),
//    (kv head, query head) pairs on the OpenMP threads. PyTorch's
//    scaled_dot_product_attention(enable_gqa=True) on the same prefix is in
//    bench/peers/peers.py.
//
//  * embedding (samples/embedding): 512 token ids into a [32000, 1024] float
//    table (131 MB, past the last-level cache). The ids rotate: each call
//    takes the next 512 of a permutation of the rows, so a row is read again
//    only after all 32000 were: every read comes from DRAM. min_bytes: the
//    rows read and written. Peer: hand, a memcpy of each row (the copy
//    bandwidth of this access pattern).
//
//  * q_projection / q_projection_rope (bench/views/q_rope.cpp): a Llama
//    attention's q projection ([T, 2048] x [2048, 2048]ᵀ, 32 heads of 64) alone
//    and followed by rotary embeddings (rotate_half with cos/sin tables),
//    at T = 1, 32 and 512. Their ratio is what the rotation costs on top of
//    the product.
//
//===----------------------------------------------------------------------===//
#include "bench.h"

#include <pk/cpuinfo.h>
#include <pk/pk.h>
#include <pk/vmath.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

namespace eager {
#include "kv_cache_attention/kv_cache_attention.cpp"
} // namespace eager

void kv_cache_attention(pk::In<float, 4> q, pk::In<float, 3> k,
                        pk::In<float, 3> v, pk::InOut<float, 3> key_cache,
                        pk::InOut<float, 3> value_cache, pk::Out<float, 4> o,
                        int64_t pos);
void embedding(pk::In<float, 2> table, pk::In<int32_t> ids,
               pk::Out<float, 2> x);
void linear(pk::In<float, 2> x, pk::In<float, 2> w, pk::Out<float, 2> y);
void q_rope(pk::In<float, 2> x, pk::In<float, 2> wq, pk::In<float, 2> cos_t,
            pk::In<float, 2> sin_t, pk::Out<float, 3> q, int64_t heads);

namespace {

using pkbench::Buffer;
using pkbench::Shape;
constexpr int64_t F = sizeof(float);

// --- kv_cache_attention ------------------------------------------------------

std::vector<Shape> kv_shapes() {
  std::vector<Shape> S;
  for (int64_t Pos : {128, 1024, 4096})
    for (int64_t L : {Pos + 1, 8 * Pos})
      S.push_back({{Pos, L}});
  return S;
}

struct KvCacheAttention {
  static constexpr int64_t Hkv = 4, G = 8, T = 1, Hs = 64;
  static bool eager_at(const Shape &S) { return S[0] <= 1024; }
  int64_t Pos, L;
  Buffer q, k, v, kc, vc, o;

  explicit KvCacheAttention(const Shape &S)
      : Pos(S[0]), L(S[1]), q(pkbench::random(Hkv * G * T * Hs, 301)),
        k(pkbench::random(Hkv * T * Hs, 302)),
        v(pkbench::random(Hkv * T * Hs, 303)),
        kc(pkbench::random(Hkv * L * Hs, 304)),
        vc(pkbench::random(Hkv * L * Hs, 305)),
        o(pkbench::filled(Hkv * G * T * Hs, 0)) {}
  int64_t min_bytes() const {
    return (2 * Hkv * (Pos + T) * Hs + 2 * Hkv * G * T * Hs) * F;
  }
  std::vector<const Buffer *> outputs() const { return {&o, &kc, &vc}; }

  template <class Kernel> void run(Kernel K) {
    K({q.data(), {Hkv, G, T, Hs}}, {k.data(), {Hkv, T, Hs}},
      {v.data(), {Hkv, T, Hs}}, {kc.data(), {Hkv, L, Hs}},
      {vc.data(), {Hkv, L, Hs}}, {o.data(), {Hkv, G, T, Hs}}, Pos);
  }
  void pk() { run(::kv_cache_attention); }
  void eager() { run(eager::kv_cache_attention); }

  void hand() {
    const int64_t N = Pos + T, L_ = L;
    const float Scale = 1.0f / std::sqrt(float(Hs));
    // Write the new keys and values at pos.
    for (int64_t H = 0; H < Hkv; ++H)
      for (int64_t t = 0; t < T; ++t) {
        std::memcpy(kc.data() + (H * L_ + Pos + t) * Hs,
                    k.data() + (H * T + t) * Hs, Hs * F);
        std::memcpy(vc.data() + (H * L_ + Pos + t) * Hs,
                    v.data() + (H * T + t) * Hs, Hs * F);
      }
    const float *__restrict Q = q.data(), *__restrict KC = kc.data(),
                            *__restrict VC = vc.data();
    float *__restrict O = o.data();
#pragma omp parallel if (Hkv * G * N * Hs * 2 >= pkbench::kParallelMinWork)
    {
      std::vector<float> Sv(N);
      float *__restrict S = Sv.data();
#pragma omp for collapse(2)
      for (int64_t H = 0; H < Hkv; ++H)
        for (int64_t Gq = 0; Gq < G; ++Gq) {
          const float *__restrict Qi = Q + (H * G + Gq) * Hs;
          const float *__restrict Kh = KC + H * L_ * Hs;
          const float *__restrict Vh = VC + H * L_ * Hs;
          float M = -INFINITY;
          for (int64_t J = 0; J < N; ++J) {
            float Dot = 0;
#pragma omp simd reduction(+ : Dot)
            for (int64_t C = 0; C < Hs; ++C)
              Dot += Qi[C] * Kh[J * Hs + C];
            S[J] = Dot * Scale;
            M = S[J] > M ? S[J] : M;
          }
          float Sum = 0;
#pragma omp simd reduction(+ : Sum)
          for (int64_t J = 0; J < N; ++J) {
            S[J] = pk::vm::exp(S[J] - M);
            Sum += S[J];
          }
          float Acc[Hs] = {};
          for (int64_t J = 0; J < N; ++J) {
            const float P = S[J];
#pragma omp simd
            for (int64_t C = 0; C < Hs; ++C)
              Acc[C] += P * Vh[J * Hs + C];
          }
          float *__restrict Oi = O + (H * G + Gq) * Hs;
#pragma omp simd
          for (int64_t C = 0; C < Hs; ++C)
            Oi[C] = Acc[C] / Sum;
        }
    }
  }
};

const bool KvRegistered = pkbench::register_kernel<KvCacheAttention>(
    "kv_cache_attention", kv_shapes());

// --- embedding ---------------------------------------------------------------

struct Embedding {
  int64_t V, D, T;
  Buffer table, x;
  std::vector<int32_t> perm; ///< a permutation of the rows
  int64_t next = 0;          ///< where the next call's ids start in perm

  explicit Embedding(const Shape &S)
      : V(S[0]), D(S[1]), T(S[2]), table(pkbench::random(V * D, 311)),
        x(pkbench::filled(T * D, 0)), perm(V) {
    // A fixed stride coprime with V visits every row once per V ids.
    for (int64_t I = 0; I < V; ++I)
      perm[I] = static_cast<int32_t>((I * 7919 + 13) % V);
  }
  int64_t min_bytes() const { return 2 * T * D * F; }
  std::vector<const Buffer *> outputs() const { return {&x}; }
  const int32_t *ids() {
    if (next + T > V)
      next = 0;
    const int32_t *P = perm.data() + next;
    next += T;
    return P;
  }

  void pk() {
    ::embedding({table.data(), {V, D}}, {ids(), {T}}, {x.data(), {T, D}});
  }
  void hand() {
    const int32_t *Ids = ids();
    const float *Tab = table.data();
    float *X = x.data();
    const int64_t D_ = D;
#pragma omp parallel for if (T * D >= pkbench::kParallelMinWork)
    for (int64_t I = 0; I < T; ++I)
      std::memcpy(X + I * D_, Tab + int64_t(Ids[I]) * D_, D_ * F);
  }
};

const bool EmbeddingRegistered = pkbench::register_kernel<Embedding>(
    "embedding", {Shape{{32000, 1024, 512}}});

// --- the q projection, with and without RoPE ---------------------------------

/// T x D x Hs: T tokens, D = heads x Hs.
std::vector<Shape> q_shapes() {
  return {{{1, 2048, 64}}, {{32, 2048, 64}}, {{512, 2048, 64}}};
}

struct QProjection {
  int64_t T, D, Hs;
  Buffer x, w, cos_t, sin_t, y;
  explicit QProjection(const Shape &S)
      : T(S[0]), D(S[1]), Hs(S[2]), x(pkbench::random(T * D, 321)),
        w(pkbench::random(D * D, 322, -0.02f, 0.02f)),
        cos_t(pkbench::random(T * (S[2] / 2), 323)),
        sin_t(pkbench::random(T * (S[2] / 2), 324)),
        y(pkbench::filled(T * D, 0)) {}
  int64_t min_bytes() const { return (2 * T * D + D * D) * F; }
  double flops() const { return 2.0 * double(T) * double(D) * double(D); }
  std::vector<const Buffer *> outputs() const { return {&y}; }
};

struct QProjectionAlone : QProjection {
  using QProjection::QProjection;
  void pk() {
    ::linear({x.data(), {T, D}}, {w.data(), {D, D}}, {y.data(), {T, D}});
  }
};

struct QProjectionRope : QProjection {
  using QProjection::QProjection;
  int64_t min_bytes() const {
    return QProjection::min_bytes() + T * Hs * F; // + the cos/sin tables
  }
  void pk() {
    ::q_rope({x.data(), {T, D}}, {w.data(), {D, D}},
             {cos_t.data(), {T, Hs / 2}}, {sin_t.data(), {T, Hs / 2}},
             {y.data(), {T, D / Hs, Hs}}, D / Hs);
  }
};

const bool QRegistered =
    pkbench::register_kernel<QProjectionAlone>("q_projection", q_shapes()) &&
    pkbench::register_kernel<QProjectionRope>("q_projection_rope", q_shapes());

} // namespace
