// softmax over the last axis, numerically stable: max and sum share one
// fused group with the normalised output.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void softmax(In<float, 2> x, Out<float, 2> y) {
  auto m = max(x[_], -1, keepdims);
  auto e = exp(x[_] - m);
  y[_] = e / sum(e, -1, keepdims);
}
