// attention_probs: causal attention that also returns its probabilities
// (as attention-map visualisation or a backward pass needs them): p =
// softmax(q k^T * scale + mask) is stored, and o = p v. The scores are kept
// in a pk-managed buffer, p is written once and read back by the product.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void attention_probs(In<float, 3> q, In<float, 3> k, In<float, 3> v,
                               Out<float, 3> p, Out<float, 3> o, float scale) {
  auto s = matmul(q[_], transpose(k[_])) * scale; // [H, T, T]
  s = where(index(s, -1) <= index(s, -2), s, -INFINITY);
  auto e = exp(s - max(s, -1, keepdims));
  auto probs = e / sum(e, -1, keepdims);
  p[_] = probs;
  o[_] = matmul(probs, v[_]); // [H, T, d]
}
