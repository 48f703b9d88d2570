// q_rope: a Llama attention's q projection followed by rotary position
// embeddings in Hugging Face's rotate_half form, with the cos and sin tables
// [T, hs/2] of the step's positions as inputs (as transformers computes them
// once per step for every layer). bench/kernels_views.cpp compares it with
// the projection alone (bench/decode/linear.cpp).
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void q_rope(In<float, 2> x, In<float, 2> wq, In<float, 2> cos_t,
                      In<float, 2> sin_t, Out<float, 3> q, int64_t heads) {
  auto T = x.extent(0), hs = wq.extent(0) / heads;
  auto p = reshape(matmul(x[_], transpose(wq[_])), {T, heads, hs});
  auto a = slice(p, 2, 0, hs / 2), b = slice(p, 2, hs / 2, hs);
  auto c = expand_dims(cos_t[_], 1), s = expand_dims(sin_t[_], 1);
  q[_] = concat({a * c - b * s, b * c + a * s}, 2);
}
