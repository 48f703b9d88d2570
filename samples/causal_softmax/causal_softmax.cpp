// causal_softmax: softmax of attention scores where position j of row i is
// masked out when j > i. The mask comes from index(), not from memory.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void causal_softmax(In<float, 2> scores, Out<float, 2> probs) {
  auto s = scores[_];
  auto visible = index(s, 1) <= index(s, 0);
  auto masked = where(visible, s, -INFINITY);
  auto m = max(masked, -1, keepdims);
  auto e = exp(masked - m);
  probs[_] = e / sum(e, -1, keepdims);
}
