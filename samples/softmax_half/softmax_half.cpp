// softmax over the last axis with half-precision storage: x and y hold
// pk::half, max, exp and the sum compute in float, the store rounds y to
// half. One fused group per row, as for float.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void softmax_half(In<pk::half, 2> x, Out<pk::half, 2> y) {
  auto m = max(x[_], -1, keepdims);
  auto e = exp(x[_] - m);
  y[_] = e / sum(e, -1, keepdims);
}
