//===- kernels_attention.cpp - Causal attention and its peers -------------===//
//
// attention_causal (samples/attention_causal): o = softmax(q kT * scale +
// causal mask) v per head, q, k, v, o [H, T, d] row-major float32, inputs
// uniform in [-1, 1), scale 1/sqrt(d). Shapes H x T x d. flops() is the
// useful work of the causal half: q kT and p v over the pairs j <= i, each
// 2 * d flops per pair, 4 * H * T * T * d / 2 = 2 * H * T^2 * d (the diagonal
// and the softmax's exps left out); bench/table.py prints GFLOP/s from it.
//
// pk's generated code (pkc --emit=cpp) is one pass over the keys per query
// row, (head, row) pairs on the OpenMP threads: q.k as an `omp simd`
// reduction, an online softmax (running max m, running sum l rescaled by
// exp(m_old - m)) and the output row rescaled and accumulated (`omp simd`
// over d); no [T, T] buffer. It visits every key of a row, the masked ones
// (j > i) included: their score is -inf, weight 0, but q.k and the output
// update are still done, so pk does all T^2 pairs, twice the pairs counted.
//
// The peers:
//  * hand: the classic unfused attention a performance engineer writes in
//    plain C++ and OpenMP, three passes over an [H, T, T] score buffer, each
//    `omp parallel for collapse(2)` over (head, row): (1) s[i, j] = q_i . k_j
//    * scale for j <= i (`omp simd reduction(+)` over d; the mask is the loop
//    bound, j > i is neither computed nor read), (2) the row softmax in place
//    (max, exp and sum, scale by 1 / sum; pk::vm::exp, the exp pk calls),
//    (3) o_i = sum_{j <= i} p_ij v_j (`omp simd` over d). Only the lower
//    triangle is touched: half the pairs of a full [T, T] product.
//  * online: hand-written online softmax, what pk generates but with the
//    mask as the loop bound (j <= i) and the rescale only when the max
//    grows: per (head, row) one pass over keys 0..i, the output row in a
//    per-thread buffer.
//  * eager: the kernel source run by <pk/pk.h> (serial, double-accumulated
//    products, whole [H, T, T] temporaries), where H * T * T * d <= 2^27.
//
//===----------------------------------------------------------------------===//
#include "bench.h"

#include <pk/pk.h>
#include <pk/vmath.h>

#include <cmath>
#include <limits>
#include <vector>

// The eager reference: the kernel source run by <pk/pk.h>.
namespace eager {
#include "attention_causal/attention_causal.cpp"
} // namespace eager

// The compiled kernels (pk_add_kernels links their .pk.cpp).
#include "common/compiled.h"

namespace {

using pkbench::Buffer;
using pkbench::Shape;
constexpr int64_t F = sizeof(float);

/// H x T x d: 8 heads of 64 at 128, 512 and 2048 tokens.
std::vector<Shape> attention_shapes() {
  return {{{8, 128, 64}}, {{8, 512, 64}}, {{8, 2048, 64}}};
}

struct AttentionCausal {
  /// Eager (serial, whole [H, T, T] temporaries) up to 2^27 q.k products.
  static bool eager_at(const Shape &S) {
    return S[0] * S[1] * S[1] * S[2] <= (int64_t(1) << 27);
  }
  int64_t H, T, D;
  float scale;
  Buffer q, k, v, o;
  Buffer s; // hand's [H, T, T] scores, allocated on its first call

  explicit AttentionCausal(const Shape &S)
      : H(S[0]), T(S[1]), D(S[2]), scale(1.0f / std::sqrt(float(S[2]))),
        q(pkbench::random(H * T * D, 241)), k(pkbench::random(H * T * D, 242)),
        v(pkbench::random(H * T * D, 243)), o(pkbench::random(H * T * D, 244)) {
  }
  int64_t min_bytes() const { return 4 * H * T * D * F; }
  double flops() const { return 2.0 * double(H) * double(T) * double(T) * D; }
  std::vector<const Buffer *> outputs() const { return {&o}; }
  /// pk's threshold for going parallel (its work estimate: H T T 2d).
  bool parallel() const {
    return H * T * T * 2 * D >= pkbench::kParallelMinWork;
  }

  void pk() {
    ::attention_causal({q.data(), {H, T, D}}, {k.data(), {H, T, D}},
                       {v.data(), {H, T, D}}, {o.data(), {H, T, D}}, scale);
  }
  void eager() {
    eager::attention_causal({q.data(), {H, T, D}}, {k.data(), {H, T, D}},
                            {v.data(), {H, T, D}}, {o.data(), {H, T, D}},
                            scale);
  }

  void hand() {
    if (s.size() == 0)
      s = Buffer(H * T * T);
    const float *__restrict pq = q.data(), *__restrict pk_ = k.data(),
                            *__restrict pv = v.data();
    float *__restrict ps = s.data(), *__restrict po = o.data();
    const int64_t h = H, t = T, d = D;
    const float sc = scale;
    const bool par = parallel();
    // (1) scores of the causal half.
#pragma omp parallel for collapse(2) if (par)
    for (int64_t hh = 0; hh < h; ++hh)
      for (int64_t i = 0; i < t; ++i) {
        const float *__restrict qi = pq + (hh * t + i) * d;
        const float *__restrict kh = pk_ + hh * t * d;
        float *__restrict si = ps + (hh * t + i) * t;
        for (int64_t j = 0; j <= i; ++j) {
          float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
          for (int64_t c = 0; c < d; ++c)
            acc += qi[c] * kh[j * d + c];
          si[j] = acc * sc;
        }
      }
    // (2) row softmax in place.
#pragma omp parallel for collapse(2) if (par)
    for (int64_t hh = 0; hh < h; ++hh)
      for (int64_t i = 0; i < t; ++i) {
        float *__restrict si = ps + (hh * t + i) * t;
        const int64_t n = i + 1;
        float m = -INFINITY;
#pragma omp simd reduction(max : m)
        for (int64_t j = 0; j < n; ++j)
          m = si[j] > m ? si[j] : m;
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < n; ++j) {
          const float e = pk::vm::exp(si[j] - m);
          si[j] = e;
          sum += e;
        }
        const float inv = 1.0f / sum;
#pragma omp simd
        for (int64_t j = 0; j < n; ++j)
          si[j] *= inv;
      }
    // (3) o = p v over the causal half.
#pragma omp parallel for collapse(2) if (par)
    for (int64_t hh = 0; hh < h; ++hh)
      for (int64_t i = 0; i < t; ++i) {
        const float *__restrict si = ps + (hh * t + i) * t;
        const float *__restrict vh = pv + hh * t * d;
        float *__restrict oi = po + (hh * t + i) * d;
#pragma omp simd
        for (int64_t c = 0; c < d; ++c)
          oi[c] = 0.0f;
        for (int64_t j = 0; j <= i; ++j) {
          const float p = si[j];
#pragma omp simd
          for (int64_t c = 0; c < d; ++c)
            oi[c] += p * vh[j * d + c];
        }
      }
  }

  void online() {
    const float *__restrict pq = q.data(), *__restrict pk_ = k.data(),
                            *__restrict pv = v.data();
    float *__restrict po = o.data();
    const int64_t h = H, t = T, d = D;
    const float sc = scale;
#pragma omp parallel if (parallel())
    {
      std::vector<float> accv(d);
      float *__restrict acc = accv.data();
#pragma omp for collapse(2)
      for (int64_t hh = 0; hh < h; ++hh)
        for (int64_t i = 0; i < t; ++i) {
          const float *__restrict qi = pq + (hh * t + i) * d;
          const float *__restrict kh = pk_ + hh * t * d;
          const float *__restrict vh = pv + hh * t * d;
#pragma omp simd
          for (int64_t c = 0; c < d; ++c)
            acc[c] = 0.0f;
          float m = -std::numeric_limits<float>::infinity(), l = 0.0f;
          for (int64_t j = 0; j <= i; ++j) {
            float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
            for (int64_t c = 0; c < d; ++c)
              dot += qi[c] * kh[j * d + c];
            const float sj = dot * sc;
            if (sj > m) { // the max grows: rescale what is summed so far
              const float r = pk::vm::exp(m - sj);
              l *= r;
#pragma omp simd
              for (int64_t c = 0; c < d; ++c)
                acc[c] *= r;
              m = sj;
            }
            const float e = pk::vm::exp(sj - m);
            l += e;
#pragma omp simd
            for (int64_t c = 0; c < d; ++c)
              acc[c] += e * vh[j * d + c];
          }
          const float inv = 1.0f / l;
          float *__restrict oi = po + (hh * t + i) * d;
#pragma omp simd
          for (int64_t c = 0; c < d; ++c)
            oi[c] = acc[c] * inv;
        }
    }
  }
};

const bool AttentionRegistered = pkbench::register_kernel<AttentionCausal>(
    "attention_causal", attention_shapes());

} // namespace
