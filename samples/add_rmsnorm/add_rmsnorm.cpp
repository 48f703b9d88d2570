// add_rmsnorm: the transformer block's residual update, h += x, then the
// normalised h for the next layer, in one pass per row.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void add_rmsnorm(InOut<float, 2> h, In<float, 2> x, In<float> w,
                           Out<float, 2> y, float eps) {
  h[_] = h[_] + x[_];
  auto ms = mean(h[_] * h[_], -1, keepdims);
  y[_] = h[_] * rsqrt(ms + eps) * w[_];
}
