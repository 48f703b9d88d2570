// attention_causal: causal self-attention of H heads, softmax(q kT * scale +
// causal mask) v, heads first: q, k, v and o are [H, T, d]. Written the NumPy
// way (scores, mask, max-subtracted softmax, product with v); pkc compiles it
// into one pass over the keys per query row with an online softmax (a running
// max, a rescaled sum and a rescaled output row), so the [H, T, T] scores are
// never stored. Eagerly, every line is a whole-array temporary.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void attention_causal(In<float, 3> q, In<float, 3> k, In<float, 3> v,
                                Out<float, 3> o, float scale) {
  auto s = matmul(q[_], transpose(k[_])) * scale;
  s = where(index(s, -1) <= index(s, -2), s, -INFINITY);
  auto e = exp(s - max(s, -1, keepdims));
  o[_] = matmul(e / sum(e, -1, keepdims), v[_]);
}
